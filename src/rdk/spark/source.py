"""The data source class Spark instantiates for ``format("rdkafka")``."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from .. import arrow
from ..errors import ConfigError
from .options import check_early, parse_include_headers, parse_read_options, parse_write_options
from .reader import KafkaBatchReader
from .stream import KafkaStreamReader
from .writer import KafkaBatchWriter, KafkaStreamWriter, check_write_schema

__all__ = ["KafkaDataSource", "kafka_schema"]

NAME = "rdkafka"


def kafka_schema(include_headers: bool = False) -> StructType:
    """The built-in Kafka source's schema (``headers`` only with includeHeaders), derived
    from the one definition, :func:`rdk.arrow.kafka_schema`."""
    return from_arrow_schema(arrow.kafka_schema(include_headers), prefer_timestamp_ntz=False)


def _check_read_schema(schema: StructType, include_headers: bool) -> None:
    expected = kafka_schema(include_headers)
    if schema.simpleString() != expected.simpleString():
        raise ConfigError("rdkafka source has a fixed schema and does not take a custom one: "
                          f"expected {expected.simpleString()}, got {schema.simpleString()}")


class KafkaDataSource(DataSource):
    """Kafka through librdkafka as a Spark data source, named ``rdkafka``.

    Options are those of Spark's built-in Kafka connector (``kafka.bootstrap.servers``,
    ``subscribe`` / ``assign`` / ``subscribePattern``, ``startingOffsets``,
    ``endingOffsets``, the timestamp options, ``maxOffsetsPerTrigger``,
    ``minOffsetsPerTrigger``, ``maxTriggerDelay``, ``minPartitions``,
    ``maxRecordsPerPartition``, ``failOnDataLoss``, ``fetchOffset.*``, ``groupIdPrefix``,
    ``includeHeaders``, ``topic``, any ``kafka.*`` librdkafka property) plus rdk's
    ``numWorkers`` / ``workerSlot``; see :mod:`rdk.spark.options`.
    """

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        """Called by ``load()``: options are checked here, so mistakes fail at once."""
        check_early(self.options)
        return kafka_schema(parse_include_headers(self.options))

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


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ConfigError("rdkafka sink: Kafka topics can only be appended to; "
                          "use df.write.format('rdkafka').mode('append')")
