"""rdk: a fast Python Kafka client over librdkafka (CFFI API mode).

kafka-native's Producer and Consumer (offset files, pause/resume, worker slots,
stats), an Admin, embedded brokers for tests, and a PySpark data source.
"""

from __future__ import annotations

from typing import Any

from ._binding import features, librdkafka_version
from ._exit import exit_timeout, set_exit_timeout
from .admin import Admin
from .consumer import Batch, Consumer
from .errors import (
    ClosedError,
    ConfigError,
    KafkaError,
    LockedError,
    OffsetFileError,
    QueueFullError,
    RdkError,
    TransactionError,
)
from .message import Message
from .offsets import BrokerOffsetStore, FileOffsetStore, OffsetStore
from .producer import FlushResult, Producer, SendResult
from .share import ShareBatch, ShareConsumer, ShareMessage, ShareStats
from .stats import ConsumerStats, PartitionStats
from .transactions import GroupMetadata, TransactionalOffsetStore

__version__ = "0.1.0"
"""rdk's version."""

__all__ = [
    "Admin",
    "Batch",
    "BrokerOffsetStore",
    "ClosedError",
    "ConfigError",
    "Consumer",
    "ConsumerStats",
    "FileOffsetStore",
    "FlushResult",
    "GroupMetadata",
    "KafkaError",
    "LockedError",
    "Message",
    "OffsetFileError",
    "OffsetStore",
    "PartitionStats",
    "Producer",
    "QueueFullError",
    "RdkError",
    "SendResult",
    "ShareBatch",
    "ShareConsumer",
    "ShareMessage",
    "ShareStats",
    "TransactionError",
    "TransactionalOffsetStore",
    "__version__",
    "aio",
    "exit_timeout",
    "features",
    "librdkafka_version",
    "set_exit_timeout",
]


def __getattr__(name: str) -> Any:
    if name == "aio":  # rdk.aio imports asyncio: load it on first use only
        import importlib

        return importlib.import_module(".aio", __name__)
    raise AttributeError(f"module 'rdk' has no attribute {name!r}")
