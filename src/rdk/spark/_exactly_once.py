"""The exactly-once stream sink (``.option("exactlyOnce", "true")``): stage, then copy.

Why two steps. A write task cannot know that it saw all of its rows: when an operator
upstream of the sink fails inside the task (a killed Python UDF worker, a failed fetch),
Spark ends the writer's input stream as if it were complete and fails the task only after
the writer returned. A task that committed a Kafka transaction at the end of its input
would then have committed part of its rows, for good. Only the driver learns which task
attempts succeeded: Spark hands ``commit(messages, batchId)`` the messages of those alone.

So:

1. **Stage.** Each write task sends its rows to the staging topic (``stagingTopic``,
   default ``<topic>.rdk-staging``) with an idempotent producer, each row carrying its
   attempt's id as its first header (``rdk-eos``), all rows of the task in one staging
   partition (in order). Its commit message names the attempt and its row count. A failed,
   retried or speculative attempt may leave rows there: nobody copies them.
2. **Copy.** The driver's ``commit`` reads the staging partitions from where the previous
   micro-batch's copy stopped to their ends, keeps the rows of the attempts in the messages,
   drops the header and writes them to ``topic`` in one Kafka transaction, with, in the same
   transaction, the staging positions and the micro-batch id committed as offsets of the
   marker group ``<transactionalIdPrefix>-<query id>`` (the query's id survives restarts
   from its checkpoint). The transactional id is the same name: a restarted driver fences
   the old one and aborts what it left open. A micro-batch whose marker is already
   committed is not copied again (a driver that died between Kafka's commit and Spark's).

Readers with ``isolation.level=read_committed`` see every row once. The price: each row is
written twice and passes through the driver (docs/guide/spark.md gives figures).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import WriterCommitMessage

from ..errors import ConfigError, RdkError
from .options import WriteOptions, parse_read_options, split_properties
from .writer import TaskProducer, write_batches

log = logging.getLogger("rdk.spark")

TAG = "rdk-eos"
"""Header key of every staged row: the id of the task attempt that staged it."""
BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""The local property Spark sets on a micro-batch's jobs (MicroBatchExecution)."""
QUERY_ID_PROPERTY = "sql.streaming.queryId"
"""The local property holding the query's id, kept in its checkpoint across restarts."""
MARKER_PARTITION = 0
"""Partition of ``topic`` whose committed offset in the marker group is the next
micro-batch to copy: ``b + 1`` once micro-batch ``b`` committed."""
STAGING_RETENTION_MS = 24 * 3600 * 1000
"""retention.ms of a staging topic the sink creates: a micro-batch is copied as soon as
its tasks finish, and one run again after a restart is staged again."""
_TXN_TIMEOUT = 60.0  # s for init/commit/abort calls when kafka.transaction.timeout.ms is unset
_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
# properties of the sink's that the driver's staging reader shares (connection, security)
_SHARED = ("bootstrap.servers", "security.", "sasl.", "ssl.", "socket.", "broker.", "client.",
           "enable.ssl", "api.version")


@dataclass
class StagedCommitMessage(WriterCommitMessage):
    """What a write task staged: its attempt's id and row count, and the query's id."""

    query_id: str
    attempt: str
    rows: int


def staging_topic(opts: WriteOptions) -> str:
    return opts.staging_topic or f"{opts.topic}.rdk-staging"


def _admin(opts: WriteOptions) -> Any:
    from ..admin import Admin

    driver, _ = split_properties(opts.kafka)
    broker = driver.pop("bootstrap.servers")
    return Admin(broker, {k: v for k, v in driver.items() if k.startswith(_SHARED)})


def prepare_staging(opts: WriteOptions) -> int:
    """On the driver, when the query starts: create the staging topic unless it exists (as
    many partitions and replicas as ``topic``: staged rows are as safe from a broker's loss
    as the output), and return its partition count."""
    staging = staging_topic(opts)
    assert opts.topic is not None  # parse_write_options requires it
    with _admin(opts) as admin:
        topics = {t.name: t for t in admin.list_topics()}
        there = topics.get(staging)
        if there is not None and there.error is None and there.partitions:
            return len(there.partitions)
        meta = topics.get(opts.topic)
        if meta is not None and meta.error is None and meta.partitions:
            partitions, replicas = len(meta.partitions), max(len(p.replicas) for p in meta.partitions)
        else:  # not listed ("__" names, or not yet): ask for it alone, which names its error
            partitions, replicas = admin.partition_count(opts.topic), None  # broker default
        admin.create_topics([(staging, partitions, replicas,
                              {"retention.ms": str(STAGING_RETENTION_MS)})], exist_ok=True)
        # the brokers' metadata may not list a topic just created yet: it has what was asked
        return partitions


def task_identity() -> tuple[str, int, int]:
    """(query id, micro-batch id, partition id) of the running write task.

    Raises:
        rdk.ConfigError: Not inside a micro-batch of a streaming query.
    """
    from pyspark import TaskContext

    ctx = TaskContext.get()
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
    if ctx is None or batch is None or query is None:
        raise ConfigError(
            "rdkafka sink: option 'exactlyOnce' needs a micro-batch streaming query "
            f"(Spark sets '{BATCH_ID_PROPERTY}' and '{QUERY_ID_PROPERTY}' on its tasks); this "
            "task has none (continuous or real-time triggers are not supported)")
    return query, int(batch), ctx.partitionId()


def with_attempt_header(headers: pa.Array | None, n: int, attempt: bytes) -> pa.Array:
    """``headers`` (list<struct<key, value>>, or None: none) with ``(TAG, attempt)`` put
    first in each row's list (null lists count as empty). Arrow compute only: the packed
    environments users ship to executors need not hold numpy."""
    tag = pa.StructArray.from_arrays([_repeat(TAG, n, pa.string()),
                                      _repeat(attempt, n, pa.binary())], names=["key", "value"])
    if headers is None or len(headers.flatten()) == 0:
        return pa.ListArray.from_arrays(_offsets(_repeat(1, n, pa.int32())), tag)
    headers = headers.cast(_HEADERS)
    own = headers.flatten()
    offsets = _offsets(pc.add(pc.fill_null(pc.list_value_length(headers), 0), 1))
    # where each value goes: row r's tag at its list's start, the k-th own header after the
    # r + 1 tags up to its row (r = its row); sorting those places gives the take order
    k = pc.subtract(pc.cumulative_sum(_repeat(1, len(own), pa.int64())), 1)  # 0, 1, 2, …
    places = pa.concat_arrays([offsets.slice(0, n).cast(pa.int64()),
                               pc.add(pc.add(k, pc.list_parent_indices(headers).cast(pa.int64())), 1)])
    values = pa.concat_arrays([tag, own]).take(pc.sort_indices(places))
    return pa.ListArray.from_arrays(offsets, values)


def _repeat(value: Any, n: int, type_: pa.DataType) -> pa.Array:
    """``value`` ``n`` times, built in Arrow."""
    return pc.fill_null(pa.nulls(n, type_), pa.scalar(value, type_))


def _offsets(lengths: pa.Array) -> pa.Array:
    """List offsets (int32, ``len(lengths) + 1`` of them) of lists of these lengths."""
    ends = pc.cumulative_sum(lengths.cast(pa.int32()))
    return pa.concat_arrays([pa.array([0], pa.int32()), ends.cast(pa.int32())])


def _staged(batches: Iterator[pa.RecordBatch], attempt: bytes, partition: int
            ) -> Iterator[pa.RecordBatch]:
    """The task's batches as staging rows: key, value, headers with the attempt first, and
    the staging partition."""
    for b in batches:
        n = b.num_rows
        if not n:
            continue
        cols = {"value": b.column(b.schema.get_field_index("value"))}
        if b.schema.get_field_index("key") >= 0:
            cols["key"] = b.column(b.schema.get_field_index("key"))
        i = b.schema.get_field_index("headers")
        cols["headers"] = with_attempt_header(b.column(i) if i >= 0 else None, n, attempt)
        cols["partition"] = _repeat(partition, n, pa.int32())
        yield pa.RecordBatch.from_pydict(cols)


def stage(opts: WriteOptions, staging_partitions: int,
          batches: Iterator[pa.RecordBatch]) -> StagedCommitMessage:
    """Write task: stage this task's rows (step 1). Raises DeliveryError as the
    at-least-once sink does when a row cannot be staged."""
    query_id, _, partition = task_identity()
    attempt = uuid.uuid4().hex
    staging = WriteOptions(kafka={**opts.kafka, "enable.idempotence": "true"},
                           topic=staging_topic(opts))
    sent = write_batches(staging, _staged(batches, attempt.encode(), partition % staging_partitions))
    return StagedCommitMessage(query_id, attempt, sent.rows)


def _timeout(opts: WriteOptions) -> float:
    ms = opts.kafka.get("transaction.timeout.ms")
    return int(ms) / 1000 + 10 if ms is not None else _TXN_TIMEOUT


def marker_name(opts: WriteOptions, query_id: str) -> str:
    """The transactional id of the copy, and its marker group."""
    return f"{opts.transactional_id_prefix}-{query_id}"


def _committed(opts: WriteOptions, name: str, topic: str, partitions: list[int]) -> dict[int, int]:
    """The marker group's committed offsets of ``topic`` as ``{partition: offset - 1}``, read
    with read_committed (a transaction still completing is waited for, never half-read)."""
    from ..transactions import TransactionalOffsetStore

    driver, _ = split_properties(opts.kafka)
    broker = driver.pop("bootstrap.servers")
    shared = {k: v for k, v in driver.items() if k.startswith(_SHARED)}
    store = TransactionalOffsetStore(name, broker=broker, topic=topic,
                                     driver_options={**shared, "isolation.level": "read_committed"},
                                     timeout=_timeout(opts))
    try:
        return store.read(partitions)
    finally:
        store.close()


def copy_committed(opts: WriteOptions, staging_partitions: int, messages: list,
                   batch_id: int) -> int:
    """Driver, ``commit(messages, batchId)``: copy the rows of the attempts that succeeded
    to ``topic`` in one transaction with the marker (step 2). Returns the rows copied (0
    when micro-batch ``batch_id`` was copied before).

    Raises:
        rdk.RdkError: The staging topic does not hold every staged row of those attempts
            (deleted, or its retention passed); nothing is committed.
    """
    from ..producer import Producer
    from ..transactions import GroupMetadata

    staged = [m for m in messages if isinstance(m, StagedCommitMessage)]
    if not staged:
        return 0
    name = marker_name(opts, staged[0].query_id)
    topic, staging, timeout = opts.topic, staging_topic(opts), _timeout(opts)
    assert topic is not None  # parse_write_options requires it
    driver, topic_props = split_properties(opts.kafka)
    broker = driver.pop("bootstrap.servers")
    balancer = "consistent_random" if "partitioner" in topic_props else "murmur2_random"
    producer = Producer(broker, driver_options=driver, topic_options=topic_props,
                        balancer=balancer, on_queue_full="block", transactional_id=name)
    in_transaction = False
    try:
        producer.init_transactions(timeout)  # fences an earlier driver; aborts what it left
        done = _committed(opts, name, topic, [MARKER_PARTITION]).get(MARKER_PARTITION)
        if done is not None and done >= batch_id:
            log.info("rdkafka sink: micro-batch %d of %s was copied before", batch_id, name)
            return 0
        parts = list(range(staging_partitions))
        starts, ends = _staging_range(opts, name, staging, parts)
        want = {m.attempt.encode(): m.rows for m in staged}
        producer.begin_transaction()
        in_transaction = True
        got = _copy_attempts(opts, producer, staging, {p: (starts[p], ends[p]) for p in parts},
                             list(want))
        if got != Counter(want):
            missing = {k.decode(): (want[k], got.get(k, 0)) for k in want if got.get(k, 0) != want[k]}
            raise RdkError(f"rdkafka sink: staging topic {staging!r} does not hold the rows "
                           f"staged for micro-batch {batch_id} (attempt: (staged, found)): "
                           f"{missing}; nothing of it is committed")
        offsets = {(staging, p): ends[p] for p in parts}
        offsets[(topic, MARKER_PARTITION)] = batch_id + 1
        with GroupMetadata.for_group(name) as group:
            producer.send_offsets_to_transaction(offsets, group, timeout)
        producer.commit_transaction(timeout)
        in_transaction = False
        return sum(want.values())
    finally:
        if in_transaction:
            try:
                producer.abort_transaction(min(timeout, 10.0))
            except Exception:  # the next driver's init_transactions aborts it
                log.debug("rdkafka sink: aborting the copy of %s failed", name, exc_info=True)
        producer.stop(5.0)


def _staging_range(opts: WriteOptions, name: str, staging: str,
                   parts: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """(first offset to copy, end offset) per staging partition: after what the last copy
    committed (else the partition's low watermark), up to its high watermark."""
    starts = {p: last + 1 for p, last in _committed(opts, name, staging, parts).items()}
    with _admin(opts) as admin:
        ends = {p: admin.watermarks(staging, p)[1] for p in parts}
        starts = {p: starts.get(p, admin.watermarks(staging, p)[0]) for p in parts}
    return starts, ends


def _copy_attempts(opts: WriteOptions, producer: Any, staging: str,
                   ranges: dict[int, tuple[int, int]], attempts: list[bytes]) -> Counter:
    """Send the rows of ``staging``'s ``ranges`` ({partition: (start, end)}) staged by one of
    ``attempts`` to ``opts.topic`` (in the producer's open transaction); the rows found per
    attempt."""
    from .planner import OffsetRange
    from .reader import read_range

    read_opts = parse_read_options(
        {**{f"kafka.{k}": v for k, v in opts.kafka.items() if k.startswith(_SHARED)},
         "assign": json.dumps({staging: sorted(ranges)}), "includeHeaders": "true"},
        streaming=False)
    out = TaskProducer(WriteOptions(kafka=opts.kafka, topic=opts.topic), producer)
    got: Counter = Counter()
    keys = pa.array(attempts, pa.binary())
    for p, (start, end) in ranges.items():
        for batch in read_range(read_opts, OffsetRange(staging, p, start, end)):
            rows = _attempt_rows(batch, keys, got)
            if rows is not None:
                out.send_batch(rows)
    out.finish()
    return got


def _attempt_rows(batch: pa.RecordBatch, attempts: pa.Array, got: Counter) -> pa.RecordBatch | None:
    """The rows of ``batch`` staged by one of ``attempts``, without their attempt header, as
    key/value/headers; counted into ``got``."""
    headers = batch.column(batch.schema.get_field_index("headers")).cast(_HEADERS)
    tagged = pc.fill_null(pc.greater(pc.list_value_length(headers), 0), False)
    firsts = pc.list_element(pc.if_else(tagged, headers, pa.scalar([(TAG, b"")], _HEADERS)), 0)
    mine = pc.and_(pc.equal(pc.struct_field(firsts, "key"), TAG),
                   pc.is_in(pc.struct_field(firsts, "value"), value_set=attempts))
    mine = pc.fill_null(mine, False)
    if not pc.any(mine).as_py():
        return None
    kept = batch.filter(mine)
    for row in pc.value_counts(pc.struct_field(firsts.filter(mine), "value")).to_pylist():
        got[row["values"]] += row["counts"]
    own = pc.list_slice(kept.column(kept.schema.get_field_index("headers")).cast(_HEADERS), 1)
    return pa.RecordBatch.from_arrays(
        [kept.column(kept.schema.get_field_index("key")),
         kept.column(kept.schema.get_field_index("value")), own],
        names=["key", "value", "headers"])
