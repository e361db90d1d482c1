"""librdkafka's mock cluster: ``MockCluster`` in this process (with its fault-injection
calls as methods) and ``MockClusterProcess``, the same served by ``python -m rdk.mock`` in
a child process (its broker threads never share a measured interpreter)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _binding
from .._binding import ERROR_CODES
from .._binding import mock as _mock
from ..errors import RdkError
from ..validate import check_choice, check_int, check_timeout, check_topic_name
from ._base import EmbeddedBroker
from ._process import first_line, server_process, stop_process

__all__ = ["API_KEYS", "MockCluster", "MockClusterProcess"]

# Kafka protocol request types, for push_request_errors().
API_KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8,
            "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
            "ApiVersions": 18, "CreateTopics": 19, "InitProducerId": 22,
            "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26,
            "TxnOffsetCommit": 28}
"""Kafka protocol request types by name, for ``MockCluster.push_request_errors()``."""

MAX_MOCK_BROKERS = 1024  # each mock broker is a listener and a thread in this process
"""Most brokers of one mock cluster (each is a listener and a thread in its process)."""


def _error_code(err: int | str) -> int:
    if isinstance(err, str):
        name = err.removeprefix("RD_KAFKA_RESP_ERR_")
        if name not in ERROR_CODES:
            raise ValueError(f"unknown librdkafka error name {err!r}")
        return ERROR_CODES[name]
    return check_int(err, "error code", minimum=-(2**31), maximum=2**31 - 1)


def _api_key(api: int | str) -> int:
    if isinstance(api, str):
        return API_KEYS[check_choice(api, "api", tuple(API_KEYS))]
    return check_int(api, "api", minimum=0, maximum=2**15 - 1)


def _check_partition(topic: str, partition: int) -> None:
    check_topic_name(topic)
    check_int(partition, "partition", minimum=0, maximum=2**31 - 1)


def _check_broker_id(broker_id: int) -> None:
    check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)


def _destroy_mock(holder: list[Any], client: _binding.Client) -> None:
    """The mock cluster first, then the handle that owns it (librdkafka's required order).
    In a forked child neither is touched: they are the parent's."""
    mc, holder[0] = holder[0], None
    if client.in_child:
        client.close()
        return
    if mc is not None:
        _mock.cluster_destroy(mc)
    client.close()


class MockCluster(EmbeddedBroker):
    """librdkafka's mock cluster with ``num_brokers`` brokers (ids 1..num_brokers).

    It keeps only about 5 MiB or 100k message sets per partition (older data is
    deleted), has no timestamp lookups and no CreateTopics: topics come from
    ``create_topic`` (or auto-creation on first use).

    Args:
        num_brokers: Brokers, 1 to ``MAX_MOCK_BROKERS``.
        group_initial_rebalance_delay_ms: How long a new consumer group waits for more
            members before its first assignment, 0 to 300 000. 0 (as ``KafkaCluster``): it
            forms at once; librdkafka's own default is 3 000, a broker's default.

    Raises:
        TypeError: ``num_brokers`` or the delay is not an int.
        ValueError: ``num_brokers`` or the delay is out of range.
        rdk.RdkError: librdkafka could not create the mock cluster.
    """

    kind = "mock"
    """``"mock"``."""

    def __init__(self, num_brokers: int = 3, *, group_initial_rebalance_delay_ms: int = 0) -> None:
        check_int(num_brokers, "num_brokers", minimum=1, maximum=MAX_MOCK_BROKERS)
        check_int(group_initial_rebalance_delay_ms, "group_initial_rebalance_delay_ms",
                  minimum=0, maximum=300_000)
        self.num_brokers = num_brokers
        """The number of brokers (ids 1..num_brokers)."""
        # The handle only keeps the cluster's books; its event thread drains logs.
        self._client = _binding.Client("producer", {"log_level": 3})
        try:
            mc, self.bootstrap_servers = _mock.cluster_new(self._client.rk, num_brokers)
        except RdkError:
            self._client.close()
            raise
        """The mock brokers' ``host:port`` list."""
        self._lock = threading.Lock()
        # librdkafka aborts the process if the handle is destroyed while it still owns a mock
        # cluster. One finalizer owns both, in that order: it holds the client (so the
        # client's own finalizer cannot run first, by garbage collection or at exit) and
        # the client's exit hook is switched off.
        self._holder: list[Any] = [mc]
        self._client._finalizer.atexit = False
        self._finalizer = weakref.finalize(self, _destroy_mock, self._holder, self._client)
        _mock.group_initial_rebalance_delay(mc, group_initial_rebalance_delay_ms)

    @property
    def _mc(self) -> Any:
        return self._holder[0]

    @property
    def _cluster(self) -> Any:
        self._client.ensure_open()  # ClosedError in a forked child
        mc = self._mc
        if mc is None:
            raise RdkError("mock cluster is closed")
        return mc

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        """Create topic ``name`` in the mock cluster.

        Args:
            name: The topic name.
            partitions: Its partition count, >= 1.
            replication_factor: Replicas of each partition, >= 1.

        Raises:
            rdk.KafkaError: librdkafka refused.
            TypeError: An argument of the wrong type.
            ValueError: An illegal topic name or count.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        check_topic_name(name)
        check_int(partitions, "partitions", minimum=1, maximum=2**31 - 1)
        check_int(replication_factor, "replication_factor", minimum=1, maximum=2**31 - 1)
        _mock.topic_create(self._cluster, name, partitions, replication_factor)

    def _broker_call(self, fn: Any, broker_id: int) -> None:
        """``fn(cluster, broker_id)``: a call on one mock broker."""
        _check_broker_id(broker_id)
        fn(self._cluster, broker_id)

    def broker_set_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones until broker_set_up().

        Args:
            broker_id: The broker's id, 1..num_brokers.

        Raises:
            rdk.KafkaError: librdkafka refused (e.g. an unknown broker id).
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        self._broker_call(_mock.broker_set_down, broker_id)

    def broker_set_up(self, broker_id: int) -> None:
        """Let the broker accept connections again after ``broker_set_down()``.

        Args:
            broker_id: The id of a broker set down, 1..num_brokers.

        Raises:
            rdk.KafkaError: librdkafka refused (e.g. a broker id the cluster does not have).
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        self._broker_call(_mock.broker_set_up, broker_id)

    def broker_remove_from_metadata(self, broker_id: int) -> None:
        """Leave the broker out of Metadata answers; it keeps its connections and answers.

        With one broker, the answers then list no broker at all, as Apache Kafka's do while
        the answering broker is fenced. There is no way back: use a new cluster.

        Args:
            broker_id: The broker to hide, 1..num_brokers.

        Raises:
            rdk.KafkaError: librdkafka refused (e.g. an unknown broker id).
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        self._broker_call(_mock.broker_remove_from_metadata, broker_id)

    def coordinator_set(self, key_type: str, key: str, broker_id: int) -> None:
        """Make ``broker_id`` the coordinator of a transactional id or a group (librdkafka's
        rd_kafka_mock_coordinator_set; by default the mock cluster hashes the key).

        Args:
            key_type: ``"transaction"`` (``key`` is a transactional.id) or ``"group"``.
            key: The transactional.id or group id.
            broker_id: The new coordinator, 1..num_brokers.

        Raises:
            ValueError: ``key_type`` is neither ``"transaction"`` nor ``"group"``.
            TypeError: ``key`` is not a str.
            rdk.KafkaError: librdkafka refused.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        if key_type not in ("transaction", "group"):
            raise ValueError(f"key_type must be 'transaction' or 'group', got {key_type!r}")
        if not isinstance(key, str):
            raise TypeError(f"key must be str, got {type(key).__name__}")
        _check_broker_id(broker_id)
        _mock.coordinator_set(self._cluster, key_type, key, broker_id)

    def broker_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay the broker's responses by ``rtt_ms`` milliseconds.

        Args:
            broker_id: The broker's id, 1..num_brokers.
            rtt_ms: The round-trip time to simulate, in milliseconds (0: none).

        Raises:
            rdk.KafkaError: librdkafka refused (e.g. an unknown broker id).
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        _check_broker_id(broker_id)
        check_int(rtt_ms, "rtt_ms", minimum=0, maximum=2**31 - 1)
        _mock.broker_set_rtt(self._cluster, broker_id, rtt_ms)

    def _partition_call(self, fn: Any, topic: str, partition: int, broker_id: int) -> None:
        """``fn(cluster, topic, partition, broker_id)``: make ``broker_id`` the partition's
        leader or follower."""
        _check_partition(topic, partition)
        _check_broker_id(broker_id)
        fn(self._cluster, topic, partition, broker_id)

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` the partition's leader.

        Args:
            topic: The topic name.
            partition: The partition number.
            broker_id: The new leader's id (-1: no leader).

        Raises:
            rdk.KafkaError: librdkafka refused.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        self._partition_call(_mock.partition_set_leader, topic, partition, broker_id)

    def partition_set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """Make ``broker_id`` the broker that consumers of the partition fetch from.

        Args:
            topic: The topic name.
            partition: The partition number.
            broker_id: The follower's id.

        Raises:
            rdk.KafkaError: librdkafka refused.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        self._partition_call(_mock.partition_set_follower, topic, partition, broker_id)

    def push_request_errors(self, api: int | str, errors: Iterable[int | str]) -> None:
        """The next len(errors) requests of type ``api`` ("Produce", "Fetch"... or a key) fail.

        Args:
            api: A name of ``API_KEYS`` or a protocol API key.
            errors: Error codes or librdkafka error names (``"NOT_LEADER_FOR_PARTITION"``),
                one per failing request, in order.

        Raises:
            ValueError: An unknown API or error name.
            TypeError: An API key or code that is not an int.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        key = _api_key(api)
        codes = [_error_code(e) for e in errors]
        _mock.push_request_errors(self._cluster, key, codes)

    def clear_request_errors(self, api: int | str) -> None:
        """Drop the errors ``push_request_errors()`` queued for ``api``.

        Args:
            api: A name of ``API_KEYS`` or a protocol API key.

        Raises:
            ValueError: An unknown API name.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        key = _api_key(api)
        _mock.clear_request_errors(self._cluster, key)

    def topic_set_error(self, topic: str, err: int | str) -> None:
        """Metadata answers for ``topic`` carry ``err`` (0 clears it).

        Args:
            topic: The topic name.
            err: An error code or librdkafka error name.

        Raises:
            ValueError: An unknown error name, an illegal topic name.
            rdk.RdkError: The mock cluster is closed.
            rdk.ClosedError: In a process forked after the cluster was made.
        """
        check_topic_name(topic)
        _mock.topic_set_error(self._cluster, topic, _error_code(err))

    def close(self) -> None:
        """Destroy the mock cluster, then its handle (idempotent; also at interpreter exit
        or when the object is collected, if never called)."""
        with self._lock:
            self._finalizer()


class MockClusterProcess(EmbeddedBroker):
    """librdkafka's mock cluster served by ``python -m rdk.mock`` in a child process.

    The mock cluster has no CreateTopics: give ``topics`` ({name: partitions}) here.

    Args:
        topics: ``{name: partitions}`` to create. None: none.
        num_brokers: Brokers, 1 to ``MAX_MOCK_BROKERS``.
        startup_timeout: Seconds to wait for the child to print its bootstrap servers.

    Raises:
        TypeError: An argument of the wrong type.
        ValueError: A count out of range, an illegal topic name, a negative timeout.
        rdk.RdkError: The child process did not start (with what it wrote to stderr).
    """

    kind = "mock"
    """``"mock"``."""

    def __init__(self, topics: Mapping[str, int] | None = None, num_brokers: int = 1,
                 startup_timeout: float = 30.0) -> None:
        check_int(num_brokers, "num_brokers", minimum=1, maximum=MAX_MOCK_BROKERS)
        check_timeout(startup_timeout, "startup_timeout")
        cmd = [sys.executable, "-m", "rdk.mock", "--brokers", str(num_brokers)]
        for name, partitions in (topics or {}).items():
            check_topic_name(name)
            check_int(partitions, f"partitions of {name!r}", minimum=1, maximum=2**31 - 1)
            cmd += ["--topic", f"{name}:{partitions}"]
        self.stderr = ""  # what the child wrote to stderr, once closed
        """What the child wrote to stderr, once closed."""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._proc: subprocess.Popen | None = server_process(
            cmd, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        line = first_line(self._proc, startup_timeout)
        if not line.startswith("RDK_BROKERS="):
            self.close()
            raise RdkError(f"the mock cluster process did not start (printed {line!r}): "
                           f"{self.stderr[-500:]}")
        self.bootstrap_servers = line.split("=", 1)[1]
        """The mock brokers' ``host:port`` list."""

    @property
    def pid(self) -> int | None:
        """The child process's pid; None once closed."""
        return self._proc.pid if self._proc else None

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Not available: the mock cluster has no CreateTopics.

        Args:
            name: The topic name.
            partitions: Its partition count.

        Raises:
            rdk.RdkError: Always; pass ``topics=`` to the constructor instead.
        """
        raise RdkError("the mock cluster has no CreateTopics: pass topics= to MockClusterProcess")

    def close(self) -> None:
        """Stop the child process and keep its stderr in ``stderr`` (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        stop_process(proc, 10.0)
        if proc.stdout:
            proc.stdout.close()
        self._stderr.seek(0)
        self.stderr = self._stderr.read().decode(errors="replace")
        self._stderr.close()
