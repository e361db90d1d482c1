"""Embedded brokers, kept importable here: they live in ``rdk.testing`` (one module per
kind behind one small interface; see its docstring).

``from rdk.mock import MockCluster, TansuBroker, KafkaCluster, start_broker, ...`` and
``python -m rdk.mock --brokers 3 --topic events:8`` (``--kind tansu|tansu-durable|kafka``)
work as before: the latter serves a broker in the foreground, printing ``RDK_BROKERS=...``,
until interrupted.
"""

from __future__ import annotations

import sys

from . import testing as _testing
from .testing import API_KEYS as API_KEYS
from .testing import KAFKA_VERSION as KAFKA_VERSION
from .testing import KINDS as KINDS
from .testing import MAX_MOCK_BROKERS as MAX_MOCK_BROKERS
from .testing import EmbeddedBroker as EmbeddedBroker
from .testing import KafkaCluster as KafkaCluster
from .testing import MockCluster as MockCluster
from .testing import MockClusterProcess as MockClusterProcess
from .testing import RunningCluster as RunningCluster
from .testing import S3Server as S3Server
from .testing import TansuBroker as TansuBroker
from .testing import build_parser as build_parser
from .testing import free_port as free_port
from .testing import main as main
from .testing import open_broker as open_broker
from .testing import serve as serve
from .testing import start_broker as start_broker

# rdk.testing's names, but SchemaRegistry (it came later and is no broker); build_parser,
# main and serve are this module's command line: importable, not in __all__
__all__ = [name for name in _testing.__all__ if name != "SchemaRegistry"]

if __name__ == "__main__":
    sys.exit(main())
