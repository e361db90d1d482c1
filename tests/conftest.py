"""Shared fixtures: real brokers the tests start themselves (or RDK_BROKERS).

- ``broker``: parameterised over the broker kinds in ``BROKER_KINDS`` — librdkafka's mock
  cluster, Tansu and Apache Kafka (a 1-node ``KafkaCluster``), each started once per session
  on first use. With RDK_BROKERS set, only that cluster (param id "external").
- ``tansu``: the session's Tansu broker (the same one ``broker`` uses).
- ``kafka_cluster``: the session's 1-node Apache Kafka (skipped with the reason when its jars
  or java are missing: scripts/setup.sh fetches them).
- ``mock_cluster``: a fresh mock cluster per test, for fault injection.
- ``new_topic``: makes a fresh, uniquely named topic on a broker.
- ``schema_registry``: the session's Apicurio Registry (Confluent's schema registry API).
- ``rdk_seed``: the seed of a randomised test (``RDK_TEST_SEED`` replays one); a failing
  test that used it says ``RDK_TEST_SEED=<seed>``. Hypothesis tests take it too (their
  ``@seed``) when RDK_TEST_SEED is set.

The kinds and how each starts come from rdk.testing's registry (``rdk.testing.KINDS``).
Plain helpers (``wait_until``, the consumer tests' ``produce``/``Collector``...) are in
tests/helpers.py, importable from every test directory as ``helpers``.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest
from helpers import kafka_unavailable, test_seed

from rdk.testing import KINDS, MockCluster, RunningCluster, open_broker

BROKER_KINDS = ["mock", "tansu", "kafka"]
assert set(BROKER_KINDS) <= set(KINDS)


def pytest_configure(config: pytest.Config) -> None:
    """A run started in the background of a non-interactive shell inherits SIGINT ignored,
    and so would every process a test starts (an ignored signal stays ignored across exec):
    the Ctrl-C tests (``rdk stats --watch``, KeyboardInterrupt at exit) need it delivered. A
    handler here makes exec'd children start with SIGINT's default action."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
        if kind == "kafka":
            why = kafka_unavailable()
            if why:
                pytest.skip(f"Apache Kafka: {why}")
        return open_broker(kind)  # mock: 3 brokers; tansu; kafka: 1 node

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
        return RunningCluster(os.environ["RDK_BROKERS"])
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


@pytest.fixture(scope="session")
def kafka_cluster(_brokers):
    """The session's 1-node Apache Kafka (rdk.testing.KafkaCluster); do not hurt it."""
    return _brokers.get("kafka")


@pytest.fixture
def new_topic():
    """new_topic(broker, partitions=1, prefix="t") -> a fresh topic name, created."""

    def make(broker, partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        broker.create_topic(name, partitions)
        return name

    return make


@pytest.fixture(scope="session")
def schema_registry():
    """The session's Apicurio Registry (rdk.testing.SchemaRegistry; ``.url`` is its Confluent
    API), started on first use; skipped with the reason when its package or Java 21+ is missing."""
    from rdk import RdkError
    from rdk.testing.schema_registry import SchemaRegistry, apicurio_home, find_java21

    try:
        apicurio_home(), find_java21()
    except RdkError as e:
        pytest.skip(f"schema registry: {e}")
    with SchemaRegistry() as registry:
        yield registry


@pytest.fixture
def rdk_seed(request) -> int:
    """The seed a randomised test draws from (``RDK_TEST_SEED``, else the clock)."""
    seed = test_seed()
    request.node.rdk_seed = seed
    return seed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seed = getattr(item, "rdk_seed", None)
    if seed is not None and report.failed:
        report.sections.append(("rdk seed", f"replay with RDK_TEST_SEED={seed}"))


def pytest_collection_modifyitems(config, items):
    """With RDK_TEST_SEED set, hypothesis tests draw from it too (what @seed does)."""
    seed = os.environ.get("RDK_TEST_SEED")
    if not seed:
        return
    for item in items:
        test = getattr(item, "obj", None)
        if getattr(test, "is_hypothesis_test", False):
            test._hypothesis_internal_use_seed = int(seed)
