"""rdk: a fast Python Kafka client over librdkafka (CFFI API mode).

kafka-native's Producer and Consumer (offset files, pause/resume, worker slots,
stats), an Admin, embedded brokers for tests, and a PySpark data source.
"""

from __future__ import annotations

from ._binding import features, librdkafka_version
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
)
from .offsets import BrokerOffsetStore, FileOffsetStore, OffsetStore
from .stats import ConsumerStats, PartitionStats

__version__ = "0.1.0"

__all__ = [
    "Admin",
    "Batch",
    "BrokerOffsetStore",
    "Consumer",
    "ConsumerStats",
    "FileOffsetStore",
    "OffsetStore",
    "PartitionStats",
    "ClosedError",
    "ConfigError",
    "KafkaError",
    "LockedError",
    "OffsetFileError",
    "QueueFullError",
    "RdkError",
    "features",
    "librdkafka_version",
    "__version__",
]
