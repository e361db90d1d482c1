"""SettlementTracker: the settled prefix per partition, including batches processed in part."""

from __future__ import annotations

import logging
import threading
import time

from rdk.consumer._batch import Batch
from rdk.consumer._tracker import SettlementTracker

log = logging.getLogger("test_tracker")


def batch(*parts: tuple[int, int, int], topic: str = "t") -> Batch:
    """A batch of ``topic`` holding ``(partition, first, last)`` ranges (messages are not
    needed here)."""
    return Batch([], 0, 0, topic, [(p, first, last, last - first + 1) for p, first, last in parts])


def tracked(*batches: Batch) -> SettlementTracker:
    tracker = SettlementTracker(commit_on_error=True, logger=log)
    for b in batches:
        tracker.add(b)
    return tracker


def test_out_of_order_settles_record_the_prefix_only():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(b, True) == (True, {})
    assert tracker.settle(a, True) == (True, {("t", 0): 19})
    assert tracker.settle(a, True) == (False, {})  # a second settle changes nothing


def test_a_part_records_up_to_its_offsets_and_nothing_after_in_this_run():
    a, b = batch((0, 0, 9), (1, 0, 9)), batch((0, 10, 19), (1, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(a, True, {0: 4}) == (True, {("t", 0): 4})  # partition 1 left out: nothing
    assert tracker.unsettled == 1
    assert tracker.settle(b, True) == (True, {})  # both partitions stop at the part
    later = batch((0, 20, 29))
    tracker.add(later)
    assert tracker.settle(later, True) == (True, {})


def test_a_part_covering_a_whole_range_records_it_and_keeps_the_partition_going():
    a, b = batch((0, 0, 9), (1, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(a, True, {0: 9, 1: 3}) == (True, {("t", 0): 9, ("t", 1): 3})
    assert tracker.settle(b, True) == (True, {("t", 0): 19})


def test_a_part_behind_a_pending_batch_waits_for_it():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(b, True, {0: 12}) == (True, {})
    assert tracker.wait_partitions_settled([("t", 0)], 0) is False  # a is still in flight
    assert tracker.settle(a, True) == (True, {("t", 0): 12})
    assert tracker.wait_partitions_settled([("t", 0)], 0) is True


def test_a_waiter_sees_a_batch_settled_only_once_its_offsets_are_handed_over():
    """A revoke waits for the revoked partitions' batches, then flushes the committer: the
    settled batch's record must already be there (the CI failure this guards: the waiter ran
    between the settle and the record, flushed nothing, and the late record was dropped as
    "no longer assigned", so the partition's new owner read it all again)."""
    a = batch((0, 0, 9))
    tracker = tracked(a)
    handed_over: list[dict[tuple[str, int], int]] = []
    waiter_returned = threading.Event()
    seen_by_waiter: list[list[dict[tuple[str, int], int]]] = []

    errors: list[str] = []  # the waiter thread's failures, asserted in the test thread

    def wait() -> None:
        if not tracker.wait_partitions_settled([("t", 0)], 30):
            errors.append("wait_partitions_settled timed out")
        seen_by_waiter.append(list(handed_over))
        waiter_returned.set()

    def record_to(record: dict[tuple[str, int], int]) -> None:
        # Could the waiter run now? Only if nobody holds the tracker's lock (wait_for must
        # take it to return). If so, let it: wait until it has returned, then hand over —
        # it has seen the batch settled with nothing handed over, and the test fails below.
        # If the lock is held (by settle), the waiter cannot return before this record.
        if tracker.cond.acquire(blocking=False):
            tracker.cond.release()
            assert waiter_returned.wait(30), "the waiter neither returned nor was held back"
        handed_over.append(record)

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + 30
    while not tracker.cond._waiters and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.001)  # (polls for the waiter to be inside wait_for)
    assert tracker.cond._waiters, "the waiter never waited"  # type: ignore[attr-defined]
    assert tracker.settle(a, True, record=record_to) == (True, {("t", 0): 9})
    waiter.join(30)
    assert not waiter.is_alive(), "the waiter never returned"
    assert errors == []
    assert seen_by_waiter == [[{("t", 0): 9}]]


def test_record_to_is_not_called_when_nothing_became_recordable():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    calls: list[dict[tuple[str, int], int]] = []
    tracker.settle(b, True, record=calls.append)
    assert calls == []
    tracker.settle(a, True, record=calls.append)
    assert calls == [{("t", 0): 19}]


def test_a_revoke_waits_for_every_partition_it_names():
    """wait_partitions_settled([("t", 0), ("t", 1), ("t", 2)]) is False while any of them has a batch pending,
    whichever it is, and looks at no other partition."""
    a, b, c, d = batch((0, 0, 9)), batch((1, 0, 9)), batch((2, 0, 9)), batch((3, 0, 9))
    tracker = tracked(a, b, c, d)
    first3 = [("t", 0), ("t", 1), ("t", 2)]
    for settled_now in (a, c):
        tracker.settle(settled_now, True)
        assert tracker.wait_partitions_settled(first3, 0) is False  # b (partition 1) pending
        assert tracker.wait_partitions_settled(first3[::-1], 0) is False
    tracker.settle(b, True)
    assert tracker.wait_partitions_settled(first3, 0) is True  # d (partition 3) is not named
    assert tracker.wait_partitions_settled([("t", 3)], 0) is False
    e = batch((0, 10, 19), (2, 10, 19))  # one batch of two partitions
    tracker.add(e)
    assert tracker.wait_partitions_settled([("t", 2)], 0) is False
    tracker.settle(e, True)
    assert tracker.wait_partitions_settled([("t", 0), ("t", 1), ("t", 2)], 0) is True


def test_a_failed_batch_without_commit_on_error_stops_recording_its_partition(caplog):
    a, b, c = (batch((0, 0, 9), (1, 0, 9), topic="orders"), batch((0, 10, 19), topic="orders"),
               batch((1, 10, 19), topic="orders"))
    tracker = SettlementTracker(commit_on_error=False, logger=log)
    for x in (a, b, c):
        tracker.add(x)
    with caplog.at_level(logging.WARNING, logger="test_tracker"):
        assert tracker.settle(b, True) == (True, {})  # behind a
        assert tracker.settle(a, False) == (True, {})  # failed: nothing of 0 or 1 from here on
    assert [r.getMessage() for r in caplog.records] == [
        "orders[0]: a batch failed and commit_on_error=False, so no offset after the last "
        "recorded one is recorded in this run; it is delivered again after a restart",
        "orders[1]: a batch failed and commit_on_error=False, so no offset after the last "
        "recorded one is recorded in this run; it is delivered again after a restart"]
    assert tracker.settle(c, True) == (True, {})
    assert tracker.unsettled == 0


def test_a_failed_batch_with_commit_on_error_is_recorded_like_any(caplog):
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)  # commit_on_error=True
    with caplog.at_level(logging.WARNING, logger="test_tracker"):
        assert tracker.settle(a, False) == (True, {("t", 0): 9})
        assert tracker.settle(b, True) == (True, {("t", 0): 19})
    assert caplog.records == []


def test_settled_count_pending_and_wait_settled():
    from rdk.consumer._tracker import is_pending

    a, b = batch((0, 0, 9)), batch((1, 0, 9))
    assert not is_pending(a)  # never handed out
    tracker = tracked(a, b)
    assert tracker.unsettled == 2 and is_pending(a) and is_pending(b) and not tracker.closed
    assert tracker.wait_settled(0) is False
    assert tracker.settle(a, True) == (True, {("t", 0): 9})
    assert tracker.unsettled == 1 and not is_pending(a)
    assert tracker.settle(a, True) == (False, {}) and tracker.unsettled == 1
    assert tracker.wait_settled(0) is False
    assert tracker.settle(b, True) == (True, {("t", 1): 9})
    assert tracker.unsettled == 0 and tracker.wait_settled(0) is True
    assert tracker.wait_partitions_settled([("t", 5)], 0) is True  # a partition it never saw


def test_after_close_settling_records_nothing():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    tracker.close()
    assert tracker.closed
    calls: list = []
    assert tracker.settle(a, True, record=calls.append) == (True, {})
    assert tracker.unsettled == 1 and calls == []
    assert tracker.settle(a, True) == (False, {})


def test_an_abandoned_batch_is_no_longer_in_flight_and_blocks_its_partitions():
    from rdk.consumer._tracker import is_pending

    a, b, c = batch((0, 0, 9), (1, 0, 9)), batch((0, 10, 19)), batch((2, 0, 9))
    tracker = tracked(a, b, c)
    assert tracker.abandon(a) is True
    assert not is_pending(a) and tracker.unsettled == 2
    assert tracker.abandon(a) is False and tracker.unsettled == 2
    assert tracker.settle(a, True) == (False, {})  # abandoned: settling it changes nothing
    assert tracker.settle(b, True) == (True, {})  # behind the abandoned one: never recorded
    assert tracker.settle(c, True) == (True, {("t", 2): 9})  # other partitions go on
    assert tracker.wait_settled(0) is True
    later = batch((0, 20, 29), (1, 10, 19))
    tracker.add(later)
    assert tracker.settle(later, True) == (True, {})
    assert tracker.abandon(later) is False


def test_a_part_leaving_a_partition_out_records_nothing_of_it_and_blocks_it():
    a = batch((0, 0, 9), (1, 0, 9))
    tracker = tracked(a)
    assert tracker.settle(a, True, {1: 0}) == (True, {("t", 1): 0})  # 0 left out: nothing
    b = batch((0, 10, 19), (1, 10, 19))
    tracker.add(b)
    assert tracker.settle(b, True) == (True, {})


def test_a_revoke_does_not_wait_for_an_abandoned_batch():
    a = batch((0, 0, 9), (1, 0, 9))
    tracker = tracked(a)
    assert tracker.abandon(a) is True
    assert tracker.wait_settled(0) is True
    assert tracker.wait_partitions_settled([("t", 0), ("t", 1)], 0) is True


def test_without_commit_on_error_batches_before_a_failed_one_are_recorded():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = SettlementTracker(commit_on_error=False, logger=log)
    tracker.add(a)
    tracker.add(b)
    assert tracker.settle(a, True) == (True, {("t", 0): 9})  # in order: a is recorded
    assert tracker.settle(b, False) == (True, {})


def test_without_commit_on_error_out_of_order_batches_before_a_failed_one_are_recorded():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = SettlementTracker(commit_on_error=False, logger=log)
    tracker.add(a)
    tracker.add(b)
    assert tracker.settle(b, False) == (True, {})  # behind a
    assert tracker.settle(a, True) == (True, {("t", 0): 9})  # a was processed: recorded


def test_the_failure_line_names_the_offset_recorded_before_it_in_the_same_settle(caplog):
    a, b = batch((0, 0, 9), topic="orders"), batch((0, 10, 19), topic="orders")
    tracker = SettlementTracker(commit_on_error=False, logger=log)
    tracker.add(a)
    tracker.add(b)
    with caplog.at_level(logging.WARNING, logger="test_tracker"):
        assert tracker.settle(b, False) == (True, {})
        assert tracker.settle(a, True) == (True, {("orders", 0): 9})
    assert [r.getMessage() for r in caplog.records] == [
        "orders[0]: a batch failed and commit_on_error=False, so no offset after 9 is recorded "
        "in this run; it is delivered again after a restart"]


def test_partitions_of_two_topics_are_tracked_apart():
    """One tracker for every topic: partition 0 of "a" never waits for partition 0 of "b"."""
    a, b = batch((0, 0, 9), topic="a"), batch((0, 0, 4), topic="b")
    later_a = batch((0, 10, 19), topic="a")
    tracker = tracked(a, b, later_a)
    assert tracker.settle(b, True) == (True, {("b", 0): 4})  # not held behind a
    assert tracker.wait_partitions_settled([("b", 0)], 0) is True
    assert tracker.wait_partitions_settled([("a", 0)], 0) is False
    assert tracker.settle(later_a, True) == (True, {})
    assert tracker.settle(a, True) == (True, {("a", 0): 19})
    c = batch((1, 0, 0), topic="b")
    tracker.add(c)
    assert tracker.settle(c, True, {1: 0}) == (True, {("b", 1): 0})  # a part: the batch's topic
    assert tracker.abandon(batch((0, 5, 5), topic="b")) is False  # never tracked
