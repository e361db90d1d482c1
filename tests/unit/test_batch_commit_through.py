"""Batch.commit_through: a processed prefix goes to the consumer's settlement hook as
``{partition: last offset}``; bad input fails before anything is settled."""

from __future__ import annotations

import pytest

from rdk import Batch, Message


def _batch(settled: list) -> Batch:
    messages = [Message(b"v", topic="t", partition=p, offset=o) for p in (0, 1) for o in (5, 6, 7)]
    return Batch(messages, 0, 0, "t", [(0, 5, 7, 3), (1, 5, 7, 3)],
                 settle=lambda *args: settled.append(args))


def test_commit_through_settles_the_batch_up_to_the_given_offsets():
    settled: list = []
    batch = _batch(settled)
    batch.commit_through({0: 6})
    assert settled == [(batch, True, {0: 6})]


@pytest.mark.parametrize(("offsets", "error", "text"), [
    ([(0, 6)], TypeError, "offsets must be a mapping"),
    ({2: 6}, ValueError, "partition 2 is not in this batch (it holds [0, 1])"),
    ({0: "6"}, TypeError, "offsets[0] must be an int offset, got str"),
    ({0: True}, TypeError, "offsets[0] must be an int offset, got bool"),
])
def test_commit_through_refuses_bad_offsets_before_settling(offsets, error, text):
    settled: list = []
    with pytest.raises(error) as caught:
        _batch(settled).commit_through(offsets)
    assert text in str(caught.value)
    assert settled == []
