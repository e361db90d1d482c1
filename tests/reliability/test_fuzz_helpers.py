"""Fuzzing rdk's C batch helpers with hypothesis: random payload sizes (0 B, 1 MiB, NUL
bytes), keys, headers, timestamps, balancers and batch capacities, through a real mock
cluster and back. scripts/asan-test.sh runs this file against an extension built with
-fsanitize=address,undefined; there RDK_EXPECT_ASAN=1 makes the first test prove the
instrumented module is the one loaded.
"""

from __future__ import annotations

import itertools
import os
import pathlib
import random
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdk._binding as binding
from rdk._binding import ERROR_CODES, ffi, lib
from rdk._binding import messages as _batch
from rdk._binding.fetch import Fetcher
from rdk.mock import MockCluster

EXAMPLES = int(os.environ.get("RDK_FUZZ_EXAMPLES", "20"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
MIB = 1 << 20
MAX_BYTES = MIB + 4096  # the producer's message.max.bytes: 1 MiB payloads fit, TOO_BIG does not
TOO_BIG = MAX_BYTES + 1
FIRST_OFFSET = 0  # explicit offset 0: no ListOffsets round trip per topic


def test_the_instrumented_extension_is_loaded_when_asan_is_expected():
    """Under scripts/asan-test.sh the module must come from the ASan build, with libasan mapped."""
    import rdk._rdkafka as ext

    maps = pathlib.Path("/proc/self/maps").read_text()
    instrumented = "libasan" in maps and b"__asan_init" in pathlib.Path(ext.__file__).read_bytes()
    assert instrumented == (os.environ.get("RDK_EXPECT_ASAN") == "1"), ext.__file__


# ---- strategies ------------------------------------------------------------------
# Large values are drawn as names ("1MiB-nul"...) and made in the test, so hypothesis's
# reports and shrinking stay small.
BIG = {
    "1MiB-nul": lambda: bytes(MIB),
    "1MiB-random": lambda: random.Random(MIB).randbytes(MIB),
    "1MiB-pattern": lambda: b"\x00rdk" * (MIB // 4),
    "too-big": lambda: b"\x01" * TOO_BIG,
}


def materialize(value):
    return BIG[value]() if isinstance(value, str) else value


blobs = st.one_of(
    st.none(),
    st.just(b""),
    st.binary(max_size=64),
    st.binary(min_size=1, max_size=8).map(lambda b: b"\x00" + b + b"\x00"),
    st.sampled_from(sorted(BIG)),
)
small_blobs = st.one_of(st.none(), st.binary(max_size=32))
header_names = st.text(st.characters(blacklist_characters="\x00", codec="utf-8"), max_size=12)
headers = st.lists(st.tuples(header_names.map(str.encode), small_blobs), max_size=4)


@st.composite
def sends(draw):
    """A send list: messages (key, value, headers, timestamp) and where they go."""
    n = draw(st.integers(1, 12))
    with_headers = draw(st.booleans())
    with_ts = draw(st.booleans())
    msgs = []
    big = 0
    for _ in range(n):
        value = draw(blobs)
        if isinstance(value, str) and value != "too-big":
            big += 1
            if big > 2:  # the mock cluster keeps ~5 MiB per partition
                value = b"\x00"
        key = draw(small_blobs)
        hs = draw(headers) if with_headers else []
        ts = draw(st.integers(1, 2**41)) if with_ts else 0
        msgs.append((key, value, hs, ts))
    # up to 40 partitions: least_bytes keeps a heap, which needs a few levels to be tested
    partitions = draw(st.one_of(st.integers(1, 4), st.integers(5, 40)))
    route = draw(st.sampled_from(["fixed", "round_robin", "least_bytes", "librdkafka"]))
    fixed = draw(st.integers(0, partitions - 1))
    return msgs, with_headers, with_ts, partitions, route, fixed


# ---- helpers ---------------------------------------------------------------------

def _column(items):
    """bytes/None items -> (buffer, int64 offsets, null flags) as C arrays."""
    data = b"".join(x or b"" for x in items)
    offsets = list(itertools.accumulate((len(x or b"") for x in items), initial=0))
    return (ffi.from_buffer(data + b"\0"), ffi.new("int64_t[]", offsets),
            ffi.new("unsigned char[]", [x is None for x in items] or [0]))


def produce(client, topic, msgs, partition, balancer, partition_cnt, send_id, headers_on, ts_on):
    """One rdk_produce_batch call; returns (enqueued, errs)."""
    keep = []
    vbuf, voff, vnull = _column([m[1] for m in msgs])
    kbuf, koff, knull = _column([m[0] for m in msgs])
    fields = {"rk": client.rk, "rkt": client.topic(topic), "partition": partition,
              "balancer": balancer, "partition_cnt": partition_cnt, "n": len(msgs),
              "values": vbuf, "value_offsets": voff, "value_null": vnull,
              "keys": kbuf, "key_offsets": koff, "key_null": knull,
              "opaque_base": send_id << 32}
    if headers_on:
        flat = [h for m in msgs for h in m[2]]
        hidx = ffi.new("int32_t[]", list(itertools.accumulate((len(m[2]) for m in msgs), initial=0)))
        hn, hnoff, _ = _column([h[0] for h in flat])
        hv, hvoff, hvnull = _column([h[1] for h in flat])
        fields.update(header_index=hidx, header_names=hn, header_name_offsets=hnoff,
                      header_values=hv, header_value_offsets=hvoff, header_value_null=hvnull)
        keep += [hidx, hn, hnoff, hv, hvoff, hvnull]
    if ts_on:
        tss = ffi.new("int64_t[]", [m[3] for m in msgs])
        fields["timestamps"] = tss
        keep.append(tss)
    errs = ffi.new("int32_t[]", len(msgs))
    fields["errs"] = errs
    args = ffi.new("rdk_produce_args *", fields)
    enqueued = lib.rdk_produce_batch(args)
    return enqueued, list(errs)


def collect_deliveries(client, d, expected, timeout_s=30.0):
    """Drive rdk_poll_events with our own (small) rdk_deliveries until ``expected`` settle."""
    delivered, failed = {}, []
    deadline = time.monotonic() + timeout_s
    while sum(delivered.values()) + len(failed) < expected:
        assert time.monotonic() < deadline, (delivered, failed, expected)
        ev = lib.rdk_poll_events(client.main_queue, 100, d)
        while True:
            for i in range(d.n_runs):
                delivered[int(d.run_send[i])] = delivered.get(int(d.run_send[i]), 0) + d.run_count[i]
            for i in range(d.n_failed):
                failed.append((int(d.failed_send[i]), d.failed_index[i], d.failed_err[i]))
            if ev != ffi.NULL:
                lib.rd_kafka_event_destroy(ev)
            if d.pending == ffi.NULL:
                break
            ev = lib.rdk_poll_events(client.main_queue, 0, d)
    return delivered, failed


def valid(bitmap, i) -> bool:
    return bool((bitmap[i >> 3] >> (i & 7)) & 1)


def cell(buf, offsets, bitmap, i):
    if not valid(bitmap, i):
        return None
    return ffi.unpack(buf + offsets[i], offsets[i + 1] - offsets[i])


def row_cell(b, which, i):
    """Row i's value (which 0) or key (1): from the contiguous buffer, or, in keep mode,
    from the librdkafka message it points into."""
    offsets = b.key_offsets if which else b.value_offsets
    bitmap = b.key_valid if which else b.value_valid
    if not b.keep:
        return cell(b.keys if which else b.values, offsets, bitmap, i)
    if not valid(bitmap, i):
        return None
    return ffi.unpack((b.key_ptr if which else b.value_ptr)[i], offsets[i + 1] - offsets[i])


def assert_arrow_matches(b, topic):
    """rdk.arrow.record_batch (one gather from the kept messages, or one copy of the
    contiguous buffers) holds exactly the batch's values and keys."""
    arrow = pytest.importorskip("rdk.arrow")
    rb = arrow.record_batch(b, topic)
    assert rb.column("value").to_pylist() == [row_cell(b, 0, i) for i in range(b.n)]
    assert rb.column("key").to_pylist() == [row_cell(b, 1, i) for i in range(b.n)]


def assert_fast_path_matches_fallback(b, topic):
    """rdk._messages.build, given only the rdk_batch's address, reads the struct's fields
    itself: it must build exactly the Messages of the pure-Python path."""
    assert _batch._messages is not None, "rdk._messages (the C fast path) did not load"
    headers = _batch.headers_of(b) if b.n_headers else None
    for decode in (False, True):
        assert _batch.build_messages(b, topic, decode) == _batch.python_messages(
            b, topic, decode, headers)


def read_back(consumer, topic, partitions, count, rng, timeout_s=30.0, skip_headers=False):
    """Fetch ``count`` messages with random batch sizes; returns rows per partition."""
    cap = rng.randint(1, 16)
    keep = rng.random() < 0.5  # the batch keeps librdkafka's messages (one copy fewer)
    fetcher = Fetcher(consumer, topic, max_messages=cap, keep=keep)
    fetcher.batch.skip_headers = int(skip_headers)
    rows: dict[int, list] = {p: [] for p in range(partitions)}
    got = 0
    try:
        for p in range(partitions):
            fetcher.start(p, FIRST_OFFSET)
        deadline = time.monotonic() + timeout_s
        while got < count:
            assert time.monotonic() < deadline, f"read {got} of {count}"
            b = fetcher.fetch(100, rng.randint(1, cap + 2))
            assert 0 <= b.n <= cap
            seen = 0
            for s in range(b.n_parts):
                seen += b.part_count[s]
            assert seen == b.n - b.n_errors
            if skip_headers:
                assert b.n_headers == 0
            assert_fast_path_matches_fallback(b, topic)
            assert_arrow_matches(b, topic)
            for i in range(b.n):
                assert b.err[i] == 0, binding.err_name(b.err[i])
                hs = [(ffi.unpack(b.header_names + b.header_name_offsets[h],
                                  b.header_name_offsets[h + 1] - b.header_name_offsets[h]),
                       cell(b.header_values, b.header_value_offsets, b.header_value_valid, h))
                      for h in range(b.header_index[i], b.header_index[i + 1])]
                rows[b.partition[i]].append(
                    (b.offset[i], row_cell(b, 1, i), row_cell(b, 0, i), hs, b.timestamp[i]))
            got += b.n
    finally:
        fetcher.close()
    return rows


def expected_partitions(msgs, route, fixed, partitions):
    """Where each enqueued message must land (None: librdkafka's partitioner decides)."""
    if route == "fixed":
        return [fixed] * len(msgs)
    if route == "round_robin":
        return [i % partitions for i in range(len(msgs))]
    if route == "least_bytes":
        sent = [0] * partitions
        out = []
        for key, value, _, _ in msgs:
            best = min(range(partitions), key=lambda p: (sent[p], p))
            sent[best] += len(value or b"") + len(key or b"")
            out.append(best)
        return out
    return [None] * len(msgs)


# ---- fixtures ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fuzz_site():
    with MockCluster(1) as mc:
        producer = binding.Client("producer", {
            "bootstrap.servers": mc.bootstrap_servers, "linger.ms": 1,
            "message.max.bytes": MAX_BYTES, "log_level": 3}, start_thread=False)
        consumer = binding.Client("consumer", {
            "bootstrap.servers": mc.bootstrap_servers, "fetch.wait.max.ms": 50,
            "fetch.error.backoff.ms": 10, "topic.metadata.refresh.fast.interval.ms": 10,
            "log_level": 3})
        try:
            yield mc, producer, consumer
        finally:
            consumer.close()
            producer.close()


# ---- tests ---------------------------------------------------------------------------

@FUZZ
@given(spec=sends(), dr_cap=st.integers(1, 6), seed=st.integers(0, 2**32))
def test_random_send_lists_round_trip_byte_exact_through_the_c_helpers(fuzz_site, spec, dr_cap, seed):
    mc, producer, consumer = fuzz_site
    msgs, headers_on, ts_on, partitions, route, fixed = spec
    msgs = [(k, materialize(v), hs, ts) for k, v, hs, ts in msgs]
    topic = f"fz-{uuid.uuid4().hex[:12]}"
    mc.create_topic(topic, partitions)
    kind = {"round_robin": lib.RDK_BALANCE_ROUND_ROBIN, "least_bytes": lib.RDK_BALANCE_LEAST_BYTES,
            "librdkafka": lib.RDK_BALANCE_LIBRDKAFKA}.get(route)
    balancer = ffi.NULL if kind is None else lib.rdk_balancer_new(kind)
    d = lib.rdk_deliveries_new(dr_cap)  # a tiny capacity exercises partly folded DR events
    try:
        partition = fixed if route == "fixed" else lib.RD_KAFKA_PARTITION_UA
        send_id = seed & 0x7FFFFFFF
        enqueued, errs = produce(producer, topic, msgs, partition, balancer, partitions,
                                 send_id, headers_on, ts_on)
        too_big = [i for i, m in enumerate(msgs) if m[1] is not None and len(m[1]) >= TOO_BIG]
        assert [i for i, e in enumerate(errs) if e] == too_big
        assert all(errs[i] == ERROR_CODES["MSG_SIZE_TOO_LARGE"] for i in too_big)
        assert enqueued == len(msgs) - len(too_big)
        delivered, failed = collect_deliveries(producer, d, enqueued)
        assert failed == [] and delivered == ({send_id: enqueued} if enqueued else {})
    finally:
        lib.rdk_deliveries_free(d)
        if balancer != ffi.NULL:
            lib.rdk_balancer_free(balancer)

    # the balancers count a refused message too (it was routed before librdkafka refused it)
    routed = [q for i, q in enumerate(expected_partitions(msgs, route, fixed, partitions))
              if i not in too_big]
    sent = [m for i, m in enumerate(msgs) if i not in too_big]
    rng = random.Random(seed)
    skip_headers = rng.random() < 0.25  # readers that do not want headers (Spark's default)
    rows = read_back(consumer, topic, partitions, len(sent), rng, skip_headers=skip_headers)
    assert sum(map(len, rows.values())) == len(sent)
    for p, prow in rows.items():
        assert [r[0] for r in prow] == list(range(len(prow))), f"offsets of partition {p}"
    if route == "librdkafka":
        got = sorted((r[1] or b"", r[2] or b"") for prow in rows.values() for r in prow)
        assert got == sorted((m[0] or b"", m[1] or b"") for m in sent)
        return
    for p in range(partitions):
        want = [m for m, q in zip(sent, routed, strict=True) if q == p]
        got = rows[p]
        assert [(r[1], r[2]) for r in got] == [(m[0], m[1]) for m in want], f"partition {p}"
        if skip_headers:
            assert all(r[3] == [] for r in got), "headers copied although skipped"
        elif headers_on:
            assert [r[3] for r in got] == [m[2] for m in want]
        if ts_on:
            assert [r[4] for r in got] == [m[3] for m in want]


@FUZZ
@given(cap=st.integers(-3, 64), data=st.data())
def test_batch_track_matches_kafka_natives_repeats_and_misses(cap, data):
    b = lib.rdk_batch_new(cap)
    if cap < 1:
        assert b == ffi.NULL
        return
    try:
        n = data.draw(st.integers(0, cap))
        n_expected = data.draw(st.integers(0, 6))
        parts = data.draw(st.lists(st.integers(-2, 7), min_size=n, max_size=n))
        offs = data.draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n))
        errs = data.draw(st.lists(st.sampled_from([0, 0, 0, -191, 3]), min_size=n, max_size=n))
        expected = data.draw(st.lists(st.integers(-1, 2**40), min_size=n_expected,
                                      max_size=n_expected))
        b.n = n
        for i in range(n):
            b.partition[i], b.offset[i], b.err[i] = parts[i], offs[i], errs[i]
        exp_c = ffi.new("int64_t[]", expected or [0])
        rep, mis = ffi.new("int64_t *"), ffi.new("int64_t *")
        lib.rdk_batch_track(b, exp_c, n_expected, rep, mis)
        # reference: kafka-native's rule, written plainly
        want = list(expected)
        r = x = 0
        for p, o, e in zip(parts, offs, errs, strict=True):
            if e or p < 0 or p >= n_expected:
                continue
            if want[p] >= 0:
                if o < want[p]:
                    r += 1
                elif o > want[p]:
                    x += o - want[p]
            want[p] = o + 1
        assert (rep[0], mis[0]) == (r, x)
        assert [exp_c[i] for i in range(n_expected)] == want
    finally:
        b.n = 0
        lib.rdk_batch_free(b)


def _fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


@FUZZ
@given(data=st.one_of(st.binary(max_size=512), st.integers(0, 3).map(lambda k: bytes(k * 4096))))
def test_fnv1a32_in_c_matches_the_reference(data):
    assert lib.rdk_fnv1a32(ffi.from_buffer(data + b"\0"), len(data)) == _fnv1a32(data)


def test_empty_and_zero_capacity_calls_are_harmless(fuzz_site):
    _, producer, _ = fuzz_site
    errs = ffi.new("int32_t[]", 1)
    args = ffi.new("rdk_produce_args *", {"rk": producer.rk, "rkt": producer.topic("fz-empty"),
                                          "partition": 0, "n": 0, "errs": errs})
    assert lib.rdk_produce_batch(args) == 0
    d = lib.rdk_deliveries_new(1)
    try:
        ev = lib.rdk_poll_events(producer.main_queue, 0, d)
        if ev != ffi.NULL:  # a log line, never a delivery report: nothing was sent
            assert lib.rd_kafka_event_type(ev) != lib.RD_KAFKA_EVENT_DR
            lib.rd_kafka_event_destroy(ev)
        assert d.n_runs == 0 and d.n_failed == 0 and d.pending == ffi.NULL
    finally:
        lib.rdk_deliveries_free(d)
    assert lib.rdk_fnv1a32(ffi.NULL, 0) == 0x811C9DC5
