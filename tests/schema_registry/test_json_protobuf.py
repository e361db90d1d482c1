"""JSON Schema and Protobuf in Confluent's wire format against the real registry: round trips,
interop with confluent-kafka's serializers both ways, message indexes, named bad records."""

from __future__ import annotations

import json

import pytest
from conftest import ORDER_JSON, confluent_conf, order_message_class

from rdk.schema_registry import (
    DeserializationError,
    JSONDeserializer,
    JSONSerializer,
    ProtobufDeserializer,
    ProtobufSerializer,
    SerializationError,
)
from rdk.schema_registry._protobuf import message_indexes

JSON_ORDERS = [{"id": i, "item": f"item-{i}", "price": i * 0.5} for i in range(10)]


def _confluent(schema_registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient(confluent_conf(schema_registry))


def _ctx(topic):
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE)


def test_json_round_trip_and_interop_both_ways(sr, schema_registry, topic):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CJSONDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer as CJSONSerializer

    ours = JSONSerializer(sr, ORDER_JSON).serialize(topic, [*JSON_ORDERS, None])
    assert JSONDeserializer(sr).deserialize(topic, ours) == [*JSON_ORDERS, None]
    csr, ctx = _confluent(schema_registry), _ctx(topic)
    theirs = [CJSONSerializer(ORDER_JSON, csr)(v, ctx) for v in JSON_ORDERS]
    assert [t[:5] for t in theirs] == [o[:5] for o in ours[:-1]]          # the same schema id
    assert JSONDeserializer(sr).deserialize(topic, theirs) == JSON_ORDERS
    cdes = CJSONDeserializer(None, schema_registry_client=csr)
    assert [cdes(o, ctx) for o in ours[:-1]] == JSON_ORDERS


def test_json_not_matching_schema_is_named_both_ways(sr, topic):
    with pytest.raises(SerializationError, match=r"value 1 .* at price: 'cheap' is not of type 'number'"):
        bad = {**JSON_ORDERS[1], "price": "cheap"}
        JSONSerializer(sr, ORDER_JSON).serialize(topic, [JSON_ORDERS[0], bad])
    loose = JSONSerializer(sr, ORDER_JSON, validate=False).serialize(topic, [{"id": 1}])
    with pytest.raises(DeserializationError, match="'item' is a required property"):
        JSONDeserializer(sr).deserialize(topic, loose)
    assert JSONDeserializer(sr, validate=False).deserialize(topic, loose) == [{"id": 1}]


def test_protobuf_message_indexes():
    order, line, ping = order_message_class()
    assert message_indexes(ping.DESCRIPTOR) == b"\x00"
    assert message_indexes(order.DESCRIPTOR) == bytes([2, 2])          # [1], zig-zag
    assert message_indexes(line.DESCRIPTOR) == bytes([4, 2, 0])        # [1, 0]


def test_protobuf_round_trip_and_interop_both_ways(sr, schema_registry, topic):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CProtobufDeserializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CProtobufSerializer

    order, _, _ = order_message_class()
    values = [order(id=i, item=f"item-{i}", price=i * 2.0) for i in range(10)]
    ours = ProtobufSerializer(sr, order).serialize(topic, values)
    assert ProtobufDeserializer(order).deserialize(topic, ours) == values
    csr, ctx = _confluent(schema_registry), _ctx(topic)
    cser = CProtobufSerializer(order, csr, {"use.deprecated.format": False})
    theirs = [cser(v, ctx) for v in values]
    assert theirs == ours                                                  # same id, indexes, bytes
    assert ProtobufDeserializer(order).deserialize(topic, theirs) == values
    cdes = CProtobufDeserializer(order, {"use.deprecated.format": False})
    assert [cdes(o, ctx) for o in ours] == values


def test_protobuf_wrong_type_and_truncated_are_named(sr, topic):
    order, _, ping = order_message_class()
    with pytest.raises(SerializationError, match=r"value 0 .* expected a Order, got Ping"):
        ProtobufSerializer(sr, order).serialize(topic, [ping(n=1)])
    good = ProtobufSerializer(sr, order).serialize(topic, [order(id=1, item="a" * 40, price=1.0)])[0]
    with pytest.raises(DeserializationError, match=r"cannot decode PROTOBUF record 0 of topic"):
        ProtobufDeserializer(order).deserialize(topic, [good[:-10]])


def test_json_schema_registered_with_its_type(sr, topic):
    JSONSerializer(sr, ORDER_JSON).serialize(topic, JSON_ORDERS[:1])
    latest = sr.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON" and json.loads(latest.schema.schema_str)["title"] == "Order"
