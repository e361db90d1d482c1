"""ConsumerState without a broker: the one state a Consumer builds and hands to its parts
(positions per (topic, partition), the assignment, buffered counts, the error sink, the
revoke's give-up check, and the settle entry every Batch calls)."""

from __future__ import annotations

import logging
import os
import threading
import time

import pytest

import rdk
from rdk._binding import ERROR_CODES
from rdk.consumer._batch import Batch
from rdk.consumer._config import ConsumerConfig
from rdk.consumer._state import ConsumerState, Positions
from rdk.errors import ClosedError, KafkaError

LOGGER = "rdk.test.state"


def _config(tmp_path, topic: object = "orders", **kw: object) -> ConsumerConfig:
    defaults = dict(receive_callback=None, stats_callback=None, logger=logging.getLogger(LOGGER),
                    max_messages_per_callback=100, statistics_interval_ms=5000,
                    queued_max_messages_kbytes=1000, driver_options=None, topic_options=None,
                    num_workers=1, worker_slot=0, start_offset="earliest",
                    on_offset_out_of_range="earliest", decode=None, commit_on_error=True,
                    offset_store=None, loop=None, group_id=None, on_assign=None,
                    on_revoke=None, oauth_cb=None)
    defaults.update(kw)
    return ConsumerConfig("localhost:9", topic, tmp_path, **defaults)


def _state(tmp_path, **kw: object) -> tuple[ConsumerState, list[KafkaError]]:
    failed: list[KafkaError] = []
    return ConsumerState(_config(tmp_path, **kw), threading.Event(), failed.append), failed


def test_positions_are_per_topic_and_partition_and_grow_keeping_what_was_set():
    pos = Positions()
    assert pos.get([("a", 0), ("b", 7)]) == {("a", 0): -1, ("b", 7): -1}  # unknown
    pos.set(("a", 0), 10)
    pos.set(("b", 0), 99)
    arr, n = pos.array("a")
    assert n == 1 and arr[0] == 10
    pos.set(("a", 5), 3)  # grows "a" only, keeping partition 0's offset
    grown, size = pos.array("a")
    assert size >= 6 and grown is not arr and grown[0] == 10 and grown[5] == 3
    assert [grown[p] for p in range(1, 5)] == [-1, -1, -1, -1]
    assert pos.get([("a", 0), ("a", 5), ("b", 0), ("a", 100)]) == {
        ("a", 0): 10, ("a", 5): 3, ("b", 0): 99, ("a", 100): -1}
    assert pos.array("a")[1] == size  # get() grew nothing
    pos.set(("b", 0), -2)  # a logical offset (earliest): the next one is unknown
    assert pos.get([("b", 0)]) == {("b", 0): -1}


def test_the_assignment_keeps_its_order_and_changes_by_key(tmp_path):
    state, _ = _state(tmp_path)
    assert state.assignment() == [] and state.owned() == set()
    state.assign([("b", 1), ("a", 0)])
    state.assign([("a", 0), ("c", 2)])  # one already there: not repeated
    assert state.assignment() == [("b", 1), ("a", 0), ("c", 2)]
    state.unassign([("a", 0), ("z", 9)])
    assert state.assignment() == [("b", 1), ("c", 2)]
    owned = state.owned()
    owned.add(("x", 0))  # a copy
    assert state.owned() == {("b", 1), ("c", 2)}


def test_buffered_is_fetched_minus_handed_per_key(tmp_path):
    state, _ = _state(tmp_path)
    state.fetched.update({("a", 0): 30, ("a", 1): 5})
    state.handed.update({("a", 0): 12})
    assert state.buffered([("a", 0), ("a", 1), ("b", 0)]) == {("a", 0): 18, ("a", 1): 5, ("b", 0): 0}


def test_client_errors_that_stop_the_consumer_go_to_the_error_sink(tmp_path, caplog):
    state, failed = _state(tmp_path)
    caplog.set_level(logging.WARNING, LOGGER)
    transport = KafkaError(ERROR_CODES["_TRANSPORT"], "broker down")
    state.client_error(transport)
    assert failed == []  # logged, librdkafka retries
    assert any("broker down" in r.getMessage() for r in caplog.records)
    fatal = KafkaError(ERROR_CODES["_FATAL"], "fenced", fatal=True)
    denied = KafkaError(ERROR_CODES["TOPIC_AUTHORIZATION_FAILED"], "no read")
    state.client_error(fatal)
    state.client_error(denied)
    assert failed == [fatal, denied]
    regex, regex_failed = _state(tmp_path, topic="^orders-.*", group_id="g")
    regex.client_error(denied)  # a pattern subscription may match topics it cannot read
    assert regex_failed == []


def test_a_revoke_gives_up_waiting_once_stopping_and_otherwise_watches_the_loop(tmp_path):
    state, _ = _state(tmp_path)
    assert state.give_up_waiting() is False  # iterator mode: nothing to watch
    watched: list[int] = []
    state.watch_loop = lambda: watched.append(1)
    assert state.give_up_waiting() is False and watched == [1]
    state.stopping.set()
    assert state.give_up_waiting() is True and watched == [1]


def test_batches_settle_through_the_state_s_progress_keyed_by_topic_and_partition(tmp_path):
    state, _ = _state(tmp_path, topic=["orders", "refunds"])
    progress = state.progress
    progress.open(_config(tmp_path, topic=["orders", "refunds"]).store)
    try:
        a = Batch([], 0, 0, "orders", [(0, 0, 9, 10)], progress.settle)
        b = Batch([], 0, 0, "refunds", [(0, 0, 4, 5)], progress.settle)
        progress.tracker.add(a)
        progress.tracker.add(b)
        b.commit()
        a.commit()
        assert progress.flush(time.monotonic() + 30)
        assert (tmp_path / "orders-0.offset").read_text() == "9\n"
        assert (tmp_path / "refunds-0.offset").read_text() == "4\n"
    finally:
        progress.free(logging.getLogger(LOGGER))


def test_settling_in_a_forked_child_raises_closed_error(tmp_path):
    state, _ = _state(tmp_path)
    progress = state.progress
    batch = Batch([], 0, 0, "orders", [(0, 0, 0, 1)], progress.settle)
    progress.tracker.add(batch)
    progress.pid = os.getpid() + 1  # as in a child forked after the consumer was made
    with pytest.raises(ClosedError, match=r"^this Consumer of 'orders' was created in process "):
        batch.commit()
    assert progress.tracker.unsettled == 1  # nothing settled


def test_a_consumer_hands_its_one_state_to_its_parts_and_reads_its_views_from_it(tmp_path):
    c = rdk.Consumer("localhost:9", ["orders", "refunds"], tmp_path, lambda b: None)
    state = c._shared
    assert c._assignment.state is state and c._threads.state is state
    assert c._assignment.stats.state is state and c._running is state.running
    assert c.partitions == [] and c.partition_count is None
    state.partition_counts.update({"orders": 4, "refunds": 2})
    state.assign([("refunds", 1), ("orders", 3), ("orders", 1)])
    assert c.partitions == [1, 3] and c.partition_count == 4  # the first topic's
    assert c.assignment == [("refunds", 1), ("orders", 3), ("orders", 1)]
    c.pause()
    assert not state.running.is_set() and c.paused
    c.resume()
    assert state.running.is_set()
    c.close()
