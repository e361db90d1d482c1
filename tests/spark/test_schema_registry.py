"""format("rdkafka") with valueFormat=avro against Apache Kafka and the real registry: framed
Avro decoded into a struct column in the Arrow path (compared with decoding by hand), two
schema ids in one read resolved to the latest, the sink encoding a struct column, and a record
that cannot be decoded failing the query by name."""

from __future__ import annotations

import json
import uuid

import pytest

import rdk
from rdk.schema_registry import AvroDeserializer, AvroSerializer, SchemaRegistryClient

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

V1 = {"type": "record", "name": "Trade", "namespace": "rdk.test", "fields": [
    {"name": "id", "type": "long"}, {"name": "sym", "type": "string"},
    {"name": "px", "type": "double"}, {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "qty", "type": "int", "default": 1}]}


def _rows(n, start=0, qty=None):
    rows = [{"id": i, "sym": f"S{i % 7}", "px": i / 4, "tags": [f"t{i}"] * (i % 3),
             "note": None if i % 2 else "x"} for i in range(start, start + n)]
    return [{**r, "qty": qty} for r in rows] if qty is not None else rows


def _read(spark, brokers, topic, url):
    return (spark.read.format("rdkafka").option("kafka.bootstrap.servers", brokers)
            .option("subscribe", topic).option("valueFormat", "avro")
            .option("schemaRegistry.url", url).load())


def test_read_decodes_two_schema_ids_into_the_latest_struct(spark, kafka_cluster, schema_registry):
    topic = f"spark-sr-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, 2)
    sr = SchemaRegistryClient(schema_registry.url)
    old = AvroSerializer(sr, json.dumps(V1)).serialize(topic, _rows(30))
    new = AvroSerializer(sr, json.dumps(V2)).serialize(topic, _rows(30, 30, qty=5))
    with rdk.Producer(kafka_cluster.bootstrap_servers) as producer:
        producer.send(topic, 0, old[:15] + new[:15])
        producer.send(topic, 1, old[15:] + new[15:])
        assert producer.flush(30) == 0
    df = _read(spark, kafka_cluster.bootstrap_servers, topic, schema_registry.url)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,sym:string,px:double,tags:array<string>,note:string,qty:int>")
    got = {r["value"]["id"]: r["value"].asDict() for r in df.select("value").collect()}
    by_hand = AvroDeserializer(sr, reader_schema=json.dumps(V2)).deserialize(topic, old + new)
    assert got == {v["id"]: v for v in by_hand}
    assert got[0]["qty"] == 1 and got[45]["qty"] == 5             # v1 rows got v2's default
    assert df.where("value.sym = 'S3'").count() == sum(1 for v in by_hand if v["sym"] == "S3")


def test_sink_encodes_struct_column_and_bad_record_fails_by_name(spark, kafka_cluster, schema_registry):
    topic = f"spark-sr-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, 1)
    sr = SchemaRegistryClient(schema_registry.url)
    sr.register_schema(f"{topic}-value", json.dumps(V1))
    rows = _rows(10)
    src = spark.createDataFrame([(r,) for r in rows], "value struct<id:bigint,sym:string,px:double,"
                                                       "tags:array<string>,note:string>")
    (src.write.format("rdkafka").option("kafka.bootstrap.servers", kafka_cluster.bootstrap_servers)
     .option("topic", topic).option("valueFormat", "avro").option("schemaRegistry.url", schema_registry.url)
     .mode("append").save())
    raw = (spark.read.format("rdkafka").option("kafka.bootstrap.servers", kafka_cluster.bootstrap_servers)
           .option("subscribe", topic).load().select("value").collect())
    assert sorted(AvroDeserializer(sr).deserialize(topic, [r["value"] for r in raw]),
                  key=lambda v: v["id"]) == rows
    with rdk.Producer(kafka_cluster.bootstrap_servers) as producer:
        producer.send(topic, 0, [b"plain text"])
        assert producer.flush(30) == 0
    with pytest.raises(Exception, match=rf"{topic}\[0\]@10.*wrong magic byte"):
        _read(spark, kafka_cluster.bootstrap_servers, topic, schema_registry.url).collect()


def test_missing_subject_is_named(spark, kafka_cluster, schema_registry):
    with pytest.raises(Exception, match="no-such-topic-value"):
        _ = _read(spark, kafka_cluster.bootstrap_servers, "no-such-topic", schema_registry.url).schema
