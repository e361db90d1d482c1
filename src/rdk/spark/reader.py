"""Batch reading, and the executor side shared with streaming: ``read_range``.

Each Spark task reads one ``OffsetRange`` with its own librdkafka handle: the legacy
consumer starts the partition at an explicit offset, one C call per batch copies up to
``FETCH_BATCH`` messages into contiguous buffers, and ``rdk.arrow`` wraps them in a
``pyarrow.RecordBatch`` without touching single rows in Python.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader

from .. import _binding
from .._binding import ERROR_CODES, check, ffi, lib
from .._fetch import Fetcher
from .._partitions import error_text
from ..arrow import error_mask, record_batch
from ..errors import ConfigError, KafkaError, RdkError
from .options import ReadOptions, split_properties
from .planner import OffsetRange, Planner, split_ranges

__all__ = ["FETCH_BATCH", "DataLossError", "KafkaBatchReader", "read_range"]

log = logging.getLogger("rdk.spark")

FETCH_BATCH = 50000  # messages per C call, and the largest RecordBatch we yield

_EOF = ERROR_CODES["_PARTITION_EOF"]
_OUT_OF_RANGE = {ERROR_CODES["_AUTO_OFFSET_RESET"], ERROR_CODES["OFFSET_OUT_OF_RANGE"]}


class DataLossError(RdkError):
    """Offsets a query had to read are gone from Kafka (retention, deletion, truncation).

    Raised when ``failOnDataLoss`` is true (the default); with ``false`` the missing
    offsets are skipped and a warning is logged.
    """


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
        # librdkafka pauses a partition's fetching for fetch.queue.backoff.ms (1 s) once
        # queued.min.messages are buffered; a task drains that in milliseconds
        "fetch.queue.backoff.ms": "10",
        **glob,
    }
    glob["enable.partition.eof"] = "true"
    topic["auto.offset.reset"] = "error"  # out-of-range is data loss, decided here
    return glob, topic


def _low_watermark(client: _binding.Client, topic: str, partition: int, timeout_ms: int) -> int:
    lo = ffi.new("int64_t *")
    hi = ffi.new("int64_t *")
    check(lib.rd_kafka_query_watermark_offsets(client.rk, topic.encode(), partition, lo, hi,
                                               timeout_ms), f"watermarks of {topic}-{partition}")
    return int(lo[0])


def read_range(opts: ReadOptions, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Yield the messages of offsets [r.start, r.end) of one partition as RecordBatches."""
    if r.start >= r.end:
        return
    client = _binding.Client("consumer", *consumer_properties(opts))
    fetcher = Fetcher(client, r.topic, FETCH_BATCH)
    fetcher.batch.skip_headers = 0 if opts.include_headers else 1
    name = f"{r.topic}-{r.partition}"
    timeout_ms = min(opts.poll_timeout_ms, 30_000)
    try:
        pos = r.start
        fetcher.start(r.partition, pos)
        idle_since = time.monotonic()
        while pos < r.end:
            b = fetcher.fetch(100)
            if not b.n:
                if (time.monotonic() - idle_since) * 1000 > opts.poll_timeout_ms:
                    data_loss(opts, f"offsets [{pos}, {r.end}) of {name} could not be fetched "
                                    f"within kafkaConsumer.pollTimeoutMs={opts.poll_timeout_ms}")
                    return
                continue
            idle_since = time.monotonic()
            eof = None
            out_of_range = False
            if b.n_errors:
                for i in range(b.n):
                    e = b.err[i]
                    if e == _EOF:
                        eof = int(b.offset[i])
                    elif e in _OUT_OF_RANGE:
                        out_of_range = True
                    elif e:
                        raise KafkaError(e, error_text(b, i), context=f"fetch {name} at {pos}")
            if b.n_parts:
                first, last = int(b.part_first[0]), int(b.part_last[0])
                if first > pos:
                    lo = _low_watermark(client, r.topic, r.partition, timeout_ms)
                    if lo > pos:
                        data_loss(opts, f"offsets [{pos}, {min(lo, first)}) of {name} are gone "
                                        f"(the earliest offset is now {lo})")
                batch = record_batch(b, r.topic, opts.include_headers)
                if b.n_errors:
                    batch = batch.filter(error_mask(b))
                if last >= r.end:
                    batch = batch.filter(pc.less(batch.column("offset"), r.end))
                pos = last + 1
                if batch.num_rows:
                    yield batch
            if out_of_range and pos < r.end:
                lo = _low_watermark(client, r.topic, r.partition, timeout_ms)
                fetcher.stop(r.partition)
                if pos < lo:
                    data_loss(opts, f"offsets [{pos}, {min(lo, r.end)}) of {name} are gone "
                                    f"(the earliest offset is now {lo})")
                    pos = lo
                else:
                    data_loss(opts, f"offsets [{pos}, {r.end}) of {name} are beyond the end of "
                                    "the partition (was it deleted and re-created?)")
                    return
                if pos < r.end:
                    fetcher.start(r.partition, pos)
            elif eof is not None and eof >= r.end:
                return  # the offsets left below r.end hold no records (compaction, markers)
    finally:
        fetcher.close()
        client.close()


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
                raise ConfigError(f"rdkafka option 'endingOffsets': {ends[tp]} for {name} is past "
                                  f"the end of the partition ({marks[tp][1]}); use -1 for latest")
        return split_ranges(starts, ends, opts.min_partitions)

    def read(self, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
        return read_range(self.opts, partition)
