"""The consumer's settle path without a broker: ``Batch.commit()`` -> ``Progress.settle`` ->
the one SettlementTracker (keys (topic, partition)) -> the committer -> the offset store;
``abandon``, ``wait_settled``, ``flush``, ``close``, ``free``, ``starts`` and
``TopicStores``.

The store is an application's OffsetStore (a dict behind ``read``/``commit``: the
interface is rdk's public API), the committer rdk's own thread."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from rdk.consumer._batch import Batch
from rdk.consumer._progress import Progress, TopicStores
from rdk.consumer._tracker import SettlementTracker, is_pending
from rdk.errors import ClosedError

LOGGER = "rdk.test.progress"
log = logging.getLogger(LOGGER)


class DictStore:
    """An application's OffsetStore keyed (topic, partition): what was committed, in order."""

    def __init__(self, stored: dict | None = None, fail: int = 0) -> None:
        self.stored = dict(stored or {})
        self.commits: list[dict] = []
        self.fail = fail  # commits that raise before the first that works
        self.closed = 0
        self.reads: list[list] = []

    def read(self, keys):
        self.reads.append(list(keys))
        return {k: self.stored[k] for k in keys if k in self.stored}

    def commit(self, offsets) -> None:
        if self.fail:
            self.fail -= 1
            raise OSError("disk full")
        self.commits.append(dict(offsets))
        self.stored.update(offsets)

    def close(self) -> None:
        self.closed += 1


def _progress(settle_hook: list | None = None, commit_on_error: bool = True,
              store: DictStore | None = None) -> tuple[Progress, DictStore]:
    progress = Progress("orders", commit_on_error, log)
    store = store if store is not None else DictStore()
    progress.open(store)
    return progress, store


def _batch(progress: Progress, topic: str, *parts: tuple[int, int, int],
           track: bool = True) -> Batch:
    def settle(batch, ok, part=None, by_user=False):
        progress.settle(batch, ok, part, by_user)

    b = Batch([], 0, 0, topic, [(p, f, z, z - f + 1) for p, f, z in parts], settle)
    if track:
        progress.tracker.add(b)
    return b


@pytest.fixture
def closing():
    made: list[Progress] = []
    yield made
    for p in made:
        p.free(log)


def test_batch_commit_records_the_settled_prefix_through_the_committer(closing):
    progress, store = _progress()
    closing.append(progress)
    a = _batch(progress, "orders", (0, 0, 9), (1, 0, 4))
    b = _batch(progress, "orders", (0, 10, 19))
    c = _batch(progress, "refunds", (0, 0, 2))
    b.commit()
    assert progress.committer is not None and progress.committer.pending == {}
    a.commit()
    c.commit()
    assert progress.flush(time.monotonic() + 30)
    merged: dict = {}
    for commit in store.commits:
        merged.update(commit)
    assert merged == {("orders", 0): 19, ("orders", 1): 4, ("refunds", 0): 2}
    assert not is_pending(a) and not is_pending(b)
    a.commit()  # a second commit is harmless
    assert progress.tracker.unsettled == 0


def test_commit_through_records_up_to_the_part_only(closing):
    progress, store = _progress()
    closing.append(progress)
    a = _batch(progress, "orders", (0, 0, 9), (1, 0, 9))
    a.commit_through({0: 4})
    assert progress.flush(time.monotonic() + 30)
    assert store.stored == {("orders", 0): 4}


def test_a_batch_without_settle_hook_commits_nothing():
    b = Batch([], 0, 0, "t", [(0, 0, 1, 2)])
    b.commit()
    b.commit_through({0: 0})
    assert b._entries is None


def test_release_is_called_once_per_settled_or_abandoned_batch(closing):
    progress, _ = _progress()
    closing.append(progress)
    released: list[int] = []
    progress.release = lambda: released.append(1)
    a, b = _batch(progress, "orders", (0, 0, 0)), _batch(progress, "orders", (0, 1, 1))
    progress.settle(a, True, None, False)
    progress.settle(a, True, None, False)  # not pending any more: no release
    assert released == [1]
    progress.abandon(b)
    progress.abandon(b)
    assert released == [1, 1]
    untracked = _batch(progress, "orders", (0, 2, 2), track=False)
    progress.settle(untracked, True, None, False)
    progress.abandon(untracked)
    assert released == [1, 1]


def test_settle_and_abandon_without_release_hook(closing):
    progress, _ = _progress()
    closing.append(progress)
    a, b = _batch(progress, "orders", (0, 0, 0)), _batch(progress, "orders", (0, 1, 1))
    progress.settle(a, True, None, False)
    progress.abandon(b)
    assert progress.tracker.unsettled == 0


def test_commit_after_close_raises_closed_error_naming_the_offsets(closing):
    progress, store = _progress()
    closing.append(progress)
    a = _batch(progress, "orders", (0, 0, 9), (2, 5, 7))
    done = _batch(progress, "orders", (1, 0, 0))
    done.commit()
    assert progress.close(time.monotonic() + 30) is None
    with pytest.raises(ClosedError) as info:
        a.commit()
    assert str(info.value) == (
        "batch.commit(): this Consumer of 'orders' is stopped, so this batch's offsets "
        "{0: (0, 9), 2: (5, 7)} were not recorded; it is delivered again after a restart")
    done.commit()  # settled before: no error
    progress.settle(a, True, None, False)  # not the user's commit: no error, nothing recorded
    assert store.stored == {("orders", 1): 0}


def test_settle_without_a_committer_tracks_only():
    progress = Progress("orders", True, log)
    a = _batch(progress, "orders", (0, 0, 3))
    a.commit()
    assert progress.tracker.unsettled == 0 and progress.flush(time.monotonic())
    assert progress.close(time.monotonic()) is None
    progress.free(log)


def test_without_commit_on_error_a_failed_batch_stops_its_partition(closing, caplog):
    progress, store = _progress(commit_on_error=False)
    closing.append(progress)
    a, b = _batch(progress, "orders", (0, 0, 4)), _batch(progress, "orders", (0, 5, 9))
    caplog.set_level(logging.WARNING, LOGGER)
    progress.settle(a, False, None, False)
    b.commit()
    assert progress.flush(time.monotonic() + 30)
    assert store.commits == []
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "orders[0]: a batch failed and commit_on_error=False, so no offset after the last "
        "recorded one is recorded in this run; it is delivered again after a restart"]


def test_wait_settled_waits_for_the_batches_named_or_all(closing):
    progress, _ = _progress()
    closing.append(progress)
    a = _batch(progress, "orders", (0, 0, 0))
    b = _batch(progress, "refunds", (1, 0, 0))
    assert not progress.wait_settled(time.monotonic() + 0.05)
    assert not progress.wait_settled(time.monotonic() + 0.05, [("orders", 0)])
    assert progress.wait_settled(time.monotonic(), [("orders", 1), ("refunds", 0)])
    a.commit()
    assert progress.wait_settled(time.monotonic(), [("orders", 0)])
    assert not progress.wait_settled(time.monotonic())
    timer = threading.Timer(0.3, b.commit)
    timer.start()
    assert progress.wait_settled(time.monotonic() + 60)
    timer.join()


def test_wait_settled_gives_up_when_while_waiting_says_so(closing):
    progress, _ = _progress()
    closing.append(progress)
    _batch(progress, "orders", (0, 0, 0))
    calls: list[int] = []

    def while_waiting() -> bool:
        calls.append(1)
        return len(calls) == 3

    assert not progress.wait_settled(time.monotonic() + 60, None, while_waiting)
    assert len(calls) == 3
    calls.clear()
    assert not progress.wait_settled(time.monotonic() + 60, [("orders", 0)], while_waiting)
    assert len(calls) == 3


def test_flush_and_close_report_offsets_not_stored(caplog):
    store = DictStore(fail=10**9)
    progress, _ = _progress(store=store)
    a = _batch(progress, "orders", (3, 0, 6))
    a.commit()
    caplog.set_level(logging.WARNING, LOGGER)
    assert progress.flush(time.monotonic() + 0.2) is False
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
            and r.getMessage().startswith("consumer of")] == [
        "consumer of orders: offsets {('orders', 3): 6} not committed in time"]
    assert progress.close(time.monotonic() + 0.2) == (
        "offsets {('orders', 3): 6} were not stored: disk full")
    progress.free(log)


def test_flush_with_a_deadline_passed_says_done_when_nothing_is_pending(closing):
    progress, store = _progress()
    closing.append(progress)
    assert progress.flush(time.monotonic() - 5) is True
    _batch(progress, "orders", (0, 0, 0)).commit()
    assert progress.flush(time.monotonic() + 30) is True
    assert store.stored == {("orders", 0): 0}


def test_close_stops_recording_and_stores_what_was_recorded():
    progress, store = _progress()
    a, b = _batch(progress, "orders", (0, 0, 0)), _batch(progress, "orders", (0, 1, 1))
    a.commit()
    assert progress.close(time.monotonic() + 30) is None
    assert progress.tracker.closed
    progress.settle(b, True, None, False)
    assert store.stored == {("orders", 0): 0}
    progress.free(log)


def test_free_closes_each_store_with_close_and_logs_a_failing_one(caplog):
    progress, store = _progress()

    class Failing:
        def close(self) -> None:
            raise OSError("gone")

    class NoClose:
        close = None

    caplog.set_level(logging.DEBUG, LOGGER)
    progress.free(log, store, NoClose(), Failing(), object(), store)
    assert store.closed == 2
    [rec] = [r for r in caplog.records if r.name == LOGGER]
    assert rec.getMessage() == "offset_store.close() failed" and rec.exc_info[0] is OSError
    assert progress.committer is not None
    progress.committer._thread.join(30)  # close(0) told it to end without waiting
    assert not progress.committer._thread.is_alive()
    Progress("t", True, log).free(log, store)  # without a committer
    assert store.closed == 3


def test_starts_gives_the_next_offsets_and_the_partitions_without_any():
    progress = Progress("orders", True, log)
    progress.store = DictStore({("orders", 0): 41, ("orders", 2): -1, ("refunds", 1): 0})
    keys = [("orders", 0), ("orders", 1), ("orders", 2), ("refunds", 1), ("refunds", 3)]
    assert progress.starts(keys) == (
        {("orders", 0): 42, ("orders", 2): 0, ("refunds", 1): 1},
        {"orders": [1], "refunds": [3]})
    assert progress.starts([]) == ({}, {})
    assert progress.store.reads == [keys]


@pytest.mark.parametrize("bad", [-2, 2**63 - 1, True, 1.0, "3"])
def test_starts_refuses_a_stored_value_that_is_no_offset(bad):
    progress = Progress("orders", True, log)
    progress.store = DictStore({("orders", 5): bad})
    with pytest.raises(ValueError) as info:
        progress.starts([("orders", 5)])
    assert str(info.value) == (
        f"offset_store.read() of DictStore gave {bad!r} for orders partition 5; expected the "
        f"last processed offset, an int in -1..{2**63 - 2}")
    progress.store = DictStore({("orders", 5): 2**63 - 2})
    assert progress.starts([("orders", 5)]) == ({("orders", 5): 2**63 - 1}, {})


def test_starts_names_the_store_behind_a_topic_keyed_view():
    class MyStore:
        def read(self, partitions):
            return {p: "x" for p in partitions}

    progress = Progress("orders", True, log)
    progress.store = TopicStores({"orders": MyStore()})
    with pytest.raises(ValueError, match=r"^offset_store.read\(\) of MyStore gave 'x'"):
        progress.starts([("orders", 0)])


def test_one_tracker_keys_batches_by_topic_and_counts_what_is_unsettled():
    trackers = SettlementTracker(True, log)
    a = Batch([], 0, 0, "a", [(0, 0, 1, 2)])
    b = Batch([], 0, 0, "b", [(0, 0, 1, 2)])
    c = Batch([], 0, 0, "b", [(1, 5, 5, 1)])
    for x in (a, b, c):
        trackers.add(x)
    assert trackers.unsettled == 3
    assert trackers.settle(b, True) == (True, {("b", 0): 1})
    assert trackers.settle(c, True, {1: 4}) == (True, {("b", 1): 4})
    assert trackers.abandon(a) is True and trackers.abandon(a) is False
    assert trackers.unsettled == 0
    got: list = []
    d = Batch([], 0, 0, "b", [(0, 2, 3, 2)])
    trackers.add(d)
    assert trackers.settle(d, True, None, got.append) == (True, {("b", 0): 3})
    assert got == [{("b", 0): 3}]


def _two_topics(partition_b: int) -> tuple[SettlementTracker, Batch, Batch]:
    """A tracker holding batch a (topic "a", partition 0) and b (topic "b", ``partition_b``)."""
    trackers = SettlementTracker(True, log)
    a = Batch([], 0, 0, "a", [(0, 0, 1, 2)])
    b = Batch([], 0, 0, "b", [(partition_b, 0, 1, 2)])
    trackers.add(a)
    trackers.add(b)
    return trackers, a, b


def test_the_tracker_waits_for_all_topics_or_the_partitions_named():
    trackers, a, b = _two_topics(1)
    assert not trackers.wait_settled(0.01)
    assert not trackers.wait_partitions_settled([("a", 1), ("b", 1)], 0.01)
    assert trackers.wait_partitions_settled([("a", 1), ("b", 0), ("c", 0)], 0)
    trackers.settle(b, True)
    assert trackers.wait_partitions_settled([("b", 1)], 0)
    assert not trackers.wait_settled(0)
    trackers.settle(a, True)
    assert trackers.wait_settled(0) and trackers.wait_partitions_settled([("a", 0)], 0)


def test_topic_stores_route_by_topic(tmp_path):
    class PartitionStore:
        def __init__(self) -> None:
            self.data = {0: 5}

        def read(self, partitions):
            return {p: self.data[p] for p in partitions if p in self.data}

        def commit(self, offsets) -> None:
            self.data.update(offsets)

    inner = PartitionStore()
    view = TopicStores({"t": inner})
    assert view.name == "PartitionStore"
    assert view.read([("t", 0), ("t", 1)]) == {("t", 0): 5}
    view.commit({("t", 1): 9})
    assert inner.data == {0: 5, 1: 9}

    class BadStore(PartitionStore):
        def read(self, partitions):
            return [1]

    with pytest.raises(TypeError) as info:
        TopicStores({"t": BadStore()}).read([("t", 0)])
    assert str(info.value) == ("offset_store.read() of BadStore must return a dict "
                               "{partition: last processed offset}, got list")
    files = TopicStores.files(tmp_path, ["a", "b"])
    assert files.name == "FileOffsetStore" and files.read([("a", 0)]) == {}
    files.commit({("a", 0): 3, ("b", 1): 4, ("a", 2): 6})
    assert files.read([("a", 0), ("a", 2), ("b", 1), ("b", 7)]) == {
        ("a", 0): 3, ("a", 2): 6, ("b", 1): 4}
    assert files.read([("b", 1)]) == {("b", 1): 4}
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".offset") == [
        "a-0.offset", "a-2.offset", "b-1.offset"]  # kafka-native's file per (topic, partition)
    assert (tmp_path / "a-2.offset").read_text() == "6\n"


def test_without_commit_on_error_a_processed_batch_is_still_recorded(closing):
    progress, store = _progress(commit_on_error=False)
    closing.append(progress)
    a = _batch(progress, "orders", (0, 0, 4))
    b = _batch(progress, "orders", (0, 5, 9))
    a.commit()
    progress.settle(b, True, None, False)
    assert progress.flush(time.monotonic() + 30)
    assert store.stored == {("orders", 0): 9}


def test_abandon_counts_against_the_batch_s_own_topic():
    trackers, a, b = _two_topics(0)
    assert trackers.abandon(a) is True
    assert trackers.unsettled == 1 and trackers.wait_partitions_settled([("a", 0)], 0)
    assert not trackers.wait_partitions_settled([("b", 0)], 0)  # same partition, other topic
    assert trackers.settle(b, True) == (True, {("b", 0): 1})
    assert trackers.wait_partitions_settled([("a", 0)], 0) and trackers.wait_settled(0)


def test_the_tracker_waits_for_a_settle_from_another_thread():
    trackers, a, b = _two_topics(3)
    settles = [threading.Timer(0.2, trackers.settle, (a, True)),
               threading.Timer(0.2, trackers.settle, (b, True))]
    settles[0].start()
    assert trackers.wait_partitions_settled([("a", 0)], 60)
    settles[1].start()
    assert trackers.wait_settled(60)
    for t in settles:
        t.join()


def test_open_builds_the_committer_with_the_consumer_s_pacing(closing):
    progress, store = _progress()
    closing.append(progress)
    committer = progress.committer
    assert progress.store is store and committer is not None and committer.store is store
    assert committer._thread.name == "rdk-offsets-orders" and committer.logger is log
    assert (committer.min_interval, committer.max_cpu_share) == (0.1, 0.05)
    assert progress.starts([("orders", 0)]) == ({}, {"orders": [0]})


def test_with_commit_on_error_a_failed_batch_is_recorded(closing):
    progress, store = _progress(commit_on_error=True)
    closing.append(progress)
    progress.settle(_batch(progress, "orders", (0, 0, 4)), False, None, False)
    assert progress.flush(time.monotonic() + 30)
    assert store.stored == {("orders", 0): 4}
