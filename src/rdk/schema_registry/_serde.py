"""What the three formats share: Confluent's wire format (magic byte 0, the schema id as 4 bytes
big-endian, then the encoded record), subject name strategies, the registration policy
(auto-register or use the latest version), errors that name the message, and batch-first
serialize/deserialize."""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RdkError
from ._client import Schema, SchemaRegistryClient, client_arg

__all__ = [
    "MAGIC_BYTE",
    "DeserializationError",
    "Deserializer",
    "SerializationError",
    "Serializer",
    "record_name_strategy",
    "topic_name_strategy",
    "topic_record_name_strategy",
]

MAGIC_BYTE = 0
"""The first byte of every Confluent-framed record."""
HEADER = struct.Struct(">bI")

SubjectNameStrategy = Callable[[str, "str | None", bool], str]


def topic_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """``<topic>-key`` / ``<topic>-value`` (Confluent's default).

    Args:
        topic: The topic.
        record_name: The record's full name (None when the schema has none).
        is_key: Whether it is the key's subject.

    Returns:
        The subject.
    """
    return f"{topic}-{'key' if is_key else 'value'}"


def record_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """The record's full name (``com.example.Order``), whatever the topic.

    Args:
        topic: The topic.
        record_name: The record's full name (None when the schema has none).
        is_key: Whether it is the key's subject.

    Returns:
        The subject.
    """
    if not record_name:
        raise ValueError("the record name strategy needs a named schema (Avro record name, JSON title, "
                         "Protobuf message)")
    return record_name


def topic_record_name_strategy(topic: str, record_name: str | None, is_key: bool) -> str:
    """``<topic>-<record full name>``.

    Args:
        topic: The topic.
        record_name: The record's full name (None when the schema has none).
        is_key: Whether it is the key's subject.

    Returns:
        The subject.
    """
    return f"{topic}-{record_name_strategy(topic, record_name, is_key)}"


STRATEGIES: dict[str, SubjectNameStrategy] = {
    "topic": topic_name_strategy, "record": record_name_strategy, "topic_record": topic_record_name_strategy,
}


def _strategy_arg(strategy: str | SubjectNameStrategy) -> SubjectNameStrategy:
    if callable(strategy):
        return strategy
    if strategy not in STRATEGIES:
        raise ValueError(f"subject_name_strategy must be one of {sorted(STRATEGIES)} or a callable, "
                         f"got {strategy!r}")
    return STRATEGIES[strategy]


class SerializationError(RdkError):
    """A value could not be encoded: ``topic``, ``index`` (its position in the list given).

    Args:
        message: What went wrong.
        topic: The topic.
        index: The value's position in the list given.
    """

    def __init__(self, message: str, *, topic: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.topic, self.index = topic, index


class DeserializationError(RdkError):
    """A record could not be decoded: ``topic``, ``index`` (its position in the list given),
    ``schema_id`` (when the header could be read); the message names the record (topic,
    partition and offset when known).

    Args:
        message: What went wrong, naming the record.
        topic: The topic.
        index: The record's position in the list given.
        schema_id: The id in its header, when it could be read.
    """

    def __init__(self, message: str, *, topic: str | None = None, index: int | None = None,
                 schema_id: int | None = None) -> None:
        super().__init__(message)
        self.topic, self.index, self.schema_id = topic, index, schema_id


def frame_header(schema_id: int) -> bytes:
    """The 5-byte Confluent header for ``schema_id``."""
    return HEADER.pack(MAGIC_BYTE, schema_id)


def read_header(payload: Any) -> int:
    """The schema id of a Confluent-framed record; ValueError saying what is wrong."""
    if payload is None:
        raise ValueError("no value (a tombstone)")
    if len(payload) < 5:
        raise ValueError(f"truncated record: {len(payload)} bytes, shorter than the 5-byte header")
    if payload[0] != MAGIC_BYTE:
        raise ValueError(f"wrong magic byte 0x{payload[0]:02x} (expected 0x00): "
                         "not in Confluent's wire format")
    return int(HEADER.unpack_from(payload)[1])


class Serializer:
    """Encodes lists of values for one schema into Confluent's wire format (base of
    ``AvroSerializer``, ``JSONSerializer``, ``ProtobufSerializer``).

    The subject comes from the topic (and the record's name) by ``subject_name_strategy``; with
    ``auto_register`` the schema is registered there on first use, with ``use_latest`` the
    subject's latest version is used instead (and the given schema, if any, only checked to be
    valid). The id is looked up once per subject and cached.

    Args:
        schema_registry: A SchemaRegistryClient or its URL.
        schema: The schema; None with ``use_latest``.
        is_key: Encodes keys (subject ``<topic>-key`` under the topic strategy).
        subject_name_strategy: ``"topic"``, ``"record"``, ``"topic_record"`` or a callable
            ``(topic, record_name, is_key) -> subject``.
        auto_register: Register the schema under the subject on first use (else look it up).
        use_latest: Use the subject's latest registered schema instead of ``schema``.
        normalize: Ask the registry to normalize the schema when registering.
    """

    schema_type = "AVRO"
    """The registry's name of the format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``)."""

    def __init__(self, schema_registry: SchemaRegistryClient | str, schema: Schema | str | None, *,
                 is_key: bool = False, subject_name_strategy: str | SubjectNameStrategy = "topic",
                 auto_register: bool = True, use_latest: bool = False, normalize: bool = False) -> None:
        self.client = client_arg(schema_registry)
        """The registry client."""
        self.is_key = bool(is_key)
        """Whether it encodes keys."""
        self.strategy = _strategy_arg(subject_name_strategy)
        """The subject name strategy, a callable."""
        self.auto_register, self.use_latest, self.normalize = bool(auto_register), bool(use_latest), normalize
        if schema is None and not use_latest:
            raise ValueError("a serializer needs a schema, or use_latest=True")
        if isinstance(schema, str):
            schema = Schema(schema, self.schema_type)
        self.schema = schema
        """The schema given (None with ``use_latest`` and no schema)."""
        self._per_subject: dict[str, tuple[bytes, Any]] = {}
        self._lock = threading.Lock()

    # subclasses -----------------------------------------------------------------
    def _record_name(self, schema: Schema | None) -> str | None:
        raise NotImplementedError

    def _prepare(self, schema: Schema) -> Any:
        """The format's compiled form of ``schema`` (parsed Avro, a validator...)."""
        raise NotImplementedError

    def _encode_all(self, header: bytes, compiled: Any, values: Sequence[Any],
                    topic: str) -> list[bytes | None]:
        raise NotImplementedError

    # ------------------------------------------------------------------------------
    def subject(self, topic: str) -> str:
        """The subject this serializer uses for ``topic``.

        Args:
            topic: The topic.

        Returns:
            The subject.
        """
        return self.strategy(topic, self._record_name(self.schema), self.is_key)

    def _resolve(self, topic: str) -> tuple[bytes, Any]:
        subject = self.subject(topic)
        hit = self._per_subject.get(subject)
        if hit is not None:
            return hit
        with self._lock:
            if subject not in self._per_subject:
                if self.use_latest:
                    latest = self.client.get_latest_version(subject)
                    schema_id, schema = latest.schema_id, latest.schema
                elif self.auto_register:
                    assert self.schema is not None
                    schema_id = self.client.register_schema(subject, self.schema, normalize=self.normalize)
                    schema = self.schema
                else:
                    assert self.schema is not None
                    schema_id, schema = self.client.lookup_schema(subject, self.schema).schema_id, self.schema
                self._per_subject[subject] = (frame_header(schema_id), self._prepare(schema))
            return self._per_subject[subject]

    def serialize(self, topic: str, values: Sequence[Any]) -> list[bytes | None]:
        """Encode ``values`` for ``topic``: one framed ``bytes`` per value (None stays None, a
        tombstone). All or nothing: the first value that does not fit raises.

        Args:
            topic: The topic they go to (names the subject).
            values: The records (dicts for Avro and JSON, messages for Protobuf).

        Returns:
            The encoded records, in order.

        Raises:
            rdk.schema_registry.SerializationError: A value does not match the schema (naming its
                index and the field).
            rdk.schema_registry.SchemaRegistryError: The registry refused (409: incompatible
                with the subject) or did not answer.
        """
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"values must be a list or tuple, got {type(values).__name__}")
        header, compiled = self._resolve(topic)
        return self._encode_all(header, compiled, values, topic)

    __call__ = serialize

    def _frame_each(self, topic: str, values: Sequence[Any], prefix: bytes,
                    encode: Callable[[Any], bytes]) -> list[bytes | None]:
        """``prefix + encode(value)`` for each value (None stays None); the first failure raises,
        naming its index."""
        out: list[bytes | None] = []
        append = out.append
        for i, value in enumerate(values):
            if value is None:
                append(None)
                continue
            try:
                append(prefix + encode(value))
            except Exception as e:
                raise self._fail(topic, i, value, e) from e
        return out

    def _fail(self, topic: str, index: int, value: Any, e: BaseException) -> SerializationError:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return SerializationError(f"{self.schema_type} value {index} for topic {topic!r} does not match "
                                  f"the schema: {type(e).__name__}: {e} (value: {shown})",
                                  topic=topic, index=index)


class Deserializer:
    """Decodes lists of Confluent-framed records (base of the three formats' deserializers);
    the writer's schema is fetched by id from the registry once and cached.

    Args:
        schema_registry: A SchemaRegistryClient or its URL (None only where no schema is fetched).
    """

    schema_type = "AVRO"
    """The registry's name of the format (``"AVRO"``, ``"JSON"``, ``"PROTOBUF"``)."""

    def __init__(self, schema_registry: SchemaRegistryClient | str | None) -> None:
        self.client = client_arg(schema_registry) if schema_registry is not None else None
        """The registry client (None without one)."""
        self._compiled: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _prepare(self, schema: Schema) -> Any:
        raise NotImplementedError

    def _decode_one(self, compiled: Any, payload: Any) -> Any:
        raise NotImplementedError

    def _writer(self, schema_id: int) -> Any:
        compiled = self._compiled.get(schema_id)
        if compiled is None:
            if self.client is None:
                raise ValueError(f"schema id {schema_id} needs a schema registry to resolve")
            schema = self.client.get_schema(schema_id)
            if schema.schema_type != self.schema_type:
                raise ValueError(f"schema id {schema_id} is a {schema.schema_type} schema, this deserializer "
                                 f"reads {self.schema_type}")
            with self._lock:
                compiled = self._compiled.setdefault(schema_id, self._prepare(schema))
        return compiled

    def deserialize(self, topic: str, payloads: Sequence[Any], *,
                    where: Sequence[str] | None = None) -> list[Any]:
        """Decode ``payloads`` (framed records of ``topic``; None stays None).

        Args:
            topic: Their topic (for messages).
            payloads: bytes-like framed records, or None.
            where: Optional names of the records for error messages (``"orders[2]@15"``).

        Returns:
            The decoded values, in order.

        Raises:
            rdk.schema_registry.DeserializationError: The first record that cannot be decoded,
                named (wrong magic byte, truncated, unknown schema id, not matching its schema).
            rdk.schema_registry.RegistryUnavailableError: The registry did not answer.
        """
        values, errors = self.deserialize_each(topic, payloads, where=where)
        if errors:
            raise errors[0][1]
        return values

    __call__ = deserialize

    def deserialize_each(self, topic: str, payloads: Sequence[Any], *, where: Sequence[str] | None = None,
                         ) -> tuple[list[Any], list[tuple[int, DeserializationError]]]:
        """Decode what can be decoded: ``(values, failures)``, where a failed record's value is
        None and ``failures`` lists ``(index, DeserializationError)``.

        Args:
            topic: Their topic (for messages).
            payloads: bytes-like framed records, or None.
            where: Optional names of the records for error messages (``"orders[2]@15"``).

        Returns:
            The values and the failures.

        Raises:
            rdk.schema_registry.RegistryUnavailableError: The registry did not answer (nothing
                can be decoded then; not a fault of one record).
        """
        from ._client import RegistryUnavailableError, SchemaNotFoundError

        out: list[Any] = []
        failures: list[tuple[int, DeserializationError]] = []
        writer = self._writer
        decode = self._decode_one
        for i, payload in enumerate(payloads):
            if payload is None:
                out.append(None)
                continue
            schema_id = None
            try:
                schema_id = read_header(payload)
                out.append(decode(writer(schema_id), payload))
            except RegistryUnavailableError:
                raise
            except SchemaNotFoundError:
                out.append(None)
                failures.append((i, self._fail(topic, i, where, schema_id, f"unknown schema id {schema_id}")))
            except Exception as e:  # noqa: BLE001 - any decoder failure is this record's
                out.append(None)
                failures.append((i, self._fail(topic, i, where, schema_id, f"{type(e).__name__}: {e}")))
        return out, failures

    def _fail(self, topic: str, i: int, where: Sequence[str] | None, schema_id: int | None,
              why: str) -> DeserializationError:
        name = where[i] if where is not None else f"record {i} of topic {topic!r}"
        sid = f" (schema id {schema_id})" if schema_id is not None else ""
        return DeserializationError(f"cannot decode {self.schema_type} {name}{sid}: {why}",
                                    topic=topic, index=i, schema_id=schema_id)
