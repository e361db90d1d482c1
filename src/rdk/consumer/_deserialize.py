"""Decoding a batch with the consumer's ``value_deserializer`` / ``key_deserializer``: one
``deserialize_each`` call per batch and field. Records that cannot be decoded leave
``batch.messages`` for ``batch.undecodable`` (``(raw message, DeserializationError)``), so the
others are delivered and the bad ones are neither dropped silently nor a reason to stop; the
batch's offsets are unchanged. A registry that does not answer is no fault of a record: the
batch waits (retrying, a warning each time) until it answers or the consumer stops."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ._batch import Batch

__all__ = ["BatchDecoder", "check_deserializers"]

_RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0)


class RegistryDownAtStop(BaseException):
    """The consumer stopped while its registry did not answer: the batch is given up (not
    recorded), not counted as processed."""


def _check(deserializer: Any, name: str) -> Any:
    if deserializer is not None and not callable(getattr(deserializer, "deserialize_each", None)):
        raise TypeError(f"{name} must be an rdk.schema_registry Deserializer (AvroDeserializer, "
                        f"JSONDeserializer, ProtobufDeserializer), got {type(deserializer).__name__}")
    return deserializer


def check_deserializers(value_deserializer: Any, key_deserializer: Any) -> None:
    """TypeError naming an argument that is no rdk.schema_registry deserializer."""
    _check(value_deserializer, "value_deserializer")
    _check(key_deserializer, "key_deserializer")


class BatchDecoder:
    """Replaces each message's value (and key) by its decoded form, in place."""

    def __init__(self, value_deserializer: Any, key_deserializer: Any, logger: logging.Logger | Any,
                 stopping: threading.Event) -> None:
        self.value = _check(value_deserializer, "value_deserializer")
        self.key = _check(key_deserializer, "key_deserializer")
        self.logger, self.stopping = logger, stopping

    def wrap(self, callback: Callable[[Batch], Any]) -> Callable[[Batch], Any]:
        """``callback`` called with the batch decoded; waits out a registry outage."""
        def receive(batch: Batch) -> Any:
            self.decode(batch, wait=True)
            return callback(batch)

        return receive

    def decode(self, batch: Batch, *, wait: bool = False) -> Batch:
        from ..schema_registry import RegistryUnavailableError

        attempt = 0
        while True:
            try:
                self._decode(batch)
                return batch
            except RegistryUnavailableError as e:
                if not wait:
                    raise
                if self.stopping.is_set():
                    raise RegistryDownAtStop(str(e)) from e
                delay = _RETRY_SECONDS[min(attempt, len(_RETRY_SECONDS) - 1)]
                self.logger.warning("cannot decode %r: %s; trying again in %.1f s", batch, e, delay)
                attempt += 1
                self.stopping.wait(delay)

    def _decode(self, batch: Batch) -> None:
        messages = batch.messages
        where = [f"{m[4]}[{m[5]}]@{m[6]}" for m in messages]
        bad: dict[int, Any] = {}
        values = keys = None
        if self.value is not None:
            values, failures = self.value.deserialize_each(batch.topic, [m[0] for m in messages], where=where)
            bad.update(failures)
        if self.key is not None:
            keys, failures = self.key.deserialize_each(batch.topic, [m[1] for m in messages], where=where)
            for i, e in failures:
                bad.setdefault(i, e)
        new = tuple.__new__
        cls = type(messages[0]) if messages else tuple
        decoded: list[Any] = []
        for i, m in enumerate(messages):
            if i in bad:
                continue
            decoded.append(new(cls, (values[i] if values is not None else m[0],
                                     keys[i] if keys is not None else m[1], *m[2:])))
        if bad:
            batch.undecodable = [(messages[i], bad[i]) for i in sorted(bad)]
            self.logger.warning("%d of %d messages of %r could not be decoded (in batch.undecodable): %s",
                                len(bad), len(messages), batch, bad[min(bad)])
        batch.messages = decoded
