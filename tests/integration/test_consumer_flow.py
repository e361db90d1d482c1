"""rdk.Consumer flow: pause/resume, stats figures, asynchronous callbacks, out-of-range
policies and kafka-native's repeats/misses."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest
from helpers import Collector, produce, stored, values, wait_until

import rdk
from rdk.errors import KafkaError
from rdk.offsets import write_offset_file

OUT_OF_RANGE = {"_AUTO_OFFSET_RESET", "OFFSET_OUT_OF_RANGE"}


class StatsLog:
    """A stats_callback that keeps every report; wait(pred) waits for a matching one."""

    def __init__(self):
        self.reports = []
        self.cond = threading.Condition()

    def __call__(self, info):
        with self.cond:
            self.reports.append(info)
            self.cond.notify_all()

    def wait(self, pred, timeout=20.0, what="stats report"):
        with self.cond:
            start = len(self.reports)
            ok = self.cond.wait_for(lambda: any(pred(r) for r in self.reports[start:]), timeout)
            assert ok, f"no {what} in {len(self.reports) - start} reports; last: " \
                       f"{self.reports[-1] if self.reports else None}"
            return next(r for r in self.reports[start:] if pred(r))

    def next_reports(self, n, timeout=20.0):
        with self.cond:
            start = len(self.reports)
            assert self.cond.wait_for(lambda: len(self.reports) >= start + n, timeout)
            return self.reports[start:start + n]


# ---- pause / resume -----------------------------------------------------------------------------


def test_pause_stops_fetching_and_deliveries_and_resume_continues(broker, new_topic, tmp_path):
    topic = new_topic(broker, 2)
    for p in (0, 1):
        produce(broker, topic, p, values(500))
    stats = StatsLog()
    consumer = None

    def pause_on_first(info):
        if len(got.batches) == 1:
            consumer.pause()  # from inside the callback

    got = Collector(pause_on_first)
    consumer = rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got, stats_callback=stats,
                            statistics_interval_ms=100, max_messages_per_callback=50)
    with consumer:
        consumer.start()
        wait_until(lambda: consumer.paused, what="pause() from the first callback")
        # librdkafka's fetch queues drain (paused partitions' queued messages are dropped,
        # its position goes back to the last message handed out) and then stay empty:
        # nothing is fetched while paused.
        stats.wait(lambda r: all(s.fetchq_cnt == 0 and s.queued == 0
                                 for s in r.partitions.values()), what="drained fetch queues")
        for p in (0, 1):
            produce(broker, topic, p, values(100, start=500))
        reports = stats.next_reports(6)
        assert all(s.fetchq_cnt == 0 and s.queued == 0
                   for r in reports for s in r.partitions.values())
        assert len({r.waiting_local for r in reports}) == 1  # only rdk's own bounded buffer
        assert all(r.waiting_kafka > 0 for r in reports)  # the rest stays on the broker
        assert len(got.batches) == 1, "a batch was delivered while paused"
        consumer.resume()
        got.wait_for(1200)
    for p in (0, 1):
        assert got.offsets(p) == list(range(600))  # nothing lost, nothing twice
        assert stored(tmp_path, topic, p) == 599


def fetcher_ready_and_holding(report, topic: str, partitions: int) -> bool:
    """Every partition's fetcher is set up to fetch (active, its leader's connection UP and
    serving it) and nothing fetched is held locally (librdkafka's queue, rdk's buffers)."""
    raw = report.rdkafka_stats
    served = {tp["partition"] for b in raw.get("brokers", {}).values() if b.get("state") == "UP"
              for tp in (b.get("toppars") or {}).values() if tp.get("topic") == topic}
    return (len(report.partitions) == partitions and served >= set(range(partitions))
            and report.waiting_local == 0
            and all(s.fetch_state == "active" and s.fetchq_cnt == 0 and s.queued == 0
                    for s in report.partitions.values()))


def test_pause_before_start_holds_everything_until_resume(mock_cluster, tmp_path):
    """Paused before start: once every partition's fetcher is set up (its broker connection
    serving it), nothing fetched is held, and three more statistics reports say the same,
    nothing has been delivered. Every batch also records whether the consumer was paused
    when it was delivered, so a delivery at any moment before resume() fails the test."""
    mock_cluster.create_topic("prepause", 2)
    for p in (0, 1):
        produce(mock_cluster, "prepause", p, values(20))
    paused_at_delivery: list[bool] = []
    got = Collector(lambda info: paused_at_delivery.append(c.paused))
    stats = StatsLog()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "prepause", tmp_path, got,
                      stats_callback=stats, statistics_interval_ms=100) as c:
        c.pause()
        c.start()
        stats.wait(lambda r: fetcher_ready_and_holding(r, "prepause", 2),
                   what="fetchers set up, holding nothing")
        reports = stats.next_reports(3)
        assert all(fetcher_ready_and_holding(r, "prepause", 2) for r in reports), reports
        assert got.messages == [] and c.paused
        c.resume()
        got.wait_for(40)
    assert sorted(got.offsets(0)) == list(range(20)) == sorted(got.offsets(1))
    assert len(got.messages) == 40  # nothing twice
    assert paused_at_delivery and not any(paused_at_delivery), "a batch was delivered while paused"


def test_pause_and_resume_from_another_thread_in_the_batch_iterator(mock_cluster, tmp_path):
    """The iterator waits while paused: another thread resumes only once a stats report
    shows nothing queued in librdkafka while messages are held back: fetched and buffered
    by rdk (the whole topic may arrive in one fetch before the pause) or not fetched yet,
    and it sets ``resumed`` before resume(), so a batch yielded before is caught."""
    mock_cluster.create_topic("itpause", 1)
    produce(mock_cluster, "itpause", 0, values(40))
    stats = StatsLog()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "itpause", tmp_path,
                      max_messages_per_callback=10, stats_callback=stats,
                      statistics_interval_ms=100) as c:
        it = c.batches(timeout=10)
        first = next(it)
        c.pause()
        resumed = threading.Event()
        errors: list[BaseException] = []  # the resuming thread's failure, re-raised below

        def resume():
            try:
                stats.wait(lambda r: all(s.hi_offset == 40 and s.fetchq_cnt == 0
                                         and s.queued == 0
                                         and (s.buffered > 0 or s.next_offset < 40)
                                         for s in r.partitions.values()),
                           what="a report with messages held back by the pause")
            except BaseException as e:
                errors.append(e)
            resumed.set()
            c.resume()

        resumer = threading.Thread(target=resume)
        resumer.start()
        rest = []
        for b in it:  # waits while paused, then continues
            assert resumed.is_set(), "a batch was yielded while paused"
            rest.extend(m.offset for m in b.messages)
            if rest[-1] == 39:
                break
        resumer.join(30)
        if errors:
            raise errors[0]
    assert [m.offset for m in first.messages] + rest == list(range(40))


# ---- stats --------------------------------------------------------------------------------------


def test_stats_figures_match_produced_counts(broker, new_topic, tmp_path):
    topic = new_topic(broker, 3)
    counts = {0: 300, 1: 500, 2: 200}
    for p, n in counts.items():
        produce(broker, topic, p, values(n))
    gate = threading.Event()

    def hold_first(info):
        if len(got.batches) == 1:
            gate.wait(30)

    got = Collector(hold_first)
    stats = StatsLog()
    c = rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got, stats_callback=stats,
                     statistics_interval_ms=100, max_messages_per_callback=100,
                     num_workers=2, worker_slot=0)  # owns partitions 0 and 2 only
    with c:
        assert c.start() == [0, 2]
        got.wait_for(1)
        handed = len(got.messages)
        mine = counts[0] + counts[2]
        # While the first callback is held, everything else is on the broker or buffered.
        r = stats.wait(lambda r: r.waiting_kafka + r.waiting_local == mine - handed
                       and r.kafka_log_size == mine, what="figures adding up")
        assert set(r.partitions) == {0, 2}  # only this worker's slice
        for p in (0, 2):
            assert r.partitions[p].kafka_log_size == counts[p]
            assert r.partitions[p].hi_offset == counts[p]
        assert r.waiting_local > 0
        assert isinstance(r.rdkafka_stats, dict) and r.rdkafka_stats["type"] == "consumer"
        gate.set()
        got.wait_for(mine)
        r = stats.wait(lambda r: r.waiting_kafka == 0 and r.waiting_local == 0,
                       what="everything consumed")
        assert r.kafka_log_size == mine
    assert c.last_stats is not None


# ---- asynchronous callbacks -----------------------------------------------------------------------


class RecordingStore:
    """An offset store that remembers every commit."""

    def __init__(self):
        self.commits = []

    def read(self, partitions):
        return {}

    def commit(self, offsets):
        self.commits.append(dict(offsets))


def test_futures_completing_out_of_order_record_offsets_in_order(mock_cluster):
    mock_cluster.create_topic("futures", 1)
    produce(mock_cluster, "futures", 0, values(30))
    futures = []
    store = RecordingStore()

    def receive(info):
        f = concurrent.futures.Future()
        futures.append((f, info))
        return f

    got = Collector(receive)
    with rdk.Consumer(mock_cluster.bootstrap_servers, "futures", None, got, offset_store=store,
                      max_messages_per_callback=10) as c:
        c.start()
        got.wait_for(30)
        assert len(futures) >= 3
        for f, _ in reversed(futures[1:]):  # every later batch completes first
            f.set_result(None)
        assert c._shared.progress.committer.flush(5)
        assert store.commits == []  # the first batch is still in flight
        futures[0][0].set_result(None)
        assert c._shared.progress.committer.flush(5)
        assert store.commits[-1] == {0: 29}
    seen = [o[0] for o in store.commits]
    assert seen == sorted(seen)


def test_awaitables_completing_out_of_order_record_offsets_in_order(mock_cluster):
    mock_cluster.create_topic("aio", 1)
    produce(mock_cluster, "aio", 0, values(30))
    store = RecordingStore()
    gates: list[asyncio.Event] = []
    loops = []

    async def slow_then_fast(info):
        loops.append(asyncio.get_running_loop())
        gate = asyncio.Event()
        gates.append(gate)
        if info.messages[0].offset == 0:
            await gate.wait()  # the first batch finishes last

    got = Collector(slow_then_fast)
    with rdk.Consumer(mock_cluster.bootstrap_servers, "aio", None, got, offset_store=store,
                      max_messages_per_callback=10) as c:
        c.start()
        got.wait_for(30)
        wait_until(lambda: c._shared.progress.tracker.unsettled == 1, what="later batches settled")
        assert c._shared.progress.committer.flush(5)
        assert store.commits == []
        loops[0].call_soon_threadsafe(gates[0].set)
        wait_until(lambda: store.commits and store.commits[-1] == {0: 29}, what="offset 29 stored")
    assert len(set(map(id, loops))) == 1  # the consumer's own loop, in its own thread


def test_awaitables_run_on_the_given_loop(mock_cluster, tmp_path):
    mock_cluster.create_topic("userloop", 1)
    produce(mock_cluster, "userloop", 0, values(5))
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    ran_on = []

    async def receive(info):
        ran_on.append(asyncio.get_running_loop())

    try:
        got = Collector(receive)
        with rdk.Consumer(mock_cluster.bootstrap_servers, "userloop", tmp_path, got, loop=loop) as c:
            c.start()
            got.wait_for(5)
            wait_until(lambda: stored(tmp_path, "userloop", 0) == 4, what="offset 4 stored")
        assert ran_on and all(lp is loop for lp in ran_on)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(5)
        loop.close()


def test_a_failed_future_counts_as_a_failed_batch(mock_cluster, tmp_path):
    mock_cluster.create_topic("ffail", 1)
    produce(mock_cluster, "ffail", 0, values(20))
    pool = concurrent.futures.ThreadPoolExecutor(2)

    ok_last = []

    def work(info):
        if info.messages[-1].offset >= 10:  # from the batch holding offset 10 on, all fail
            raise RuntimeError("async failure")
        ok_last.append(info.messages[-1].offset)

    got = Collector(lambda info: pool.submit(work, info))
    with rdk.Consumer(mock_cluster.bootstrap_servers, "ffail", tmp_path, got,
                      max_messages_per_callback=10, commit_on_error=False) as c:
        c.start()
        got.wait_for(20)
        wait_until(lambda: c._shared.progress.tracker.unsettled == 0, what="both batches settled")
    pool.shutdown()
    assert stored(tmp_path, "ffail", 0) == (max(ok_last) if ok_last else None)


# ---- out of range, repeats and misses ------------------------------------------------------------


@pytest.mark.parametrize("policy", ["earliest", "latest", "error"])
def test_out_of_range_offset_follows_the_policy(broker, new_topic, tmp_path, policy):
    topic = new_topic(broker, 1)
    produce(broker, topic, 0, values(10))
    write_offset_file(tmp_path, topic, 0, 999)  # beyond the log end (e.g. a recreated topic)
    got = Collector()
    stats = StatsLog()
    c = rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got, on_offset_out_of_range=policy,
                     stats_callback=stats, statistics_interval_ms=100)
    if policy == "error":
        with pytest.raises(KafkaError) as ei:
            c.run()
        assert ei.value.name in OUT_OF_RANGE
        assert c.closed and got.messages == []
        assert stored(tmp_path, topic, 0) == 999  # untouched
        return
    with c:
        c.start()
        if policy == "earliest":
            got.wait_for(10)
            assert got.offsets() == list(range(10))
        else:
            # produce only once the position was reset to the end (else "latest" skips them)
            stats.wait(lambda r: r.partitions[0].next_offset == 10, what="the reset to the end")
            produce(broker, topic, 0, values(3, start=10))
            got.wait_for(3)
            assert got.offsets() == [10, 11, 12]
    assert got.batches[0].repeats == 1  # an offset below the expected 1000
    assert got.batches[0].misses == 0
    assert stored(tmp_path, topic, 0) == got.offsets()[-1]


def test_out_of_range_error_ends_the_batch_iterator(mock_cluster, tmp_path):
    mock_cluster.create_topic("oor-iter", 1)
    produce(mock_cluster, "oor-iter", 0, values(5))
    write_offset_file(tmp_path, "oor-iter", 0, 500)
    with rdk.Consumer(mock_cluster.bootstrap_servers, "oor-iter", tmp_path,
                      on_offset_out_of_range="error") as c, pytest.raises(KafkaError) as ei:
        for _ in c.batches(timeout=20):
            pass
    assert ei.value.name in OUT_OF_RANGE and "oor-iter[0]" in str(ei.value)


def test_misses_count_messages_deleted_by_retention_while_stopped(mock_cluster, tmp_path):
    # The mock cluster keeps about 5 MiB per partition: producing more deletes old messages.
    mock_cluster.create_topic("retention", 1)
    produce(mock_cluster, "retention", 0, values(10))
    got = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "retention", tmp_path, got) as c:
        c.start()
        got.wait_for(10)
        wait_until(lambda: stored(tmp_path, "retention", 0) == 9, what="offset 9 stored")
    big = b"x" * 100_000
    for _ in range(4):  # 8 MB in batches of 20 messages (one message set each)
        produce(mock_cluster, "retention", 0, [big] * 20)
    after = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "retention", tmp_path, after,
                      max_messages_per_callback=1000) as c:
        c.start()
        wait_until(lambda: after.messages and after.messages[-1].offset == 89, timeout=30,
                   what="the last message")
    first = after.messages[0].offset
    assert first > 10, "retention did not delete the unread messages"
    assert sum(b.misses for b in after.batches) == first - 10
    assert sum(b.repeats for b in after.batches) == 0
    assert after.offsets() == list(range(first, 90))
