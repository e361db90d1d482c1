"""rdk.schema_registry: Confluent's schema registry wire format, batch-first.

A [SchemaRegistryClient][rdk.schema_registry.SchemaRegistryClient] for the registry's REST API
(Confluent Schema Registry, Apicurio's ``/apis/ccompat/v7``, Karapace) and serializers that
encode or decode a whole list in one call: Avro (fastavro), JSON Schema (jsonschema; orjson when
installed) and Protobuf (protobuf). Each record is ``0x00``, the schema id (4 bytes big-endian),
then the encoded data; Protobuf puts its message indexes before the data. Install rdk's wheel with
its ``schema-registry`` extra: ``pip install "$(scripts/build-wheel.sh)[schema-registry]"``
(the name ``rdk`` on PyPI is another project).

Producer and Consumer take them directly (``value_serializer=``, ``value_deserializer=``...).
"""

from __future__ import annotations

from ._avro import AvroDeserializer, AvroSerializer
from ._client import (
    IncompatibleSchemaError,
    RegisteredSchema,
    RegistryUnavailableError,
    Schema,
    SchemaNotFoundError,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from ._json import JSONDeserializer, JSONSerializer
from ._protobuf import ProtobufDeserializer, ProtobufSerializer
from ._serde import MAGIC_BYTE as MAGIC_BYTE
from ._serde import (
    DeserializationError,
    Deserializer,
    SerializationError,
    Serializer,
    record_name_strategy,
    topic_name_strategy,
    topic_record_name_strategy,
)

__all__ = [
    "AvroDeserializer",
    "AvroSerializer",
    "DeserializationError",
    "Deserializer",
    "IncompatibleSchemaError",
    "JSONDeserializer",
    "JSONSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegisteredSchema",
    "RegistryUnavailableError",
    "Schema",
    "SchemaNotFoundError",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SerializationError",
    "Serializer",
    "record_name_strategy",
    "topic_name_strategy",
    "topic_record_name_strategy",
]
