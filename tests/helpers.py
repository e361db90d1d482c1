"""Plain helpers the test files share; fixtures live in the conftest.py files.

Import them as ``from helpers import ...``: pyproject's ``[tool.pytest.ini_options]``
puts tests/ on ``sys.path`` (``pythonpath``).

- ``wait_until``: poll a real condition until it holds (tests never sleep to synchronise).
- ``produce``, ``values``, ``Collector``, ``stored``: the consumer tests' data in and out.
- ``read_log``: every message a broker kept, read through the C batch helper.
- ``kafka_unavailable``: why Apache Kafka cannot start here, or None.
"""

from __future__ import annotations

import os
import threading
import time

import rdk
from rdk.offsets import read_offset_file


def kafka_unavailable() -> str | None:
    """Why Apache Kafka cannot start here (no jars, no java), or None."""
    import os
    import shutil

    from rdk.errors import RdkError
    from rdk.testing import kafka_libs

    try:
        kafka_libs()
    except RdkError as e:
        return str(e)
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no java runtime (scripts/setup.sh installs one)"
    return None


def wait_until(condition, timeout: float = 20.0, what: str = "condition", *, interval: float = 0.02):
    """Call ``condition`` every ``interval`` s until it returns something truthy; return that.

    Raises AssertionError naming ``what`` when ``timeout`` seconds pass first (the condition
    is called once more after the deadline, so a slow last poll still counts).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# ---- consumer tests: data in and out -------------------------------------------------------


def produce(broker, topic, partition, payloads):
    """Produce ``payloads`` (bytes, or (key, value, headers) triples) and wait for delivery."""
    msgs = [rdk.Message(p[1], key=p[0], headers=[(n.decode(), v) for n, v in p[2]] or None)
            if isinstance(p, tuple) else p for p in payloads]
    producer = rdk.Producer(broker.bootstrap_servers, queue_buffering_max_ms=5)
    try:
        assert producer.send(topic, partition, msgs).enqueued == len(msgs)
    finally:
        assert producer.stop(30) == 0, "messages left undelivered"


def values(n, start=0, prefix=b"m"):
    return [b"%s%d" % (prefix, i) for i in range(start, start + n)]


class Collector:
    """A receive_callback that keeps every batch; wait_for(n) waits for n messages."""

    def __init__(self, on_batch=None):
        self.batches = []
        self.messages = []
        self.cond = threading.Condition()
        self.on_batch = on_batch

    def __call__(self, info):
        with self.cond:
            self.batches.append(info)
            self.messages.extend(info.messages)
            self.cond.notify_all()
        if self.on_batch is not None:
            return self.on_batch(info)
        return None

    def wait_for(self, n, timeout=30.0):
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.messages) >= n, timeout)
            assert ok, f"received {len(self.messages)} of {n} messages"

    def offsets(self, partition=None):
        return [m.offset for m in self.messages if partition is None or m.partition == partition]


def stored(directory, topic, partition):
    """The offset recorded in ``directory``'s offset file of ``topic``/``partition`` (or None)."""
    return read_offset_file(directory / f"{topic}-{partition}.offset")


# ---- Kafka's coordinators ----------------------------------------------------------------


TXN_STATE_PARTITIONS = 50
"""Kafka's transaction.state.log.num.partitions (default)."""


def java_hash(text: str) -> int:
    """Java's String.hashCode (ASCII text), as Kafka hashes a transactional id."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def txn_coordinator(kc, transactional_id: str) -> int:
    """The node of KafkaCluster ``kc`` coordinating ``transactional_id``: the leader of its
    __transaction_state partition (Kafka's Utils.abs(hashCode) % partitions)."""
    h = java_hash(transactional_id)
    part = 0 if h == -(1 << 31) else abs(h) % TXN_STATE_PARTITIONS
    return kc.leader("__transaction_state", part)


# ---- reading back what a broker kept -------------------------------------------------------


def read_log(bootstrap: str, topic: str, partitions, timeout: float = 60.0) -> dict[int, list]:
    """Every message now in ``partitions`` of ``topic``: {partition: [(offset, key, value)]}.

    Reads up to each partition's high watermark (Admin.watermarks) through the C batch
    helper, so the test sees exactly what the broker kept.
    """
    from rdk import _binding
    from rdk._binding import ffi
    from rdk._binding.fetch import Fetcher

    with rdk.Admin(bootstrap) as admin:
        highs = {p: admin.watermarks(topic, p) for p in partitions}
    rows: dict[int, list] = {p: [] for p in partitions}
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "log_level": 3})
    fetcher = Fetcher(client, topic)
    try:
        for p, (low, high) in highs.items():
            if high > low:
                fetcher.start(p, low)
        want = sum(high - low for low, high in highs.values())
        got = 0
        deadline = time.monotonic() + timeout
        while got < want:
            assert time.monotonic() < deadline, f"read {got} of {want} messages of {topic}"
            b = fetcher.fetch(200)
            for i in range(b.n):
                assert b.err[i] == 0, _binding.err_name(b.err[i])
                vo, ko = b.value_offsets, b.key_offsets
                value = ffi.unpack(b.values + vo[i], vo[i + 1] - vo[i])
                key = ffi.unpack(b.keys + ko[i], ko[i + 1] - ko[i]) if ko[i + 1] > ko[i] else None
                rows[b.partition[i]].append((b.offset[i], key, value))
            got += b.n
    finally:
        fetcher.close()
        client.close()
    return rows


def test_seed() -> int:
    """The seed of a randomised test: ``RDK_TEST_SEED`` if set (to replay a failure), else
    the clock. The ``rdk_seed`` fixture (conftest.py) gives it and names it on failure."""
    seed = os.environ.get("RDK_TEST_SEED")
    return int(seed) if seed else time.time_ns() % 2**32


test_seed.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test
