"""rdk's exceptions: one KafkaError model, subclasses only where callers catch them apart."""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "ClosedError",
    "ConfigError",
    "KafkaError",
    "LockedError",
    "OffsetFileError",
    "QueueFullError",
    "RdkError",
    "TransactionError",
]


# Filled in by rdk._binding at import (it owns librdkafka's error table): code -> (name,
# description, retriable). errors.py never imports the binding, so there is no cycle.
def _unnamed(code: int) -> tuple[str, str, bool]:
    return f"ERR_{code}", "", False


_describe: Callable[[int], tuple[str, str, bool]] = _unnamed


def install_error_table(describe: Callable[[int], tuple[str, str, bool]]) -> None:
    """Let KafkaError name codes with librdkafka's table (called once by rdk._binding)."""
    global _describe
    _describe = describe


class RdkError(Exception):
    """Base class of every exception rdk raises on its own account."""


class KafkaError(RdkError):
    """An error reported by librdkafka or a broker.

    ``code`` is librdkafka's ``rd_kafka_resp_err_t`` value, ``name`` its name without the
    ``RD_KAFKA_RESP_ERR_`` prefix (``UNKNOWN_TOPIC_OR_PART``, ``_MSG_TIMED_OUT``...),
    ``description`` librdkafka's text (or a more specific one from the call that failed).

    Args:
        code: librdkafka's ``rd_kafka_resp_err_t`` value.
        description: The error's text. None: librdkafka's text for ``code``.
        fatal: Whether the client is unusable after this error.
        retriable: Whether the failed call may be repeated. None: librdkafka's table says.
        context: What failed (e.g. ``"start()"``); prefixes the message. None: no prefix.
    """

    def __init__(
        self,
        code: int,
        description: str | None = None,
        *,
        fatal: bool = False,
        retriable: bool | None = None,
        context: str | None = None,
    ) -> None:
        self.code = int(code)
        """librdkafka's ``rd_kafka_resp_err_t`` value."""
        name, text, can_retry = _describe(self.code)
        self.name = name
        """The code's name without ``RD_KAFKA_RESP_ERR_``, e.g. ``UNKNOWN_TOPIC_OR_PART``."""
        self.description = description or text
        """librdkafka's text, or a more specific one from the call that failed."""
        self.fatal = bool(fatal)
        """True when the client that reported it is unusable."""
        self.retriable = can_retry if retriable is None else retriable
        """True when the failed call may be repeated."""
        self.context = context
        """What failed (e.g. ``"start()"``), or None."""
        prefix = f"{context}: " if context else ""
        super().__init__(f"{prefix}{self.name}: {self.description}")

    def __reduce__(self):
        return (
            _rebuild_kafka_error,
            (type(self), self.code, self.description, self.fatal, self.retriable, self.context),
        )

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KafkaError)
            and other.code == self.code
            and other.description == self.description
        )

    def __hash__(self) -> int:
        return hash((self.code, self.description))


def _rebuild_kafka_error(cls, code, description, fatal, retriable, context):
    return cls(code, description, fatal=fatal, retriable=retriable, context=context)


class ConfigError(RdkError, ValueError):
    """A configuration value librdkafka (or rdk) refused; the message is librdkafka's text."""


class QueueFullError(RdkError):
    """send(..., on_queue_full="raise") could not enqueue everything.

    ``enqueued`` says how many of the call's messages were enqueued (a prefix is not
    guaranteed: librdkafka reports per message), ``failed_indices`` which were not.

    Args:
        message: The error message.
        enqueued: How many of the call's messages were enqueued.
        failed_indices: Positions in the call's ``payloads`` of the messages not enqueued.
    """

    def __init__(self, message: str, enqueued: int, failed_indices: list[int]) -> None:
        super().__init__(message)
        self.enqueued = enqueued
        """How many of the call's messages were enqueued."""
        self.failed_indices = failed_indices
        """Positions in the call's ``payloads`` of the messages not enqueued."""


class OffsetFileError(RdkError, ValueError):
    """An offset file that is empty, corrupt or cannot be written; the message names the file."""


class ClosedError(RdkError, RuntimeError):
    """The client was stopped or closed; it cannot be used again."""


class LockedError(RdkError):
    """Another consumer holds the offset-directory lock for the same partitions."""


class TransactionError(KafkaError):
    """A transactional producer call failed; librdkafka's classification says what to do.

    ``fatal``: the producer is unusable (e.g. fenced by a newer producer with the same
    ``transactional_id``): stop it and create a new one. ``txn_requires_abort``: the current
    transaction cannot commit; call ``abort_transaction()`` and start again. ``retriable``:
    the same call may be repeated (e.g. a commit that timed out).

    Args:
        code: librdkafka's ``rd_kafka_resp_err_t`` value.
        description: The error's text. None: librdkafka's text for ``code``.
        fatal: Whether the producer is unusable.
        retriable: Whether the call may be repeated. None: librdkafka's table says.
        txn_requires_abort: Whether the transaction must be aborted.
        context: The call that failed; prefixes the message. None: no prefix.
    """

    def __init__(self, code: int, description: str | None = None, *, fatal: bool = False,
                 retriable: bool | None = None, txn_requires_abort: bool = False,
                 context: str | None = None) -> None:
        super().__init__(code, description, fatal=fatal, retriable=retriable, context=context)
        self.txn_requires_abort = bool(txn_requires_abort)
        """True when the current transaction cannot commit: call ``abort_transaction()``."""

    def __reduce__(self):
        return (
            _rebuild_transaction_error,
            (type(self), self.code, self.description, self.fatal, self.retriable,
             self.txn_requires_abort, self.context),
        )


def _rebuild_transaction_error(cls, code, description, fatal, retriable, txn_requires_abort,
                               context):
    return cls(code, description, fatal=fatal, retriable=retriable,
               txn_requires_abort=txn_requires_abort, context=context)
