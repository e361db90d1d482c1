"""Transactional rdk.Producer against real brokers: commit, abort, fencing, abortable errors,
offsets sent to a transaction, and misuse.

What each embedded broker really does (asserted, so a change in it fails here):

- librdkafka's (2.15.1) mock cluster speaks the transaction protocol and writes the
  commit/abort markers (2.12's wrote none) but sends no aborted-transaction list (aborted
  messages stay visible to ``read_committed``), does not
  fence a producer when another initialises the same ``transactional_id``, and accepts
  TxnOffsetCommit without storing the offsets;
- Tansu 0.6 writes the commit/abort markers, honours the last stable offset (a
  ``read_committed`` reader sees a transaction's messages only once it is committed), fences
  and stores transactional offsets, but sends no aborted-transaction list in its fetch
  answers, so aborted messages stay visible to ``read_committed`` readers;
- Apache Kafka sends the aborted-transaction list, so ``read_committed``
  readers (and rdk.Consumer with ``isolation.level=read_committed``) skip aborted messages
  and the control records (test_kafka_read_committed_consumer_skips_aborted_messages...).
"""

from __future__ import annotations

import math
import threading
import time
import uuid

import pytest
from helpers import stored, wait_until

import rdk
from rdk import GroupMetadata, KafkaError, Producer, TransactionError, _binding
from rdk._binding import ffi, lib
from rdk._binding.fetch import Fetcher
from rdk.errors import ClosedError
from rdk.transactions import TransactionalOffsetStore, group_metadata_of

# ---- helpers -----------------------------------------------------------------------------


def txn_producer(broker, **kwargs) -> Producer:
    kwargs.setdefault("transactional_id", f"tx-{uuid.uuid4().hex[:10]}")
    p = Producer(broker.bootstrap_servers, queue_buffering_max_ms=5, **kwargs)
    p.init_transactions(30)
    return p


def high_watermark(bootstrap: str, topic: str, partition: int, isolation: str) -> int:
    """The partition's end as a reader of ``isolation`` sees it (read_committed: the LSO)."""
    c = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "isolation.level": isolation,
                                     "log_level": 3})
    low, high = ffi.new("int64_t *"), ffi.new("int64_t *")
    try:
        _binding.check(lib.rd_kafka_query_watermark_offsets(
            c.rk, topic.encode(), partition, low, high, 10000), "watermarks")
        return int(high[0])
    finally:
        c.close()


def read(bootstrap: str, topic: str, partition: int, want: int, *,
         isolation: str = "read_committed", timeout: float = 20.0) -> list[tuple[int, bytes]]:
    """[(offset, value)] from the start of the partition, read until ``want`` arrived."""
    c = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "isolation.level": isolation,
                                     "log_level": 3})
    fetcher = Fetcher(c, topic)
    rows: list[tuple[int, bytes]] = []
    try:
        fetcher.start(partition, lib.RD_KAFKA_OFFSET_BEGINNING)
        deadline = time.monotonic() + timeout
        while len(rows) < want and time.monotonic() < deadline:
            b = fetcher.fetch(200)
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                vo = b.value_offsets
                rows.append((int(b.offset[i]), ffi.unpack(b.values + vo[i], vo[i + 1] - vo[i])))
    finally:
        fetcher.close()
        c.close()
    return rows


def committed_offset(bootstrap: str, group: str, topic: str, partition: int) -> int:
    """The group's committed offset of topic[partition] (-1001: none)."""
    c = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "group.id": group,
                                     "log_level": 3})
    parts = ffi.gc(lib.rd_kafka_topic_partition_list_new(1), lib.rd_kafka_topic_partition_list_destroy)
    lib.rd_kafka_topic_partition_list_add(parts, topic.encode(), partition)
    try:
        _binding.check(lib.rd_kafka_committed(c.rk, parts, 10000), "committed")
        return int(parts.elems[0].offset)
    finally:
        c.close()


def group_metadata(bootstrap: str, group: str) -> tuple[_binding.Client, GroupMetadata]:
    """A plain librdkafka consumer handle of ``group`` and its GroupMetadata."""
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "group.id": group,
                                          "log_level": 3})
    return client, group_metadata_of(client)


def values(prefix: bytes, n: int) -> list[bytes]:
    return [b"%s%d" % (prefix, i) for i in range(n)]


# ---- commit and abort --------------------------------------------------------------------


def test_committed_transaction_is_read_by_a_read_committed_reader(broker, new_topic):
    topic = new_topic(broker, 2)
    delivered = []
    with txn_producer(broker) as p:
        p.begin_transaction()
        p.send(topic, 0, values(b"a", 50), on_delivery=lambda n, f: delivered.append((n, f)))
        p.send(topic, 1, values(b"b", 30))
        p.commit_transaction(30)
        assert delivered == [(50, [])]  # commit flushed the transaction's messages
    assert [v for _, v in read(broker.bootstrap_servers, topic, 0, 50)] == values(b"a", 50)
    assert [v for _, v in read(broker.bootstrap_servers, topic, 1, 30)] == values(b"b", 30)


def read_to_end(bootstrap: str, topic: str, partition: int, isolation: str,
                timeout: float = 20.0) -> tuple[list[tuple[int, bytes]], int]:
    """([(offset, value)] from the start, the offset of the partition-EOF event that ended the
    read): the end a reader of ``isolation`` sees (``timeout``: a deadline against hangs)."""
    c = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "isolation.level": isolation,
                                     "enable.partition.eof": True, "log_level": 3})
    fetcher = Fetcher(c, topic)
    rows: list[tuple[int, bytes]] = []
    try:
        fetcher.start(partition, lib.RD_KAFKA_OFFSET_BEGINNING)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            b = fetcher.fetch(200)
            vo = b.value_offsets
            for i in range(b.n):
                if b.err[i] == _binding.ERROR_CODES["_PARTITION_EOF"]:
                    return rows, int(b.offset[i])
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                rows.append((int(b.offset[i]), ffi.unpack(b.values + vo[i], vo[i + 1] - vo[i])))
        raise AssertionError(f"no end of {topic}[{partition}] within {timeout} s; read {rows}")
    finally:
        fetcher.close()
        c.close()


def test_tansu_read_committed_reader_sees_messages_only_after_commit(tansu, new_topic):
    topic = new_topic(tansu)
    bs = tansu.bootstrap_servers
    with txn_producer(tansu) as p:
        p.begin_transaction()
        p.send(topic, 0, values(b"m", 10))
        assert p.flush(15) == 0  # written to the log, transaction still open
        assert high_watermark(bs, topic, 0, "read_committed") == 0  # the last stable offset
        assert high_watermark(bs, topic, 0, "read_uncommitted") > 0
        # nothing visible: a read_committed reader reaches the partition's end (the EOF event
        # at the last stable offset, 0) before any message; no time window decides this
        assert read_to_end(bs, topic, 0, "read_committed") == ([], 0)
        p.commit_transaction(30)
    assert high_watermark(bs, topic, 0, "read_committed") == 11  # 10 messages + commit marker
    assert read(bs, topic, 0, 10) == list(enumerate(values(b"m", 10)))


def test_abort_and_what_a_read_committed_reader_sees(broker, new_topic):
    """Abort works everywhere; whether a read_committed reader skips the aborted messages
    depends on the broker (see the module docstring): asserted as each really behaves."""
    topic = new_topic(broker)
    with txn_producer(broker) as p:
        p.begin_transaction()
        p.send(topic, 0, values(b"aborted", 5))
        assert p.flush(15) == 0
        p.abort_transaction(30)
        p.begin_transaction()
        p.send(topic, 0, values(b"kept", 3))
        p.commit_transaction(30)
    bs = broker.bootstrap_servers
    if broker.kind in ("mock", "tansu"):
        # markers at offsets 5 and 9 (the mock cluster of librdkafka 2.15.1 writes them; 2.12 did not),
        # but no aborted-transaction list: the aborted messages stay visible
        assert read(bs, topic, 0, 8) == (list(enumerate(values(b"aborted", 5)))
                                         + [(6 + i, v) for i, v in enumerate(values(b"kept", 3))])
    else:  # a complete broker: aborted messages are skipped
        assert [v for _, v in read(bs, topic, 0, 3)] == values(b"kept", 3)
    # read_uncommitted sees the aborted messages on every broker
    assert [v for _, v in read(bs, topic, 0, 8, isolation="read_uncommitted")][:5] == values(b"aborted", 5)


def test_abort_reports_queued_messages_as_failed_never_drops_them(mock_cluster):
    mock_cluster.create_topic("t", 1)
    failures: list = []
    done = threading.Event()

    def on_delivery(n, failed):
        failures.extend(failed)
        done.set()

    # a long linger keeps the messages queued in librdkafka until abort purges them
    p = Producer(mock_cluster.bootstrap_servers, transactional_id="tx-purge",
                 queue_buffering_max_ms=20000)
    try:
        p.init_transactions(30)
        p.begin_transaction()
        p.send("t", 0, values(b"q", 20), on_delivery=on_delivery)
        p.abort_transaction(30)
        assert done.wait(15)
        assert len(failures) == 20
        assert {e.name for _, e in failures} <= {"_PURGE_QUEUE", "_PURGE_INFLIGHT"}
        assert [m.value for m, _ in failures] == values(b"q", 20)
        assert p.flush(5).failed == 20
    finally:
        p.stop(10)


# ---- fencing -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["kafka", "tansu"])
def test_second_producer_with_same_id_fences_the_first(kind, request, new_topic):
    """On Apache Kafka (the reference) and Tansu: a second init_transactions of the same
    transactional.id bumps the epoch; the first producer is fenced, fatally, at its commit."""
    cluster = request.getfixturevalue("kafka_cluster" if kind == "kafka" else "tansu")
    topic = new_topic(cluster)
    tid = f"tx-fence-{uuid.uuid4().hex[:8]}"
    first = txn_producer(cluster, transactional_id=tid)
    second = txn_producer(cluster, transactional_id=tid)  # bumps the epoch: first is fenced
    try:
        first.begin_transaction()  # local: still allowed
        first.send(topic, 0, [b"zombie"])
        with pytest.raises(TransactionError) as info:
            first.commit_transaction(30)
        e = info.value
        assert (e.name, e.fatal, e.txn_requires_abort) == ("_FENCED", True, False)
        assert "fenced" in str(e).lower()
        for op in (first.begin_transaction, lambda: first.abort_transaction(5)):
            with pytest.raises(TransactionError) as again:  # every later call: the same fatal error
                op()
            assert again.value.fatal and again.value.name == "_FENCED"
        with pytest.raises(KafkaError, match="_FENCED"):
            first.send(topic, 0, [b"after"])
        second.begin_transaction()
        second.send(topic, 0, [b"live"])
        second.commit_transaction(30)
    finally:
        first.stop(10)
        second.stop(10)
    assert [v for _, v in read(cluster.bootstrap_servers, topic, 0, 1)] == [b"live"]


def test_mock_cluster_fencing_is_injected_it_does_not_fence_by_itself(mock_cluster):
    mock_cluster.create_topic("t", 1)
    bs = mock_cluster.bootstrap_servers
    first = txn_producer(mock_cluster, transactional_id="tx-same")
    second = txn_producer(mock_cluster, transactional_id="tx-same")
    try:
        first.begin_transaction()  # the mock cluster's limit: the first one still commits
        first.send("t", 0, [b"not fenced"])
        first.commit_transaction(30)
        # what a real coordinator answers a fenced producer, injected
        mock_cluster.push_request_errors("AddPartitionsToTxn", ["PRODUCER_FENCED"])
        first.begin_transaction()
        first.send("t", 0, [b"zombie"])
        with pytest.raises(TransactionError) as info:
            first.commit_transaction(30)
        assert (info.value.name, info.value.fatal) == ("_FENCED", True)
    finally:
        first.stop(10)
        second.stop(10)
    assert read(bs, "t", 0, 1) == [(0, b"not fenced")]


# ---- abortable and retriable errors ------------------------------------------------------


def committed_in_transaction(p: Producer, topic: str, payloads: list, attempts: int = 3) -> int:
    """The application's retry loop: abort and start again on an abortable error; returns
    the attempt that committed."""
    for attempt in range(1, attempts + 1):
        p.begin_transaction()
        p.send(topic, 0, payloads)
        try:
            p.commit_transaction(30)
            return attempt
        except TransactionError as e:
            if not e.txn_requires_abort or attempt == attempts:
                raise
            p.abort_transaction(30)
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("api", "error", "expected_attempts"), [
    ("AddPartitionsToTxn", "TOPIC_AUTHORIZATION_FAILED", 1),
    # the failed Produce leaves a sequence gap: librdkafka's next commit fails once more
    # (OUT_OF_ORDER_SEQUENCE_NUMBER, "requires epoch bump"); the abort bumps the epoch
    ("Produce", "INVALID_RECORD", 2),
])
def test_abortable_error_then_abort_and_retry_commits(mock_cluster, api, error, expected_attempts):
    mock_cluster.create_topic("t", 1)
    failed: list = []
    with txn_producer(mock_cluster, delivery_report_callback=failed.append) as p:
        p.begin_transaction()
        mock_cluster.push_request_errors(api, [error])
        p.send("t", 0, [b"lost"])
        with pytest.raises(TransactionError) as info:
            p.commit_transaction(30)
        e = info.value
        assert (e.name, e.txn_requires_abort, e.fatal) == (error, True, False)
        with pytest.raises(TransactionError, match="_STATE|" + error):  # no sends until aborted
            p.send("t", 0, [b"refused"])
        p.abort_transaction(30)
        attempts = committed_in_transaction(p, "t", values(b"retry", 3))
        assert p.flush(5).queued == 0
    assert attempts == expected_attempts
    assert len(failed) >= 1  # the failed message was reported, not dropped
    bs = mock_cluster.bootstrap_servers
    rows = read(bs, "t", 0, high_watermark(bs, "t", 0, "read_uncommitted"))
    assert [v for _, v in rows][-3:] == values(b"retry", 3)


def test_commit_that_times_out_is_retriable(mock_cluster):
    mock_cluster.create_topic("t", 1)
    with txn_producer(mock_cluster) as p:
        p.begin_transaction()
        p.send("t", 0, [b"slow"])
        assert p.flush(10) == 0
        mock_cluster.broker_set_rtt(1, 3000)
        mock_cluster.broker_set_rtt(2, 3000)
        mock_cluster.broker_set_rtt(3, 3000)
        with pytest.raises(TransactionError) as info:
            p.commit_transaction(0.2)
        assert info.value.retriable and not info.value.fatal and info.value.name == "_TIMED_OUT"
        for b in (1, 2, 3):
            mock_cluster.broker_set_rtt(b, 0)
        p.commit_transaction(30)  # the same call again resumes and completes the commit
    assert read(mock_cluster.bootstrap_servers, "t", 0, 1) == [(0, b"slow")]


# ---- offsets in a transaction ------------------------------------------------------------


def test_offsets_sent_to_a_transaction_commit_with_it_on_tansu(tansu, new_topic):
    src, out = new_topic(tansu), new_topic(tansu)
    group = f"g-{uuid.uuid4().hex[:8]}"
    bs = tansu.bootstrap_servers
    client, meta = group_metadata(bs, group)
    try:
        with txn_producer(tansu) as p:
            p.begin_transaction()
            p.send(out, 0, [b"result"])
            p.send_offsets_to_transaction({(src, 0): 7}, meta, 30)
            assert committed_offset(bs, group, src, 0) < 0  # not before the commit
            p.commit_transaction(30)
            assert committed_offset(bs, group, src, 0) == 7
            p.begin_transaction()
            p.send_offsets_to_transaction({(src, 0): 9}, meta, 30)
            p.abort_transaction(30)
            assert committed_offset(bs, group, src, 0) == 7  # the aborted offsets never count
    finally:
        meta.close()
        client.close()


def test_mock_cluster_accepts_transactional_offsets_without_storing_them(mock_cluster):
    mock_cluster.create_topic("in", 1)
    bs = mock_cluster.bootstrap_servers
    client, meta = group_metadata(bs, "g-mock")
    try:
        with txn_producer(mock_cluster) as p:
            p.begin_transaction()
            p.send_offsets_to_transaction({("in", 0): 5}, meta, 30)
            p.commit_transaction(30)
        assert committed_offset(bs, "g-mock", "in", 0) < 0  # the mock cluster's limit
    finally:
        meta.close()
        client.close()


def test_send_offsets_finds_the_new_coordinator_when_the_old_one_leaves_the_cluster(mock_cluster):
    """librdkafka patch 0004: the group coordinator's broker is killed and leaves the metadata
    (decommissioned, as a SIGKILLed Kafka node's is once the controller fences it) while a new
    one takes over. librdkafka's coordinator cache kept pointing to the gone broker, and with
    no state change of it to wake the request, no FindCoordinator was ever sent: every
    send_offsets_to_transaction timed out ("on broker (none)"). Now the request looks the
    coordinator up again within a second or so and the transaction commits."""
    mock_cluster.create_topic("in", 1)
    mock_cluster.create_topic("out", 1)
    bs, group, tid = mock_cluster.bootstrap_servers, "g-moves", "tx-coordinator-moves"
    mock_cluster.coordinator_set("transaction", tid, 1)
    mock_cluster.coordinator_set("group", group, 3)
    mock_cluster.partition_set_leader("in", 0, 1)
    mock_cluster.partition_set_leader("out", 0, 1)
    client, meta = group_metadata(bs, group)
    try:
        with txn_producer(mock_cluster, transactional_id=tid) as p:
            p.begin_transaction()
            p.send("out", 0, [b"first"])
            p.send_offsets_to_transaction({("in", 0): 1}, meta, 30)  # caches broker 3
            p.commit_transaction(30)
            mock_cluster.coordinator_set("group", group, 2)
            mock_cluster.broker_set_down(3)
            mock_cluster.broker_remove_from_metadata(3)
            p.begin_transaction()
            p.send("out", 0, [b"second"])
            p.send_offsets_to_transaction({("in", 0): 2}, meta, 20)
            p.commit_transaction(30)
    finally:
        meta.close()
        client.close()
    assert [v for _, v in read(bs, "out", 0, 2)] == [b"first", b"second"]


def test_mock_coordinator_set_refuses_what_librdkafka_would_not_understand(mock_cluster):
    with pytest.raises(ValueError, match="key_type must be 'transaction' or 'group', got 'txn'"):
        mock_cluster.coordinator_set("txn", "x", 1)
    with pytest.raises(TypeError, match="key must be str, got int"):
        mock_cluster.coordinator_set("group", 5, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="broker_id"):
        mock_cluster.coordinator_set("group", "g", "1")  # type: ignore[arg-type]


# ---- calls and threads -------------------------------------------------------------------


def test_commit_waits_for_delivery_callbacks_on_the_callback_thread(mock_cluster):
    """commit_transaction() blocks the caller while the producer's own thread delivers the
    reports; a callback that calls a blocking transaction method gets RuntimeError."""
    mock_cluster.create_topic("t", 1)
    seen: list = []

    def on_delivery(n, failed):
        seen.append((n, threading.current_thread() is not threading.main_thread()))
        try:
            p.commit_transaction(1)
        except RuntimeError as e:
            seen.append(str(e))

    p = txn_producer(mock_cluster)
    try:
        for round_ in range(3):
            p.begin_transaction()
            p.send("t", 0, values(b"r%d-" % round_, 100), on_delivery=on_delivery)
            p.commit_transaction(30)
    finally:
        p.stop(10)
    assert seen[0::2] == [(100, True)] * 3
    assert all("cannot be called from a producer callback" in s for s in seen[1::2])


def test_stop_while_a_transaction_call_blocks_frees_the_handle_after_it(mock_cluster):
    mock_cluster.create_topic("t", 1)
    p = Producer(mock_cluster.bootstrap_servers, transactional_id="tx-stop")
    for b in (1, 2, 3):
        mock_cluster.broker_set_down(b)
    errors: list = []
    t = threading.Thread(target=lambda: _capture(errors, p.init_transactions, 3))
    t.start()
    assert p._client.closed is False
    p.stop(0.5)
    t.join(10)
    assert not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], (TransactionError, ClosedError))
    assert p._client.closed  # freed by the call that was still inside librdkafka
    with pytest.raises(ClosedError):
        p.begin_transaction()


def _capture(errors: list, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as e:
        errors.append(e)


# ---- misuse ------------------------------------------------------------------------------


def test_transaction_state_misuse_raises_librdkafka_state_errors(mock_cluster):
    mock_cluster.create_topic("t", 1)
    p = Producer(mock_cluster.bootstrap_servers, transactional_id="tx-misuse")
    try:
        with pytest.raises(TransactionError, match=r"_STATE|_CONFLICT"):
            p.begin_transaction()  # before init_transactions()
        p.init_transactions(30)
        with pytest.raises(TransactionError, match="_STATE") as info:
            p.commit_transaction(5)  # without begin
        assert not info.value.fatal
        p.begin_transaction()
        with pytest.raises(TransactionError, match="_STATE"):
            p.begin_transaction()  # twice
        p.abort_transaction(10)
        assert p.flush(5) == 0
    finally:
        p.stop(10)


def test_send_outside_a_transaction_raises_and_reports_the_messages(mock_cluster):
    mock_cluster.create_topic("t", 1)
    failures: list = []
    with txn_producer(mock_cluster) as p:
        with pytest.raises(TransactionError) as info:
            p.send("t", 0, [b"a", b"b"], on_delivery=lambda n, f: failures.extend(f))
        assert info.value.name == "_STATE" and "begin_transaction()" in str(info.value)
        assert "enqueued 0 of 2" in str(info.value)
        assert p.flush(5).failed == 2
        assert [(m.value, e.name) for m, e in failures] == [(b"a", "_STATE"), (b"b", "_STATE")]


def test_transaction_calls_on_a_plain_producer_raise_not_configured(mock_cluster):
    with Producer(mock_cluster.bootstrap_servers) as p:
        for call in (p.init_transactions, p.begin_transaction, p.commit_transaction,
                     p.abort_transaction):
            with pytest.raises(TransactionError, match=r"_NOT_CONFIGURED.*transactional_id"):
                call()
        assert p.transactional_id is None


def test_send_offsets_to_transaction_checks_its_arguments(mock_cluster):
    bs = mock_cluster.bootstrap_servers
    client, meta = group_metadata(bs, "g-args")
    try:
        with txn_producer(mock_cluster) as p:
            p.begin_transaction()
            bad = [
                ([(("t", 0), 1)], TypeError, "offsets must be a dict"),
                ({"t": 1}, TypeError, r"key 't' must be a \(topic, partition\)"),
                ({("t", "0"): 1}, TypeError, "partition of key"),
                ({("t", -1): 1}, ValueError, "partition of key"),
                ({(5, 0): 1}, TypeError, "topic of key"),
                ({("bad topic", 0): 1}, ValueError, "not a legal Kafka topic name"),
                ({("t", 0): -3}, ValueError, r"offsets\[\('t', 0\)\] must be an offset >= 0"),
                ({("t", 0): 1.5}, TypeError, "must be an int offset"),
                ({("t", 0): True}, TypeError, "must be an int offset"),
            ]
            for offsets, exc, message in bad:
                with pytest.raises(exc, match=message):
                    p.send_offsets_to_transaction(offsets, meta)
            with pytest.raises(TypeError, match=r"group_metadata must be an rdk\.GroupMetadata"):
                p.send_offsets_to_transaction({("t", 0): 1}, "group")
            for timeout, exc in ((-1, ValueError), (math.nan, ValueError), ("5", TypeError)):
                with pytest.raises(exc, match="timeout"):
                    p.send_offsets_to_transaction({("t", 0): 1}, meta, timeout)
                with pytest.raises(exc, match="timeout"):
                    p.commit_transaction(timeout)
            closed_client, closed = group_metadata(bs, "g-closed")
            closed.close()
            closed.close()  # idempotent
            closed_client.close()
            with pytest.raises(ClosedError, match="GroupMetadata is closed"):
                p.send_offsets_to_transaction({("t", 0): 1}, closed)
            p.abort_transaction(10)
    finally:
        meta.close()
        client.close()


def test_group_metadata_needs_a_consumer_with_a_group(mock_cluster):
    with pytest.raises(TypeError, match=r"Consumer\.group_metadata"):
        GroupMetadata()
    client = _binding.Client("consumer", {"bootstrap.servers": mock_cluster.bootstrap_servers,
                                          "log_level": 3})
    try:
        with pytest.raises(ValueError, match=r"group\.id"):
            group_metadata_of(client)
    finally:
        client.close()
    client, meta = group_metadata(mock_cluster.bootstrap_servers, "g")
    with meta:
        assert not meta.closed
    assert meta.closed and "closed" in repr(meta)
    client.close()


def test_transactional_id_is_checked(mock_cluster):
    bs = mock_cluster.bootstrap_servers
    with pytest.raises(TypeError, match="transactional_id must be str"):
        Producer(bs, transactional_id=5)
    with pytest.raises(ValueError, match="transactional_id must be a non-empty str"):
        Producer(bs, transactional_id="")
    with pytest.raises(rdk.ConfigError, match="disagrees with transactional_id"):
        Producer(bs, transactional_id="a", driver_options={"transactional.id": "b"})
    with Producer(bs, driver_options={"transactional.id": "via-options"}) as p:
        assert p.transactional_id == "via-options"
        p.init_transactions(30)  # idempotence enabled implicitly, as librdkafka does
    with pytest.raises(rdk.ConfigError):  # librdkafka's own rule, its text
        Producer(bs, transactional_id="x", driver_options={"enable.idempotence": False})


def test_transaction_calls_after_stop_raise_closed(mock_cluster):
    p = txn_producer(mock_cluster)
    p.stop(5)
    for call in (p.begin_transaction, p.init_transactions, p.commit_transaction,
                 p.abort_transaction):
        with pytest.raises(ClosedError):
            call()


# ---- consume-transform-produce, exactly once ---------------------------------------------


class Transformer:
    """receive_callback: one transaction per batch (outputs + the input offsets); the
    ``fail_at``-th batch is aborted and ends the run, as a crash before the commit would."""

    def __init__(self, producer: Producer, out: str, tag: bytes, fail_at: int | None = None) -> None:
        self.producer, self.out, self.tag, self.fail_at = producer, out, tag, fail_at
        self.consumer: rdk.Consumer | None = None
        self.batches = 0
        self.aborted: list[tuple[int, int]] = []  # (partition, offset) of the aborted batch
        self.done = threading.Event()
        self.errors: list[BaseException] = []

    def __call__(self, batch) -> None:
        if self.done.is_set():
            return  # "crashed": nothing more is processed (and nothing committed)
        try:
            self.batches += 1
            p = self.producer
            p.begin_transaction()
            for m in batch.messages:
                p.send(self.out, m.partition, [self.tag + b":" + m.value.upper()])
            nxt = {(batch.topic, part): last + 1 for part, (_first, last) in batch.offsets.items()}
            assert self.consumer is not None
            with self.consumer.group_metadata() as meta:
                p.send_offsets_to_transaction(nxt, meta, 30)
            if self.batches == self.fail_at:
                assert p.flush(30) == 0  # the outputs reach the log, then the transaction fails
                p.abort_transaction(30)
                self.aborted = [(m.partition, m.offset) for m in batch.messages]
                self.done.set()
            else:
                p.commit_transaction(30)
        except BaseException as e:  # the test reports it
            self.errors.append(e)
            self.done.set()
            raise


def test_consume_transform_produce_is_exactly_once_across_a_failed_transaction(tansu, new_topic):
    """Round 1 processes batches in transactions and aborts one (a crash before its commit);
    round 2, a new consumer and producer with the same ids, resumes from the offsets the
    committed transactions wrote. Every input is in exactly one committed transaction."""
    src, out = new_topic(tansu, 2), new_topic(tansu, 2)
    bs = tansu.bootstrap_servers
    group, tid = f"eos-{uuid.uuid4().hex[:8]}", f"tx-eos-{uuid.uuid4().hex[:8]}"
    per_partition = 300
    with Producer(bs, queue_buffering_max_ms=5) as plain:
        for part in range(2):
            plain.send(src, part, [b"v%d-%d" % (part, i) for i in range(per_partition)])
        assert plain.flush(30) == 0

    def run(tag: bytes, fail_at: int | None) -> Transformer:
        producer = Producer(bs, queue_buffering_max_ms=5, transactional_id=tid)
        producer.init_transactions(30)  # fences round 1's producer, aborts what it left open
        work = Transformer(producer, out, tag, fail_at)
        # Tansu holds a JoinGroup for about half the session timeout (45 s by default)
        consumer = rdk.Consumer(bs, src, None, work, group_id=group, max_messages_per_callback=40,
                                offset_store=TransactionalOffsetStore(group),
                                driver_options={"session.timeout.ms": 6000})
        work.consumer = consumer
        try:
            consumer.start()
            if fail_at is not None:
                assert work.done.wait(60), "round 1 did not reach its failing batch"
            else:
                wait_until(lambda: all(committed_offset(bs, group, src, part) == per_partition
                                       for part in range(2)),
                           60, what="every input offset committed by a transaction")
        finally:
            consumer.stop(30)
            producer.stop(10)
        assert work.errors == []
        return work

    first = run(b"r1", fail_at=3)
    assert first.aborted and first.batches == 3
    second = run(b"r2", fail_at=None)
    assert second.batches >= 1

    for part in range(2):
        aborted = {b"V%d-%d" % (part, o) for p_, o in first.aborted if p_ == part}
        rows = read(bs, out, part, per_partition + len(aborted))
        by_input: dict[bytes, list[bytes]] = {}
        for _, value in rows:
            tag, _, v = value.partition(b":")
            by_input.setdefault(v, []).append(tag)
        assert set(by_input) == {b"V%d-%d" % (part, i) for i in range(per_partition)}
        for v, tags in by_input.items():
            committed = [t for t in tags if not (t == b"r1" and v in aborted)]
            assert len(committed) == 1, f"{v!r} in {len(committed)} committed transactions"
            # Tansu's limit (module docstring): the aborted round-1 outputs stay readable
            assert tags == ([b"r1", b"r2"] if v in aborted else committed)


# ---- Apache Kafka: the real aborted-transaction list ----------------------------------------


def test_kafka_read_committed_consumer_skips_aborted_messages_and_control_records(
        kafka_cluster, new_topic, tmp_path):
    """On Apache Kafka (the broker that sends the aborted-transaction list) an rdk.Consumer
    with ``isolation.level=read_committed`` never delivers an aborted transaction's messages,
    nor any commit/abort marker; ``read_uncommitted`` delivers the aborted messages too. The
    offset files end at the last delivered message, and a restart goes on from there."""
    topic = new_topic(kafka_cluster, 1)
    with txn_producer(kafka_cluster) as p:
        for prefix, n, keep in ((b"c1-", 3, True), (b"ab-", 5, False), (b"c2-", 4, True)):
            p.begin_transaction()
            p.send(topic, 0, values(prefix, n))
            assert p.flush(15) == 0
            if keep:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
    # the log: c1 0..2, marker 3, ab 4..8, abort marker 9, c2 10..13, marker 14
    bs = kafka_cluster.bootstrap_servers
    assert high_watermark(bs, topic, 0, "read_committed") == 15
    committed_rows = list(zip([0, 1, 2, 10, 11, 12, 13], values(b"c1-", 3) + values(b"c2-", 4), strict=True))
    aborted_rows = list(zip(range(4, 9), values(b"ab-", 5), strict=True))
    all_rows = committed_rows[:3] + aborted_rows + committed_rows[3:]

    def consume(isolation: str, directory, want: int, **kw):
        got: list = []
        done = threading.Event()

        def receive(batch):
            got.extend((m.offset, m.value) for m in batch.messages)
            if len(got) >= want:
                done.set()

        with rdk.Consumer(bs, topic, None if directory is None else str(directory), receive,
                          driver_options={"isolation.level": isolation}, **kw) as c:
            c.start()
            assert done.wait(30), f"{isolation}: {len(got)} of {want} messages"
        return got

    committed_dir, uncommitted_dir = tmp_path / "rc", tmp_path / "ru"
    assert consume("read_committed", committed_dir, 7) == committed_rows
    assert consume("read_uncommitted", uncommitted_dir, 12) == all_rows
    assert stored(committed_dir, topic, 0) == 13  # the last message, not a marker
    assert stored(uncommitted_dir, topic, 0) == 13

    # one more aborted then committed transaction: a restart resumes after offset 13
    with txn_producer(kafka_cluster) as p:
        p.begin_transaction()
        p.send(topic, 0, values(b"ab2-", 2))  # 15, 16; abort marker 17
        assert p.flush(15) == 0
        p.abort_transaction(30)
        p.begin_transaction()
        p.send(topic, 0, values(b"c3-", 2))  # 18, 19; marker 20
        p.commit_transaction(30)
    assert consume("read_committed", committed_dir, 2) == [(18, b"c3-0"), (19, b"c3-1")]
    assert stored(committed_dir, topic, 0) == 19

    # group mode: the group's commit is the next offset to read after the last delivered
    group = f"g-rc-{uuid.uuid4().hex[:8]}"
    got = consume("read_committed", None, 9, group_id=group)
    assert got == [*committed_rows, (18, b"c3-0"), (19, b"c3-1")]
    assert committed_offset(bs, group, topic, 0) == 20
