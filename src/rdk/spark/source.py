"""The data source class Spark instantiates for ``format("rdkafka")``."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..errors import ConfigError
from .options import _bool, _lower, parse_read_options, parse_write_options
from .reader import KafkaBatchReader
from .stream import KafkaStreamReader
from .writer import KafkaBatchWriter, KafkaStreamWriter, check_write_schema

__all__ = ["KafkaDataSource", "kafka_schema"]

NAME = "rdkafka"

HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                StructField("value", BinaryType())]))


def kafka_schema(include_headers: bool = False) -> StructType:
    """The built-in Kafka source's schema (``headers`` only with includeHeaders)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS))
    return StructType(fields)


def _check_read_schema(schema: StructType, include_headers: bool) -> None:
    expected = kafka_schema(include_headers)
    if schema.simpleString() != expected.simpleString():
        raise ConfigError("rdkafka source has a fixed schema and does not take a custom one: "
                          f"expected {expected.simpleString()}, got {schema.simpleString()}")


class KafkaDataSource(DataSource):
    """Kafka through librdkafka as a Spark data source, named ``rdkafka``.

    Options are those of Spark's built-in Kafka connector (``kafka.bootstrap.servers``,
    ``subscribe`` / ``assign`` / ``subscribePattern``, ``startingOffsets``,
    ``endingOffsets``, ``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``,
    ``includeHeaders``, ``topic``, any ``kafka.*`` librdkafka property) plus rdk's
    ``numWorkers`` / ``workerSlot``.
    """

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        """Called by ``load()``: options are checked here, so mistakes fail at once."""
        _check_early(self.options)
        return kafka_schema(_bool(_lower(self.options), "includeheaders", False))

    def reader(self, schema: StructType) -> KafkaBatchReader:
        opts = parse_read_options(self.options, streaming=False)
        _check_read_schema(schema, opts.include_headers)
        return KafkaBatchReader(opts)

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        opts = parse_read_options(self.options, streaming=True)
        _check_read_schema(schema, opts.include_headers)
        return KafkaStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        _refuse_overwrite(overwrite)
        opts = parse_write_options(self.options)
        check_write_schema(schema, opts)
        return KafkaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        opts = parse_write_options(self.options)
        check_write_schema(schema, opts)
        return KafkaStreamWriter(opts)


def _check_early(options) -> None:
    """What can be checked before Spark says whether this is a batch or a stream."""
    opts = _lower(options)
    if not any(k in opts for k in ("subscribe", "assign", "subscribepattern")):
        parse_write_options(options)  # kafka.* and the rest; the reader says what is missing
        return
    try:
        parse_read_options(options, streaming=False)
    except ConfigError:
        try:
            parse_read_options(options, streaming=True)
        except ConfigError:
            pass
        else:
            return
        raise


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ConfigError("rdkafka sink: Kafka topics can only be appended to; "
                          "use df.write.format('rdkafka').mode('append')")
