"""Shared fixtures: real brokers the tests start themselves (or RDK_BROKERS).

- ``broker``: parameterised over the broker kinds available here — librdkafka's mock
  cluster and Tansu (session-scoped), Apache Kafka in Docker where an engine exists
  (skipped with the reason otherwise). With RDK_BROKERS set, only that cluster.
- ``mock_cluster``: a fresh mock cluster per test, for fault injection.
- ``new_topic``: makes a fresh, uniquely named topic on a broker.
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


@pytest.fixture(scope="session")
def _brokers():
    started: dict[str, object] = {}
    yield started
    for b in started.values():
        b.close()


def _broker_params():
    if os.environ.get("RDK_BROKERS"):
        return ["external"]
    return BROKER_KINDS


@pytest.fixture(params=_broker_params(), scope="session")
def broker(request, _brokers):
    """One running broker of each kind, shared by the session."""
    kind = request.param
    if kind == "external":
        return ExternalBroker(os.environ["RDK_BROKERS"])
    if kind not in _brokers:
        _brokers[kind] = _start(kind)
    return _brokers[kind]


@pytest.fixture
def mock_cluster():
    """A fresh 3-broker mock cluster for one test (fault injection)."""
    with MockCluster(3) as mc:
        yield mc


@pytest.fixture(scope="session")
def tansu(_brokers):
    if "tansu" not in _brokers:
        _brokers["tansu"] = TansuBroker()
    return _brokers["tansu"]


@pytest.fixture
def new_topic():
    """new_topic(broker, partitions=1, prefix="t") -> a fresh topic name, created."""

    def make(broker, partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        broker.create_topic(name, partitions)
        return name

    return make
