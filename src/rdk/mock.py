"""Embedded brokers, kept importable here: they live in ``rdk.testing`` (one module per
kind behind one small interface; see its docstring).

``from rdk.mock import MockCluster, TansuBroker, KafkaCluster, start_broker, ...`` and
``python -m rdk.mock --brokers 3 --topic events:8`` (``--kind tansu|tansu-durable|kafka``)
work as before: the latter serves a broker in the foreground, printing ``RDK_BROKERS=...``,
until interrupted.
"""

from __future__ import annotations

import sys

from .testing._base import EmbeddedBroker
from .testing._kinds import KINDS, open_broker, start_broker
from .testing._process import free_port
from .testing._serve import build_parser, main, serve
from .testing.kafka import KAFKA_VERSION, KafkaCluster
from .testing.mock import API_KEYS, MAX_MOCK_BROKERS, MockCluster, MockClusterProcess
from .testing.running import RunningCluster
from .testing.tansu import S3Server, TansuBroker

__all__ = [
    "API_KEYS",
    "KAFKA_VERSION",
    "KINDS",
    "MAX_MOCK_BROKERS",
    "EmbeddedBroker",
    "KafkaCluster",
    "MockCluster",
    "MockClusterProcess",
    "RunningCluster",
    "S3Server",
    "TansuBroker",
    "build_parser",
    "free_port",
    "main",
    "open_broker",
    "serve",
    "start_broker",
]

if __name__ == "__main__":
    sys.exit(main())
