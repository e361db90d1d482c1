"""rdk.Consumer on real brokers: offsets across restarts, kafka-native's offset files,
worker slots, locks, the batch iterator, offset stores, data fidelity and bad input."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from helpers import Collector, produce, stored, values, wait_until

import rdk
from rdk.errors import ClosedError, ConfigError, KafkaError, LockedError, OffsetFileError
from rdk.offsets import FileOffsetStore, is_locked, write_offset_file

# ---- restarts and kafka-native's files ---------------------------------------------------


def test_restart_resumes_after_last_recorded_offset(broker, new_topic, tmp_path):
    topic = new_topic(broker, 2)
    for p in (0, 1):
        produce(broker, topic, p, values(300, prefix=b"p%d-" % p))
    first = Collector()
    c1 = rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, first, max_messages_per_callback=40)

    def stop_midway(info):
        if len(first.messages) >= 200:
            c1.stop()  # from inside the callback: the stop finishes after it returns

    first.on_batch = stop_midway
    assert c1.start() == [0, 1]
    assert c1._closed_event.wait(30), "the consumer did not stop"
    assert 200 <= len(first.messages) < 600
    recorded = {p: stored(tmp_path, topic, p) for p in (0, 1)}
    for p in (0, 1):  # every delivered batch returned normally, so all of it is recorded
        delivered = first.offsets(p)
        assert recorded[p] == (max(delivered) if delivered else None)
        assert delivered == list(range(len(delivered)))

    second = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, second) as c2:
        c2.start()
        second.wait_for(600 - len(first.messages))
    for p in (0, 1):
        resumed = second.offsets(p)
        start = 0 if recorded[p] is None else recorded[p] + 1
        assert resumed == list(range(start, 300)), f"partition {p}"
        assert stored(tmp_path, topic, p) == 299
    assert {m.value for m in first.messages + second.messages} == \
        set(values(300, prefix=b"p0-") + values(300, prefix=b"p1-"))


def test_kafka_native_offset_files_are_honoured(broker, new_topic, tmp_path):
    topic = new_topic(broker, 2)
    for p in (0, 1):
        produce(broker, topic, p, values(50))
    (tmp_path / f"{topic}-0.offset").write_text("41\n")  # as kafka-native wrote it
    (tmp_path / f"{topic}-1.offset").write_text("17")    # without the newline
    got = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got) as c:
        c.start()
        got.wait_for((50 - 42) + (50 - 18))
    assert got.offsets(0) == list(range(42, 50))
    assert got.offsets(1) == list(range(18, 50))
    assert (tmp_path / f"{topic}-0.offset").read_text() == "49\n"
    assert got.batches[0].repeats == 0 and got.batches[0].misses == 0


def test_start_offset_latest_begins_after_existing_messages(broker, new_topic, tmp_path):
    topic = new_topic(broker, 1)
    produce(broker, topic, 0, values(30))
    got = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got, start_offset="latest") as c:
        c.start()
        produce(broker, topic, 0, values(5, start=30))
        got.wait_for(5)
    assert got.offsets() == [30, 31, 32, 33, 34]


# ---- message content ------------------------------------------------------------------------


def test_messages_carry_binary_values_keys_headers_and_positions(broker, new_topic, tmp_path):
    topic = new_topic(broker, 2)
    sent = [
        (None, b"\x00\x01\x00binary\xff", []),
        (b"k\x00ey", b"", []),
        (b"", None, []),  # tombstone with an empty key
        (b"h", b"with headers", [(b"trace", b"\x00id"), (b"empty", b""), (b"none", None)]),
    ]
    produce(broker, topic, 1, sent)
    got = Collector()
    before = int(time.time() * 1000) - 60_000
    with rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got) as c:
        c.start()
        got.wait_for(len(sent))
    for (key, value, headers), m in zip(sent, got.messages, strict=True):
        assert (m.key, m.payload, m.value) == (key, value, value)
        assert m.headers == ([(n.decode(), v) for n, v in headers] or None)
        assert (m.topic, m.partition) == (topic, 1)
        assert m.timestamp >= before
    assert [m.offset for m in got.messages] == [0, 1, 2, 3]
    assert isinstance(got.messages[0], rdk.Message)


def test_c_fast_path_is_loaded_and_matches_the_python_fallback(mock_cluster, tmp_path, monkeypatch):
    from rdk._binding import messages as _batch

    assert _batch._messages is not None, "rdk._messages (the C fast path) did not load"
    mock_cluster.create_topic("fast", 2)
    sent = [(None, b"\x00v", []), (b"k", None, []), (b"", b"", [(b"h", None), (b"i", b"\xff")]),
            (b"key", "ü".encode(), [])]
    produce(mock_cluster, "fast", 1, sent)
    results = {}
    for mode in ("c", "python"):
        if mode == "python":
            monkeypatch.setattr(_batch, "_messages", None)
        for decode in (None, "utf-8"):
            got = Collector()
            with rdk.Consumer(mock_cluster.bootstrap_servers, "fast", tmp_path / f"{mode}{decode}",
                              got, decode=decode) as c:
                c.start()
                got.wait_for(len(sent))
            results[mode, decode] = got.messages
    assert results["c", None] == results["python", None]
    assert results["c", "utf-8"] == results["python", "utf-8"]
    assert [m.payload for m in results["c", "utf-8"]] == ["\x00v", None, "", "ü"]
    assert all(type(m) is rdk.Message for m in results["c", None])
    # messages of atomic fields are invisible to the cyclic GC, as plain tuples would be
    assert [gc.is_tracked(m) for m in results["c", None]] == [False, False, True, False]


def test_decode_utf8_gives_string_payloads(broker, new_topic, tmp_path):
    topic = new_topic(broker, 1)
    produce(broker, topic, 0, ["grüße ☃".encode(), b"plain", b"\xff bad"])
    got = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, got, decode="utf-8") as c:
        c.start()
        got.wait_for(3)
    assert [m.payload for m in got.messages] == ["grüße ☃", "plain", "\ufffd bad"]


def test_batches_never_exceed_max_messages_per_callback(mock_cluster, tmp_path):
    mock_cluster.create_topic("sizes", 1)
    produce(mock_cluster, "sizes", 0, values(1000))
    got = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "sizes", tmp_path, got,
                      max_messages_per_callback=64) as c:
        c.start()
        got.wait_for(1000)
    assert max(len(b.messages) for b in got.batches) <= 64
    assert got.offsets() == list(range(1000))


# ---- worker slots and locks --------------------------------------------------------------


def test_four_consumers_over_eight_partitions_are_disjoint_and_cover_all(broker, new_topic, tmp_path):
    topic = new_topic(broker, 8)
    for p in range(8):
        produce(broker, topic, p, values(10, prefix=b"%d-" % p))
    collectors = [Collector() for _ in range(4)]
    consumers = [rdk.Consumer(broker.bootstrap_servers, topic, tmp_path, collectors[s],
                              num_workers=4, worker_slot=s) for s in range(4)]
    try:
        owned = [c.start() for c in consumers]  # one directory shared by all four slots
        for col, parts in zip(collectors, owned, strict=True):
            col.wait_for(10 * len(parts))
    finally:
        for c in consumers:
            c.stop()
    assert owned == [[0, 4], [1, 5], [2, 6], [3, 7]]
    flat = sorted(p for parts in owned for p in parts)
    assert flat == list(range(8))
    for col, parts in zip(collectors, owned, strict=True):
        assert {m.partition for m in col.messages} == set(parts)
        assert len(col.messages) == 10 * len(parts)  # each message exactly once
    for p in range(8):
        assert stored(tmp_path, topic, p) == 9


def test_second_consumer_on_the_same_partitions_fails_with_locked_error(mock_cluster, tmp_path):
    mock_cluster.create_topic("locked", 4)
    first = rdk.Consumer(mock_cluster.bootstrap_servers, "locked", tmp_path, lambda i: None)
    try:
        first.start()
        assert all(is_locked(tmp_path, "locked", p) for p in range(4))
        second = rdk.Consumer(mock_cluster.bootstrap_servers, "locked", tmp_path, lambda i: None,
                              num_workers=2, worker_slot=1)
        with pytest.raises(LockedError, match="partition 1 of topic 'locked'"):
            second.start()
        assert not second.closed  # nothing was taken; it can try again later
    finally:
        first.stop()
    assert not any(is_locked(tmp_path, "locked", p) for p in range(4))
    second.start()  # now free
    second.stop()


# ---- the batch iterator -----------------------------------------------------------------------


def test_batches_records_on_commit_or_when_the_next_batch_is_requested(mock_cluster, tmp_path):
    mock_cluster.create_topic("iter", 1)
    produce(mock_cluster, "iter", 0, values(30))
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "iter", tmp_path,
                     max_messages_per_callback=10)
    seen = []
    with c:
        it = c.batches(timeout=10)
        first = next(it)
        seen.append([m.offset for m in first.messages])
        c._shared.progress.committer.flush(5)
        assert stored(tmp_path, "iter", 0) is None  # not yet: neither commit() nor next()
        second = next(it)  # requesting the next batch records the first
        c._shared.progress.committer.flush(5)
        assert stored(tmp_path, "iter", 0) == first.messages[-1].offset
        second.commit()
        c._shared.progress.committer.flush(5)
        assert stored(tmp_path, "iter", 0) == second.messages[-1].offset
        for batch in it:  # breaking out leaves the last batch unrecorded
            last = batch
            if batch.messages[-1].offset == 29:
                break
        c._shared.progress.committer.flush(5)
        assert stored(tmp_path, "iter", 0) == last.messages[0].offset - 1
    assert first.messages[0].offset == 0 and len(first.messages) <= 10


def test_batches_ends_after_timeout_without_messages(mock_cluster, tmp_path):
    mock_cluster.create_topic("quiet", 1)
    with rdk.Consumer(mock_cluster.bootstrap_servers, "quiet", tmp_path) as c:
        t0 = time.monotonic()
        assert list(c.batches(timeout=0.5)) == []
        assert time.monotonic() - t0 < 5
        with pytest.raises(TypeError, match="receive_callback"):
            c.start()


# ---- offset stores ---------------------------------------------------------------------------


def test_broker_offset_store_commits_progress_to_the_group(broker, new_topic):
    topic = new_topic(broker, 2)
    for p in (0, 1):
        produce(broker, topic, p, values(20))
    group = f"g-{topic}"
    got = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, None, got,
                      offset_store=rdk.BrokerOffsetStore(group)) as c:
        c.start()
        got.wait_for(40)
    store = rdk.BrokerOffsetStore(group, broker=broker.bootstrap_servers, topic=topic)
    try:
        assert store.read([0, 1]) == {0: 19, 1: 19}
    finally:
        store.close()
    for p in (0, 1):
        produce(broker, topic, p, values(3, start=20))
    again = Collector()
    with rdk.Consumer(broker.bootstrap_servers, topic, None, again,
                      offset_store=rdk.BrokerOffsetStore(group), num_workers=2, worker_slot=1) as c:
        assert c.start() == [1]
        again.wait_for(3)
    assert again.offsets() == [20, 21, 22]


def test_any_object_with_read_and_commit_is_an_offset_store(mock_cluster, tmp_path):
    mock_cluster.create_topic("custom", 2)
    produce(mock_cluster, "custom", 0, values(10))
    produce(mock_cluster, "custom", 1, values(10))

    class DictStore:
        def __init__(self):
            self.data = {1: 4}
            self.commits = []

        def read(self, partitions):
            return {p: self.data[p] for p in partitions if p in self.data}

        def commit(self, offsets):
            self.commits.append(dict(offsets))
            self.data.update(offsets)

    store = DictStore()
    got = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "custom", None, got, offset_store=store) as c:
        c.start()
        got.wait_for(15)
    assert got.offsets(1) == list(range(5, 10))
    assert store.data == {0: 9, 1: 9}
    assert not list(tmp_path.iterdir())


# ---- lifecycle --------------------------------------------------------------------------------


def test_stop_returns_without_waiting_for_a_callback_that_never_returns(mock_cluster, tmp_path):
    mock_cluster.create_topic("stuck", 1)
    produce(mock_cluster, "stuck", 0, values(20))
    release = threading.Event()
    entered = threading.Event()
    left = threading.Event()  # the stuck callback returned
    returned = []  # last offsets of the batches whose callback returned

    def receive(info):
        if info.messages[0].offset >= 10:
            entered.set()
            release.wait(60)
            left.set()
        else:
            returned.append(info.messages[-1].offset)

    c = rdk.Consumer(mock_cluster.bootstrap_servers, "stuck", tmp_path, receive,
                     max_messages_per_callback=10)
    c.start()
    try:
        assert entered.wait(20)
        with pytest.warns(RuntimeWarning) as caught:
            c.stop(timeout=1.5)
        assert not left.is_set()  # stop() returned without waiting for the stuck callback
        said = [str(w.message) for w in caught]
        assert any("has not returned" in m for m in said), said
        assert any("1 batch(es) still in flight" in m for m in said), said
        assert c.closed
        assert stored(tmp_path, "stuck", 0) == max(returned)  # the batches before are stored
        assert not is_locked(tmp_path, "stuck", 0)
    finally:
        release.set()
    with pytest.raises(ClosedError):
        c.pause()


def test_run_blocks_until_stop_from_another_thread(mock_cluster, tmp_path):
    mock_cluster.create_topic("run", 1)
    produce(mock_cluster, "run", 0, values(5))
    got = Collector()
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "run", tmp_path, got)

    def stopper():
        got.wait_for(5)
        c.stop()

    t = threading.Thread(target=stopper)
    t.start()
    c.run()
    t.join(10)
    assert c.closed and stored(tmp_path, "run", 0) == 4


def test_lifecycle_misuse_is_reported(mock_cluster, tmp_path):
    mock_cluster.create_topic("life", 1)
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "life", tmp_path, lambda i: None)
    c.start()
    with pytest.raises(RuntimeError, match="already started"):
        c.start()
    with pytest.raises(RuntimeError, match="batches"):
        c.batches()
    c.stop()
    c.stop()  # idempotent
    with pytest.raises(ClosedError):
        c.start()
    with pytest.raises(ClosedError):
        c.resume()


def test_commit_on_error_false_delivers_a_failed_batch_again_after_restart(mock_cluster, tmp_path):
    mock_cluster.create_topic("fail", 1)
    produce(mock_cluster, "fail", 0, values(30))

    failed_first = []

    def fail_second(info):
        if not failed_first and info.messages[-1].offset >= 10:  # the batch holding offset 10
            failed_first.append(info.messages[0].offset)
            raise RuntimeError("processing failed")

    got = Collector(fail_second)
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "fail", tmp_path, got,
                     max_messages_per_callback=10, commit_on_error=False)
    c.start()
    got.wait_for(30)
    c.stop()
    start = failed_first[0]
    assert stored(tmp_path, "fail", 0) == (start - 1 if start else None)  # nothing after it
    again = Collector()
    with rdk.Consumer(mock_cluster.bootstrap_servers, "fail", tmp_path, again) as c:
        c.start()
        again.wait_for(30 - start)
    assert again.offsets() == list(range(start, 30))


def test_commit_on_error_true_records_failed_batches_as_kafka_native_did(mock_cluster, tmp_path, caplog):
    mock_cluster.create_topic("failok", 1)
    produce(mock_cluster, "failok", 0, values(30))

    def always_fail(info):
        raise ValueError("bad batch")

    got = Collector(always_fail)
    with rdk.Consumer(mock_cluster.bootstrap_servers, "failok", tmp_path, got,
                      max_messages_per_callback=10) as c:
        c.start()
        got.wait_for(30)
        wait_until(lambda: stored(tmp_path, "failok", 0) == 29, what="offset 29 stored")
    assert "bad batch" in caplog.text


# ---- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"worker_slot": 4, "num_workers": 4}, ValueError, "worker_slot"),
    ({"worker_slot": -1}, ValueError, "worker_slot"),
    ({"num_workers": 0}, ValueError, "num_workers"),
    ({"num_workers": "2"}, TypeError, "num_workers"),
    ({"max_messages_per_callback": 0}, ValueError, "max_messages_per_callback"),
    ({"statistics_interval_ms": -1}, ValueError, "statistics_interval_ms"),
    ({"queued_max_messages_kbytes": 0}, ValueError, "queued_max_messages_kbytes"),
    ({"start_offset": "beginning"}, ValueError, "start_offset"),
    ({"on_offset_out_of_range": "smallest"}, ValueError, "on_offset_out_of_range"),
    ({"decode": "latin-1"}, ValueError, "decode"),
    ({"commit_on_error": "yes"}, TypeError, "commit_on_error"),
    ({"receive_callback": 5}, TypeError, "receive_callback"),
    ({"stats_callback": "x"}, TypeError, "stats_callback"),
    ({"logger": "rdk"}, TypeError, "logger"),
    ({"loop": object()}, TypeError, "loop"),
    ({"offset_store": object()}, TypeError, "offset_store"),
    ({"driver_options": {"no.such.property": 1}}, ConfigError, "no.such.property"),
    ({"driver_options": {"fetch.wait.max.ms": "soon"}}, ConfigError, "fetch.wait.max.ms"),
    ({"driver_options": ["x"]}, TypeError, "driver_options"),
    ({"topic_options": {"auto.offset.reset": "earliest"}}, ConfigError, "on_offset_out_of_range"),
    ({"topic_options": {"no.such.topic.property": 1}}, ConfigError, "no.such.topic.property"),
    ({"broker": "localhost"}, ValueError, "broker"),
    ({"broker": 9092}, TypeError, "broker"),
    ({"topic": "../escape"}, ValueError, "topic"),
    ({"topic": "a/b"}, ValueError, "topic"),
    ({"topic": ""}, ValueError, "topic"),
    ({"offset_directory": None}, TypeError, "offset_directory"),
    ({"no_such_option": 1}, TypeError, "no_such_option"),
])
def test_bad_constructor_input_raises_naming_the_culprit(tmp_path, kwargs, exc, match):
    args = {"broker": "127.0.0.1:9", "topic": "t", "offset_directory": tmp_path,
            "receive_callback": lambda i: None, **kwargs}
    with pytest.raises(exc, match=match):
        rdk.Consumer(**args)
    assert not any(p.suffix == ".offset" for p in tmp_path.iterdir())


def test_unwritable_offset_directory_raises_in_the_constructor(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OffsetFileError, match="not writable") as ei:
        rdk.Consumer("127.0.0.1:9", "t", blocker / "dir", lambda i: None)
    assert str(blocker / "dir") in str(ei.value)


def test_missing_offset_directory_is_created(tmp_path):
    d = tmp_path / "new" / "offsets"
    rdk.Consumer("127.0.0.1:9", "t", d, lambda i: None).stop()
    assert d.is_dir()


def test_unknown_topic_raises_kafka_error_at_start(broker, tmp_path):
    c = rdk.Consumer(broker.bootstrap_servers, "no-such-topic-4c1d", tmp_path, lambda i: None)
    with pytest.raises(KafkaError) as ei:
        c.start()
    assert ei.value.name in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC")
    assert not is_locked(tmp_path, "no-such-topic-4c1d", 0)


def test_fewer_partitions_than_workers_names_both_counts(mock_cluster, tmp_path):
    mock_cluster.create_topic("small", 3)
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "small", tmp_path, lambda i: None,
                     num_workers=4, worker_slot=3)
    with pytest.raises(ValueError, match=r"3 partition.*num_workers=4"):
        c.start()


@pytest.mark.parametrize("content,match", [("", "empty"), ("12abc\n", "corrupt")])
def test_empty_or_corrupt_offset_file_fails_start_naming_the_file(mock_cluster, tmp_path, content, match):
    mock_cluster.create_topic("corrupt", 2)
    write_offset_file(tmp_path, "corrupt", 0, 5)
    (tmp_path / "corrupt-1.offset").write_text(content)
    got = Collector()
    c = rdk.Consumer(mock_cluster.bootstrap_servers, "corrupt", tmp_path, got)
    with pytest.raises(OffsetFileError, match=match) as ei:
        c.start()
    assert str(tmp_path / "corrupt-1.offset") in str(ei.value)
    assert got.messages == [] and not is_locked(tmp_path, "corrupt", 0)
    assert FileOffsetStore(tmp_path, "corrupt").read([0]) == {0: 5}  # untouched
