"""Avro in Confluent's wire format against the real registry: round trip, byte-identical
interop with confluent-kafka's serializers both ways, subject strategies, use-latest, and each
kind of bad record named."""

from __future__ import annotations

import json
import struct

import pytest
from conftest import ORDER_AVRO, confluent_conf, orders

from rdk.schema_registry import (
    AvroDeserializer,
    AvroSerializer,
    DeserializationError,
    Schema,
    SerializationError,
)


def test_round_trip_batch_and_tombstones(sr, topic):
    values = [*orders(5), None]
    encoded = AvroSerializer(sr, ORDER_AVRO).serialize(topic, values)
    assert encoded[-1] is None and all(e[0] == 0 for e in encoded[:-1])
    schema_id = struct.unpack(">I", encoded[0][1:5])[0]
    assert sr.get_latest_version(f"{topic}-value").schema_id == schema_id
    assert AvroDeserializer(sr).deserialize(topic, encoded) == values


def test_interop_with_confluent_kafka_byte_identical_both_ways(sr, schema_registry, topic):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer as CAvroDeserializer
    from confluent_kafka.schema_registry.avro import AvroSerializer as CAvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    values = orders(20)
    ctx = SerializationContext(topic, MessageField.VALUE)
    csr = SchemaRegistryClient(confluent_conf(schema_registry))
    theirs = [CAvroSerializer(csr, ORDER_AVRO)(v, ctx) for v in values]
    ours = AvroSerializer(sr, ORDER_AVRO).serialize(topic, values)
    assert ours == theirs                                   # same schema id, same bytes
    assert AvroDeserializer(sr).deserialize(topic, theirs) == values
    cdes = CAvroDeserializer(csr)
    assert [cdes(b, ctx) for b in ours] == values


def test_key_and_record_strategies_name_the_subject(sr, topic):
    AvroSerializer(sr, ORDER_AVRO, is_key=True).serialize(topic, orders(1))
    AvroSerializer(sr, ORDER_AVRO, subject_name_strategy="topic_record").serialize(topic, orders(1))
    subjects = set(sr.get_subjects())
    assert {f"{topic}-key", f"{topic}-com.example.Order"} <= subjects
    by_record = AvroSerializer(sr, ORDER_AVRO, subject_name_strategy="record")
    assert by_record.subject(topic) == "com.example.Order"


def test_use_latest_and_reader_schema_evolution(sr, topic):
    AvroSerializer(sr, ORDER_AVRO).serialize(topic, orders(1))
    v2 = json.loads(ORDER_AVRO)
    v2["fields"].append({"name": "qty", "type": "int", "default": 1})
    AvroSerializer(sr, json.dumps(v2)).serialize(topic, [{**orders(1)[0], "qty": 3}])
    latest = AvroSerializer(sr, use_latest=True)
    encoded = latest.serialize(topic, [{**orders(1)[0], "qty": 7}])
    assert struct.unpack(">I", encoded[0][1:5])[0] == sr.get_latest_version(f"{topic}-value").schema_id
    # old records read with the new schema get the default
    old = AvroSerializer(sr, ORDER_AVRO).serialize(topic, orders(1))
    assert AvroDeserializer(sr, reader_schema=json.dumps(v2)).deserialize(topic, old)[0]["qty"] == 1


def test_record_not_matching_schema_names_index_and_nothing_half_done(sr, topic):
    bad = [*orders(2), {"id": "x", "item": "i", "price": 1.0}]
    with pytest.raises(SerializationError, match=r"value 2 for topic 'sr-\w+'") as err:
        AvroSerializer(sr, ORDER_AVRO).serialize(topic, bad)
    assert err.value.index == 2


@pytest.mark.parametrize("case, payload, pattern", [
    ("magic", b"\x01\x00\x00\x00\x01abc", "wrong magic byte 0x01"),
    ("short", b"\x00\x00", "truncated record: 2 bytes"),
    ("unknown-id", b"\x00\x7f\xff\xff\xf0\x02", "unknown schema id 2147483632"),
])
def test_bad_records_are_named(sr, topic, case, payload, pattern):
    with pytest.raises(DeserializationError, match=pattern) as err:
        AvroDeserializer(sr).deserialize(topic, [payload], where=["orders[0]@41"])
    assert "orders[0]@41" in str(err.value)


def test_truncated_body_and_trailing_bytes_are_named(sr, topic):
    good = AvroSerializer(sr, ORDER_AVRO).serialize(topic, orders(3))
    values, failures = AvroDeserializer(sr).deserialize_each(topic, [good[0], good[1][:-4], good[2] + b"xx"])
    assert values[0] == orders(1)[0] and values[1] is None and values[2] is None
    assert [i for i, _ in failures] == [1, 2]
    assert "record 1 of topic" in str(failures[0][1]) and "bytes left" in str(failures[1][1])


def test_schema_object_and_string_register_the_same_id(sr, topic):
    a = AvroSerializer(sr, ORDER_AVRO).serialize(topic, orders(1))
    b = AvroSerializer(sr, Schema(ORDER_AVRO, "AVRO")).serialize(topic, orders(1))
    assert a == b
