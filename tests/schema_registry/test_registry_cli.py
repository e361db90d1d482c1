"""rdk produce/consume --schema-registry against Apache Kafka and the real registry: JSON lines
in, Avro or JSON Schema on the topic, JSON lines out; an undecodable record is named on stderr
and the others are written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ORDER_AVRO, ORDER_JSON

from rdk.schema_registry import AvroDeserializer, AvroSerializer

pytestmark = pytest.mark.kafka


def rdk_cli(*argv: str, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rdk", *argv], input=input, capture_output=True,
                          check=False, timeout=120)


ROWS = [{"id": i, "item": f"item-{i}", "price": i + 0.5, "note": None} for i in range(3)]


@pytest.mark.parametrize("kind, schema", [("avro", ORDER_AVRO), ("json", ORDER_JSON)])
def test_produce_and_consume_json_lines(kafka_cluster, new_topic, schema_registry, sr, tmp_path, kind,
                                        schema):
    topic = new_topic(kafka_cluster, 1)
    schema_file = tmp_path / "order.schema"
    schema_file.write_text(schema)
    rows = ROWS if kind == "avro" else [{k: v for k, v in r.items() if k != "note"} for r in ROWS]
    lines = "".join(json.dumps(r) + "\n" for r in rows).encode()
    brokers = kafka_cluster.bootstrap_servers
    p = rdk_cli("produce", "-b", brokers, "-t", topic, "-p", "0", "--schema-registry", schema_registry.url,
                "--value-schema", str(schema_file), "--schema-type", kind, input=lines)
    assert p.returncode == 0, p.stderr.decode()
    c = rdk_cli("consume", "-b", brokers, "-t", topic, "--offset-dir", str(tmp_path), "--count", "3",
                "--schema-registry", schema_registry.url)
    assert c.returncode == 0, c.stderr.decode()
    assert [json.loads(line) for line in c.stdout.decode().splitlines()] == rows
    if kind == "avro":                    # what the CLI wrote is Avro under the topic's subject
        assert sr.get_latest_version(f"{topic}-value").schema.schema_type == "AVRO"


def test_consume_names_an_undecodable_record_and_writes_the_others(kafka_cluster, new_topic, schema_registry,
                                                                   sr, tmp_path):
    import rdk

    topic = new_topic(kafka_cluster, 1)
    good = AvroSerializer(sr, ORDER_AVRO).serialize(topic, ROWS)
    with rdk.Producer(kafka_cluster.bootstrap_servers) as producer:
        producer.send(topic, 0, [good[0], b"\x00\x00", good[1], good[2]])
        assert producer.flush(30) == 0
    c = rdk_cli("consume", "-b", kafka_cluster.bootstrap_servers, "-t", topic, "--offset-dir", str(tmp_path),
                "--count", "3", "--format", "json", "--schema-registry", schema_registry.url)
    assert c.returncode == 0, c.stderr.decode()
    out = [json.loads(line) for line in c.stdout.decode().splitlines()]
    assert [o["value"] for o in out] == ROWS and [o["offset"] for o in out] == [0, 2, 3]
    assert f"{topic}[0]@1" in c.stderr.decode() and "truncated record" in c.stderr.decode()
    assert AvroDeserializer(sr).deserialize(topic, good) == ROWS


def test_bad_options_are_usage_errors(schema_registry, tmp_path):
    c = rdk_cli("consume", "-b", "127.0.0.1:1", "-t", "t", "--offset-dir", str(tmp_path), "--format", "raw",
                "--schema-registry", schema_registry.url)
    assert c.returncode == 2 and b"--format value or json" in c.stderr
    p = rdk_cli("produce", "-b", "127.0.0.1:1", "-t", "t", "--schema-registry", schema_registry.url,
                "--value-schema", str(tmp_path / "missing.avsc"), input=b"{}\n")
    assert p.returncode == 2 and b"missing.avsc" in p.stderr
