"""Schema-registry framed Avro in ``format("rdkafka")``: the source decodes ``value`` into a
struct column of the schema's Spark type, in the Arrow path (one ``deserialize_each`` per Arrow
batch, then one ``pa.array``); the sink encodes a struct ``value`` column.

Options (read and write): ``valueFormat`` = ``"avro"`` and ``schemaRegistry.url``; optional
``schemaRegistry.subject`` (default ``<topic>-value`` of the one ``subscribe``/``topic``),
``schemaRegistry.basicAuth`` (``user:password``). The reader's type is the subject's latest
version, fixed when the query is planned: records written with other (older or newer) schema
ids are resolved to it by Avro's rules; one that cannot be (or is not framed, or names an
unknown id) fails the task with an error naming its topic, partition, offset and schema id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import ConfigError, RdkError

# the data source's internals; rdk.spark re-exports what users see
__all__: list[str] = []

OPTIONS = {"valueformat", "schemaregistry.url", "schemaregistry.subject", "schemaregistry.basicauth"}

_PRIMITIVES = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(),
}
_LOGICAL = {
    "date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"), "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"), "local-timestamp-micros": pa.timestamp("us"),
    "uuid": pa.string(),
}


def avro_to_arrow(schema: Any, named: dict[str, pa.DataType] | None = None) -> pa.DataType:
    """The Arrow type of an Avro schema (parsed JSON): record → struct, ``["null", T]`` → T
    (nullable), array → list, map → map<string, T>, enum → string, fixed → binary, logical
    types as Arrow's. Unions of several non-null types have no Spark type: ConfigError."""
    named = {} if named is None else named
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise ConfigError(f"Avro type {schema!r} is not known here (recursive or undefined types have no "
                          "Spark type)")
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        if len(rest) != 1:
            raise ConfigError(f"Avro union {json.dumps(schema)} has no Spark type (only [\"null\", T] does)")
        return avro_to_arrow(rest[0], named)
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if kind == "record":
        fields = [pa.field(f["name"], avro_to_arrow(f["type"], named),
                           nullable=isinstance(f["type"], list) and "null" in f["type"])
                  for f in schema["fields"]]
        struct = pa.struct(fields)
        named[schema["name"]] = struct
        if schema.get("namespace"):
            named[f"{schema['namespace']}.{schema['name']}"] = struct
        return struct
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary()
    if kind == "array":
        return pa.list_(avro_to_arrow(schema["items"], named))
    if kind == "map":
        return pa.map_(pa.string(), avro_to_arrow(schema["values"], named))
    return avro_to_arrow(kind, named)


@dataclass
class RegistryCodec:
    """What travels to the executors (picklable): the registry, the subject and its schema."""

    url: str
    subject: str
    schema_str: str
    schema_id: int
    basic_auth: tuple[str, str] | None = None
    _coders: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def arrow_type(self) -> pa.DataType:
        return avro_to_arrow(json.loads(self.schema_str))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_coders": {}}

    def _client(self) -> Any:
        from ..schema_registry import SchemaRegistryClient

        if "client" not in self._coders:
            self._coders["client"] = SchemaRegistryClient(self.url, basic_auth=self.basic_auth)
        return self._coders["client"]

    def decode(self, batch: pa.RecordBatch, topic: str, partition: int) -> pa.RecordBatch:
        """``batch`` with its binary ``value`` column decoded into the struct column."""
        from ..schema_registry import AvroDeserializer

        if "des" not in self._coders:
            self._coders["des"] = AvroDeserializer(self._client(), reader_schema=self.schema_str)
        i = batch.schema.get_field_index("value")
        offsets = batch.column("offset").to_pylist()
        where = [f"{topic}[{partition}]@{o}" for o in offsets]
        raw = batch.column(i).to_pylist()
        values, failures = self._coders["des"].deserialize_each(topic, raw, where=where)
        if failures:
            raise RdkError(f"rdkafka: {failures[0][1]} ({len(failures)} undecodable records in this batch; "
                           f"the query reads with subject {self.subject!r}'s schema id {self.schema_id})")
        kind = self.arrow_type
        return batch.set_column(i, pa.field("value", kind), pa.array(values, type=kind))

    def encode(self, topic: str | None, values: list[Any]) -> list[bytes | None]:
        """The struct column's rows (dicts) as framed Avro of the subject's schema."""
        from ..schema_registry import AvroSerializer, Schema

        if "ser" not in self._coders:
            self._coders["ser"] = AvroSerializer(self._client(), Schema(self.schema_str),
                                                 subject_name_strategy=lambda t, r, k: self.subject)
        return self._coders["ser"].serialize(topic or self.subject, values)


def registry_codec(options: Mapping[str, str], topic: str | None, what: str) -> RegistryCodec | None:
    """The codec the (lower-cased) options ask for, or None without ``valueFormat``; the
    subject's latest schema is fetched here, on the driver."""
    from ..schema_registry import SchemaRegistryClient, SchemaRegistryError

    fmt = options.get("valueformat")
    if fmt is None:
        if "schemaregistry.url" in options:
            raise ConfigError(f"rdkafka {what}: schemaRegistry.url needs valueFormat=avro")
        return None
    if fmt.lower() != "avro":
        raise ConfigError(f"rdkafka {what}: valueFormat must be 'avro', got {fmt!r}")
    url = options.get("schemaregistry.url")
    if not url:
        raise ConfigError(f"rdkafka {what}: valueFormat=avro needs the schemaRegistry.url option")
    subject = options.get("schemaregistry.subject")
    if subject is None:
        if topic is None or "," in topic:
            raise ConfigError(f"rdkafka {what}: with several or no fixed topic, name the schema with "
                              "schemaRegistry.subject")
        subject = f"{topic.strip()}-value"
    auth = None
    if options.get("schemaregistry.basicauth"):
        user, _, password = options["schemaregistry.basicauth"].partition(":")
        auth = (user, password)
    try:
        with SchemaRegistryClient(url, basic_auth=auth) as client:
            latest = client.get_latest_version(subject)
    except SchemaRegistryError as e:
        raise ConfigError(f"rdkafka {what}: schema of subject {subject!r}: {e}") from None
    if latest.schema.schema_type != "AVRO":
        raise ConfigError(f"rdkafka {what}: subject {subject!r} holds a {latest.schema.schema_type} schema, "
                          "valueFormat=avro reads Avro")
    codec = RegistryCodec(url, subject, latest.schema.schema_str, latest.schema_id, auth)
    codec.arrow_type  # noqa: B018 - a schema without a Spark type fails here, on the driver
    return codec
