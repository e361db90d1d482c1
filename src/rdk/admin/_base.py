"""The plumbing every area of rdk.Admin shares: the librdkafka handle, one admin request
and its result event, the whole request's error, close()."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from .. import _binding
from .._binding import ERROR_CODES, ffi, lib
from ..errors import KafkaError
from ..validate import check_group_id, check_wait  # noqa: F401  (rdk.admin's, as before)

_AUTH_CHECK_MS = 500  # admin waits look for an authentication failure this often

# librdkafka takes timeouts as int milliseconds (and rdk waits 2 s longer for the answer)
MAX_TIMEOUT = 2_000_000.0


def _check_timeout(value: Any, name: str = "timeout") -> float:
    """Seconds >= 0 (ValueError naming it otherwise); ``inf`` or anything beyond
    MAX_TIMEOUT (about 23 days) waits MAX_TIMEOUT, i.e. without a practical limit."""
    return check_wait(value, name, MAX_TIMEOUT)


class _TopicOp(NamedTuple):
    """One of librdkafka's topic admin requests and how to read its result."""

    name: str  # for error messages
    array_type: str  # cdata type of the request objects' array
    request: Callable[..., None]  # rd_kafka_CreateTopics / DeleteTopics / CreatePartitions
    result: Callable[[Any], Any]  # event -> *_result_t
    topics: Callable[[Any, Any], Any]  # (*_result_t, size_t *) -> rd_kafka_topic_result_t **


class _AdminBase:
    """What every area of rdk.Admin uses: the client(s) and the admin request plumbing."""

    _props: dict[str, Any]
    _oauth_cb: Callable[[str], Any] | None
    _logger: logging.Logger | logging.LoggerAdapter | None
    _client: _binding.Client
    _fetch_client: _binding.Client | None

    @property
    def _rk(self) -> Any:
        self._client.ensure_open()
        return self._client.rk

    def _topic_request(self, op: _TopicOp, objects: list, ok: set[int], timeout: float,
                       topics: list[str]) -> None:
        """Send one CreateTopics / DeleteTopics request for ``objects`` (the caller frees
        them) and raise KafkaError for the first topic whose error is not in ``ok``."""
        array = ffi.new(op.array_type, objects)
        ev = self._run_admin(lambda opts, q: op.request(self._rk, array, len(objects), opts, q),
                             timeout)
        try:
            err = lib.rd_kafka_event_error(ev)
            if err:  # the whole request failed: name the request and its topics
                text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
                raise KafkaError(err, text, context=f"{op.name} of {topics!r}")
            cnt = ffi.new("size_t *")
            topics = op.topics(op.result(ev), cnt)
            for i in range(cnt[0]):
                t = topics[i]
                terr = lib.rd_kafka_topic_result_error(t)
                if terr and terr not in ok:
                    name = ffi.string(lib.rd_kafka_topic_result_name(t)).decode()
                    msg = lib.rd_kafka_topic_result_error_string(t)
                    text = ffi.string(msg).decode(errors="replace") if msg != ffi.NULL else None
                    raise KafkaError(terr, text, context=f"topic {name!r}")
        finally:
            lib.rd_kafka_event_destroy(ev)

    @contextlib.contextmanager
    def _admin_result(self, call: Callable[[Any, Any], None], timeout: float,
                      context: str) -> Iterator[Any]:
        """The result event of an admin request (``_run_admin``), after raising the whole
        request's error; freed on leaving."""
        ev = self._run_admin(call, timeout)
        try:
            _raise_event_error(ev, context)
            yield ev
        finally:
            lib.rd_kafka_event_destroy(ev)

    @contextlib.contextmanager
    def _one_object_request(self, request: Callable[..., None], array_type: str, obj: Any,
                            destroy: Callable[[Any], None], timeout: float,
                            context: str) -> Iterator[Any]:
        """``request(rk, [obj], 1, options, queue)``: its result event (``_admin_result``);
        ``obj`` is freed on leaving, whatever happens."""
        try:
            array = ffi.new(array_type, [obj])
            with self._admin_result(lambda opts, q: request(self._rk, array, 1, opts, q),
                                    timeout, context) as ev:
                yield ev
        finally:
            destroy(obj)

    def _run_admin(self, call: Callable[[Any, Any], None], timeout: float) -> Any:
        """Make an admin request with ``call(options, queue)``; its result event (the caller
        destroys it), or KafkaError _TIMED_OUT."""
        q = lib.rd_kafka_queue_new(self._rk)
        opts = lib.rd_kafka_AdminOptions_new(self._rk, lib.RD_KAFKA_ADMIN_OP_ANY)
        try:
            errstr = ffi.new("char[]", 256)
            lib.rd_kafka_AdminOptions_set_request_timeout(opts, int(timeout * 1000), errstr, 256)
            lib.rd_kafka_AdminOptions_set_operation_timeout(opts, int(timeout * 1000), errstr, 256)
            call(opts, q)
            # short polls: an authentication failure ends the wait at once
            deadline = time.monotonic() + timeout + 2.0
            while True:
                left = deadline - time.monotonic()
                ev = lib.rd_kafka_queue_poll(q, max(0, min(_AUTH_CHECK_MS, int(left * 1000))))
                if ev != ffi.NULL:
                    if not lib.rd_kafka_event_error(ev):
                        self._client.auth_failure = None  # a broker answered
                    return ev
                self._client.raise_auth_failure("admin request")
                if left <= 0:
                    raise KafkaError(ERROR_CODES["_TIMED_OUT"], context="admin request")
        finally:
            lib.rd_kafka_AdminOptions_destroy(opts)
            lib.rd_kafka_queue_destroy(q)

    def close(self) -> None:
        """Free the handles. Idempotent."""
        if self._fetch_client is not None:
            self._fetch_client.close()
        self._client.close()


def check_mapping(value: Any, message: str) -> None:
    """TypeError ``"{message}, got {type}"`` unless ``value`` is a Mapping."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{message}, got {type(value).__name__}")


def _raise_event_error(ev: Any, context: str) -> None:
    """The whole admin request failed: its KafkaError."""
    err = lib.rd_kafka_event_error(ev)
    if err:
        text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
        raise KafkaError(err, text, context=context)
