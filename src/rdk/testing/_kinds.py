"""The broker kinds, in one place: ``start_broker``, ``python -m rdk.mock`` / ``rdk mock``,
``scripts/test-server.sh`` (through ``python -m rdk.mock --kind``) and tests/conftest.py
all read ``KINDS``. Light to import: each kind's class is imported when it is started."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._base import EmbeddedBroker

__all__ = ["KINDS", "BrokerKind", "open_broker", "start_broker"]


def _mock(num_brokers: int) -> EmbeddedBroker:
    from .mock import MockCluster

    return MockCluster(num_brokers)


def _mock_process(topics: Mapping[str, int], num_brokers: int) -> EmbeddedBroker:
    from .mock import MockClusterProcess

    return MockClusterProcess(topics, num_brokers)


def _tansu(num_brokers: int) -> EmbeddedBroker:
    from .tansu import TansuBroker

    return TansuBroker()


def _tansu_durable(num_brokers: int) -> EmbeddedBroker:
    from .tansu import TansuBroker

    return TansuBroker(durable=True)


def _kafka(num_brokers: int) -> EmbeddedBroker:
    from .kafka import KafkaCluster

    return KafkaCluster(num_brokers)


@dataclass(frozen=True)
class BrokerKind:
    """One kind of embedded broker: how to start it here (``open(num_brokers)``) and, where
    ``start_broker`` starts it differently, ``spawn(topics, num_brokers)``."""

    name: str
    """The kind's name (``"mock"``, ``"tansu"``, ``"tansu-durable"``, ``"kafka"``)."""
    summary: str
    """One line saying what it is."""
    open: Callable[[int], EmbeddedBroker]
    """``open(num_brokers)``: start one in this process."""
    default_brokers: int = 1
    """Nodes when ``num_brokers`` is None."""
    max_brokers: int = 1
    """Most nodes it can have."""
    spawn: Callable[[Mapping[str, int], int], EmbeddedBroker] | None = None
    """``spawn(topics, num_brokers)``: how ``start_broker`` starts it; None: with ``open``."""

    def check_brokers(self, num_brokers: int | None) -> int:
        """``num_brokers`` (this kind's default for None), ValueError beyond its range.

        Args:
            num_brokers: Nodes asked for; None: ``default_brokers``.

        Returns:
            The number of nodes to start.

        Raises:
            TypeError: ``num_brokers`` is not an int.
            ValueError: ``num_brokers`` is outside ``1..max_brokers``.
        """
        if num_brokers is None:
            return self.default_brokers
        if isinstance(num_brokers, bool) or not isinstance(num_brokers, int):
            raise TypeError(f"num_brokers must be int, got {type(num_brokers).__name__}")
        if not 1 <= num_brokers <= self.max_brokers:
            raise ValueError(f"a {self.name} broker has 1..{self.max_brokers} nodes, got {num_brokers}")
        return num_brokers


KINDS: dict[str, BrokerKind] = {k.name: k for k in (
    BrokerKind("mock", "librdkafka's mock cluster (start_broker: in a child process)", _mock,
               default_brokers=3, max_brokers=1024, spawn=_mock_process),
    BrokerKind("tansu", "a Tansu broker, memory storage", _tansu),
    BrokerKind("tansu-durable", "a Tansu broker keeping its data in moto's S3 server", _tansu_durable),
    BrokerKind("kafka", "Apache Kafka (KRaft, JVM processes; jars from scripts/setup.sh)", _kafka,
               max_brokers=9),
)}
"""``{name: BrokerKind}`` of every broker kind: ``mock``, ``tansu``, ``tansu-durable``, ``kafka``."""


def _kind(name: str) -> BrokerKind:
    if not isinstance(name, str):
        raise TypeError(f"kind must be str, got {type(name).__name__}")
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown broker kind {name!r}: expected one of {', '.join(KINDS)}") from None


def open_broker(kind: str, num_brokers: int | None = None) -> EmbeddedBroker:
    """A broker of ``kind`` ("mock", "tansu", "tansu-durable", "kafka") with ``num_brokers``
    nodes (the kind's default for None), run from this process; close it when done.

    Args:
        kind: A key of ``KINDS``.
        num_brokers: Nodes; None: the kind's default.

    Returns:
        The started [rdk.testing.EmbeddedBroker][].

    Raises:
        TypeError: ``kind`` is not a str, ``num_brokers`` not an int.
        ValueError: An unknown kind, ``num_brokers`` out of the kind's range.
    """
    k = _kind(kind)
    return k.open(k.check_brokers(num_brokers))


def start_broker(kind: str, topics: Mapping[str, int] | None = None, *,
                 num_brokers: int = 1) -> EmbeddedBroker:
    """A broker of ``kind`` holding ``topics`` ({name: partitions}), to close when done.

    ``"mock"``: ``MockClusterProcess`` (``num_brokers`` brokers, in a child process);
    ``"tansu"``: ``TansuBroker``; ``"tansu-durable"``: ``TansuBroker(durable=True)``;
    ``"kafka"``: ``KafkaCluster(num_brokers)``; anything else is taken as the bootstrap
    servers of a running cluster (``RunningCluster``). Topics are created where missing.

    Args:
        kind: A key of ``KINDS``, or the bootstrap servers of a running cluster.
        topics: ``{name: partitions}`` to create. None: none.
        num_brokers: Nodes, for the kinds that can have several.

    Returns:
        The started [rdk.testing.EmbeddedBroker][].

    Raises:
        TypeError: ``kind`` is not a str, ``num_brokers`` not an int.
        ValueError: ``num_brokers`` out of the kind's range, or a malformed bootstrap list.
        rdk.KafkaError: A topic could not be created.
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be str, got {type(kind).__name__}")
    topics = dict(topics or {})
    k = KINDS.get(kind)
    if k is not None and k.spawn is not None:
        return k.spawn(topics, k.check_brokers(num_brokers))
    broker: EmbeddedBroker
    if k is not None:
        broker = k.open(k.check_brokers(num_brokers) if k.max_brokers > 1 else 1)
    else:
        from .running import RunningCluster

        broker = RunningCluster(kind)
    try:
        for name, partitions in topics.items():
            broker.create_topic(name, partitions)
    except BaseException:
        broker.close()
        raise
    return broker
