"""The worker-slot rule's defaults and its exact error messages (each names the bad value):
written to kill the mutants scripts/mutation.sh found alive in rdk/slots.py."""

from __future__ import annotations

import re

import pytest

from rdk.slots import check_slot, owned_partitions


def test_defaults_are_one_worker_in_slot_zero():
    assert owned_partitions(5) == [0, 1, 2, 3, 4]
    assert owned_partitions(1) == [0]


@pytest.mark.parametrize("args,exc,message", [
    ((4, 4), ValueError, "worker_slot must be in 0..3 for num_workers=4, got 4"),
    ((3, -1), ValueError, "worker_slot must be in 0..2 for num_workers=3, got -1"),
    ((0, 0), ValueError, "num_workers must be >= 1, got 0"),
    ((2.0, 0), TypeError, "num_workers must be int, got float"),
    ((2, None), TypeError, "worker_slot must be int, got NoneType"),
])
def test_check_slot_messages_name_the_bad_value(args, exc, message):
    with pytest.raises(exc, match=f"^{re.escape(message)}$"):
        check_slot(*args)


@pytest.mark.parametrize("args,kwargs,exc,message", [
    ((-1,), {}, ValueError, "partition_count must be >= 0, got -1"),
    ((2.5,), {}, TypeError, "partition_count must be int, got float"),
    ((0,), {}, ValueError, "the topic has 0 partition(s), fewer than num_workers=1; every worker "
                           "slot must own at least one partition"),
    ((3, 4, 0), {}, ValueError, "the topic has 3 partition(s), fewer than num_workers=4; every "
                                "worker slot must own at least one partition"),
    ((3, 4, 0), {"topic": "events"}, ValueError, "topic 'events' has 3 partition(s), fewer than "
                                                 "num_workers=4; every worker slot must own at "
                                                 "least one partition"),
])
def test_owned_partitions_messages_name_the_bad_value(args, kwargs, exc, message):
    with pytest.raises(exc, match=f"^{re.escape(message)}$"):
        owned_partitions(*args, **kwargs)
