"""GroupMetadata.for_group: a producer keeps its own progress in a group it never joins
(what the Spark exactly-once sink's markers rest on). On Apache Kafka: librdkafka's mock
cluster acknowledges TxnOffsetCommit without storing the offsets: committed with a transaction, gone
with an aborted one."""

from __future__ import annotations

import uuid

import pytest

from rdk import GroupMetadata, Producer
from rdk.transactions import TransactionalOffsetStore


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    store = TransactionalOffsetStore(group, broker=bootstrap, topic=topic,
                                     driver_options={"isolation.level": "read_committed"})
    try:
        return store.read([0])
    finally:
        store.close()


def test_a_transaction_commits_the_groups_offset_and_an_abort_leaves_it(kafka_cluster, new_topic):
    out = new_topic(kafka_cluster, 1, "marker")
    bs = kafka_cluster.bootstrap_servers
    group = f"marker-{uuid.uuid4().hex[:8]}"
    with Producer(bs, transactional_id=f"tx-{group}", queue_buffering_max_ms=5) as p:
        p.init_transactions(30)
        for next_offset, commit in ((8, True), (9, False)):
            p.begin_transaction()
            p.send(out, 0, [b"row"])
            with GroupMetadata.for_group(group) as meta:
                p.send_offsets_to_transaction({(out, 0): next_offset}, meta, 30)
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
    assert committed(bs, group, out) == {0: 7}  # last processed = next - 1; 9 aborted


@pytest.mark.parametrize("bad, error", [
    (None, TypeError), (b"g", TypeError), ("", ValueError), (" g", ValueError),
    ("g ", ValueError), ("g\0h", ValueError),
])
def test_for_group_refuses_ids_librdkafka_would_not_keep(bad, error):
    with pytest.raises(error, match="group_id"):
        GroupMetadata.for_group(bad)


def test_for_group_metadata_closes_once():
    meta = GroupMetadata.for_group("g")
    assert not meta.closed
    meta.close()
    meta.close()
    assert meta.closed and "closed" in repr(meta)
