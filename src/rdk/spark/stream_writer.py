"""``df.writeStream.format("rdkafka")``: the stream sink, at-least-once through
``rdk.spark.writer`` or exactly-once through ``rdk.spark._exactly_once``.

A module of its own so that the two sinks' modules do not import each other: the
exactly-once sink builds on the at-least-once one's ``write_batches`` and ``TaskProducer``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

from . import _exactly_once as eos
from .options import WriteOptions
from .writer import write_batches

# the data source's internals: users reach this sink through format("rdkafka")
__all__: list[str] = []

log = logging.getLogger("rdk.spark")


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rdkafka")``: each micro-batch's tasks deliver everything
    (at-least-once); with ``exactlyOnce`` they stage their rows and the driver's commit
    copies those of the successful attempts in one transaction (rdk.spark._exactly_once)."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.staging_partitions = 0
        if opts.exactly_once:
            self.staging_partitions = eos.prepare_staging(opts)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.opts.exactly_once:
            return eos.stage(self.opts, self.staging_partitions, iterator)
        return write_batches(self.opts, iterator)

    def commit(self, messages: list, batchId: int) -> None:
        """At-least-once: nothing to do, every row was delivered before its task returned.
        Exactly-once: copy the staged rows of the successful attempts, in one transaction."""
        if self.opts.exactly_once:
            copied = eos.copy_committed(self.opts, self.staging_partitions, messages, batchId)
            log.info("rdkafka sink: micro-batch %d: %d rows committed", batchId, copied)

    def abort(self, messages: list, batchId: int) -> None:
        if self.opts.exactly_once:
            log.warning("rdkafka sink: micro-batch %d failed; its staged rows are never "
                        "copied (the replay stages its own)", batchId)
        else:
            log.warning("rdkafka sink: micro-batch %d failed; rows already delivered stay in "
                        "Kafka", batchId)
