"""``--schema-registry`` for ``rdk produce`` and ``rdk consume``: produce reads one JSON document
per line and encodes it with the Avro or JSON schema given (or the subject's latest);
consume decodes each value by the schema its id names (Avro or JSON Schema) and writes it as
JSON. Records that cannot be decoded are reported on stderr, one line each, and skipped."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._ui import UsageError

__all__ = ["add_options", "encode_decoded", "json_values", "value_deserializer", "value_serializer"]


def add_options(p: argparse.ArgumentParser, produce: bool) -> None:
    p.add_argument("--schema-registry", metavar="URL",
                   help="schema registry (Confluent's API) for values in Confluent's wire format: "
                        + ("each input line is a JSON document, encoded with --value-schema"
                           if produce else "values are decoded by their schema id (Avro or JSON "
                                           "Schema) and written as JSON"))
    p.add_argument("--registry-auth", metavar="USER:PASSWORD", help="basic auth for --schema-registry")
    if produce:
        p.add_argument("--value-schema", metavar="FILE|SCHEMA",
                       help="the value schema (a file, or the schema's text); without it, the "
                            "subject's latest version")
        p.add_argument("--schema-type", choices=["avro", "json"], default="avro",
                       help="the kind of --value-schema (default avro)")


def _client(args: Any) -> Any:
    from ..schema_registry import SchemaRegistryClient

    auth = None
    if args.registry_auth:
        user, sep, password = args.registry_auth.partition(":")
        if not sep:
            raise UsageError("--registry-auth takes USER:PASSWORD")
        auth = (user, password)
    try:
        return SchemaRegistryClient(args.schema_registry, basic_auth=auth)
    except (TypeError, ValueError) as e:
        raise UsageError(f"--schema-registry: {e}") from None


def value_serializer(args: argparse.Namespace) -> Any:
    """The serializer of ``rdk produce --schema-registry``, or None without it."""
    if not getattr(args, "schema_registry", None):
        return None
    if args.binary:
        raise UsageError("--schema-registry reads JSON lines; it excludes --binary")
    from ..schema_registry import AvroSerializer, JSONSerializer

    schema = args.value_schema
    if schema is not None and not schema.lstrip().startswith(("{", "[", '"')):
        try:
            schema = Path(schema).read_text()
        except OSError as e:
            raise UsageError(f"--value-schema {args.value_schema}: {e.strerror}") from None
    kind = AvroSerializer if args.schema_type == "avro" else JSONSerializer
    try:
        return kind(_client(args), schema, use_latest=schema is None)
    except (ValueError, TypeError) as e:
        raise UsageError(f"--value-schema: not a valid {args.schema_type} schema: {e}") from None


def json_values(records: Iterator[Any]) -> Iterator[Any]:
    """Each line's value parsed as JSON (keys stay bytes); UsageError naming the line."""
    for n, record in enumerate(records, 1):
        key, value = record if isinstance(record, tuple) else (None, record)
        try:
            parsed = json.loads(value)
        except ValueError as e:
            raise UsageError(f"input line {n} is not JSON ({e}): {value[:60]!r}") from None
        yield (key, parsed) if isinstance(record, tuple) else parsed


class _AnyDeserializer:
    """Avro or JSON Schema, chosen per schema id by the type the registry says."""

    def __init__(self, client: Any) -> None:
        from ..schema_registry import AvroDeserializer, JSONDeserializer

        self.client = client
        self.kinds = {"AVRO": AvroDeserializer(client), "JSON": JSONDeserializer(client)}

    def deserialize_each(self, topic: str, payloads: Sequence[Any], *, where: Sequence[str] | None = None,
                         ) -> tuple[list[Any], list[tuple[int, Any]]]:
        from ..schema_registry import SchemaNotFoundError
        from ..schema_registry._serde import read_header

        groups: dict[str, list[int]] = {}
        for i, p in enumerate(payloads):
            kind = "AVRO"  # what cannot name its schema is reported by the Avro reader
            with contextlib.suppress(ValueError, SchemaNotFoundError):
                kind = self.client.get_schema(read_header(p)).schema_type
            groups.setdefault(kind if kind in self.kinds else "AVRO", []).append(i)
        values: list[Any] = [None] * len(payloads)
        failures: list[tuple[int, Any]] = []
        for kind, idx in groups.items():
            got, bad = self.kinds[kind].deserialize_each(
                topic, [payloads[i] for i in idx], where=[where[i] for i in idx] if where else None)
            for j, i in enumerate(idx):
                values[i] = got[j]
            failures.extend((idx[j], e) for j, e in bad)
        return values, sorted(failures, key=lambda f: f[0])


def value_deserializer(args: Any) -> Any:
    """The deserializer of ``rdk consume --schema-registry``, or None without it."""
    if not getattr(args, "schema_registry", None):
        return None
    if args.format == "raw":
        raise UsageError("--schema-registry writes JSON: use --format value or json")
    return _AnyDeserializer(_client(args))


def _json(value: Any) -> str:
    return json.dumps(value, default=lambda o: o.hex() if isinstance(o, bytes) else str(o))


def encode_decoded(messages: Sequence[Any], fmt: str) -> bytes:
    """Decoded messages: ``value``: one JSON value a line; ``json``: rdk's JSON lines with the
    decoded value."""
    from ._formats import encode_messages

    if fmt == "value":
        return "".join(_json(m[0]) + "\n" for m in messages).encode()
    lines = encode_messages([(None, *m[1:]) for m in messages], "json").decode().splitlines()
    return "".join(line.replace('"value": null', '"value": ' + _json(m[0]), 1) + "\n"
                   for line, m in zip(lines, messages, strict=True)).encode()
