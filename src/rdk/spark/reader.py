"""Batch reading, and the executor side shared with streaming: ``read_range``.

Each Spark task reads one ``OffsetRange`` with a librdkafka handle leased from the Python
worker's client cache (``rdk.spark._cache``: kept between tasks and micro-batches): the legacy
consumer starts the partition at an explicit offset, one C call per batch copies up to
``FETCH_BATCH`` messages into contiguous buffers, and ``rdk.arrow`` wraps them in a
``pyarrow.RecordBatch`` without touching single rows in Python.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, InputPartition

from .. import _binding
from .._binding import ERROR_CODES
from .._binding.fetch import Fetcher
from .._binding.partitions import PARTITION_EOF, batch_errors, error_text, query_watermarks
from ..arrow import error_mask, record_batch
from ..errors import ConfigError, KafkaError, RdkError
from ._cache import CONSUMERS
from .options import ReadOptions, split_properties
from .planner import OffsetRange, Planner, split_ranges

# the data source's internals; rdk.spark re-exports what users see
__all__ = ["DataLossError", "MalformedRecordError"]

log = logging.getLogger("rdk.spark")

FETCH_BATCH = 50000  # messages per C call, and the largest RecordBatch we yield

_OUT_OF_RANGE = {ERROR_CODES["_AUTO_OFFSET_RESET"], ERROR_CODES["OFFSET_OUT_OF_RANGE"]}


class DataLossError(RdkError):
    """Offsets a query had to read are gone from Kafka (retention, deletion, truncation).

    Raised when ``failOnDataLoss`` is true (the default); with ``false`` the missing
    offsets are skipped and a warning is logged.
    """


class MalformedRecordError(RdkError):
    """A record Spark cannot represent (the built-in connector's
    KAFKA_MALFORMED_RECORD_TIMESTAMP: a timestamp beyond the timestamp type's range)."""


def data_loss(opts: ReadOptions, what: str) -> None:
    """Raise DataLossError, or log a warning when failOnDataLoss is false."""
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{what}. The data was deleted (aged out by retention, or the topic was deleted or "
            "truncated) before this query could read it. To skip missing offsets and go on, set "
            "the option failOnDataLoss to 'false'.")
    log.warning("rdkafka: %s; skipped (failOnDataLoss=false)", what)


def consumer_properties(opts: ReadOptions) -> tuple[dict[str, str], dict[str, str]]:
    """(global, topic) librdkafka properties of an executor's reading handle."""
    glob, topic = split_properties(opts.kafka)
    glob = {
        "isolation.level": "read_uncommitted",  # the built-in connector's default
        "enable.auto.commit": "false",  # a kafka.group.id must never receive commits
        # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (1 s) once
        # queued.min.messages are buffered; a task drains that in milliseconds
        "fetch.queue.backoff.ms": "10",
        # a range ends at offsets that exist: a Fetch past them only long-polls, and while
        # one is in flight to a broker librdkafka sends that broker no other Fetch, so the
        # next task on this (cached) client waited out fetch.wait.max.ms (500 ms) first
        "fetch.wait.max.ms": "10",
        **glob,
    }
    glob["enable.partition.eof"] = "true"
    topic["auto.offset.reset"] = "error"  # out-of-range is data loss, decided here
    return glob, topic


def read_range(opts: ReadOptions, r: InputPartition) -> Iterator[pa.RecordBatch]:
    """Yield the messages of offsets [r.start, r.end) of one partition as RecordBatches.

    A plan with no ranges reaches the executors as pyspark's placeholder
    ``InputPartition(None)``: it holds no rows.
    """
    if not isinstance(r, OffsetRange) or r.start >= r.end:
        return
    glob, topic = consumer_properties(opts)
    key = (tuple(sorted(glob.items())), tuple(sorted(topic.items())))
    # the worker's cached client for this configuration (rdk.spark._cache): given back when
    # the range is read, closed if reading fails or the consumer of this generator stops early
    with CONSUMERS.lease(key, lambda: _binding.Client("consumer", glob, topic)) as client:
        reader = _RangeReader(opts, r, client)
        try:
            yield from reader.batches()
        finally:
            reader.close()


class _RangeReader:
    """One task's own handle on one offset range: fetch, check for loss, convert to Arrow."""

    def __init__(self, opts: ReadOptions, r: OffsetRange, client: _binding.Client) -> None:
        self.opts = opts
        self.r = r
        self.name = f"{r.topic}-{r.partition}"
        self.timeout = min(opts.poll_timeout_ms, 30_000) / 1000  # of a watermark query
        self.pos = r.start  # the next offset to read
        self.client = client
        # a queue of its own on the (possibly reused) client: nothing fetched for an earlier
        # task can reach this one
        self.fetcher = Fetcher(client, r.topic, FETCH_BATCH, keep=True)
        self.fetcher.batch.skip_headers = 0 if opts.include_headers else 1

    def batches(self) -> Iterator[pa.RecordBatch]:
        r, opts = self.r, self.opts
        self.fetcher.start(r.partition, self.pos)
        idle_since = time.monotonic()
        stable_end: int | None = None  # where a read_committed fetch last stopped short
        while self.pos < r.end:
            b = self.fetcher.fetch(100)
            if not b.n:
                if (time.monotonic() - idle_since) * 1000 > opts.poll_timeout_ms:
                    self._timed_out(stable_end)
                    return
                continue
            idle_since = time.monotonic()
            eof, out_of_range = self._errors(b)
            if eof is not None and eof < r.end:
                stable_end = eof
            if b.n_parts:
                batch = self._records(b)
                if batch.num_rows:
                    yield batch
            if out_of_range and self.pos < r.end:
                if not self._skip_lost_offsets():
                    return
            elif eof is not None and eof >= r.end:
                return  # the offsets left below r.end hold no records (compaction, markers)

    def _timed_out(self, stable_end: int | None) -> None:
        opts, r = self.opts, self.r
        limit = f"within kafkaConsumer.pollTimeoutMs={opts.poll_timeout_ms}"
        if stable_end is not None and opts.kafka.get("isolation.level") == "read_committed":
            # Not lost: behind the last stable offset, held by an open transaction.
            what = (f"offsets [{max(self.pos, stable_end)}, {r.end}) of {self.name} are behind "
                    f"the last stable offset {stable_end} (an open transaction holds them; "
                    "kafka.isolation.level=read_committed reads them once it commits or "
                    f"aborts) and could not be read {limit}")
            if opts.fail_on_data_loss:
                raise DataLossError(f"{what}. To skip them and go on, set the option "
                                    "failOnDataLoss to 'false'.")
            log.warning("rdkafka: %s; skipped (failOnDataLoss=false)", what)
            return
        data_loss(opts, f"offsets [{self.pos}, {r.end}) of {self.name} could not be fetched {limit}")

    def _errors(self, b: Any) -> tuple[int | None, bool]:
        """(offset of the batch's end-of-partition event or None, whether the fetch went out
        of range); any other error raises KafkaError."""
        eof = None
        out_of_range = False
        for i, code in batch_errors(b):
            if code == PARTITION_EOF:
                eof = int(b.offset[i])
            elif code in _OUT_OF_RANGE:
                out_of_range = True
            else:
                raise KafkaError(code, error_text(b, i), context=f"fetch {self.name} at {self.pos}")
        return eof, out_of_range

    def _records(self, b: Any) -> pa.RecordBatch:
        """The batch's messages below r.end as a RecordBatch; ``pos`` moves past them. A gap
        before them that retention made is data loss."""
        r = self.r
        first, last = int(b.part_first[0]), int(b.part_last[0])
        if first > self.pos:
            lo = self._low_watermark()
            if lo > self.pos:
                data_loss(self.opts, f"offsets [{self.pos}, {min(lo, first)}) of {self.name} are "
                                     f"gone (the earliest offset is now {lo})")
        try:
            batch = record_batch(b, r.topic, self.opts.include_headers)
        except ValueError as e:  # a malformed record timestamp
            raise MalformedRecordError(f"rdkafka: {self.name} offsets [{first}, {last}]: {e}") from None
        if self.opts.include_headers:
            batch = _null_when_no_headers(batch)
        if b.n_errors:
            batch = batch.filter(error_mask(b))
        if last >= r.end:
            batch = batch.filter(pc.less(batch.column("offset"), r.end))
        self.pos = last + 1
        if self.opts.value_codec is not None:  # valueFormat=avro: rdk.spark.registry
            batch = self.opts.value_codec.decode(batch, r.topic, r.partition)
        return batch

    def _skip_lost_offsets(self) -> bool:
        """After an out-of-range fetch: report the lost offsets as data loss and fetch again
        from the earliest one left. False when nothing of the range is left to read."""
        r = self.r
        lo = self._low_watermark()
        self.fetcher.stop(r.partition)
        if self.pos >= lo:
            data_loss(self.opts, f"offsets [{self.pos}, {r.end}) of {self.name} are beyond the "
                                 "end of the partition (was it deleted and re-created?)")
            return False
        data_loss(self.opts, f"offsets [{self.pos}, {min(lo, r.end)}) of {self.name} are gone "
                             f"(the earliest offset is now {lo})")
        self.pos = lo
        if self.pos < r.end:
            self.fetcher.start(r.partition, self.pos)
        return True

    def _low_watermark(self) -> int:
        return query_watermarks(self.client, self.r.topic, self.r.partition, self.timeout)[0]

    def close(self) -> None:
        self.fetcher.close()


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("rdkafka")``: one input partition per offset range."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[OffsetRange]:
        opts = self.opts
        with Planner(opts) as planner:
            tps = planner.topic_partitions(missing_ok=False)
            marks = planner.watermarks(tps)
            starts = planner.resolve(opts.starting, tps, "startingOffsets", marks)
            ends = planner.resolve(opts.ending, tps, "endingOffsets", marks)
        for tp in tps:
            name = f"{tp[0]}-{tp[1]}"
            if starts[tp] > ends[tp]:
                raise ConfigError(f"rdkafka: for {name} the starting offset {starts[tp]} is after "
                                  f"the ending offset {ends[tp]} (startingOffsets/endingOffsets)")
            if ends[tp] > marks[tp][1]:
                end = f"the end of the partition ({marks[tp][1]})"
                if planner.read_committed:
                    end = (f"the last stable offset ({marks[tp][1]}): with "
                           "kafka.isolation.level=read_committed the offsets behind it belong to "
                           "an open transaction")
                raise ConfigError(f"rdkafka option 'endingOffsets': {ends[tp]} for {name} is past "
                                  f"{end}; use -1 for latest")
        return split_ranges(starts, ends, opts.min_partitions, opts.max_records_per_partition)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.opts, partition)


def _null_when_no_headers(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``headers`` is null, not an empty list, for a record without headers, as in Spark's
    own connector (KafkaRecordToRowConverter); tests/spark/test_differential.py compares them.
    One vectorised pass over the list lengths, only when ``includeHeaders`` is set."""
    i = batch.schema.get_field_index("headers")
    col = batch.column(i)
    none = pc.equal(pc.list_value_length(col), 0)
    if not pc.any(none).as_py():
        return batch
    fixed = pa.ListArray.from_arrays(col.offsets, col.values, type=col.type, mask=none)
    return batch.set_column(i, batch.schema.field(i), fixed)
