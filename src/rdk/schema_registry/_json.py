"""JSON Schema in Confluent's wire format: values validated with jsonschema (a validator built
once per schema; ``validate=False`` skips it), written with orjson when installed (else the
standard json module). When jsonschema-rs is installed it answers "is this value valid" (a
Rust validator, several times faster); jsonschema still checks the schema and words the
error of a value that is not."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ._client import Schema, SchemaRegistryClient
from ._serde import Deserializer, Serializer, SubjectNameStrategy

__all__ = ["JSONDeserializer", "JSONSerializer"]

try:
    import orjson

    def _dumps(value: Any) -> bytes:
        return orjson.dumps(value)

    _loads: Callable[[Any], Any] = orjson.loads
except ImportError:  # pragma: no cover - orjson is optional
    def _dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()

    def _loads(data: Any) -> Any:
        return json.loads(bytes(data))


class _Validator:
    """jsonschema's validator, with jsonschema-rs's ``is_valid`` when that is installed."""

    def __init__(self, document: Any) -> None:
        from jsonschema.validators import validator_for

        cls = validator_for(document)
        cls.check_schema(document)
        self.slow = cls(document)
        self.is_valid = self.slow.is_valid
        try:
            import jsonschema_rs

            self.is_valid = jsonschema_rs.validator_for(document).is_valid
        except Exception:  # noqa: BLE001 - not installed, or a schema it does not take
            pass

    def iter_errors(self, value: Any) -> Any:
        return self.slow.iter_errors(value)


def _validator(schema: Schema) -> Any:
    return _Validator(json.loads(schema.schema_str))


def _best_error(validator: Any, value: Any) -> str | None:
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message}"


class JSONSerializer(Serializer):
    """Encodes lists of JSON values (dicts...) validated against a JSON Schema.

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        schema: The JSON Schema (its text or a Schema); None with ``use_latest``.
        validate: Validate each value before writing it.
        is_key: Encodes keys (subject ``<topic>-key`` under the topic strategy).
        subject_name_strategy: ``"topic"``, ``"record"``, ``"topic_record"`` or a callable
            ``(topic, record_name, is_key) -> subject``.
        auto_register: Register the schema under the subject on first use (else look it up).
        use_latest: Use the subject's latest registered schema instead of ``schema``.
        normalize: Ask the registry to normalize the schema when registering.

    The record name (for the record strategies) is the schema's ``title``.
    """

    schema_type = "JSON"
    """``"JSON"``."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, schema: Schema | str | None = None, *,
                 validate: bool = True, is_key: bool = False,
                 subject_name_strategy: str | SubjectNameStrategy = "topic", auto_register: bool = True,
                 use_latest: bool = False, normalize: bool = False) -> None:
        super().__init__(schema_registry, schema, is_key=is_key, subject_name_strategy=subject_name_strategy,
                         auto_register=auto_register, use_latest=use_latest, normalize=normalize)
        self.validate = bool(validate)
        if self.schema is not None:
            _validator(self.schema)  # a bad schema fails here, not at the first send

    def _record_name(self, schema: Schema | None) -> str | None:
        return json.loads(schema.schema_str).get("title") if schema is not None else None

    def _prepare(self, schema: Schema) -> Any:
        return _validator(schema)

    def _encode_all(self, header: bytes, compiled: Any, values: Sequence[Any],
                    topic: str) -> list[bytes | None]:
        if not self.validate:
            return self._frame_each(topic, values, header, _dumps)
        is_valid = compiled.is_valid

        def encode(value: Any) -> bytes:
            if not is_valid(value):
                raise ValueError(_best_error(compiled, value) or "not valid under the schema")
            return _dumps(value)

        return self._frame_each(topic, values, header, encode)


class JSONDeserializer(Deserializer):
    """Decodes lists of framed JSON records, validated against the writer's schema (fetched by
    id) unless ``validate=False``.

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        validate: Validate each decoded value against its schema.
    """

    schema_type = "JSON"
    """``"JSON"``."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, *, validate: bool = True) -> None:
        super().__init__(schema_registry)
        self.validate = bool(validate)

    def _prepare(self, schema: Schema) -> Any:
        return _validator(schema)

    def _decode_one(self, compiled: Any, payload: Any) -> Any:
        value = _loads(memoryview(payload)[5:])
        if self.validate and not compiled.is_valid(value):
            raise ValueError(f"does not match its schema {_best_error(compiled, value) or ''}".strip())
        return value
