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
    from ._kinds import KINDS, start_broker
    from ._kinds import BrokerKind as BrokerKind
    from ._kinds import open_broker as open_broker
    from ._process import free_port
    from ._serve import build_parser as build_parser
    from ._serve import main as main
    from ._serve import serve as serve
    from .kafka import KAFKA_VERSION, KafkaCluster
    from .kafka import kafka_libs as kafka_libs
    from .mock import API_KEYS, MockCluster, MockClusterProcess
    from .mock import MAX_MOCK_BROKERS as MAX_MOCK_BROKERS
    from .running import RunningCluster
    from .schema_registry import SchemaRegistry
    from .tansu import S3Server, TansuBroker

# importable, not in __all__: build_parser, main and serve (python -m rdk.mock's), and the
# helpers behind the kinds (BrokerKind, open_broker, kafka_libs, MAX_MOCK_BROKERS)
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
    "EmbeddedBroker",
    "KafkaCluster",
    "MockCluster",
    "MockClusterProcess",
    "RunningCluster",
    "S3Server",
    "SchemaRegistry",
    "TansuBroker",
    "free_port",
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
