"""The nodes of a ``KafkaCluster``: one JVM each, their folder, ports, properties and
storage formatting, started together (again, on new ports, if a port was taken meanwhile),
waited for, killed; and the sweeping of folders a killed test process left behind."""

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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import RdkError
from ._process import ServerProcess, free_port, server_process, wait_for_metadata

__all__ = ["JVM_OPTIONS", "KafkaNodes", "cluster_id", "find_java", "shutdown"]

#: Each node's JVM: a bounded heap and the serial collector (2 cores shared by every node).
JVM_OPTIONS = ("-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true")
# kafka-storage format: a short JVM, started quickly
_FORMAT_JVM = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")

_TMP_PREFIX = "rdk-kafka-"
_START_ATTEMPTS = 3  # a start whose ports were taken meanwhile is tried again with new ones

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


def find_java() -> str:
    """The ``java`` executable: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    java = shutil.which("java")
    if home and Path(home, "bin", "java").is_file():
        java = str(Path(home, "bin", "java"))
    if not java:
        raise RdkError("KafkaCluster needs a Java 17+ runtime (`java` on PATH or JAVA_HOME): "
                       "scripts/setup.sh installs one")
    return java


def cluster_id() -> str:
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


def shutdown(nodes: dict[int, ServerProcess], root: str) -> None:
    """Kill every node (SIGKILL: the data is thrown away) and remove the cluster's folder."""
    for node in nodes.values():
        node.kill()
    for node in nodes.values():
        node.close()
    shutil.rmtree(root, ignore_errors=True)


class KafkaNodes:
    """The JVMs of one cluster (``node_ids``, combined broker+controller) in a temporary
    folder of their own (``root``, made here after sweeping dead clusters' folders):
    ``start()`` picks ports, writes properties, formats storage, starts and waits; ``procs``
    holds the running ``ServerProcess`` of each node (``shutdown(procs, root)`` ends it all)."""

    def __init__(self, *, java: str, libs: Path, node_ids: Sequence[int], listeners: Sequence[str],
                 cluster_id: str, version: str, heap_mib: int = 384) -> None:
        self.java = java
        self.jvm_options = tuple(f"-Xmx{heap_mib}m" if o.startswith("-Xmx") else o
                                 for o in JVM_OPTIONS)
        self.libs = libs
        self.node_ids = list(node_ids)
        self.listeners = tuple(listeners)
        self.cluster_id = cluster_id
        self.version = version
        _sweep_stale_dirs()
        self.root = tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-")
        self.procs: dict[int, ServerProcess] = {}
        self.ports: dict[int, dict[str, int]] = {}

    # -- layout ----------------------------------------------------------------------------
    def node_dir(self, node_id: int) -> Path:
        return Path(self.root, f"node-{node_id}")

    def _properties(self, node_id: int, extra: Mapping[str, Any]) -> str:
        ports = self.ports[node_id]
        n = len(self.node_ids)
        rf, min_isr = min(3, n), min(2, n)
        voters = ",".join(f"{i}@127.0.0.1:{self.ports[i]['CONTROLLER']}" for i in self.node_ids)
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
            "log.dirs": self.node_dir(node_id) / "data",
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
            # share and KIP-848 consumer groups: a member learns of an assignment at its next
            # heartbeat (5 s by default, and at least 5 s), 1 s here
            "group.share.min.heartbeat.interval.ms": 1000,
            "group.share.heartbeat.interval.ms": 1000,
            "group.consumer.min.heartbeat.interval.ms": 1000,
            "group.consumer.heartbeat.interval.ms": 1000,
        }
        props.update(extra)
        return "".join(f"{key}={_prop(value)}\n" for key, value in props.items())

    def _java_command(self, jvm: Sequence[str], *args: str) -> list[str]:
        return [self.java, *jvm, f"-Dlog4j2.configurationFile={self.root}/log4j2.properties",
                "-cp", f"{self.libs}/*", *args]

    # -- start and stop --------------------------------------------------------------------
    def start(self, extra: Mapping[str, Any], scram: Sequence[str], *, timeout: float, grace: float) -> None:
        """Start every node, its properties plus ``extra``, its storage formatted with
        ``scram``; again on new ports when a port picked free was taken before the JVM
        bound it."""
        Path(self.root, "log4j2.properties").write_text(_LOG4J2)
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                self._start_once(extra, scram, timeout, grace)
                return
            except RdkError:
                if attempt == _START_ATTEMPTS or not self._lost_a_port():
                    raise
                self._stop_all()

    def _start_once(self, extra: Mapping[str, Any], scram: Sequence[str], timeout: float,
                    grace: float) -> None:
        """Pick ports, write each node's properties, format its storage, start and wait."""
        self.ports = {n: {name: free_port() for name in (*self.listeners, "CONTROLLER")}
                      for n in self.node_ids}
        for n in self.node_ids:
            self.node_dir(n).mkdir()
            (self.node_dir(n) / "server.properties").write_text(self._properties(n, extra))
        self._format(scram, timeout)
        for n in self.node_ids:
            cmd = self._java_command(self.jvm_options, "kafka.Kafka",
                                     str(self.node_dir(n) / "server.properties"))
            self.procs[n] = ServerProcess(cmd, log=str(self.node_dir(n) / "server.log"),
                                          death_signal=signal.SIGKILL, grace=grace)
            self.procs[n].start()
        self.wait_ready(set(self.node_ids), time.monotonic() + timeout)

    def _lost_a_port(self) -> bool:
        """Whether a node failed to bind one of its ports (someone took it meanwhile)."""
        return any("Address already in use" in self.log(n) for n in self.node_ids)

    def _stop_all(self) -> None:
        """Kill every node and remove its folder (a failed start, before trying again)."""
        for n, node in list(self.procs.items()):
            node.kill()
            del self.procs[n]
            shutil.rmtree(self.node_dir(n), ignore_errors=True)
        for n in self.node_ids:
            shutil.rmtree(self.node_dir(n), ignore_errors=True)

    def _format(self, scram: Sequence[str], timeout: float) -> None:
        """kafka-storage format, every node at once (one short JVM each)."""
        procs = []
        for n in self.node_ids:
            out = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
            cmd = self._java_command(_FORMAT_JVM, "kafka.tools.StorageTool", "format", "--config",
                                     str(self.node_dir(n) / "server.properties"),
                                     "--cluster-id", self.cluster_id, *scram)
            procs.append((n, out, server_process(cmd, death_signal=signal.SIGKILL, stdout=out,
                                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 start_new_session=True)))
        failed = []
        for n, out, proc in procs:
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            out.seek(0)
            text = out.read().decode(errors="replace")
            out.close()
            if code != 0:
                failed.append(f"node {n} (exit {code}): {failure_reason(text)}\n{text[-1500:]}")
        if failed:
            raise RdkError("kafka-storage format failed: " + "; ".join(failed))

    # -- readiness and lookup --------------------------------------------------------------
    def wait_ready(self, nodes: set[int], deadline: float) -> None:
        """Until the cluster's metadata lists every node of ``nodes``; RdkError with the
        nodes' log tails if one exits or ``deadline`` (monotonic) passes."""
        procs = [self.procs[n].proc for n in nodes]
        bootstrap = ",".join(f"127.0.0.1:{self.ports[n]['PLAINTEXT']}" for n in sorted(nodes))
        try:
            wait_for_metadata(bootstrap, deadline, [p for p in procs if p is not None], brokers=nodes)
        except RdkError as e:
            reasons = "".join(f"\nnode {n}: {failure_reason(self.log(n))}" for n in sorted(nodes)
                              if failure_reason(self.log(n)) != _NO_REASON)
            logs = "\n".join(f"--- node {n} log (tail) ---\n{self.log(n)[-3000:]}" for n in sorted(nodes))
            raise RdkError(f"Apache Kafka {self.version} did not start: {e}{reasons}\n{logs}") from None

    def addresses(self, listener: str) -> str:
        """``127.0.0.1:port,...`` of every node's ``listener``."""
        return ",".join(f"127.0.0.1:{self.ports[n][listener]}" for n in self.node_ids)

    def node(self, node_id: int) -> ServerProcess:
        """The process of ``node_id``; ValueError if there is no such node."""
        if node_id not in self.procs:
            raise ValueError(f"no node {node_id!r}: the nodes are {self.node_ids}")
        return self.procs[node_id]

    def log(self, node_id: int) -> str:
        """What ``node_id`` logged so far ("" for an unknown node)."""
        if node_id not in self.procs:
            return ""
        return self.procs[node_id].output()


_EXCEPTION = re.compile(r"(?:^|\s)(?:[\w$]+\.)*(\w*(?:Exception|Error)): (.+)$")
_NO_REASON = "(no exception in its output)"


def failure_reason(text: str) -> str:
    """The broker's reason in a JVM's output: the first exception (``ConfigException:
    Invalid value abc for configuration num.partitions: ...``) or ERROR/FATAL line, ahead
    of the log4j INFO lines that precede it."""
    lines = text.splitlines()
    for line in lines:
        m = _EXCEPTION.search(line)
        if m and not line.lstrip().startswith("at "):
            return f"{m.group(1)}: {m.group(2).strip()}"
    for line in lines:
        if " ERROR " in line or " FATAL " in line:
            return line.strip()
    return _NO_REASON
