"""Protobuf in Confluent's wire format, with Google's protobuf runtime: after the 5-byte header,
the message's path in its .proto file as zig-zag varints (``[0]``, the first message, as one
byte 0), then the message. The file is registered as its serialized FileDescriptorProto in
base64 (as confluent-kafka does); imported files are registered first, as references."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from ._client import Schema, SchemaReference, SchemaRegistryClient
from ._serde import Deserializer, Serializer, SubjectNameStrategy

__all__ = ["ProtobufDeserializer", "ProtobufSerializer", "message_indexes"]

_WELL_KNOWN = "google/protobuf/"


def _zigzag(buf: bytearray, value: int) -> None:
    value = (value << 1) ^ (value >> 63)
    while value > 0x7F:
        buf.append((value & 0x7F) | 0x80)
        value >>= 7
    buf.append(value)


def message_indexes(descriptor: Any) -> bytes:
    """The message-index prefix of ``descriptor``'s messages (its path among the file's
    message types, nested types included)."""
    path: list[int] = []
    d = descriptor
    while d.containing_type is not None:
        path.append(list(d.containing_type.nested_types).index(d))
        d = d.containing_type
    path.append(list(d.file.message_types_by_name.values()).index(d))
    path.reverse()
    if path == [0]:
        return b"\x00"
    buf = bytearray()
    _zigzag(buf, len(path))
    for i in path:
        _zigzag(buf, i)
    return bytes(buf)


def _read_varint(payload: Any, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(payload):
            raise ValueError("truncated record: the message indexes run past its end")
        b = payload[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed message indexes")


def _file_schema(file: Any) -> str:
    return base64.standard_b64encode(file.serialized_pb).decode("ascii")


class ProtobufSerializer(Serializer):
    """Encodes lists of protobuf messages of one type.

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        message_type: The generated message class.
        is_key: Encodes keys (subject ``<topic>-key`` under the topic strategy).
        subject_name_strategy: ``"topic"``, ``"record"``, ``"topic_record"`` or a callable
            ``(topic, record_name, is_key) -> subject``.
        auto_register: Register the schema under the subject on first use (else look it up).
        use_latest: Use the subject's latest registered schema instead of ``schema``.
        normalize: Ask the registry to normalize the schema when registering.

    The record name (for the record strategies) is the message's full name.
    """

    schema_type = "PROTOBUF"
    """``"PROTOBUF"``."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, message_type: type, *,
                 is_key: bool = False, subject_name_strategy: str | SubjectNameStrategy = "topic",
                 auto_register: bool = True, use_latest: bool = False, normalize: bool = False) -> None:
        descriptor = getattr(message_type, "DESCRIPTOR", None)
        if descriptor is None or not hasattr(descriptor, "file"):
            raise TypeError(f"message_type must be a generated protobuf message class, got {message_type!r}")
        self.message_type, self.descriptor = message_type, descriptor
        self._indexes = message_indexes(descriptor)
        super().__init__(schema_registry, Schema(_file_schema(descriptor.file), "PROTOBUF"), is_key=is_key,
                         subject_name_strategy=subject_name_strategy, auto_register=auto_register,
                         use_latest=use_latest, normalize=normalize)

    def _record_name(self, schema: Schema | None) -> str | None:
        return str(self.descriptor.full_name)

    def _references(self, file: Any) -> tuple[SchemaReference, ...]:
        refs = []
        for dep in file.dependencies:
            if dep.name.startswith(_WELL_KNOWN):
                continue
            schema = Schema(_file_schema(dep), "PROTOBUF", self._references(dep))
            self.client.register_schema(dep.name, schema)
            version = self.client.lookup_schema(dep.name, schema).version
            refs.append(SchemaReference(dep.name, dep.name, version))
        return tuple(refs)

    def _resolve(self, topic: str) -> tuple[bytes, Any]:
        if self.schema is not None and not self.schema.references and self.descriptor.file.dependencies:
            refs = self._references(self.descriptor.file)
            if refs:
                self.schema = Schema(self.schema.schema_str, "PROTOBUF", refs)
        return super()._resolve(topic)

    def _prepare(self, schema: Schema) -> Any:
        return None

    def _encode_all(self, header: bytes, compiled: Any, values: Sequence[Any],
                    topic: str) -> list[bytes | None]:
        cls: Any = self.message_type
        to_bytes = cls.SerializeToString

        def encode(value: Any) -> bytes:
            if type(value) is not cls:
                raise TypeError(f"expected a {cls.__name__}, got {type(value).__name__}")
            return bytes(to_bytes(value))

        return self._frame_each(topic, values, header + self._indexes, encode)


class ProtobufDeserializer(Deserializer):
    """Decodes lists of framed protobuf records into messages of ``message_type`` (the header's
    schema id is not fetched: the generated class is the schema).

    Args:
        message_type: The generated message class.
        schema_registry: Optional; unused for decoding (kept for symmetry).
    """

    schema_type = "PROTOBUF"
    """``"PROTOBUF"``."""

    def __init__(self, message_type: type, schema_registry: SchemaRegistryClient | str | None = None) -> None:
        if getattr(message_type, "DESCRIPTOR", None) is None:
            raise TypeError(f"message_type must be a generated protobuf message class, got {message_type!r}")
        super().__init__(schema_registry)
        self.message_type = message_type

    def _writer(self, schema_id: int) -> Any:
        return self.message_type

    def _decode_one(self, compiled: Any, payload: Any) -> Any:
        if len(payload) > 5 and payload[5] == 0:  # [0]: the file's first message, one byte
            return compiled.FromString(payload[6:])
        pos = 5
        count, pos = _read_varint(payload, pos)
        for _ in range(count if count > 0 else 0):
            _, pos = _read_varint(payload, pos)
        return compiled.FromString(bytes(memoryview(payload)[pos:]))
