"""rdk.schema_registry's serializers against confluent-kafka's on the same registry (Apicurio,
started here) and the same ~1 KiB records, in one process: serialize and deserialize, Avro,
JSON Schema and Protobuf, messages per second (median of --repeat runs).

rdk encodes or decodes the whole list in one call (``serialize(topic, values)``); confluent-
kafka is called once per record, as its API is. Both sides' output is checked first: Avro and
Protobuf byte-identical, JSON decoded equal.

    .venv/bin/python bench/schema_registry_bench.py --records 20000 --repeat 3 \\
        --json docs/data/schema_registry_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "schema_registry"))

AVRO = json.dumps({"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "user", "type": "string"},
    {"name": "kind", "type": "string"}, {"name": "score", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "payload", "type": "string"}]})
JSON_SCHEMA = json.dumps({"title": "Event", "type": "object",
                          "required": ["id", "user", "kind", "score", "tags", "payload"],
                          "properties": {"id": {"type": "integer"}, "user": {"type": "string"},
                                         "kind": {"type": "string"}, "score": {"type": "number"},
                                         "tags": {"type": "array", "items": {"type": "string"}},
                                         "payload": {"type": "string"}}})


def records(n: int) -> list[dict[str, Any]]:
    """~1 KiB each once encoded (the payload string carries most of it)."""
    return [{"id": i, "user": f"user-{i % 1000}", "kind": ("click", "view", "buy")[i % 3],
             "score": i * 0.25, "tags": [f"t{j}" for j in range(i % 5)],
             "payload": ("x" * 900) + str(i)} for i in range(n)]


def event_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="bench_event.proto", package="bench", syntax="proto3")
    m = fdp.message_type.add(name="Event")
    F = descriptor_pb2.FieldDescriptorProto
    for num, (name, kind, label) in enumerate([("id", F.TYPE_INT64, F.LABEL_OPTIONAL),
                                               ("user", F.TYPE_STRING, F.LABEL_OPTIONAL),
                                               ("kind", F.TYPE_STRING, F.LABEL_OPTIONAL),
                                               ("score", F.TYPE_DOUBLE, F.LABEL_OPTIONAL),
                                               ("tags", F.TYPE_STRING, F.LABEL_REPEATED),
                                               ("payload", F.TYPE_STRING, F.LABEL_OPTIONAL)], 1):
        m.field.add(name=name, number=num, type=kind, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Event"))


def best_rate(fn, n: int, repeat: int) -> float:
    rates = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        rates.append(n / (time.perf_counter() - start))
    return statistics.median(rates)


def run(url: str, n: int, repeat: int) -> dict[str, dict[str, float]]:
    from confluent_kafka.schema_registry import SchemaRegistryClient as CClient
    from confluent_kafka.schema_registry import avro as cavro
    from confluent_kafka.schema_registry import json_schema as cjson
    from confluent_kafka.schema_registry import protobuf as cproto
    from confluent_kafka.serialization import MessageField, SerializationContext

    from rdk import schema_registry as sr

    client, cclient = sr.SchemaRegistryClient(url), CClient({"url": url})
    rows = records(n)
    event = event_class()
    messages = [event(**r) for r in rows]
    results: dict[str, dict[str, float]] = {}
    formats = {
        "avro": (sr.AvroSerializer(client, AVRO), sr.AvroDeserializer(client),
                 cavro.AvroSerializer(cclient, AVRO), cavro.AvroDeserializer(cclient), rows),
        "json": (sr.JSONSerializer(client, JSON_SCHEMA), sr.JSONDeserializer(client),
                 cjson.JSONSerializer(JSON_SCHEMA, cclient),
                 cjson.JSONDeserializer(None, schema_registry_client=cclient), rows),
        "protobuf": (sr.ProtobufSerializer(client, event), sr.ProtobufDeserializer(event),
                     cproto.ProtobufSerializer(event, cclient, {"use.deprecated.format": False}),
                     cproto.ProtobufDeserializer(event, {"use.deprecated.format": False}), messages),
    }
    for name, (ser, des, cser, cdes, values) in formats.items():
        topic = f"bench-{name}-{os.getpid()}"
        ctx = SerializationContext(topic, MessageField.VALUE)
        ours = ser.serialize(topic, values)
        theirs = [cser(v, ctx) for v in values]
        size = sum(map(len, ours)) / n
        if name != "json":
            assert ours == theirs, f"{name}: bytes differ"
        assert des.deserialize(topic, theirs) == values and [cdes(b, ctx) for b in ours] == values
        results[name] = {
            "record_bytes": round(size),
            "rdk_serialize": best_rate(lambda: ser.serialize(topic, values), n, repeat),  # noqa: B023
            "confluent_serialize": best_rate(lambda: [cser(v, ctx) for v in values], n, repeat),  # noqa: B023
            "rdk_deserialize": best_rate(lambda: des.deserialize(topic, ours), n, repeat),  # noqa: B023
            "confluent_deserialize": best_rate(lambda: [cdes(b, ctx) for b in ours], n, repeat),  # noqa: B023
        }
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--registry", help="a running registry's Confluent API URL (else Apicurio is started)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.registry:
        results = run(args.registry, args.records, args.repeat)
    else:
        from rdk.testing import SchemaRegistry

        with SchemaRegistry() as registry:
            results = run(registry.url, args.records, args.repeat)
    print(f"{'format':<9} {'bytes':>6} {'path':<12} {'rdk msg/s':>12} {'confluent msg/s':>16} {'ratio':>6}")
    for name, r in results.items():
        for path in ("serialize", "deserialize"):
            ours, theirs = r[f"rdk_{path}"], r[f"confluent_{path}"]
            print(f"{name:<9} {r['record_bytes']:>6} {path:<12} {ours:>12,.0f} {theirs:>16,.0f} "
                  f"{ours / theirs:>5.2f}x")
    if args.json:
        load = os.getloadavg()
        Path(args.json).write_text(json.dumps({"records": args.records, "repeat": args.repeat,
                                               "loadavg": load, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
