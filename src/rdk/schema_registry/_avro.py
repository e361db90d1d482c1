"""Avro in Confluent's wire format, with fastavro (the C-accelerated Avro library that
confluent-kafka uses too): the schema parsed once per subject or writer id, one reused buffer
per batch."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from ._client import Schema, SchemaRegistryClient
from ._serde import Deserializer, Serializer, SubjectNameStrategy

__all__ = ["AvroDeserializer", "AvroSerializer"]


def _parse(schema: Schema | str) -> Any:
    import fastavro

    text = schema.schema_str if isinstance(schema, Schema) else schema
    return fastavro.parse_schema(json.loads(text))


class AvroSerializer(Serializer):
    """Encodes lists of dicts as Avro records framed for the registry.

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        schema: The Avro schema (JSON text or a Schema); None with ``use_latest``.
        is_key: Encodes keys (subject ``<topic>-key`` under the topic strategy).
        subject_name_strategy: ``"topic"``, ``"record"``, ``"topic_record"`` or a callable
            ``(topic, record_name, is_key) -> subject``.
        auto_register: Register the schema under the subject on first use.
        use_latest: Use the subject's latest registered schema instead of ``schema``.
        normalize: Ask the registry to normalize the schema when registering.
    """

    schema_type = "AVRO"
    """``"AVRO"``."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, schema: Schema | str | None = None, *,
                 is_key: bool = False, subject_name_strategy: str | SubjectNameStrategy = "topic",
                 auto_register: bool = True, use_latest: bool = False, normalize: bool = False) -> None:
        super().__init__(schema_registry, schema, is_key=is_key, subject_name_strategy=subject_name_strategy,
                         auto_register=auto_register, use_latest=use_latest, normalize=normalize)
        self._parsed = _parse(self.schema) if self.schema is not None else None

    def _record_name(self, schema: Schema | None) -> str | None:
        parsed = self._parsed if schema is self.schema else (_parse(schema) if schema else None)
        return parsed.get("name") if isinstance(parsed, dict) else None

    def _prepare(self, schema: Schema) -> Any:
        return self._parsed if schema is self.schema and self._parsed is not None else _parse(schema)

    def _encode_all(self, header: bytes, compiled: Any, values: Sequence[Any],
                    topic: str) -> list[bytes | None]:
        from fastavro import schemaless_writer

        buf = io.BytesIO()
        out: list[bytes | None] = []
        append = out.append
        for i, value in enumerate(values):
            if value is None:
                append(None)
                continue
            buf.seek(0)
            buf.truncate()
            buf.write(header)
            try:
                schemaless_writer(buf, compiled, value)
            except Exception as e:
                raise self._fail(topic, i, value, e) from e
            append(buf.getvalue())
        return out


class AvroDeserializer(Deserializer):
    """Decodes lists of framed Avro records into dicts, with the writer's schema (fetched by
    id) or resolved to ``reader_schema`` (Avro schema evolution).

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        reader_schema: The schema to read into; None: each record's writer schema.
    """

    schema_type = "AVRO"
    """``"AVRO"``."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, reader_schema: Schema | str | None = None
                 ) -> None:
        super().__init__(schema_registry)
        self.reader_schema = _parse(reader_schema) if reader_schema is not None else None

    def _prepare(self, schema: Schema) -> Any:
        return _parse(schema)

    def _decode_one(self, compiled: Any, payload: Any) -> Any:
        from fastavro import schemaless_reader

        buf = io.BytesIO(payload)
        buf.seek(5)
        value = schemaless_reader(buf, compiled, self.reader_schema)
        if buf.tell() != len(payload):
            raise ValueError(f"{len(payload) - buf.tell()} bytes left after the record: "
                             "not this schema's data")
        return value
