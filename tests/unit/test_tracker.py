"""SettlementTracker: the settled prefix per partition, including batches processed in part."""

from __future__ import annotations

import logging
import threading
import time

from rdk.consumer._batch import Batch
from rdk.consumer._tracker import SettlementTracker

log = logging.getLogger("test_tracker")


def batch(*parts: tuple[int, int, int]) -> Batch:
    """A batch holding ``(partition, first, last)`` ranges (messages are not needed here)."""
    return Batch([], 0, 0, "t", [(p, first, last, last - first + 1) for p, first, last in parts])


def tracked(*batches: Batch) -> SettlementTracker:
    tracker = SettlementTracker(commit_on_error=True, logger=log, topic="t")
    for b in batches:
        tracker.add(b)
    return tracker


def test_out_of_order_settles_record_the_prefix_only():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(b, True) == (True, {})
    assert tracker.settle(a, True) == (True, {0: 19})
    assert tracker.settle(a, True) == (False, {})  # a second settle changes nothing


def test_a_part_records_up_to_its_offsets_and_nothing_after_in_this_run():
    a, b = batch((0, 0, 9), (1, 0, 9)), batch((0, 10, 19), (1, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(a, True, {0: 4}) == (True, {0: 4})  # partition 1 left out: nothing
    assert tracker.unsettled == 1
    assert tracker.settle(b, True) == (True, {})  # both partitions stop at the part
    later = batch((0, 20, 29))
    tracker.add(later)
    assert tracker.settle(later, True) == (True, {})


def test_a_part_covering_a_whole_range_records_it_and_keeps_the_partition_going():
    a, b = batch((0, 0, 9), (1, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(a, True, {0: 9, 1: 3}) == (True, {0: 9, 1: 3})
    assert tracker.settle(b, True) == (True, {0: 19})


def test_a_part_behind_a_pending_batch_waits_for_it():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    assert tracker.settle(b, True, {0: 12}) == (True, {})
    assert tracker.wait_partitions_settled([0], 0) is False  # a is still in flight
    assert tracker.settle(a, True) == (True, {0: 12})
    assert tracker.wait_partitions_settled([0], 0) is True


def test_a_waiter_sees_a_batch_settled_only_once_its_offsets_are_handed_over():
    """A revoke waits for the revoked partitions' batches, then flushes the committer: the
    settled batch's record must already be there (the CI failure this guards: the waiter ran
    between the settle and the record, flushed nothing, and the late record was dropped as
    "no longer assigned", so the partition's new owner read it all again)."""
    a = batch((0, 0, 9))
    tracker = tracked(a)
    handed_over: list[dict[int, int]] = []
    waiter_returned = threading.Event()
    seen_by_waiter: list[list[dict[int, int]]] = []

    def wait() -> None:
        assert tracker.wait_partitions_settled([0], 30)
        seen_by_waiter.append(list(handed_over))
        waiter_returned.set()

    def record_to(record: dict[int, int]) -> None:
        # the widest window: a waiter that could return now would have done so within 1 s
        waiter_returned.wait(1)
        handed_over.append(record)

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + 30
    while not tracker.cond._waiters and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.001)  # (polls for the waiter to be inside wait_for)
    assert tracker.cond._waiters, "the waiter never waited"  # type: ignore[attr-defined]
    assert tracker.settle(a, True, record_to=record_to) == (True, {0: 9})
    waiter.join(30)
    assert seen_by_waiter == [[{0: 9}]]


def test_record_to_is_not_called_when_nothing_became_recordable():
    a, b = batch((0, 0, 9)), batch((0, 10, 19))
    tracker = tracked(a, b)
    calls: list[dict[int, int]] = []
    tracker.settle(b, True, record_to=calls.append)
    assert calls == []
    tracker.settle(a, True, record_to=calls.append)
    assert calls == [{0: 19}]
