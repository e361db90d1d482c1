"""send_offsets_to_transaction() with a (topic, partition) the cluster does not have fails
at once with a TransactionError naming it, instead of librdkafka's retries until the
timeout; the transaction stays usable."""

from __future__ import annotations

import time
import uuid

import pytest

from rdk import GroupMetadata, Producer, TransactionError, _binding
from rdk.transactions import group_metadata_of


def group_metadata(bootstrap: str, group: str) -> tuple[_binding.Client, GroupMetadata]:
    client = _binding.Client("consumer", {"bootstrap.servers": bootstrap, "group.id": group,
                                          "log_level": 3})
    return client, group_metadata_of(client)


@pytest.mark.parametrize("offsets, named", [
    ({("no-such-topic", 0): 5}, r"'no-such-topic' partition 0 \(no such topic\)"),
    ({("in", 0): 5, ("in", 7): 1}, r"'in' partition 7 \(the topic has 2 partitions\)"),
], ids=["unknown-topic", "unknown-partition"])
def test_unknown_partition_fails_fast_naming_it_and_the_transaction_goes_on(
        mock_cluster, offsets, named):
    mock_cluster.create_topic("in", 2)
    bs = mock_cluster.bootstrap_servers
    client, meta = group_metadata(bs, f"g-{uuid.uuid4().hex[:8]}")
    try:
        with Producer(bs, transactional_id=f"tx-{uuid.uuid4().hex[:8]}",
                      queue_buffering_max_ms=5) as p:
            p.init_transactions(30)
            p.begin_transaction()
            started = time.monotonic()
            with pytest.raises(TransactionError, match=named) as info:
                p.send_offsets_to_transaction(offsets, meta, 30)
            assert time.monotonic() - started < 10  # librdkafka alone: the whole 30 s
            e = info.value
            assert e.name == "UNKNOWN_TOPIC_OR_PART" and e.context == "send_offsets_to_transaction"
            assert not (e.retriable or e.fatal or e.txn_requires_abort)
            # nothing reached librdkafka: the same transaction still takes good offsets
            p.send_offsets_to_transaction({("in", 0): 5, ("in", 1): 2}, meta, 30)
            p.send("in", 0, [b"out"])
            p.commit_transaction(30)
    finally:
        meta.close()
        client.close()
