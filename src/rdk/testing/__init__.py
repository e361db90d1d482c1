"""Test brokers, apart from the client: one module per kind behind one small interface
(``EmbeddedBroker``: ``bootstrap_servers``, ``create_topic(name, partitions=1)``,
``close()``, a context manager), the process supervision written once (``_process``).

- ``MockCluster`` / ``MockClusterProcess`` (``rdk.testing.mock``): librdkafka's mock cluster,
  in this process with fault injection, or served by ``python -m rdk.mock`` in a child.
- ``TansuBroker`` / ``S3Server`` (``rdk.testing.tansu``): the Tansu broker process, memory
  storage or durable in moto's S3 server.
- ``KafkaCluster`` (``rdk.testing.kafka``): Apache Kafka, KRaft, one JVM per node; kill,
  restart, pause.
- ``RunningCluster`` (``rdk.testing.running``): a cluster somebody else runs.
- ``SchemaRegistry`` (``rdk.testing.schema_registry``): Apicurio Registry serving Confluent's
  schema registry API, storage in memory (not a broker: no ``bootstrap_servers``).

``KINDS`` (``rdk.testing._kinds``) lists the kinds; ``start_broker(kind, topics)`` and
``python -m rdk.mock --kind KIND`` start one by name. Importing this package is light: each
name is imported from its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._base import EmbeddedBroker
    from ._kinds import KINDS, BrokerKind, open_broker, start_broker
    from ._process import free_port
    from ._serve import build_parser, main, serve
    from .kafka import KAFKA_VERSION, KafkaCluster, kafka_libs
    from .mock import API_KEYS, MAX_MOCK_BROKERS, MockCluster, MockClusterProcess
    from .running import RunningCluster
    from .schema_registry import SchemaRegistry
    from .tansu import S3Server, TansuBroker

_WHERE = {
    "EmbeddedBroker": "_base", "KINDS": "_kinds", "BrokerKind": "_kinds", "open_broker": "_kinds",
    "start_broker": "_kinds", "free_port": "_process", "build_parser": "_serve", "main": "_serve",
    "serve": "_serve", "KAFKA_VERSION": "kafka", "KafkaCluster": "kafka", "kafka_libs": "kafka",
    "API_KEYS": "mock", "MAX_MOCK_BROKERS": "mock", "MockCluster": "mock",
    "MockClusterProcess": "mock", "RunningCluster": "running", "S3Server": "tansu",
    "TansuBroker": "tansu", "SchemaRegistry": "schema_registry",
}

__all__ = [
    "API_KEYS",
    "KAFKA_VERSION",
    "KINDS",
    "MAX_MOCK_BROKERS",
    "BrokerKind",
    "EmbeddedBroker",
    "KafkaCluster",
    "MockCluster",
    "MockClusterProcess",
    "RunningCluster",
    "S3Server",
    "SchemaRegistry",
    "TansuBroker",
    "build_parser",
    "free_port",
    "kafka_libs",
    "main",
    "open_broker",
    "serve",
    "start_broker",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'rdk.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
