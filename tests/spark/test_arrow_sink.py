"""The sink's Arrow path: each batch's value/key/headers columns go to librdkafka through one
C call per partition (rdk.producer._arrow.ArrowRows), no Python object per row; a failed
delivery fails the task naming the row. Written with the executor-side write_batches, read
back with the executor-side read_range, as Spark's Python workers run them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from rdk.spark.options import parse_read_options, parse_write_options
from rdk.spark.planner import OffsetRange
from rdk.spark.reader import read_range
from rdk.spark.writer import DeliveryError, write_batches

pytestmark = pytest.mark.spark

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def write(broker, topic, batches, **extra):
    opts = parse_write_options({"kafka.bootstrap.servers": broker.bootstrap_servers,
                                "topic": topic, **extra})
    return write_batches(opts, iter(batches)).rows


def read_back(broker, topic, partition, n):
    opts = parse_read_options({"kafka.bootstrap.servers": broker.bootstrap_servers,
                               "subscribe": topic, "includeHeaders": "true"}, streaming=False)
    batches = list(read_range(opts, OffsetRange(topic, partition, 0, n)))
    table = pa.Table.from_batches(batches)
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist(),
                    table.column("headers").to_pylist(), strict=True))


@pytest.mark.parametrize("text", [pa.binary(), pa.string(), pa.large_binary(), pa.large_string()])
def test_every_column_type_nulls_and_headers_arrive_as_written(mock_broker, new_topic, text):
    topic = new_topic(mock_broker, 1)
    raw = [(b"k0", b"v0", [("a", b"1"), ("b", None)]), (None, b"no key", None),
           (b"k2", None, []), (b"", b"", [("c", b"")])]
    as_text = pa.types.is_string(text) or pa.types.is_large_string(text)

    def col(items):
        return pa.array([None if v is None else (v.decode() if as_text else v) for v in items],
                        text)

    heads = pa.array([None if h is None else [{"key": k, "value": v} for k, v in h]
                      for _, _, h in raw], HEADERS)
    batch = pa.RecordBatch.from_arrays([col([r[0] for r in raw]), col([r[1] for r in raw]), heads],
                                       ["key", "value", "headers"])
    # a sliced batch too: Arrow's offsets then do not start at 0
    assert write(mock_broker, topic, [batch, batch.slice(1, 2)]) == 6
    got = read_back(mock_broker, topic, 0, 6)
    expected = [(k, v, [{"key": hk, "value": hv} for hk, hv in h] if h else None)
                for k, v, h in raw + raw[1:3]]
    assert got == expected


def test_a_partition_column_routes_each_row_in_order(mock_broker, new_topic):
    topic = new_topic(mock_broker, 3)
    parts = [i % 3 for i in range(30)]
    batch = pa.RecordBatch.from_pydict({"value": [b"%d" % i for i in range(30)],
                                        "partition": pa.array(parts, pa.int32())})
    assert write(mock_broker, topic, [batch]) == 30
    for p in range(3):
        assert [v for _, v, _ in read_back(mock_broker, topic, p, 10)] == \
            [b"%d" % i for i in range(p, 30, 3)]


def test_a_failed_delivery_names_the_row(mock_cluster):
    mock_cluster.create_topic("refused", 2)
    mock_cluster.push_request_errors("Produce", ["TOPIC_AUTHORIZATION_FAILED"] * 100)
    batches = [pa.RecordBatch.from_pydict({"value": [b"a", b"b"],
                                           "partition": pa.array([1, 1], pa.int32())})] * 2
    with pytest.raises(DeliveryError) as ei:
        write(mock_cluster, "refused", batches, **{"kafka.message.timeout.ms": "3000"})
    text = str(ei.value)
    assert "4 of 4 rows were not delivered" in text and "TOPIC_AUTHORIZATION_FAILED" in text
    assert "first failed row: 0 (rows of this task count from 0)" in text


def test_a_refused_row_is_named_by_its_position_in_the_task(mock_cluster):
    mock_cluster.create_topic("sizes", 1)
    small = pa.RecordBatch.from_pydict({"value": [b"a", b"b"]})
    mixed = pa.RecordBatch.from_pydict({"value": [b"c", b"x" * 5000, b"d"]})
    with pytest.raises(DeliveryError) as ei:
        write(mock_cluster, "sizes", [small, mixed], **{"kafka.message.max.bytes": "2000"})
    text = str(ei.value)
    assert "1 of 5 rows were not delivered" in text and "MSG_SIZE_TOO_LARGE" in text, text
    assert "first failed row: 3 " in text, text
