"""Encoding a send's payloads with the producer's ``value_serializer`` / ``key_serializer``:
one ``serialize`` call per field and send, before the batch goes to C (all or nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..message import Message

__all__ = ["PayloadEncoder"]


def _check(serializer: Any, name: str) -> Any:
    if serializer is not None and not callable(getattr(serializer, "serialize", None)):
        raise TypeError(f"{name} must be an rdk.schema_registry Serializer (AvroSerializer, JSONSerializer, "
                        f"ProtobufSerializer), got {type(serializer).__name__}")
    return serializer


class PayloadEncoder:
    """``encode(topic, payloads)``: records to framed bytes. A payload is a record, a
    ``(key, value)`` tuple or an ``rdk.Message`` whose value (and key) are records."""

    def __init__(self, value_serializer: Any, key_serializer: Any) -> None:
        self.value = _check(value_serializer, "value_serializer")
        self.key = _check(key_serializer, "key_serializer")

    def encode(self, topic: str, payloads: Sequence[Any]) -> Sequence[Any]:
        if not isinstance(payloads, (list, tuple)):
            return payloads  # the sender names the bad type
        if self.key is None and not any(isinstance(p, tuple) for p in payloads):
            return self.value.serialize(topic, payloads) if self.value is not None else payloads
        values, keys, rest = [], [], []
        for p in payloads:
            if isinstance(p, Message):
                values.append(p[0])
                keys.append(p[1])
                rest.append(p[2:4])
            elif isinstance(p, tuple) and len(p) == 2:
                keys.append(p[0])
                values.append(p[1])
                rest.append((None, None))
            else:
                values.append(p)
                keys.append(None)
                rest.append((None, None))
        if self.value is not None:
            values = self.value.serialize(topic, values)
        if self.key is not None:
            keys = self.key.serialize(topic, keys)
        return [Message(v, k, h, t) for v, k, (h, t) in zip(values, keys, rest, strict=True)]
