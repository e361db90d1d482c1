"""The data source class Spark instantiates for ``format("rdkafka")``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from .. import arrow
from ..errors import ConfigError
from .options import (
    ReadOptions,
    check_early,
    parse_include_headers,
    parse_read_options,
    parse_write_options,
)
from .reader import KafkaBatchReader
from .stream import KafkaStreamReader
from .stream_writer import KafkaStreamWriter
from .writer import KafkaBatchWriter, check_write_schema

# the data source's internals; rdk.spark re-exports what users see
__all__: list[str] = []

NAME = "rdkafka"
"""The data source's format name: ``spark.read.format("rdkafka")``."""


def kafka_schema(include_headers: bool = False) -> StructType:
    """The built-in Kafka source's schema (``headers`` only with includeHeaders), derived
    from the one definition, ``rdk.arrow.kafka_schema``.

    Args:
        include_headers: Whether the schema has the ``headers`` column.

    Returns:
        The Spark schema: ``key``, ``value``, ``topic``, ``partition``, ``offset``,
        ``timestamp``, ``timestampType`` (and ``headers``).
    """
    return from_arrow_schema(arrow.kafka_schema(include_headers), prefer_timestamp_ntz=False)


def _with_value_type(include_headers: bool, codec: Any) -> StructType:
    """kafka_schema, its ``value`` the codec's struct type when valueFormat is set."""
    if codec is None:
        return kafka_schema(include_headers)
    schema = arrow.kafka_schema(include_headers)
    i = schema.get_field_index("value")
    return from_arrow_schema(schema.set(i, pa.field("value", codec.arrow_type)), prefer_timestamp_ntz=False)


def _codec(options: Any, topic_option: str, what: str) -> Any:
    from .registry import registry_codec

    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    return registry_codec(opts, opts.get(topic_option), what)


def _check_read_schema(schema: StructType, include_headers: bool, codec: Any = None) -> None:
    expected = _with_value_type(include_headers, codec)
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
    ``numWorkers`` / ``workerSlot``; see `rdk.spark.options.ReadOptions`.

    Spark makes it (``DataSource(options)``) and calls the methods below; applications
    only [register][rdk.spark.register] it.
    """

    @classmethod
    def name(cls) -> str:
        """The format name, ``NAME`` (``"rdkafka"``)."""
        return NAME

    def schema(self) -> StructType:
        """Called by ``load()``: options are checked here, so mistakes fail at once.

        Returns:
            ``kafka_schema`` for the ``includeHeaders`` option.

        Raises:
            rdk.ConfigError: An option is missing, unknown or invalid.
        """
        check_early(self.options)
        return _with_value_type(parse_include_headers(self.options), self._value_codec())

    def _value_codec(self) -> Any:
        """valueFormat=avro: the subject's schema, fetched once per DataSource."""
        if not hasattr(self, "_codec_cache"):
            self._codec_cache = _codec(self.options, "subscribe", "source")
        return self._codec_cache

    def reader(self, schema: StructType) -> KafkaBatchReader:
        """The batch reader of ``spark.read``.

        Args:
            schema: The schema Spark asks for; it must be ``kafka_schema``'s.

        Returns:
            The batch reader.

        Raises:
            rdk.ConfigError: An invalid option, or a custom schema.
        """
        return KafkaBatchReader(self._read_options(schema, streaming=False))

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        """The micro-batch reader of ``spark.readStream``.

        Args:
            schema: The schema Spark asks for; it must be ``kafka_schema``'s.

        Returns:
            The micro-batch reader.

        Raises:
            rdk.ConfigError: An invalid option, or a custom schema.
        """
        return KafkaStreamReader(self._read_options(schema, streaming=True))

    def _read_options(self, schema: StructType, *, streaming: bool) -> ReadOptions:
        """The read options, checked, and ``schema`` checked against them."""
        opts = parse_read_options(self.options, streaming=streaming)
        codec = self._value_codec()
        _check_read_schema(schema, opts.include_headers, codec)
        return replace(opts, value_codec=codec) if codec is not None else opts

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        """The batch writer of ``df.write`` (``.mode("append")``).

        Args:
            schema: The DataFrame's schema (the built-in sink's column rules apply).
            overwrite: Whether Spark asks to overwrite; always refused.

        Returns:
            The batch writer.

        Raises:
            rdk.ConfigError: ``overwrite``, an invalid option, or columns the sink refuses.
        """
        _refuse_overwrite(overwrite)
        opts = self._write_options()
        check_write_schema(schema, opts)
        return KafkaBatchWriter(opts)

    def _write_options(self) -> Any:
        opts = parse_write_options(self.options)
        codec = _codec(self.options, "topic", "sink")
        return replace(opts, value_codec=codec) if codec is not None else opts

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        """The stream writer of ``df.writeStream``.

        Args:
            schema: The DataFrame's schema (the built-in sink's column rules apply).
            overwrite: Ignored: a topic is only appended to.

        Returns:
            The stream writer.

        Raises:
            rdk.ConfigError: An invalid option, or columns the sink refuses.
        """
        opts = self._write_options()
        check_write_schema(schema, opts)
        return KafkaStreamWriter(opts)


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ConfigError("rdkafka sink: Kafka topics can only be appended to; "
                          "use df.write.format('rdkafka').mode('append')")
