"""Apache Kafka as plain JVM processes: ``KafkaCluster``, a KRaft cluster of combined
broker+controller nodes on 127.0.0.1 that a test can hurt (kill, restart, pause).

The broker jars come from Maven Central through ``scripts/setup.sh`` (``.deps/kafka-<version>/libs``,
or the folder named by ``RDK_KAFKA_LIBS``); a JVM (``java`` 17+) runs them.
"""

from __future__ import annotations

import os
import re
import time
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import _binding
from ..errors import KafkaError, RdkError
from ..validate import check_int, check_topic_name
from ._base import EmbeddedBroker

# JVM_OPTIONS, LISTENERS, SASL_MECHANISMS: importable here as before, not in __all__
from ._kafka_nodes import JVM_OPTIONS as JVM_OPTIONS
from ._kafka_nodes import KafkaNodes, cluster_id, find_java, shutdown
from ._kafka_security import LISTENERS as LISTENERS
from ._kafka_security import SASL_MECHANISMS as SASL_MECHANISMS
from ._kafka_security import (
    check_listeners,
    check_users,
    make_tls,
    scram_arguments,
    security_properties,
)
from ._process import ServerProcess

__all__ = ["KAFKA_VERSION", "KafkaCluster"]

#: The Apache Kafka release scripts/setup.sh fetches (scripts/kafka/pom.xml pins the same).
KAFKA_VERSION = "4.3.1"
"""The Apache Kafka release scripts/setup.sh fetches (scripts/kafka/pom.xml pins the same)."""
MAX_NODES = 9

_REPO = Path(__file__).resolve().parents[3]


def kafka_libs(version: str | None = None) -> Path:
    """The folder of Apache Kafka's jars: ``$RDK_KAFKA_LIBS`` if set (and no ``version``
    asked), else this source tree's ``.deps/kafka-<version>/libs`` (scripts/setup.sh).

    Args:
        version: An Apache Kafka version like ``"4.3.1"``. None: ``$RDK_KAFKA_LIBS`` if set,
            else ``KAFKA_VERSION``.

    Returns:
        The folder holding ``kafka_2.13-<version>.jar`` and its dependencies.

    Raises:
        rdk.RdkError: The jars are not there.
    """
    env = os.environ.get("RDK_KAFKA_LIBS")
    if env and version is None:
        libs = Path(env)
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise RdkError(f"RDK_KAFKA_LIBS={env} holds no kafka_2.13-*.jar (Apache Kafka's broker)")
        return libs
    version = version or KAFKA_VERSION
    libs = _REPO / ".deps" / f"kafka-{version}" / "libs"
    if not (libs / f"kafka_2.13-{version}.jar").is_file():
        raise RdkError(f"Apache Kafka {version}'s jars are not in {libs}: run scripts/setup.sh "
                       "(it fetches them from Maven Central with mvn), or set RDK_KAFKA_LIBS to a "
                       "folder of Kafka's jars")
    return libs


def _check_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping of broker properties, got {type(config).__name__}")
    for key in config:
        if not isinstance(key, str) or not key:
            raise TypeError(f"config keys must be non-empty str, got {key!r}")
    return dict(config)


class KafkaCluster(EmbeddedBroker):
    """Apache Kafka in KRaft mode: ``num_brokers`` combined broker+controller nodes (ids
    1..num_brokers) on 127.0.0.1, each a JVM of its own (``JVM_OPTIONS``, with at most
    ``heap_mib`` MiB of heap: 384 by default, too little for a topic of 8 192 partitions),
    their storage formatted in a temporary folder removed by ``close()``.

    ``config`` overrides any broker property (``{"log.retention.ms": 1000}``). The
    PLAINTEXT listener always runs (it carries the brokers' own traffic); ``listeners`` adds
    ``"SSL"``, ``"SASL_PLAINTEXT"``, ``"SASL_SSL"``: ``bootstrap_servers_for(listener)``
    gives their addresses, ``ca_location`` the CA that signed the brokers' certificate (for
    127.0.0.1 and localhost). SASL listeners take PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (the
    ``sasl_users`` {name: password}) and OAUTHBEARER with unsecured JWS tokens.

    Every node dies with this process even when it is SIGKILLed (PR_SET_PDEATHSIG), and
    runs in a process group of its own. Internal topics are replicated min(3, num_brokers)
    times (min.insync.replicas min(2, num_brokers)); topics are never created
    automatically; group rebalances start at once; share groups are on (4.2+).

    Args:
        num_brokers: Nodes, 1 to 9.
        config: Broker properties overriding rdk's (``{"log.retention.ms": 1000}``). None: none.
        listeners: Listeners to offer, of ``"PLAINTEXT"``, ``"SSL"``, ``"SASL_PLAINTEXT"``,
            ``"SASL_SSL"`` (PLAINTEXT always runs).
        sasl_users: ``{name: password}`` for PLAIN and SCRAM (1-128 of ``A-Z a-z 0-9 _ . @ + -``
            each). None: none.
        version: The Apache Kafka version to run, like ``"4.3.1"``. None: ``KAFKA_VERSION``
            (or the jars of ``$RDK_KAFKA_LIBS``).
        heap_mib: Each node's maximum JVM heap in MiB, 128 to 16 384 (a single node held a
            topic of 2 048 partitions in the default 384; 8 192 ran out and the node exited).

    Raises:
        TypeError: An argument of the wrong type (``listeners`` given as one str included).
        ValueError: ``num_brokers`` or ``heap_mib`` out of range, an unknown listener, a
            malformed version or SASL user, ``sasl_users`` without a SASL listener.
        rdk.RdkError: No jars or no ``java``, no ``openssl`` for SSL listeners, or the
            cluster did not start (with the nodes' log tails).
    """

    kind = "kafka"
    """``"kafka"``."""
    startup_timeout = 120.0
    """Seconds to wait for the nodes to start (and for a restarted node)."""
    #: seconds a stopped node gets to shut down cleanly before SIGKILL (restart of a running node)
    stop_grace = 30.0
    """Seconds a stopped node gets to shut down cleanly before SIGKILL."""

    def __init__(self, num_brokers: int = 1, *, config: Mapping[str, Any] | None = None,
                 listeners: Iterable[str] = ("PLAINTEXT",), sasl_users: Mapping[str, str] | None = None,
                 version: str | None = None, heap_mib: int = 384) -> None:
        check_int(num_brokers, "num_brokers", minimum=1, maximum=MAX_NODES)
        check_int(heap_mib, "heap_mib", minimum=128, maximum=16384)
        if version is not None and not (isinstance(version, str) and re.match(r"^\d+\.\d+\.\d+$", version)):
            raise ValueError(f"version must be like '{KAFKA_VERSION}', got {version!r}")
        self.listeners = check_listeners(listeners)
        """The listeners offered, ``"PLAINTEXT"`` first."""
        self.sasl_users = check_users(sasl_users)
        if self.sasl_users and not any(name.startswith("SASL_") for name in self.listeners):
            raise ValueError("sasl_users needs a SASL listener: add \"SASL_PLAINTEXT\" or "
                             "\"SASL_SSL\" to listeners= (this cluster would offer "
                             f"{', '.join(self.listeners)}, where no user can log in)")
        """``{name: password}`` of the SASL users."""
        self.config = _check_config(config)
        """The broker properties given as ``config``."""
        self.libs = kafka_libs(version)
        """The folder of the Kafka jars run."""
        self.version = version or KAFKA_VERSION
        """The Apache Kafka version run."""
        self.java = find_java()
        """The ``java`` executable."""
        self.num_brokers = num_brokers
        """The number of nodes."""
        self.node_ids = list(range(1, num_brokers + 1))
        """The node ids, ``1..num_brokers``."""
        self.cluster_id = cluster_id()
        """The KRaft cluster id."""
        self._nodes = KafkaNodes(java=self.java, libs=self.libs, node_ids=self.node_ids,
                                 listeners=self.listeners, cluster_id=self.cluster_id, version=self.version,
                                 heap_mib=heap_mib)
        self._root = self._nodes.root
        self._finalizer = weakref.finalize(self, shutdown, self._nodes.procs, self._root)
        self.ca_location: str | None = None
        """The PEM file of the CA that signed the brokers' certificate (SSL listeners); None
        without them."""
        try:
            keystore = None
            if {"SSL", "SASL_SSL"} & set(self.listeners):
                ca, keystore = make_tls(Path(self._root, "tls"))
                self.ca_location = str(ca)
            extra = {**security_properties(self.listeners, self.sasl_users, keystore), **self.config}
            self._nodes.start(extra, scram_arguments(self.sasl_users), timeout=self.startup_timeout,
                              grace=self.stop_grace)
        except BaseException:
            self.close()
            raise
        self.bootstrap_servers = self.bootstrap_servers_for("PLAINTEXT")
        """``host:port,...`` of every node's PLAINTEXT listener."""

    # -- public API ------------------------------------------------------------------------
    def __enter__(self) -> KafkaCluster:
        self._check_open()
        return self

    def _check_open(self) -> None:
        """RdkError at once after ``close()``: no call waits for nodes that are gone."""
        if not self._finalizer.alive:
            raise RdkError(f"{self!r} is closed")

    def bootstrap_servers_for(self, listener: str) -> str:
        """``host:port,...`` of every node's ``listener`` ("PLAINTEXT", "SSL", "SASL_PLAINTEXT",
        "SASL_SSL"); ValueError naming it if it was not asked for in ``listeners=``.

        Args:
            listener: A listener name of ``listeners``.

        Returns:
            The bootstrap servers of that listener.

        Raises:
            ValueError: The listener was not asked for.
        """
        self._check_open()
        if listener not in self.listeners:
            raise ValueError(f"listener {listener!r} was not requested: this cluster has "
                             f"{', '.join(self.listeners)} (KafkaCluster(listeners=...))")
        return self._nodes.addresses(listener)

    def _node(self, node_id: int) -> ServerProcess:
        self._check_open()
        return self._nodes.node(node_id)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Mapping[str, Any] | None = None) -> None:
        """Create ``name`` (where missing) and wait until its metadata lists a leader for each
        partition and every partition answers ListOffsets. A broker lists a new partition's
        leader before it has made the partition's log; until then a producer is answered
        NOT_LEADER_OR_FOLLOWER and retries (at 2 048 partitions on one node, about 10 s, in
        which a producer of 1 M messages took 8-24 s instead of 1.3-2.9 s).

        Args:
            name: The topic name.
            partitions: Its partition count, >= 1.
            replication_factor: Replicas of each partition, 1 to ``num_brokers``.
            config: Topic properties. None: the brokers' defaults.

        Raises:
            rdk.KafkaError: The cluster refused.
            rdk.RdkError: A partition still has no leader, or does not answer, after 30 s
                (plus 10 ms per partition).
            TypeError: An argument of the wrong type.
            ValueError: An illegal topic name, a count out of range.
        """
        from ..admin import Admin

        check_topic_name(name)
        check_int(partitions, "partitions", minimum=1, maximum=2**31 - 1)
        check_int(replication_factor, "replication_factor", minimum=1, maximum=self.num_brokers)
        self._check_open()
        with Admin(self.bootstrap_servers) as admin:  # one client for creating and waiting
            admin.create_topics([(name, partitions, replication_factor, dict(config or {}))], exist_ok=True)
            limit = 30.0 + partitions / 100
            deadline = time.monotonic() + limit
            while True:
                try:  # one metadata request per look, whatever the partition count
                    leaders = self._leaders(name)
                    if len(leaders) >= partitions and min(leaders.values()) >= 0:
                        break
                except KafkaError:
                    if time.monotonic() > deadline:
                        raise
                if time.monotonic() > deadline:
                    raise RdkError(f"topic {name!r} has partitions without a leader after {limit:.0f} s")
                time.sleep(0.05)  # a poll interval
            self._wait_answering(admin, name, len(leaders), deadline, limit)

    @staticmethod
    def _wait_answering(admin: Any, topic: str, partitions: int, deadline: float, limit: float) -> None:
        """Until every partition of ``topic`` answers ListOffsets: one request per leader per
        look (``admin.offsets_for_times``), asked again while any answer is retriable."""
        while True:
            try:
                admin.offsets_for_times(topic, dict.fromkeys(range(partitions), 0), timeout=10)
                return
            except KafkaError as e:  # the topic exists: not knowing it yet is not yet
                if not e.retriable and e.name not in ("_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC",
                                                      "UNKNOWN_TOPIC_OR_PART"):
                    raise
                if time.monotonic() > deadline:
                    raise RdkError(f"topic {topic!r} has partitions that do not answer "
                                   f"ListOffsets after {limit:.0f} s: {e}") from e
            time.sleep(0.05)  # a poll interval

    def leader(self, topic: str, partition: int) -> int:
        """The node id leading ``topic``'s ``partition`` now (-1 while it has none).

        Args:
            topic: The topic name.
            partition: The partition number.

        Returns:
            The leader's node id, or -1.

        Raises:
            rdk.KafkaError: The topic does not exist, or no metadata.
            ValueError: The topic has no such partition, an illegal topic name.
        """
        check_topic_name(topic)
        check_int(partition, "partition", minimum=0, maximum=2**31 - 1)
        self._check_open()
        leaders = self._leaders(topic)
        if partition not in leaders:
            raise ValueError(f"topic {topic!r} has no partition {partition}")
        return leaders[partition]

    def _leaders(self, topic: str) -> dict[int, int]:
        """{partition: leader node id, -1 while it has none} of ``topic``, from one metadata
        request."""
        client = _binding.Client("producer", {"bootstrap.servers": self.bootstrap_servers, "log_level": 0,
                                              "allow.auto.create.topics": False}, on_error=lambda e: None)
        try:
            for t in client.metadata(topic, timeout=10.0):
                if t.name == topic and t.error is None:
                    return {p.id: p.leader for p in t.partitions}
                if t.name == topic and t.error is not None:
                    raise KafkaError(t.error.code, context=f"topic {topic!r}")
            raise KafkaError(_binding.ERROR_CODES["UNKNOWN_TOPIC_OR_PART"], context=f"topic {topic!r}")
        finally:
            client.close()

    def running(self, node_id: int) -> bool:
        """Whether node ``node_id``'s JVM runs now.

        Args:
            node_id: The node to look at, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        return self._node(node_id).running

    def pid(self, node_id: int) -> int | None:
        """The JVM's process id of ``node_id`` (None while it is killed).

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        return self._node(node_id).pid

    def log(self, node_id: int) -> str:
        """What node ``node_id`` logged so far (every run of it, appended).

        Args:
            node_id: A node id; an unknown one has logged nothing ("").
        """
        return self._nodes.log(node_id)

    def kill(self, node_id: int) -> None:
        """SIGKILL the node (a crash); ``restart(node_id)`` brings it back.

        Args:
            node_id: The node to kill, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        self._node(node_id).kill()

    def restart(self, node_id: int) -> None:
        """Start the node again on the same ports with the same data (stopping it cleanly
        first if it runs) and wait until the cluster lists it again.

        Args:
            node_id: The node to start again, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
                Also: the node did not come back within ``startup_timeout``.
        """
        node = self._node(node_id)
        node.stop()
        node.start()
        self._nodes.wait_ready({node_id}, time.monotonic() + self.startup_timeout)

    def pause(self, node_id: int) -> None:
        """SIGSTOP the node: it keeps its ports and answers nothing until ``resume``.

        Args:
            node_id: The node to stop (SIGSTOP), 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed, or the node is not running (killed).
        """
        node = self._node(node_id)
        if not node.running:
            raise RdkError(f"node {node_id} is not running: restart({node_id}) starts it")
        node.pause()

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node (a running node that is not paused is left as it is).

        Args:
            node_id: The paused node, by its id: 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed, or the node is not running (killed:
                ``restart(node_id)`` starts it), as ``pause()`` says too.
        """
        node = self._node(node_id)
        if not node.running:
            raise RdkError(f"node {node_id} is not running: restart({node_id}) starts it")
        node.resume()

    def close(self) -> None:
        """Kill every node and remove the cluster's data; idempotent (also at interpreter exit)."""
        self._finalizer()

    def __repr__(self) -> str:
        return (f"<KafkaCluster {self.version} nodes={self.num_brokers} "
                f"{getattr(self, 'bootstrap_servers', '?')}>")
