"""Producer(value_serializer=...) and Consumer(value_deserializer=...) on Apache Kafka with the
real registry: records in, records out, one undecodable record in a batch neither stops the
consumer nor costs the others."""

from __future__ import annotations

import threading

import pytest
from conftest import ORDER_AVRO, ORDER_JSON, orders

import rdk
from rdk.schema_registry import (
    AvroDeserializer,
    AvroSerializer,
    DeserializationError,
    JSONSerializer,
    SerializationError,
)

pytestmark = pytest.mark.kafka


def test_records_in_records_out_with_keys(kafka_cluster, new_topic, sr, tmp_path):
    topic = new_topic(kafka_cluster, 1)
    key_schema = '"string"'
    with rdk.Producer(kafka_cluster.bootstrap_servers, value_serializer=AvroSerializer(sr, ORDER_AVRO),
                      key_serializer=AvroSerializer(sr, key_schema, is_key=True)) as producer:
        sent = orders(4)
        producer.send(topic, 0, [rdk.Message(v, key=f"k{v['id']}") for v in sent])
        assert producer.flush(30) == 0
    consumer = rdk.Consumer(kafka_cluster.bootstrap_servers, topic, str(tmp_path),
                            value_deserializer=AvroDeserializer(sr), key_deserializer=AvroDeserializer(sr))
    got = []
    for batch in consumer.batches(timeout=30):
        got.extend((m.key, m.value) for m in batch.messages)
        if len(got) == 4:
            break
    consumer.stop()
    assert got == [(f"k{v['id']}", v) for v in sent]


def test_one_undecodable_record_goes_to_batch_undecodable(kafka_cluster, new_topic, sr, tmp_path):
    topic = new_topic(kafka_cluster, 1)
    with rdk.Producer(kafka_cluster.bootstrap_servers) as producer:
        good = AvroSerializer(sr, ORDER_AVRO).serialize(topic, orders(3))
        producer.send(topic, 0, [good[0], b"{not framed}", good[1], good[2]])
        assert producer.flush(30) == 0
    done = threading.Event()
    seen: dict[str, list] = {"values": [], "bad": [], "errors": []}

    def receive(batch):
        try:
            seen["values"].extend(m.value for m in batch.messages)
            seen["bad"].extend(batch.undecodable)
        except Exception as e:
            seen["errors"].append(e)
        if len(seen["values"]) + len(seen["bad"]) >= 4:
            done.set()

    consumer = rdk.Consumer(kafka_cluster.bootstrap_servers, topic, str(tmp_path), receive,
                            value_deserializer=AvroDeserializer(sr))
    consumer.start()
    try:
        assert done.wait(60), seen
    finally:
        consumer.stop()
    assert not seen["errors"]
    assert seen["values"] == orders(3)                        # the others, in order
    [(raw, err)] = seen["bad"]
    assert raw.value == b"{not framed}" and raw.offset == 1
    assert isinstance(err, DeserializationError)
    assert f"{topic}[0]@1" in str(err) and "wrong magic byte 0x7b" in str(err)
    assert consumer.error is None                             # it did not stop


def test_send_of_a_bad_record_enqueues_nothing(kafka_cluster, new_topic, sr):
    topic = new_topic(kafka_cluster, 1)
    encoder = JSONSerializer(sr, ORDER_JSON)
    with rdk.Producer(kafka_cluster.bootstrap_servers, value_serializer=encoder) as producer:
        with pytest.raises(SerializationError, match="value 1"):
            producer.send(topic, 0, [{"id": 1, "item": "a", "price": 1}, {"id": "x"}])
        assert producer.send_queue_length == 0


def test_wrong_serializer_types_are_named():
    with pytest.raises(TypeError, match="value_serializer"):
        rdk.Producer("127.0.0.1:1", value_serializer=object())
    with pytest.raises(TypeError, match="key_deserializer"):
        rdk.Consumer("127.0.0.1:1", "t", "/tmp", key_deserializer=lambda b: b)


def test_registry_down_raises_in_batches_and_commits_nothing(kafka_cluster, new_topic, sr, tmp_path):
    from rdk.schema_registry import RegistryUnavailableError, SchemaRegistryClient
    from rdk.testing import free_port

    topic = new_topic(kafka_cluster, 1)
    encoder = AvroSerializer(sr, ORDER_AVRO)
    with rdk.Producer(kafka_cluster.bootstrap_servers, value_serializer=encoder) as producer:
        producer.send(topic, 0, orders(3))
        assert producer.flush(30) == 0
    down = SchemaRegistryClient(f"http://127.0.0.1:{free_port()}", timeout=2)
    consumer = rdk.Consumer(kafka_cluster.bootstrap_servers, topic, str(tmp_path),
                            value_deserializer=AvroDeserializer(down))
    with pytest.raises(RegistryUnavailableError, match="did not answer GET /schemas/ids/"):
        for _ in consumer.batches(timeout=30):
            pass
    consumer.stop()
    again = rdk.Consumer(kafka_cluster.bootstrap_servers, topic, str(tmp_path),
                         value_deserializer=AvroDeserializer(sr))
    got = []
    for batch in again.batches(timeout=30):
        got.extend(m.value for m in batch.messages)
        if len(got) == 3:
            break
    again.stop()
    assert got == orders(3)                                   # nothing was recorded as processed
