"""Shared fixtures: real brokers the tests start themselves (or RDK_BROKERS).

- ``broker``: parameterised over the broker kinds available here — librdkafka's mock
  cluster and Tansu (session-scoped), Apache Kafka in Docker where an engine exists
  (skipped with the reason otherwise). With RDK_BROKERS set, only that cluster.
- ``tansu``: the session's Tansu broker (the same one ``broker`` uses).
- ``mock_cluster``: a fresh mock cluster per test, for fault injection.
- ``new_topic``: makes a fresh, uniquely named topic on a broker.

Plain helpers (``wait_until``, the consumer tests' ``produce``/``Collector``...) are in
tests/helpers.py, importable from every test directory as ``helpers``.
"""

from __future__ import annotations

import os
import uuid

import pytest

from rdk.mock import DockerKafka, MockCluster, TansuBroker, docker_available

BROKER_KINDS = ["mock", "tansu", "docker"]


class ExternalBroker:
    kind = "external"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap_servers = bootstrap

    def create_topic(self, name: str, partitions: int = 1) -> None:
        from rdk import Admin

        with Admin(self.bootstrap_servers) as admin:
            admin.create_topics({name: partitions}, exist_ok=True)

    def close(self) -> None:
        pass


class SessionBrokers:
    """The session's brokers: one of each kind, started on first use, all closed at the end."""

    def __init__(self) -> None:
        self._started: dict[str, object] = {}

    def get(self, kind: str):
        if kind not in self._started:
            self._started[kind] = self._start(kind)
        return self._started[kind]

    @staticmethod
    def _start(kind: str):
        if kind == "mock":
            return MockCluster(3)
        if kind == "tansu":
            return TansuBroker()
        if kind == "docker":
            ok, why = docker_available()
            if not ok:
                pytest.skip(f"Apache Kafka via testcontainers: {why}")
            return DockerKafka()
        raise ValueError(kind)

    def close(self) -> None:
        while self._started:
            self._started.popitem()[1].close()


@pytest.fixture(scope="session")
def _brokers():
    started = SessionBrokers()
    yield started
    started.close()


def _broker_params():
    if os.environ.get("RDK_BROKERS"):
        return ["external"]
    return BROKER_KINDS


@pytest.fixture(params=_broker_params(), scope="session")
def broker(request, _brokers):
    """One running broker of each kind, shared by the session."""
    if request.param == "external":
        return ExternalBroker(os.environ["RDK_BROKERS"])
    return _brokers.get(request.param)


@pytest.fixture
def mock_cluster():
    """A fresh 3-broker mock cluster for one test (fault injection)."""
    with MockCluster(3) as mc:
        yield mc


@pytest.fixture(scope="session")
def tansu(_brokers):
    """The session's Tansu broker, for tests that need a real broker process."""
    return _brokers.get("tansu")


@pytest.fixture
def new_topic():
    """new_topic(broker, partitions=1, prefix="t") -> a fresh topic name, created."""

    def make(broker, partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        broker.create_topic(name, partitions)
        return name

    return make
