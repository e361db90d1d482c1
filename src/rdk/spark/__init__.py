"""PySpark data source ``rdkafka``: Kafka into and out of Spark with no JVM Kafka jar.

```python
import rdk.spark
rdk.spark.register(spark)
df = (spark.read.format("rdkafka")
      .option("kafka.bootstrap.servers", brokers)       # e.g. "host:9092"
      .option("subscribe", "events")
      .load())
```

Batch and Structured Streaming reads, batch (``save()`` in the default mode or
``.mode("append")``, as ``format("kafka")``) and streaming writes,
with the built-in Kafka connector's option names and schema. Needs rdk's wheel
with its ``spark`` extra (``pip install "$(scripts/build-wheel.sh)[spark]"``: pyspark >= 4.2
for ``maxOffsetsPerTrigger``, pyarrow) on the driver and the executors.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import weakref
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:  # what type checkers and the docs see; at run time, loaded on first use
    from .reader import DataLossError, MalformedRecordError
    from .source import NAME as NAME
    from .source import KafkaDataSource as KafkaDataSource
    from .source import kafka_schema as kafka_schema
    from .stream import offsets_behind_latest
    from .writer import DeliveryError

__all__ = [
    "DataLossError",
    "DeliveryError",
    "MalformedRecordError",
    "offsets_behind_latest",
    "register",
]

log = logging.getLogger("rdk.spark")

# Public name -> its module. Loaded on first use (PEP 562): a Python worker that unpickles a
# reader imports rdk.spark.reader and what it needs, never the writer, the driver's source
# class or pyspark's pandas conversions.
_LAZY = {
    "NAME": ".source",
    "KafkaDataSource": ".source",
    "kafka_schema": ".source",
    "DataLossError": ".reader",
    "MalformedRecordError": ".reader",
    "DeliveryError": ".writer",
    "offsets_behind_latest": ".stream",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rdk.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


_registered: weakref.WeakSet = weakref.WeakSet()


def register(spark: Any) -> None:
    """Make ``format("rdkafka")`` available in ``spark`` (a SparkSession). Idempotent.

    In local mode, when ``PYSPARK_PYTHON`` is unset, Python workers would start the
    ``python3`` found on PATH, which may lack rdk and pyarrow; the current interpreter is
    used instead.

    Args:
        spark: The SparkSession (classic or Spark Connect).
    """
    if spark in _registered:
        return
    _use_this_interpreter_locally(spark)
    from .source import KafkaDataSource

    _explain_save_mode_errors(_writer_class(spark))
    spark.dataSource.register(KafkaDataSource)
    _registered.add(spark)


SAVE_MODE_HELP = (
    "rdkafka sink: a Kafka topic can only be appended to: write with the default save mode or "
    ".mode(\"append\"), e.g. df.write.format(\"rdkafka\").option(\"topic\", ...).save()")


def _writer_class(spark: Any) -> Any:
    """The DataFrameWriter class of ``spark``: Spark Connect sessions have their own."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter

        return ConnectWriter
    from pyspark.sql.readwriter import DataFrameWriter

    return DataFrameWriter


def _explain_save_mode_errors(writer: Any) -> None:
    """Wrap DataFrameWriter.save once, for format("kafka")'s save modes in format("rdkafka").

    Spark refuses its default save mode (ErrorIfExists) for every Python data source before
    anything is written; Spark's Kafka sink takes it as append (a topic always exists to be
    appended to). So when Spark refuses ErrorIfExists for rdkafka, the write is made again in
    append mode; the refusal of any other mode (ignore) says what to do. Other errors pass
    through untouched."""
    original = writer.save
    if getattr(original, "_rdk_wrapped", False):
        return

    def save(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            return original(self, *args, **kwargs)
        except Exception as e:
            text = str(e)
            if "UNSUPPORTED_DATA_SOURCE_SAVE_MODE" not in text or '"rdkafka"' not in text:
                raise
            if "errorifexists" not in text.lower():
                raise ConfigError(f"{SAVE_MODE_HELP} (Spark said: {text})") from e
        # save(path, format, mode, partitionBy, **options): its mode, if given, is replaced
        if len(args) > 2:
            args = (*args[:2], "append", *args[3:])
        else:
            kwargs["mode"] = "append"
        return original(self, *args, **kwargs)

    save._rdk_wrapped = True  # type: ignore[attr-defined]
    save.__doc__ = original.__doc__
    save.__wrapped__ = original  # type: ignore[attr-defined]
    writer.save = save


def _use_this_interpreter_locally(spark: Any) -> None:
    if os.environ.get("PYSPARK_PYTHON"):
        return
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect: no local context to adjust
        return
    if not str(sc.master).startswith("local"):
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if getattr(sc, "pythonExec", None) != sys.executable:
        log.info("rdk.spark: Python workers use %s (PYSPARK_PYTHON was unset)", sys.executable)
        sc.pythonExec = sys.executable
