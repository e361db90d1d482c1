"""Writing DataFrames to Kafka, batch and streaming, through ``rdk.Producer``.

Columns as in the built-in sink: ``value`` (required, binary or string), ``key`` (binary or
string), ``topic`` (string; the ``topic`` option, when set, wins), ``partition`` (int; null
lets the balancer choose: murmur2, the Java client's, as the built-in sink does) and
``headers`` (array<struct<key:string,value:binary>>). Each task takes the Python worker's
cached producer for its configuration (``rdk.spark._cache``), sends Arrow batches as they
come and waits for every delivery before it returns its commit message; a failed delivery
fails the task, so nothing is lost silently (Kafka sinks are at-least-once: a retried task
may write some rows twice).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from ..errors import ConfigError, KafkaError, RdkError
from ..message import Message
from ..producer._arrow import ArrowRows
from ._cache import PRODUCERS
from .options import WriteOptions, split_properties

# the data source's internals; rdk.spark re-exports what users see
__all__ = ["DeliveryError"]

log = logging.getLogger("rdk.spark")

_BYTES_OR_TEXT = (BinaryType, StringType)


class DeliveryError(RdkError):
    """Some rows of a Spark task could not be delivered to Kafka; the task fails."""


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task reports: how many rows it delivered."""

    rows: int


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    """The built-in sink's column rules, checked on the driver before any task runs."""
    fields = {f.name.lower(): f for f in schema.fields}
    if "value" not in fields:
        raise ConfigError("rdkafka sink: the DataFrame needs a 'value' column (binary or string); "
                          f"it has {', '.join(schema.fieldNames()) or 'no columns'}")
    for name in ("value", "key") if opts.value_codec is None else ("key",):
        if name in fields and not isinstance(fields[name].dataType, _BYTES_OR_TEXT):
            raise ConfigError(f"rdkafka sink: column '{name}' must be binary or string, "
                              f"not {fields[name].dataType.simpleString()}; cast it")
    if opts.topic is None and "topic" not in fields:
        raise ConfigError("rdkafka sink: set the 'topic' option or give the DataFrame a "
                          "'topic' column")
    if "topic" in fields and not isinstance(fields["topic"].dataType, StringType):
        raise ConfigError("rdkafka sink: column 'topic' must be a string, not "
                          f"{fields['topic'].dataType.simpleString()}")
    if "partition" in fields and opts.exactly_once:
        raise ConfigError("rdkafka sink: column 'partition' cannot be used with 'exactlyOnce' "
                          "(rows are placed by their key, as with a null partition); drop it")
    if "partition" in fields and not isinstance(fields["partition"].dataType, IntegerType):
        raise ConfigError("rdkafka sink: column 'partition' must be an int, not "
                          f"{fields['partition'].dataType.simpleString()}; cast it")
    if "headers" in fields:
        t = fields["headers"].dataType
        ok = (isinstance(t, ArrayType) and isinstance(t.elementType, StructType)
              and [f.name for f in t.elementType.fields] == ["key", "value"]
              and isinstance(t.elementType["key"].dataType, StringType)
              and isinstance(t.elementType["value"].dataType, BinaryType))
        if not ok:
            raise ConfigError("rdkafka sink: column 'headers' must be "
                              "array<struct<key:string,value:binary>>, not " + t.simpleString())


def _column(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    i = batch.schema.get_field_index(name)
    return batch.column(i) if i >= 0 else None


def producer_config(opts: WriteOptions) -> tuple[Hashable, Callable[[], Any]]:
    """(cache key, factory) of the producer a task of ``opts`` writes with."""
    driver, topic = split_properties(opts.kafka)
    bootstrap = driver.pop("bootstrap.servers")
    # kafka.partitioner chooses; else murmur2 like the JVM sink
    balancer = "consistent_random" if "partitioner" in topic else "murmur2_random"
    key = (bootstrap, balancer, tuple(sorted(driver.items())), tuple(sorted(topic.items())))

    def make() -> Any:
        from ..producer import Producer

        return Producer(bootstrap, driver_options=driver, topic_options=topic,
                        balancer=balancer, on_queue_full="block")

    return key, make


class TaskProducer:
    """One task's use of a producer: send batches, then wait for every delivery report."""

    def __init__(self, opts: WriteOptions, producer: Any) -> None:
        self.opts = opts
        self.producer = producer
        self._lock = threading.Lock()
        self.failures: list[tuple[Message, KafkaError]] = []
        self.sent = 0
        self.delivered = 0
        self.rows = 0  # rows of the task's batches so far
        self.failed_rows: list[int] = []  # task row numbers of failed messages (Arrow path)

    def _on_delivery(self, delivered: int, failures: list) -> None:
        with self._lock:
            self.delivered += delivered
            self.failures.extend(failures)

    def send_batch(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if not n:
            return
        value_col = _column(batch, "value")
        if value_col is None:  # check_write_schema saw it, but not spelt "value" exactly
            raise ConfigError("rdkafka sink: the DataFrame needs a column named 'value'")
        base = self.rows
        self.rows += n
        if (self.opts.topic is not None or _column(batch, "topic") is None) \
                and self.opts.value_codec is None and self._send_arrow(batch, value_col, base):
            return
        values = value_col.to_pylist()
        if self.opts.value_codec is not None:  # valueFormat=avro: rdk.spark.registry
            values = self.opts.value_codec.encode(self.opts.topic, values)
        key_col = _column(batch, "key")
        keys = key_col.to_pylist() if key_col is not None and key_col.null_count < n else None
        head_col = _column(batch, "headers")
        headers = None
        if head_col is not None and head_col.null_count < n:
            headers = [None if hs is None else [(h["key"], h["value"]) for h in hs]
                       for hs in head_col.to_pylist()]
        payloads: list[Any]
        if headers is not None:
            payloads = list(map(Message, values, keys or repeat(None), headers))
        elif keys is not None or None in values:
            payloads = list(zip(keys or repeat(None, n), values, strict=True))
        else:
            payloads = values
        topic_col = None if self.opts.topic is not None else _column(batch, "topic")
        part_col = _column(batch, "partition")
        if topic_col is None and (part_col is None or part_col.null_count == n):
            self._send(self.opts.topic, None, payloads)
            return
        topics = topic_col.to_pylist() if topic_col is not None else [self.opts.topic] * n
        parts = part_col.to_pylist() if part_col is not None else [None] * n
        for topic, partition, rows in _send_order(topics, parts):
            self._send(topic, partition, [payloads[i] for i in rows])

    def _send_arrow(self, batch: pa.RecordBatch, value_col: pa.Array, base: int) -> bool:
        """Send the batch's columns as they are (ArrowRows: their buffers go to one C call
        per partition, no Python object per row). False when the rows of one topic mix
        explicit and null partitions: the row path keeps their runs in order."""
        n = batch.num_rows
        part_col = _column(batch, "partition")
        groups: list[tuple[int | None, pa.Array | None]]
        if part_col is None or part_col.null_count == n:
            groups = [(None, None)]
        elif part_col.null_count == 0:  # rows per partition, in the DataFrame's order
            groups = [(p, pc.indices_nonzero(pc.equal(part_col, p)))
                      for p in pc.unique(part_col).to_pylist()]
        else:
            return False
        cols = (value_col, _column(batch, "key"), _column(batch, "headers"))
        for part, rows in groups:
            taken = cols if rows is None else tuple(
                None if c is None else c.take(rows) for c in cols)
            payloads = ArrowRows(*taken)
            on_delivery = functools.partial(self._on_arrow_delivery, payloads, rows, base)
            self._send(self.opts.topic, part, payloads, on_delivery)
        return True

    def _on_arrow_delivery(self, payloads: ArrowRows, rows: pa.Array | None, base: int,
                           delivered: int, failures: list) -> None:
        """Failures of an ArrowRows send, with the task's row number of each."""
        at = [base + (i if rows is None else rows[i].as_py()) for i in payloads.failed_rows]
        with self._lock:
            self.failed_rows.extend(at)
        self._on_delivery(delivered, failures)

    def _send(self, topic: str | None, partition: int | None, payloads: list | ArrowRows,
              on_delivery: Callable[[int, list], Any] | None = None) -> None:
        if topic is None:
            raise ConfigError("rdkafka sink: a row has a null 'topic' and no 'topic' option "
                              "is set")
        result = self.producer.send(topic, partition, payloads,
                                    on_delivery=on_delivery or self._on_delivery)
        self.sent += len(payloads)
        if result.enqueued < len(payloads):
            log.debug("rdkafka sink: %d of %d enqueued; the rest are reported as failed",
                      result.enqueued, len(payloads))

    def finish(self) -> int:
        """Wait for every delivery; raise DeliveryError if any row failed. Returns rows."""
        timeout = int(self.opts.kafka.get("message.timeout.ms",
                                          self.opts.kafka.get("delivery.timeout.ms", 300000)))
        left = self.producer.flush(timeout / 1000 + 30)
        with self._lock:
            failures = list(self.failures)
            failed_rows = sorted(self.failed_rows)
        if failures or left:
            first = failures[0][1] if failures else None
            raise DeliveryError(
                f"rdkafka sink: {len(failures) + left.queued} of {self.sent} rows were not delivered"
                + (f"; first error: {first}" if first is not None else "")
                + (f"; first failed row: {failed_rows[0]} (rows of this task count from 0)"
                   if failed_rows else "")
                + "; the task fails so Spark can retry it")
        return self.sent


def _send_order(topics: list[str | None], parts: list[int | None]
                ) -> list[tuple[str | None, int | None, list[int]]]:
    """(topic, partition, row numbers) groups to send in turn, so that rows bound for one
    partition keep the DataFrame's order. Rows of a topic with only explicit (or only null)
    partitions are grouped per partition; where a topic mixes explicit and null partitions
    (null rows may be placed on any partition), its rows go in runs of consecutive rows."""
    mixed = {t for t, has in _null_and_explicit(topics, parts).items() if has == {True, False}}
    groups: dict[tuple[str | None, int | None], list[int]] = {}
    runs: dict[str | None, tuple[int | None, list[int]]] = {}  # a mixed topic's current run
    out: list[tuple[str | None, int | None, list[int]]] = []
    for row, (topic, part) in enumerate(zip(topics, parts, strict=True)):
        if topic in mixed:
            run = runs.get(topic)
            if run is None or run[0] != part:
                run = runs[topic] = (part, [])
                out.append((topic, part, run[1]))
            run[1].append(row)
        else:
            rows = groups.get((topic, part))
            if rows is None:
                rows = groups[(topic, part)] = []
                out.append((topic, part, rows))
            rows.append(row)
    return out


def _null_and_explicit(topics: list[str | None], parts: list[int | None]
                       ) -> dict[str | None, set[bool]]:
    seen: dict[str | None, set[bool]] = {}
    for topic, part in zip(topics, parts, strict=True):
        seen.setdefault(topic, set()).add(part is None)
    return seen


def write_batches(opts: WriteOptions, batches: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    key, make = producer_config(opts)
    # the worker's cached producer (rdk.spark._cache): given back once every row of this task
    # is delivered; a task that fails closes it (what is still queued is purged)
    with PRODUCERS.lease(key, make) as producer:
        task = TaskProducer(opts, producer)
        for batch in batches:
            task.send_batch(batch)
        return KafkaCommitMessage(task.finish())


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rdkafka").mode("append")``."""

    def __init__(self, opts: WriteOptions) -> None:
        if opts.exactly_once:
            raise ConfigError("rdkafka sink: option 'exactlyOnce' is for streaming writes "
                              "(df.writeStream): a batch write has no micro-batch to replay; "
                              "write it at-least-once without the option")
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_batches(self.opts, iterator)

    def abort(self, messages: list) -> None:
        delivered = sum(m.rows for m in messages if isinstance(m, KafkaCommitMessage))
        log.warning("rdkafka sink: the write failed; %d rows of finished tasks stay in Kafka "
                    "(Kafka has no transactions here: writes are at-least-once)", delivered)
