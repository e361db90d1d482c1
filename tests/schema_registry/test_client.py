"""SchemaRegistryClient against the real registry: register/lookup/latest/compatibility/delete,
its caches, and the named errors (409 with the subject, an unknown id, a registry that is down)."""

from __future__ import annotations

import json
import time

import pytest
from conftest import ORDER_AVRO

from rdk.schema_registry import (
    AvroSerializer,
    IncompatibleSchemaError,
    RegistryUnavailableError,
    Schema,
    SchemaNotFoundError,
    SchemaRegistryClient,
)
from rdk.testing import free_port


def test_register_lookup_latest_delete(sr, topic):
    subject = f"{topic}-value"
    schema_id = sr.register_schema(subject, ORDER_AVRO)
    assert sr.register_schema(subject, ORDER_AVRO) == schema_id
    found = sr.lookup_schema(subject, ORDER_AVRO)
    assert (found.schema_id, found.version, found.subject) == (schema_id, 1, subject)
    assert sr.get_latest_version(subject).schema_id == schema_id
    assert json.loads(sr.get_schema(schema_id).schema_str)["name"] == "Order"
    assert sr.get_versions(subject) == [1]
    assert sr.test_compatibility(subject, ORDER_AVRO)
    assert sr.delete_subject(subject) == [1]
    assert subject not in sr.get_subjects()


def test_incompatible_schema_is_409_naming_the_subject(sr, topic):
    subject = f"{topic}-value"
    sr.register_schema(subject, ORDER_AVRO)
    sr.set_compatibility("BACKWARD", subject)
    assert sr.get_compatibility(subject) == "BACKWARD"
    changed = json.loads(ORDER_AVRO)
    changed["fields"][0]["type"] = "string"          # id: long -> string breaks old readers
    assert not sr.test_compatibility(subject, json.dumps(changed))
    with pytest.raises(IncompatibleSchemaError, match=subject) as err:
        AvroSerializer(sr, json.dumps(changed)).serialize(topic, [{"id": "a", "item": "b", "price": 1.0}])
    assert err.value.status == 409 and err.value.subject == subject


def test_unknown_id_and_subject_are_not_found(sr):
    with pytest.raises(SchemaNotFoundError, match="no schema with id 999999"):
        sr.get_schema(999999)
    with pytest.raises(SchemaNotFoundError, match="no-such-subject"):
        sr.get_latest_version("no-such-subject")


def test_registry_down_is_named_within_seconds():
    url = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    client = SchemaRegistryClient(url, timeout=2)
    start = time.monotonic()
    with pytest.raises(RegistryUnavailableError, match=r"127\.0\.0\.1.*did not answer POST") as err:
        client.register_schema("s-value", ORDER_AVRO)
    assert time.monotonic() - start < 10            # a deadline against a hang, not a speed claim
    assert "Connection refused" in str(err.value) or "NewConnectionError" in str(err.value)


def test_ids_are_cached(sr, topic, monkeypatch):
    schema_id = sr.register_schema(f"{topic}-value", Schema(ORDER_AVRO))
    sr.get_schema(schema_id)
    monkeypatch.setattr(sr, "_request", lambda *a, **k: pytest.fail("asked the registry again"))
    assert sr.register_schema(f"{topic}-value", Schema(ORDER_AVRO)) == schema_id
    assert sr.get_schema(schema_id).schema_str == ORDER_AVRO


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="http:// or https://"):
        SchemaRegistryClient("localhost:8081")
    with pytest.raises(TypeError, match="basic_auth"):
        SchemaRegistryClient("http://localhost:8081", basic_auth="user:pw")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="subject_name_strategy"):
        AvroSerializer("http://localhost:8081", ORDER_AVRO, subject_name_strategy="nope")
