"""rdk: a fast Python Kafka client over librdkafka (CFFI API mode).

kafka-native's Producer and Consumer (offset files, pause/resume, worker slots,
stats), an Admin, embedded brokers for tests, and a PySpark data source.

``import rdk`` loads no client: each public name below is imported from its module on
first use (PEP 562 ``__getattr__``), so a process that only needs one part (a Spark
Python worker reading with ``rdk.spark.reader``, a CLI call) pays for that part only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._exit import exit_timeout, set_exit_timeout
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

if TYPE_CHECKING:  # what type checkers and the docs see; at run time, loaded on first use
    from . import aio
    from ._binding import features, librdkafka_version
    from .admin import Admin
    from .consumer import Batch, Consumer
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

# public name -> the module (relative to rdk) it is loaded from on first use
_LAZY = {
    "Admin": ".admin",
    "Batch": ".consumer",
    "Consumer": ".consumer",
    "BrokerOffsetStore": ".offsets",
    "FileOffsetStore": ".offsets",
    "OffsetStore": ".offsets",
    "ConsumerStats": ".stats",
    "PartitionStats": ".stats",
    "FlushResult": ".producer",
    "Producer": ".producer",
    "SendResult": ".producer",
    "GroupMetadata": ".transactions",
    "TransactionalOffsetStore": ".transactions",
    "Message": ".message",
    "ShareBatch": ".share",
    "ShareConsumer": ".share",
    "ShareMessage": ".share",
    "ShareStats": ".share",
    "features": "._binding",
    "librdkafka_version": "._binding",
}


def __getattr__(name: str) -> Any:
    if name == "aio":
        value: Any = importlib.import_module(".aio", __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module 'rdk' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
