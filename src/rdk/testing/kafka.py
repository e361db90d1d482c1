"""Apache Kafka as plain JVM processes: ``KafkaCluster``, a KRaft cluster of combined
broker+controller nodes on 127.0.0.1 that a test can hurt (kill, restart, pause).

The broker jars come from Maven Central through ``scripts/setup.sh`` (``.deps/kafka-<version>/libs``,
or the folder named by ``RDK_KAFKA_LIBS``); a JVM (``java`` 17+) runs them.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import _binding
from ..errors import KafkaError, RdkError
from ..validate import check_int, check_topic_name
from ._base import EmbeddedBroker
from ._process import ServerProcess, free_port, server_process, wait_for_metadata

__all__ = ["JVM_OPTIONS", "KAFKA_VERSION", "LISTENERS", "SASL_MECHANISMS", "KafkaCluster", "kafka_libs"]

#: The Apache Kafka release scripts/setup.sh fetches (scripts/kafka/pom.xml pins the same).
KAFKA_VERSION = "4.3.1"
"""The Apache Kafka release scripts/setup.sh fetches (scripts/kafka/pom.xml pins the same)."""
#: The listeners a cluster may offer besides its controller's (PLAINTEXT always runs).
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The SASL mechanisms the SASL listeners enable.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: Each node's JVM: a bounded heap and the serial collector (2 cores shared by every node).
JVM_OPTIONS = ("-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true")
MAX_NODES = 9

_REPO = Path(__file__).resolve().parents[3]
_TMP_PREFIX = "rdk-kafka-"
_START_ATTEMPTS = 3  # a start whose ports were taken meanwhile is tried again with new ones
_SAFE_SECRET = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}$")

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


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


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = shutil.which("java")
    if home and Path(home, "bin", "java").is_file():
        java = str(Path(home, "bin", "java"))
    if not java:
        raise RdkError("KafkaCluster needs a Java 17+ runtime (`java` on PATH or JAVA_HOME): "
                       "scripts/setup.sh installs one")
    return java


def _cluster_id() -> str:
    """A random Kafka Uuid in its base64url form (not starting with '-', an option to argparse)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_dirs() -> None:
    """Remove the data folders of clusters whose process died without closing them (SIGKILL:
    the nodes died with it, their folders stayed)."""
    for entry in Path(tempfile.gettempdir()).glob(f"{_TMP_PREFIX}*-*"):
        m = re.match(rf"{_TMP_PREFIX}(\d+)-", entry.name)
        if m and entry.is_dir() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def _prop(value: Any) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _openssl(args: list[str], cwd: Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RdkError(f"openssl {' '.join(args)} failed: {res.stderr.strip()}")


def _make_tls(folder: Path) -> tuple[Path, Path]:
    """A CA (ca.pem) and, signed by it, a server key and certificate for 127.0.0.1/localhost
    in one PEM keystore (server.pem: PKCS#8 key, then the chain)."""
    if not shutil.which("openssl"):
        raise RdkError("KafkaCluster's SSL listeners need the openssl command")
    folder.mkdir(parents=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(["req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
              "-subj", "/CN=rdk-kafka-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"], folder)
    _openssl(["req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], folder)
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                    "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
              "-CAcreateserial", "-out", "server.crt", "-days", "30", "-extfile", "ext.cnf"], folder)
    keystore = folder / "server.pem"
    keystore.write_text((folder / "server.key").read_text() + (folder / "server.crt").read_text()
                        + (folder / "ca.pem").read_text())
    return folder / "ca.pem", keystore


def _shutdown(nodes: dict[int, ServerProcess], root: str) -> None:
    """Kill every node (SIGKILL: the data is thrown away) and remove the cluster's folder."""
    for node in nodes.values():
        node.kill()
    for node in nodes.values():
        node.close()
    shutil.rmtree(root, ignore_errors=True)


class KafkaCluster(EmbeddedBroker):
    """Apache Kafka in KRaft mode: ``num_brokers`` combined broker+controller nodes (ids
    1..num_brokers) on 127.0.0.1, each a JVM of its own (``JVM_OPTIONS``: at most 384 MiB of
    heap), their storage formatted in a temporary folder removed by ``close()``.

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

    Raises:
        TypeError: An argument of the wrong type (``listeners`` given as one str included).
        ValueError: ``num_brokers`` out of range, an unknown listener, a malformed version or
            SASL user.
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
                 version: str | None = None) -> None:
        check_int(num_brokers, "num_brokers", minimum=1, maximum=MAX_NODES)
        if version is not None and not (isinstance(version, str) and re.match(r"^\d+\.\d+\.\d+$", version)):
            raise ValueError(f"version must be like '{KAFKA_VERSION}', got {version!r}")
        self.listeners = self._check_listeners(listeners)
        """The listeners offered, ``"PLAINTEXT"`` first."""
        self.sasl_users = self._check_users(sasl_users)
        """``{name: password}`` of the SASL users."""
        self.config = self._check_config(config)
        """The broker properties given as ``config``."""
        self.libs = kafka_libs(version)
        """The folder of the Kafka jars run."""
        self.version = version or KAFKA_VERSION
        """The Apache Kafka version run."""
        self.java = _java()
        """The ``java`` executable."""
        self.num_brokers = num_brokers
        """The number of nodes."""
        self.node_ids = list(range(1, num_brokers + 1))
        """The node ids, ``1..num_brokers``."""
        self.cluster_id = _cluster_id()
        """The KRaft cluster id."""
        _sweep_stale_dirs()
        self._root = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-")
        self._nodes: dict[int, ServerProcess] = {}
        self._finalizer = weakref.finalize(self, _shutdown, self._nodes, self._root)
        self.ca_location: str | None = None
        """The PEM file of the CA that signed the brokers' certificate (SSL listeners); None
        without them."""
        self._keystore: Path | None = None
        try:
            if {"SSL", "SASL_SSL"} & set(self.listeners):
                ca, self._keystore = _make_tls(Path(self._root, "tls"))
                self.ca_location = str(ca)
            Path(self._root, "log4j2.properties").write_text(_LOG4J2)
            for attempt in range(1, _START_ATTEMPTS + 1):
                try:
                    self._start_nodes()
                    break
                except RdkError:
                    # a port picked free was taken before the JVM bound it: new ports, again
                    if attempt == _START_ATTEMPTS or not self._lost_a_port():
                        raise
                    self._stop_nodes()
        except BaseException:
            self.close()
            raise
        self.bootstrap_servers = self.bootstrap_servers_for("PLAINTEXT")
        """``host:port,...`` of every node's PLAINTEXT listener."""

    def _start_nodes(self) -> None:
        """Pick ports, write each node's properties, format its storage, start and wait."""
        self._ports = {n: {name: free_port() for name in (*self.listeners, "CONTROLLER")}
                       for n in self.node_ids}
        for n in self.node_ids:
            Path(self._root, f"node-{n}").mkdir()
            Path(self._root, f"node-{n}", "server.properties").write_text(self._properties(n))
        self._format()
        for n in self.node_ids:
            self._nodes[n] = ServerProcess(self._command(n), log=str(self._node_dir(n) / "server.log"),
                                           death_signal=signal.SIGKILL, grace=self.stop_grace)
            self._nodes[n].start()
        self._wait_ready(set(self.node_ids), time.monotonic() + self.startup_timeout)

    def _lost_a_port(self) -> bool:
        """Whether a node failed to bind one of its ports (someone took it meanwhile)."""
        return any("Address already in use" in self.log(n) for n in self.node_ids)

    def _stop_nodes(self) -> None:
        """Kill every node and remove its folder (a failed start, before trying again)."""
        for n, node in list(self._nodes.items()):
            node.kill()
            del self._nodes[n]
            shutil.rmtree(self._node_dir(n), ignore_errors=True)
        for n in self.node_ids:
            shutil.rmtree(self._node_dir(n), ignore_errors=True)

    # -- arguments -------------------------------------------------------------------------
    @staticmethod
    def _check_listeners(listeners: Iterable[str]) -> tuple[str, ...]:
        if isinstance(listeners, str):
            raise TypeError(f"listeners must be a sequence of names like ('PLAINTEXT', 'SSL'), "
                            f"got the str {listeners!r}")
        wanted = ["PLAINTEXT"]
        for name in listeners:
            if name not in LISTENERS:
                raise ValueError(f"unknown listener {name!r}: expected one of {', '.join(LISTENERS)}")
            if name not in wanted:
                wanted.append(name)
        return tuple(wanted)

    @staticmethod
    def _check_users(users: Mapping[str, str] | None) -> dict[str, str]:
        if users is None:
            return {}
        if not isinstance(users, Mapping):
            raise TypeError(f"sasl_users must be a mapping {{name: password}}, got {type(users).__name__}")
        for name, password in users.items():
            for what, value in (("sasl user name", name), (f"password of sasl user {name!r}", password)):
                if not isinstance(value, str):
                    raise TypeError(f"{what} must be str, got {type(value).__name__}")
                if not _SAFE_SECRET.match(value):
                    raise ValueError(f"{what} must be 1-128 of A-Z a-z 0-9 _ . @ + - (it goes into "
                                     "JAAS and SCRAM options unquoted)")
        return dict(users)

    @staticmethod
    def _check_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
        if config is None:
            return {}
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a mapping of broker properties, got {type(config).__name__}")
        for key in config:
            if not isinstance(key, str) or not key:
                raise TypeError(f"config keys must be non-empty str, got {key!r}")
        return dict(config)

    # -- layout ----------------------------------------------------------------------------
    def _node_dir(self, node_id: int) -> Path:
        return Path(self._root, f"node-{node_id}")

    def _properties(self, node_id: int) -> str:
        ports = self._ports[node_id]
        rf = min(3, self.num_brokers)
        min_isr = min(2, self.num_brokers)
        voters = ",".join(f"{n}@127.0.0.1:{self._ports[n]['CONTROLLER']}" for n in self.node_ids)
        protocols = {name: name for name in self.listeners} | {"CONTROLLER": "PLAINTEXT"}
        props: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": node_id,
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
            "advertised.listeners": ",".join(f"{name}://127.0.0.1:{ports[name]}" for name in self.listeners),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "log.dirs": self._node_dir(node_id) / "data",
            "num.partitions": 1,
            "default.replication.factor": 1,
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": False,
            "broker.heartbeat.interval.ms": 1000,
            "broker.session.timeout.ms": 6000,
        }
        if any(name.startswith("SASL_") for name in self.listeners):
            props["sasl.enabled.mechanisms"] = ",".join(SASL_MECHANISMS)
            plain_users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_users.items())
            jaas = {
                "plain": f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
                "scram-sha-256": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "scram-sha-512": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "oauthbearer": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                               'required unsecuredLoginStringClaim_sub="admin";',
            }
            for name in self.listeners:
                if name.startswith("SASL_"):
                    for mech, text in jaas.items():
                        props[f"listener.name.{name.lower()}.{mech}.sasl.jaas.config"] = text
        if self._keystore is not None:
            props["ssl.keystore.type"] = "PEM"
            props["ssl.keystore.location"] = self._keystore
            props["ssl.client.auth"] = "none"
        props.update(self.config)
        return "".join(f"{key}={_prop(value)}\n" for key, value in props.items())

    def _classpath(self) -> str:
        return f"{self.libs}/*"

    def _command(self, node_id: int) -> list[str]:
        return [self.java, *JVM_OPTIONS, f"-Dlog4j2.configurationFile={self._root}/log4j2.properties",
                "-cp", self._classpath(), "kafka.Kafka", str(self._node_dir(node_id) / "server.properties")]

    def _format(self) -> None:
        """kafka-storage format, every node at once (one short JVM each)."""
        scram = []
        for user, password in self.sasl_users.items():
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                scram += ["--add-scram", f"{mech}=[name={user},password={password}]"]
        procs = []
        for n in self.node_ids:
            out = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
            cmd = [self.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                   f"-Dlog4j2.configurationFile={self._root}/log4j2.properties", "-cp", self._classpath(),
                   "kafka.tools.StorageTool", "format", "--config",
                   str(self._node_dir(n) / "server.properties"), "--cluster-id", self.cluster_id, *scram]
            procs.append((n, out, server_process(cmd, death_signal=signal.SIGKILL, stdout=out,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 start_new_session=True)))
        failed = []
        for n, out, proc in procs:
            try:
                code = proc.wait(self.startup_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            out.seek(0)
            text = out.read().decode(errors="replace")
            out.close()
            if code != 0:
                failed.append(f"node {n} (exit {code}): {text[-1500:]}")
        if failed:
            raise RdkError("kafka-storage format failed: " + "; ".join(failed))

    # -- readiness -------------------------------------------------------------------------
    def _wait_ready(self, nodes: set[int], deadline: float) -> None:
        procs = [self._nodes[n].proc for n in nodes]
        bootstrap = ",".join(f"127.0.0.1:{self._ports[n]['PLAINTEXT']}" for n in sorted(nodes))
        try:
            wait_for_metadata(bootstrap, deadline, [p for p in procs if p is not None], brokers=nodes)
        except RdkError as e:
            logs = "\n".join(f"--- node {n} log (tail) ---\n{self.log(n)[-3000:]}" for n in sorted(nodes))
            raise RdkError(f"Apache Kafka {self.version} did not start: {e}\n{logs}") from None

    # -- public API ------------------------------------------------------------------------
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
        if listener not in self.listeners:
            raise ValueError(f"listener {listener!r} was not requested: this cluster has "
                             f"{', '.join(self.listeners)} (KafkaCluster(listeners=...))")
        return ",".join(f"127.0.0.1:{self._ports[n][listener]}" for n in self.node_ids)

    def _node(self, node_id: int) -> ServerProcess:
        if not self._finalizer.alive:
            raise RdkError("KafkaCluster is closed")
        if node_id not in self._nodes:
            raise ValueError(f"no node {node_id!r}: the nodes are {self.node_ids}")
        return self._nodes[node_id]

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     config: Mapping[str, Any] | None = None) -> None:
        """Create ``name`` (where missing) and wait until its metadata lists a leader for each
        partition.

        Args:
            name: The topic name.
            partitions: Its partition count, >= 1.
            replication_factor: Replicas of each partition, 1 to ``num_brokers``.
            config: Topic properties. None: the brokers' defaults.

        Raises:
            rdk.KafkaError: The cluster refused.
            rdk.RdkError: A partition still has no leader after 30 s.
            TypeError: An argument of the wrong type.
            ValueError: An illegal topic name, a count out of range.
        """
        from ..admin import Admin

        check_topic_name(name)
        check_int(partitions, "partitions", minimum=1, maximum=2**31 - 1)
        check_int(replication_factor, "replication_factor", minimum=1, maximum=self.num_brokers)
        with Admin(self.bootstrap_servers) as admin:
            admin.create_topics([(name, partitions, replication_factor, dict(config or {}))], exist_ok=True)
        deadline = time.monotonic() + 30.0
        while True:
            try:
                if all(self.leader(name, p) >= 0 for p in range(partitions)):
                    return
            except KafkaError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise RdkError(f"topic {name!r} has partitions without a leader after 30 s")
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
        client = _binding.Client("producer", {"bootstrap.servers": self.bootstrap_servers, "log_level": 0,
                                              "allow.auto.create.topics": False}, on_error=lambda e: None)
        try:
            for t in client.metadata(topic, timeout=10.0):
                if t.name == topic and t.error is None:
                    for p in t.partitions:
                        if p.id == partition:
                            return p.leader
                    raise ValueError(f"topic {topic!r} has no partition {partition}")
                if t.name == topic and t.error is not None:
                    raise KafkaError(t.error.code, context=f"topic {topic!r}")
            raise KafkaError(_binding.ERROR_CODES["UNKNOWN_TOPIC_OR_PART"], context=f"topic {topic!r}")
        finally:
            client.close()

    def pid(self, node_id: int) -> int | None:
        """The JVM's process id of ``node_id`` (None while it is killed).

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        return self._node(node_id).pid

    def running(self, node_id: int) -> bool:
        """Whether node ``node_id``'s JVM runs now.

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        return self._node(node_id).running

    def log(self, node_id: int) -> str:
        """What node ``node_id`` logged so far (every run of it, appended).

        Args:
            node_id: A node id; an unknown one has logged nothing ("").
        """
        if node_id not in self._nodes:
            return ""
        return self._nodes[node_id].output()

    def kill(self, node_id: int) -> None:
        """SIGKILL the node (a crash); ``restart(node_id)`` brings it back.

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        self._node(node_id).kill()

    def restart(self, node_id: int) -> None:
        """Start the node again on the same ports with the same data (stopping it cleanly
        first if it runs) and wait until the cluster lists it again.

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
                Also: the node did not come back within ``startup_timeout``.
        """
        node = self._node(node_id)
        node.stop()
        node.start()
        self._wait_ready({node_id}, time.monotonic() + self.startup_timeout)

    def pause(self, node_id: int) -> None:
        """SIGSTOP the node: it keeps its ports and answers nothing until ``resume``.

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        self._node(node_id).pause()

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node.

        Args:
            node_id: A node id, 1..num_brokers.

        Raises:
            ValueError: No such node.
            rdk.RdkError: The cluster is closed.
        """
        self._node(node_id).resume()

    def close(self) -> None:
        """Kill every node and remove the cluster's data; idempotent (also at interpreter exit)."""
        self._finalizer()

    def __repr__(self) -> str:
        return (f"<KafkaCluster {self.version} nodes={self.num_brokers} "
                f"{getattr(self, 'bootstrap_servers', '?')}>")
