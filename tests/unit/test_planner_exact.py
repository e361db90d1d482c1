"""rdk.spark.planner's logic without a broker or a Spark session: split_ranges (minPartitions,
maxRecordsPerPartition), OffsetRange, and the Planner's partition listing, retries, end
offsets, timestamp positions and start/end resolution, with librdkafka's lookups replaced
by fakes. Exact ranges, offsets, calls and error messages (which name the option)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import ClassVar

import pytest

pytest.importorskip("pyspark")

from rdk._binding import ERROR_CODES
from rdk._binding import partitions as partitions_mod
from rdk.errors import ConfigError, KafkaError
from rdk.spark import planner as planner_mod
from rdk.spark.options import EARLIEST, LATEST, ReadOptions, Timestamps
from rdk.spark.planner import NoOffsetForTimestamp, OffsetRange, Planner, _share, split_ranges

UNKNOWN = ERROR_CODES["UNKNOWN_TOPIC_OR_PART"]
TIMED_OUT = ERROR_CODES["_TIMED_OUT"]
EOF = ERROR_CODES["_PARTITION_EOF"]
TOO_LARGE = ERROR_CODES["MSG_SIZE_TOO_LARGE"]
LEADER = ERROR_CODES["LEADER_NOT_AVAILABLE"]


def ranges(spec, min_partitions=None, max_records=None):
    starts = {tp: a for tp, (a, _) in spec.items()}
    ends = {tp: b for tp, (_, b) in spec.items()}
    return [r.value for r in split_ranges(starts, ends, min_partitions, max_records)]


# -- split_ranges ------------------------------------------------------------------------
def test_share_rounds_half_up_and_is_at_least_one():
    assert _share(5, 10, 3) == 2  # 1.5 -> 2 (not banker's 2... and not 1)
    assert _share(1, 4, 2) == 1  # 0.5 -> 1
    assert _share(3, 8, 2) == 1  # 0.75 -> 1
    assert _share(1, 8, 2) == 1  # 0.25 -> 0 -> at least 1
    assert _share(9, 10, 10) == 9
    assert _share(7, 10, 10) == 7
    assert _share(5, 10, 5) == 3  # 2.5 -> 3


def test_one_range_per_partition_with_data_in_sorted_order():
    spec = {("b", 0): (3, 9), ("a", 1): (0, 4), ("a", 0): (7, 7), ("a", 2): (5, 4)}
    assert ranges(spec) == [("a", 1, 0, 4), ("b", 0, 3, 9)]
    assert ranges(spec, min_partitions=2) == [("a", 1, 0, 4), ("b", 0, 3, 9)]
    assert ranges({}, 4) == []


def test_min_partitions_cuts_the_big_ranges_in_proportion():
    assert ranges({("t", 0): (10, 14)}, 4) == [("t", 0, 10, 11), ("t", 0, 11, 12), ("t", 0, 12, 13),
                                              ("t", 0, 13, 14)]
    assert ranges({("t", 0): (0, 10)}, 3) == [("t", 0, 0, 3), ("t", 0, 3, 6), ("t", 0, 6, 10)]
    # the small one stays whole, out of the proportion: 3 pieces for the big one
    assert ranges({("a", 0): (1, 2), ("b", 0): (1, 1001)}, 4) == [
        ("a", 0, 1, 2), ("b", 0, 1, 334), ("b", 0, 334, 667), ("b", 0, 667, 1001)]
    assert ranges({("a", 0): (0, 4), ("b", 0): (0, 20)}, 4) == [
        ("a", 0, 0, 4), ("b", 0, 0, 6), ("b", 0, 6, 13), ("b", 0, 13, 20)]
    # the small one whole; its share is taken out, the rest shared again by size
    assert ranges({("a", 0): (0, 30), ("b", 0): (0, 10), ("c", 0): (0, 1)}, 6) == [
        ("a", 0, 0, 7), ("a", 0, 7, 14), ("a", 0, 14, 22), ("a", 0, 22, 30),
        ("b", 0, 0, 10), ("c", 0, 0, 1)]
    # two big ones: 5 pieces shared 3 / 2 (4 / 2 before the small one is taken out)
    assert ranges({("a", 0): (0, 30), ("b", 0): (0, 20), ("c", 0): (0, 1)}, 6) == [
        ("a", 0, 0, 10), ("a", 0, 10, 20), ("a", 0, 20, 30),
        ("b", 0, 0, 10), ("b", 0, 10, 20), ("c", 0, 0, 1)]


def test_more_pieces_than_offsets_gives_no_empty_range():
    assert ranges({("t", 0): (5, 7)}, 5) == [("t", 0, 5, 6), ("t", 0, 6, 7)]


def test_max_records_caps_every_piece():
    assert ranges({("t", 0): (0, 10)}, None, 3) == [
        ("t", 0, 0, 2), ("t", 0, 2, 4), ("t", 0, 4, 7), ("t", 0, 7, 10)]
    assert ranges({("t", 0): (0, 9)}, None, 3) == [("t", 0, 0, 3), ("t", 0, 3, 6), ("t", 0, 6, 9)]
    assert ranges({("t", 0): (0, 9)}, None, 9) == [("t", 0, 0, 9)]
    # minPartitions asks more pieces than the cap needs: minPartitions wins
    assert ranges({("t", 0): (0, 8)}, 4, 5) == [
        ("t", 0, 0, 2), ("t", 0, 2, 4), ("t", 0, 4, 6), ("t", 0, 6, 8)]
    assert ranges({("t", 0): (0, 8)}, 2, 3) == [("t", 0, 0, 2), ("t", 0, 2, 5), ("t", 0, 5, 8)]


def test_offset_range_fields_equality_hash_and_repr():
    r = OffsetRange("t", 2, 5, 9)
    assert (r.topic, r.partition, r.start, r.end, r.value) == ("t", 2, 5, 9, ("t", 2, 5, 9))
    assert repr(r) == "OffsetRange(t-2 [5, 9))"
    assert r == OffsetRange("t", 2, 5, 9) and r != OffsetRange("t", 2, 5, 10)
    assert r != ("t", 2, 5, 9)
    assert hash(r) == hash(("t", 2, 5, 9))


# -- the Planner with fakes --------------------------------------------------------------
class FakeClient:
    made: ClassVar[list] = []

    def __init__(self, kind, props):
        self.kind, self.props = kind, props
        self.rk = "rk"
        self.closed = 0
        self.topics: list = []
        self.metadata_calls: list = []
        FakeClient.made.append(self)

    def metadata(self, topic, timeout):
        self.metadata_calls.append((topic, timeout))
        return self.topics

    def close(self):
        self.closed += 1


class FakeTime:
    def __init__(self):
        self.now = 100.0
        self.step = 0.0
        self.sleeps: list = []

    def monotonic(self):
        self.now += self.step
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)


@pytest.fixture
def fake(monkeypatch):
    FakeClient.made = []
    clock = FakeTime()
    monkeypatch.setattr(planner_mod._binding, "Client", FakeClient)
    monkeypatch.setattr(planner_mod, "time", clock)
    return clock


def topic(name, n, error=None):
    return SimpleNamespace(name=name, partitions=list(range(n)), error=error)


def make(kafka=None, timeout=5.0, **kw):
    kw.setdefault("strategy", "subscribe")
    opts = ReadOptions(kafka={"bootstrap.servers": "b:1", **(kafka or {})}, **kw)
    return Planner(opts, timeout)


def test_init_makes_a_consumer_with_eof_and_no_auto_commit(fake):
    p = make({"fetch.wait.max.ms": "500"}, timeout=7.5)
    (c,) = FakeClient.made
    assert c.kind == "consumer"
    assert c.props == {"bootstrap.servers": "b:1", "fetch.wait.max.ms": "500",
                       "enable.partition.eof": True, "enable.auto.commit": "false"}
    assert p.timeout == 7.5 and p.read_committed is False and p.all_partitions == set()
    q = Planner(ReadOptions(kafka={"bootstrap.servers": "b", "isolation.level": "read_committed",
                                   "enable.auto.commit": "true"}, strategy="subscribe"))
    c2 = FakeClient.made[1]
    assert q.timeout == 30.0 and q.read_committed is True
    assert c2.props["fetch.wait.max.ms"] == "10" and c2.props["enable.auto.commit"] == "false"
    assert make({"isolation.level": "read_uncommitted"}).read_committed is False
    with q as same:
        assert same is q and c2.closed == 0
    assert c2.closed == 1
    p.close()
    assert c.closed == 1


def test_retrying_retries_retriable_errors_and_timeouts(fake, caplog):
    p = make(fetch_offset_retries=2, fetch_offset_retry_interval_ms=250)
    errors = [KafkaError(LEADER), KafkaError(TIMED_OUT, retriable=False)]
    calls: list = []

    def call():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return "ok"

    with caplog.at_level(logging.WARNING, logger="rdk.spark"):
        assert p._retrying("metadata", call) == "ok"
    assert len(calls) == 3 and fake.sleeps == [0.25, 0.25]
    assert [r.getMessage() for r in caplog.records] == [
        f"rdkafka: metadata failed ({KafkaError(LEADER)}); retry 1 of 2 in 250 ms "
        "(fetchOffset.numRetries, fetchOffset.retryIntervalMs)",
        f"rdkafka: metadata failed ({KafkaError(TIMED_OUT)}); retry 2 of 2 in 250 ms "
        "(fetchOffset.numRetries, fetchOffset.retryIntervalMs)"]


def test_retrying_gives_up_after_the_retries_and_on_other_errors(fake):
    p = make(fetch_offset_retries=1, fetch_offset_retry_interval_ms=0)
    calls: list = []

    def always(code):
        def call():
            calls.append(code)
            raise KafkaError(code)
        return call

    with pytest.raises(KafkaError) as ei:
        p._retrying("x", always(LEADER))
    assert ei.value.code == LEADER and calls == [LEADER, LEADER]
    calls.clear()
    with pytest.raises(KafkaError) as ei:
        p._retrying("x", always(UNKNOWN))
    assert ei.value.code == UNKNOWN and calls == [UNKNOWN]
    calls.clear()
    p0 = make(fetch_offset_retries=0)
    with pytest.raises(KafkaError):
        p0._retrying("x", always(LEADER))
    assert calls == [LEADER] and fake.sleeps == [0.0]


def test_subscribe_lists_the_topics_partitions_sorted(fake):
    p = make(topics=("b", "a"), timeout=2.0)
    c = FakeClient.made[0]
    c.topics = [topic("a", 2), topic("b", 3), topic("c", 1)]
    assert p.topic_partitions(missing_ok=False) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]
    assert c.metadata_calls == [(None, 2.0)]
    assert p.all_partitions == {("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)}


def test_subscribe_to_a_missing_topic(fake):
    p = make(topics=("a", "gone"))
    FakeClient.made[0].topics = [topic("a", 1), topic("gone", 0, error="UNKNOWN")]
    with pytest.raises(KafkaError) as ei:
        p.topic_partitions(missing_ok=False)
    assert ei.value.code == UNKNOWN and ei.value.context == "option 'subscribe': topic 'gone'"
    assert p.topic_partitions(missing_ok=True) == [("a", 0)]
    # a topic with an error but partitions is listed
    FakeClient.made[0].topics = [topic("a", 1), topic("gone", 2, error="x")]
    assert p.topic_partitions(missing_ok=False) == [("a", 0), ("gone", 0), ("gone", 1)]


def test_assign_checks_topics_and_partitions(fake):
    p = make(strategy="assign", assignment={"a": (2, 0), "b": (1,)})
    c = FakeClient.made[0]
    c.topics = [topic("a", 3), topic("b", 2)]
    assert p.topic_partitions(missing_ok=False) == [("a", 0), ("a", 2), ("b", 1)]
    c.topics = [topic("a", 3)]
    with pytest.raises(KafkaError) as ei:
        p.topic_partitions(missing_ok=False)
    assert ei.value.code == UNKNOWN and ei.value.context == "option 'assign': topic 'b'"
    assert p.topic_partitions(missing_ok=True) == [("a", 0), ("a", 2)]
    c.topics = [topic("a", 2), topic("b", 2)]
    with pytest.raises(KafkaError) as ei:
        p.topic_partitions(missing_ok=True)
    assert ei.value.code == UNKNOWN
    assert ei.value.context == "option 'assign': topic 'a' has 2 partitions, no partition 2"


def test_assign_ignores_the_worker_partition_count_check(fake):
    p = make(strategy="assign", assignment={"a": (0, 1, 2)}, num_workers=4, worker_slot=1)
    FakeClient.made[0].topics = [topic("a", 3)]
    assert p.topic_partitions(missing_ok=False) == [("a", 1)]
    assert p.all_partitions == {("a", 0), ("a", 1), ("a", 2)}


def test_pattern_matches_whole_names_and_skips_internal_topics(fake):
    p = make(strategy="subscribePattern", pattern="t.*")
    FakeClient.made[0].topics = [topic("t1", 1), topic("xt", 1), topic("t2", 2), topic("__t", 1),
                                 topic("t_", 1)]
    assert p.topic_partitions(missing_ok=False) == [("t1", 0), ("t2", 0), ("t2", 1), ("t_", 0)]
    p = make(strategy="subscribePattern", pattern="__.*")
    FakeClient.made[-1].topics = [topic("__consumer_offsets", 1)]
    assert p.topic_partitions(missing_ok=False) == []
    p = make(strategy="subscribePattern", pattern=None)
    FakeClient.made[-1].topics = [topic("a", 1)]
    assert p.topic_partitions(missing_ok=False) == []


def test_worker_slots_filter_and_need_enough_partitions(fake):
    p = make(topics=("a",), num_workers=2, worker_slot=1)
    c = FakeClient.made[0]
    c.topics = [topic("a", 5)]
    assert p.topic_partitions(missing_ok=False) == [("a", 1), ("a", 3)]
    assert len(p.all_partitions) == 5
    c.topics = [topic("a", 2)]
    assert p.topic_partitions(missing_ok=False) == [("a", 1)]
    c.topics = [topic("a", 1)]
    with pytest.raises(ConfigError) as ei:
        p.topic_partitions(missing_ok=False)
    assert str(ei.value) == ("rdkafka: topic 'a' has 1 partitions, fewer than numWorkers=2; "
                             "worker slots would be left idle")


def test_watermarks_per_topic_in_the_asked_order(fake, caplog, monkeypatch):
    p = make(timeout=3.0)
    seen: list = []

    def true_watermarks(client, t, parts, timeout):
        seen.append((client, t, parts, timeout))
        if t == "gone":
            raise KafkaError(UNKNOWN)
        if t == "bad":
            raise KafkaError(TOO_LARGE)
        return {q: (q, 10 * q + 5) for q in parts if q != 9}

    monkeypatch.setattr(planner_mod, "true_watermarks", true_watermarks)
    tps = [("b", 1), ("a", 0), ("b", 0), ("a", 9)]
    assert list(p.watermarks(tps).items()) == [(("b", 1), (1, 15)), (("a", 0), (0, 5)),
                                               (("b", 0), (0, 5))]
    c = FakeClient.made[0]
    assert seen == [(c, "b", [1, 0], 3.0), (c, "a", [0, 9], 3.0)]
    with pytest.raises(KafkaError):
        p.watermarks([("gone", 0)])
    with caplog.at_level(logging.WARNING, logger="rdk.spark"):
        assert p.watermarks([("gone", 0), ("a", 1)], missing_ok=True) == {("a", 1): (1, 15)}
    assert [r.getMessage() for r in caplog.records] == [
        f"rdkafka: topic 'gone' is gone (deleted since it was listed): {KafkaError(UNKNOWN)}"]
    with pytest.raises(KafkaError) as ei:
        p.watermarks([("bad", 0)], missing_ok=True)
    assert ei.value.code == TOO_LARGE


def test_watermarks_under_read_committed_use_the_stable_ends(fake):
    p = make({"isolation.level": "read_committed"})
    p._stable_ends = lambda t, parts: {q: (0, 100 + q) for q in parts}
    p._true_ends = lambda t, parts: pytest.fail("not the true ends")
    assert p.watermarks([("a", 1), ("a", 2)]) == {("a", 1): (0, 101), ("a", 2): (0, 102)}


class FakeFetcher:
    made: ClassVar[list] = []
    plan: ClassVar[list] = []

    def __init__(self, client, topic, max_messages):
        self.client, self.topic, self.max_messages = client, topic, max_messages
        self.started: list = []
        self.batches: list = []
        self.closed = False
        self.fetches: list = []
        FakeFetcher.made.append(self)
        if FakeFetcher.plan:
            self.batches = FakeFetcher.plan.pop(0)

    def start(self, p, off):
        self.started.append((p, off))

    def fetch(self, ms):
        self.fetches.append(ms)
        if self.batches:
            return self.batches.pop(0)
        return batch([])

    def close(self):
        self.closed = True


def batch(rows):
    """rows: (partition, offset, err, timestamp)."""
    return SimpleNamespace(n=len(rows), n_errors=sum(1 for r in rows if r[2]),
                           partition=[r[0] for r in rows], offset=[r[1] for r in rows],
                           err=[r[2] for r in rows], timestamp=[r[3] for r in rows])


@pytest.fixture
def fetcher(monkeypatch, fake):
    FakeFetcher.made = []
    FakeFetcher.plan = []
    monkeypatch.setattr(planner_mod, "Fetcher", FakeFetcher)
    monkeypatch.setattr(planner_mod, "error_text", lambda b, i: f"text of {i} in {b.n}")
    return FakeFetcher


def test_stable_ends_fetch_from_just_below_the_listed_end(fetcher, monkeypatch):
    p = make({"isolation.level": "read_committed"}, timeout=4.0)
    listed = {0: (3, 10), 1: (5, 5), 2: (0, 0)}
    asked: list = []

    def query(client, t, parts, timeout):
        asked.append((client, t, list(parts), timeout))
        return {q: listed[q] for q in parts}

    monkeypatch.setattr(planner_mod, "listed_watermarks", query)
    fetcher.plan = [[batch([(0, 7, 0, 0), (1, 5, EOF, 0)]), batch([(0, 8, EOF, 0), (2, 0, EOF, 0)])]]
    assert p._stable_ends("t", [0, 1, 2]) == {0: (3, 8), 1: (5, 5), 2: (0, 0)}
    c = FakeClient.made[0]
    assert asked == [(c, "t", [0, 1, 2], 4.0)]  # one lookup for every partition
    (f,) = fetcher.made
    assert (f.client, f.topic, f.max_messages) == (c, "t", 10000)
    assert f.started == [(0, 9), (1, 5), (2, 0)] and f.fetches == [100, 100] and f.closed


def test_stable_ends_fetch_error_and_timeout(fetcher, monkeypatch, fake):
    p = make(timeout=4.0)
    monkeypatch.setattr(planner_mod, "listed_watermarks",
                        lambda c, t, parts, timeout: dict.fromkeys(parts, (0, 4)))
    fetcher.plan = [[batch([(1, 0, 0, 0), (1, 0, TOO_LARGE, 0)])]]
    with pytest.raises(KafkaError) as ei:
        p._stable_ends("t", [1])
    e = ei.value
    assert (e.code, e.description, e.context) == (TOO_LARGE, "text of 1 in 2", "fetch t[1]")
    assert fetcher.made[0].closed
    fake.step = 1.0  # 1 s per clock read: the 4 s deadline passes on the 5th read
    fetcher.plan = [[batch([(2, 4, EOF, 0)])]]
    with pytest.raises(KafkaError) as ei:
        p._stable_ends("t", [3, 2, 1])
    assert ei.value.code == TIMED_OUT and ei.value.context == "last stable offsets of t [1, 3]"
    assert fetcher.made[1].closed and fetcher.made[1].fetches == [100, 100, 100, 100]


def test_record_timestamps_first_record_at_each_position(fetcher, fake):
    p = make(timeout=2.0)
    fetcher.plan = [
        [batch([(0, 5, 0, 1000), (0, 6, 0, 2000), (7, 1, 0, 5), (1, 0, EOF, 0)])],
        [batch([(0, 9, 0, 42)])],
    ]
    got = p.record_timestamps({("a", 0): 5, ("a", 1): 0, ("b", 0): 9})
    assert got == {("a", 0): 1000, ("a", 1): None, ("b", 0): 42}
    fa, fb = fetcher.made
    assert fa.client is FakeClient.made[0] and fb.client is FakeClient.made[0]
    assert (fa.topic, fa.max_messages, fa.started, fa.closed) == ("a", 100, [(0, 5), (1, 0)], True)
    assert (fb.topic, fb.started, fb.fetches, fb.closed) == ("b", [(0, 9)], [100], True)


def test_record_timestamps_error_and_timeout(fetcher, fake):
    p = make(timeout=2.0)
    fetcher.plan = [[batch([(0, 5, TOO_LARGE, 0)])]]
    with pytest.raises(KafkaError) as ei:
        p.record_timestamps({("a", 0): 5})
    e = ei.value
    assert (e.code, e.description, e.context) == (TOO_LARGE, "text of 0 in 1", "fetch a[0]")
    assert fetcher.made[0].closed
    fake.step = 1.0
    with pytest.raises(KafkaError) as ei:
        p.record_timestamps({("a", 0): 5})
    assert ei.value.code == TIMED_OUT and ei.value.context == "record timestamps of a"
    assert fetcher.made[1].fetches == [100, 100] and fetcher.made[1].closed


def test_offsets_for_times_asks_the_broker_once_per_call(fake, monkeypatch):
    p = make(timeout=2.5)
    calls: list = []
    # the planner's offsets_for_times is the binding's (rdk._binding.partitions)
    monkeypatch.setattr(partitions_mod, "partition_list", lambda items: ("tpl", list(items)))
    monkeypatch.setattr(partitions_mod, "partition_list_offsets",
                        lambda tpl, ctx: calls.append(("offsets", tpl, ctx)) or {("a", 0): 4})
    results = [TIMED_OUT, 0]
    monkeypatch.setattr(partitions_mod, "lib", SimpleNamespace(
        rd_kafka_offsets_for_times=lambda rk, tpl, ms: calls.append((rk, tpl, ms)) or results.pop(0)))
    assert p.offsets_for_times({}) == {}
    assert calls == []
    assert p.offsets_for_times({("a", 0): 123}) == {("a", 0): 4}
    tpl = ("tpl", [("a", 0, 123)])
    assert calls == [("rk", tpl, 2500), ("rk", tpl, 2500), ("offsets", tpl, "offsets for times of")]
    results[:] = [UNKNOWN]
    with pytest.raises(KafkaError) as ei:
        p.offsets_for_times({("a", 0): 1})
    assert ei.value.code == UNKNOWN and ei.value.context == "offsets_for_times"


# -- resolve -----------------------------------------------------------------------------
def planner_reading(tps, **kw):
    p = make(**kw)
    p.all_partitions = set(tps)
    return p


A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


def test_resolve_words_and_json(fake):
    p = planner_reading([A0, A1, B0])
    marks = {A0: (2, 9), A1: (0, 4), B0: (1, 1)}
    assert p.resolve("earliest", [A0, A1], "startingOffsets", marks) == {A0: 2, A1: 0}
    assert p.resolve("latest", [A0, A1], "endingOffsets", marks) == {A0: 9, A1: 4}
    assert p.resolve({"a": {0: EARLIEST, 1: 3}, "b": LATEST}, [A0, A1, B0], "startingOffsets",
                     marks) == {A0: 2, A1: 3, B0: 1}
    assert p.resolve({"a": 0}, [A0, A1], "startingOffsets", marks) == {A0: 0, A1: 0}


def test_resolve_looks_up_only_the_partitions_that_need_it(fake):
    p = planner_reading([A0, A1, B0])
    asked: list = []
    p.watermarks = lambda tps: asked.append(list(tps)) or {tp: (1, 7) for tp in tps}
    assert p.resolve({"a": {0: 5, 1: LATEST}, "b": {0: 3}}, [A0, A1, B0], "x") == {A0: 5, A1: 7, B0: 3}
    assert asked == [[A1]]
    assert p.resolve({"a": {0: 5, 1: 6}}, [A0, A1], "x") == {A0: 5, A1: 6}
    assert asked == [[A1]]  # nothing to look up
    assert p.resolve({"a": {0: 0, 1: EARLIEST}}, [A0, A1], "x") == {A0: 0, A1: 1}
    assert asked[-1] == [A1]  # offset 0 is an offset, not a word
    assert p.resolve("earliest", [A0], "x") == {A0: 1} and asked[-1] == [A0]


def test_every_partition_errors_name_the_option(fake):
    p = planner_reading([A0, A1])
    with pytest.raises(ConfigError) as ei:
        p.resolve({"b": 3}, [A0, A1], "startingOffsets", {})
    assert str(ei.value) == ("rdkafka option 'startingOffsets' gives topic 'b' an offset, but this "
                             "query reads no partition of it")
    with pytest.raises(ConfigError) as ei:
        p.resolve({"a": {0: 1, 1: 1, 5: 1}, "c": {0: 1}}, [A0, A1], "endingOffsets", {})
    assert str(ei.value) == ("rdkafka option 'endingOffsets' names a-5, which this query does not "
                             "read (unknown topic or partition)")
    p.all_partitions = {A0, A1, B0}
    with pytest.raises(ConfigError) as ei:
        p.resolve({"a": {0: 1}}, [B0, A1, A0], "endingOffsets", {})
    assert str(ei.value) == ("rdkafka option 'endingOffsets' must give an offset for every partition "
                             "read; missing a-1, b-0 (use -2 for earliest, -1 for latest)")
    with pytest.raises(ConfigError) as ei:
        p.resolve(Timestamps(by_partition={"a": {0: 1}}), [A0, A1], "startingOffsets", {})
    assert str(ei.value) == ("rdkafka option 'startingOffsetsByTimestamp' must give a timestamp for "
                             "every partition read; missing a-1")


def ts_planner(found, record_ts=None, strategy="error", marks=None):
    p = planner_reading([A0, A1, B0], by_timestamp_strategy=strategy)
    calls: list = []
    p.offsets_for_times = lambda stamps: calls.append(("oft", dict(stamps))) or dict(found)
    p.record_timestamps = lambda pos: calls.append(("rts", dict(pos))) or dict(record_ts or {})
    p.watermarks = lambda tps: calls.append(("wm", list(tps))) or dict(marks or {})
    return p, calls


def test_timestamps_resolve_to_the_brokers_offsets(fake):
    p, calls = ts_planner({A0: 4, A1: 6}, {A0: 1500, A1: 1000})
    assert p.resolve(Timestamps(everywhere=1000), [A0, A1], "startingOffsets") == {A0: 4, A1: 6}
    assert calls == [("oft", {A0: 1000, A1: 1000}), ("rts", {A0: 4, A1: 6})]
    p, calls = ts_planner({A0: 4, A1: 0}, {A0: 30, A1: None})
    assert p.resolve(Timestamps(by_partition={"a": {0: 30, 1: 40}}), [A0, A1],
                     "endingOffsets") == {A0: 4, A1: 0}
    assert calls == [("oft", {A0: 30, A1: 40}), ("rts", {A0: 4, A1: 0})]
    p, calls = ts_planner({A0: 4})
    assert p.resolve(Timestamps(), [A0], "startingOffsets") == {A0: 4}
    assert calls[0] == ("oft", {A0: 0})


def test_a_record_older_than_the_timestamp_is_no_answer(fake, caplog):
    p, calls = ts_planner({A0: 0, A1: 3}, {A0: 999, A1: 1000}, strategy="latest",
                          marks={A0: (0, 12)})
    with caplog.at_level(logging.WARNING, logger="rdk.spark"):
        assert p.resolve(Timestamps(everywhere=1000), [A0, A1], "startingOffsets") == {A0: 12, A1: 3}
    assert [r.getMessage() for r in caplog.records] == [
        "rdkafka: the broker answered offset 0 of a-0 for timestamp 1000, but that record's "
        "timestamp is 999; taken as no such offset"]
    assert calls[-1] == ("wm", [A0])


def test_no_offset_for_a_starting_timestamp(fake):
    p, calls = ts_planner({A0: -1, A1: 3, B0: -1}, {A1: 5000})
    with pytest.raises(NoOffsetForTimestamp) as ei:
        p.resolve(Timestamps(everywhere=1000), [A0, A1, B0], "startingOffsets")
    assert str(ei.value) == (
        "rdkafka option 'startingTimestamp': no offset of a-0 has a timestamp at or after 1000 "
        "(startingOffsetsByTimestampStrategy=error; set it to 'latest' to start such partitions at "
        "their end)")
    assert calls[1] == ("rts", {A1: 3})
    p, calls = ts_planner({A1: 3}, {})
    with pytest.raises(NoOffsetForTimestamp) as ei:
        p.resolve(Timestamps(by_partition={"a": 7}), [A0, A1], "startingOffsets")
    assert "option 'startingOffsetsByTimestamp': no offset of a-0 " in str(ei.value)
    assert " at or after 7 " in str(ei.value)


def test_no_offset_for_an_ending_timestamp_or_latest_strategy_is_the_end(fake):
    given = {A0: (0, 20), A1: (0, 30)}
    p, calls = ts_planner({A0: -1, A1: 2}, {A1: 1000})
    assert p.resolve(Timestamps(everywhere=1000), [A0, A1], "endingOffsets", given) == {A0: 20, A1: 2}
    assert [c[0] for c in calls] == ["oft", "rts"]  # the marks given are used
    p, calls = ts_planner({A0: -1}, {}, strategy="latest", marks={A0: (0, 21), A1: (0, 31)})
    assert p.resolve(Timestamps(everywhere=5), [A0, A1], "startingOffsets") == {A0: 21, A1: 31}
    assert calls[-1] == ("wm", [A0, A1])


def test_retried_lookups_are_named_in_the_log(fake, caplog, monkeypatch):
    p = make(topics=("a",), fetch_offset_retries=1, fetch_offset_retry_interval_ms=0)
    c = FakeClient.made[0]
    answers = [KafkaError(LEADER), [topic("a", 1)]]

    def metadata(t, timeout):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    c.metadata = metadata
    failing: dict = {}

    def once(name, value):
        def call(*args):
            if not failing.get(name):
                failing[name] = True
                raise KafkaError(LEADER)
            return value
        return call

    monkeypatch.setattr(planner_mod, "true_watermarks", once("wm", {0: (0, 3)}))
    monkeypatch.setattr(partitions_mod, "partition_list", lambda items: list(items))
    monkeypatch.setattr(partitions_mod, "partition_list_offsets", lambda tpl, ctx: {("a", 0): 2})
    monkeypatch.setattr(partitions_mod, "lib",
                        SimpleNamespace(rd_kafka_offsets_for_times=once("oft", 0)))
    with caplog.at_level(logging.WARNING, logger="rdk.spark"):
        assert p.topic_partitions(missing_ok=False) == [("a", 0)]
        assert p.watermarks([("a", 0)]) == {("a", 0): (0, 3)}
        assert p.offsets_for_times({("a", 0): 5}) == {("a", 0): 2}
    assert [r.getMessage().split(" failed (")[0] for r in caplog.records] == [
        "rdkafka: metadata", "rdkafka: offsets of a", "rdkafka: offsets for times"]


def test_a_missing_assigned_topic_skips_only_itself(fake):
    p = make(strategy="assign", assignment={"gone": (0,), "a": (1,)})
    FakeClient.made[0].topics = [topic("a", 2)]
    assert p.topic_partitions(missing_ok=True) == [("a", 1)]


def test_one_worker_reads_a_topic_without_partitions(fake):
    p = make(topics=("empty",))
    FakeClient.made[0].topics = [topic("empty", 0)]
    assert p.topic_partitions(missing_ok=False) == [] and p.all_partitions == set()
