"""Fixtures of the schema registry tests: a client of the session's Apicurio Registry, fresh
topic names (so subjects never collide), and the schemas the tests share."""

from __future__ import annotations

import json
import uuid

import pytest

ORDER_AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "com.example",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
               {"name": "price", "type": "double"},
               {"name": "note", "type": ["null", "string"], "default": None}],
})
ORDER_JSON = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}, "price": {"type": "number"}},
    "required": ["id", "item", "price"],
})


def confluent_conf(registry) -> dict:
    """confluent-kafka's SchemaRegistryClient settings for the session's registry. With a
    request timeout: its client (httpx) has none by default, and one request of a full suite
    run (its associations lookup) once waited for Apicurio's answer until pytest's 600 s limit;
    a timed-out request is retried (``max.retries``)."""
    return {"url": registry.url, "timeout": 10, "max.retries": 3}


def orders(n: int, start: int = 0) -> list[dict]:
    return [{"id": i, "item": f"item-{i}", "price": i * 1.5, "note": None if i % 2 else f"n{i}"}
            for i in range(start, start + n)]


def order_message_class():
    """A protobuf message class ``rdk.test.Order`` built from a FileDescriptorProto (as protoc's
    generated code does), with a nested message to exercise message indexes."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="rdk_test_order.proto", package="rdk.test", syntax="proto3")
    first = fdp.message_type.add(name="Ping")
    first.field.add(name="n", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order = fdp.message_type.add(name="Order")
    for number, (name, kind) in enumerate([("id", "TYPE_INT64"), ("item", "TYPE_STRING"),
                                           ("price", "TYPE_DOUBLE")], 1):
        order.field.add(name=name, number=number, type=getattr(descriptor_pb2.FieldDescriptorProto, kind),
                        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("rdk.test.Order")),
            get(pool.FindMessageTypeByName("rdk.test.Order.Line")),
            get(pool.FindMessageTypeByName("rdk.test.Ping")))


@pytest.fixture
def sr(schema_registry):
    """An rdk SchemaRegistryClient of the session's registry."""
    from rdk.schema_registry import SchemaRegistryClient

    with SchemaRegistryClient(schema_registry.url) as client:
        yield client


@pytest.fixture
def topic():
    """A fresh topic name (subjects derive from it)."""
    return f"sr-{uuid.uuid4().hex[:10]}"
