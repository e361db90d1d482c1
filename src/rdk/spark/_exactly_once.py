"""The exactly-once stream sink (``.option("exactlyOnce", "true")``).

A micro-batch of a replayable source is deterministic: after any failure, micro-batch *b*
runs again over the same offset ranges, and its write task *i* gets the same rows. So task
*i* of micro-batch *b* writes its rows in one Kafka transaction whose ``transactional.id``
is ``<prefix>-<query id>-<i>`` (the query's id survives restarts from its checkpoint), and
records *b* in the same transaction as the committed offset of a marker group of the same
name. Before writing, the task registers its transactional id, which fences every earlier
attempt of the same task (a retried task, a speculative copy, a zombie executor) and
completes or aborts that attempt's transaction; then it reads the marker: if micro-batch
*b* committed already, it writes nothing. Readers with ``isolation.level=read_committed``
see each row once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pyarrow as pa

from ..errors import ConfigError
from .options import WriteOptions, split_properties

log = logging.getLogger("rdk.spark")

BATCH_ID_PROPERTY = "streaming.sql.batchId"
"""The local property Spark sets on a micro-batch's jobs (MicroBatchExecution)."""
QUERY_ID_PROPERTY = "sql.streaming.queryId"
"""The local property holding the query's id, kept in its checkpoint across restarts."""
MARKER_PARTITION = 0
"""The partition of the marker topic whose committed offset (in the marker group) is the
next micro-batch to write: ``b + 1`` once micro-batch ``b`` committed."""
_TXN_TIMEOUT = 60.0  # s for init/commit/abort calls when kafka.transaction.timeout.ms is unset


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


def transactional_name(opts: WriteOptions, query_id: str, partition: int) -> str:
    """The transactional id, and marker group, of write task ``partition`` of a query."""
    return f"{opts.transactional_id_prefix}-{query_id}-{partition}"


def _marker_topic(opts: WriteOptions, first: pa.RecordBatch) -> str:
    if opts.topic is not None:
        return opts.topic
    i = first.schema.get_field_index("topic")
    topic = first.column(i)[0].as_py() if i >= 0 else None
    if topic is None:
        raise ConfigError("rdkafka sink: a row has a null 'topic' and no 'topic' option is set")
    return str(topic)


def _timeout(opts: WriteOptions) -> float:
    ms = opts.kafka.get("transaction.timeout.ms")
    return int(ms) / 1000 + 10 if ms is not None else _TXN_TIMEOUT


def committed_batch(opts: WriteOptions, name: str, topic: str) -> int | None:
    """The last micro-batch the marker group ``name`` holds as committed, or None.

    Read with ``isolation.level=read_committed``, so librdkafka asks for stable offsets: a
    transaction still completing is waited for, never read half-done.
    """
    from ..transactions import TransactionalOffsetStore

    driver, _ = split_properties(opts.kafka)
    broker = driver.pop("bootstrap.servers")
    driver["isolation.level"] = "read_committed"
    store = TransactionalOffsetStore(name, broker=broker, topic=topic, driver_options=driver,
                                     timeout=_timeout(opts))
    try:
        # the store gives "last processed" = committed - 1; the marker commits b + 1
        return store.read([MARKER_PARTITION]).get(MARKER_PARTITION)
    finally:
        store.close()


def write_exactly_once(opts: WriteOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Write this task's rows of the current micro-batch in one transaction, unless that
    micro-batch committed already. Returns the number of rows written (0 when skipped)."""
    from ..transactions import GroupMetadata
    from .writer import _TaskProducer, producer_config

    query_id, batch_id, partition = task_identity()
    name = transactional_name(opts, query_id, partition)
    it = iter(batches)
    first = next((b for b in it if b.num_rows), None)
    if first is None:
        return 0  # nothing to write; the marker may stay behind (a re-run writes nothing too)
    marker_topic = _marker_topic(opts, first)
    timeout = _timeout(opts)
    _, make = producer_config(opts, transactional_id=name)
    producer = make()  # never cached: its transactional id belongs to this task only
    task = _TaskProducer(opts, producer)
    in_transaction = False
    try:
        producer.init_transactions(timeout)  # fences earlier attempts, ends their transaction
        done = committed_batch(opts, name, marker_topic)
        if done is not None and done >= batch_id:
            log.info("rdkafka sink: micro-batch %d of task %s committed already; writing "
                     "nothing", batch_id, name)
            for _ in it:  # Spark feeds the rows; take them all
                pass
            producer.stop(5.0)
            return 0
        producer.begin_transaction()
        in_transaction = True
        task.send_batch(first)
        for batch in it:
            task.send_batch(batch)
        with GroupMetadata.for_group(name) as group:
            producer.send_offsets_to_transaction({(marker_topic, MARKER_PARTITION): batch_id + 1},
                                                 group, timeout)
        producer.commit_transaction(timeout)
        in_transaction = False
    except BaseException:
        if in_transaction:
            try:
                producer.abort_transaction(min(timeout, 10.0))
            except Exception:  # the task fails anyway; the next attempt's init aborts it
                log.debug("rdkafka sink: aborting the transaction of %s failed", name,
                          exc_info=True)
        producer.stop(0)
        raise
    producer.stop(5.0)
    return task.sent
