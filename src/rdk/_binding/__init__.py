"""The only importer of the compiled module rdk._rdkafka.

Version checks, librdkafka's error table, one ``check(err)``, configuration
building, and ``Client``: the single owner of an ``rd_kafka_t`` handle, its main
event queue (stats, errors, logs and delivery reports arrive there; a thread of
ours polls it, so librdkafka's threads never call into Python) and its topic
handles. Feature modules talk to C only through this package (its modules, one per C
area, are the only users of ffi and lib: tests/unit/test_api_surface.py checks it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, cast

from .._rdkafka import ffi, lib
from ..errors import ClosedError, ConfigError, KafkaError, install_error_table

__all__ = ["Client", "check", "features", "ffi", "lib", "librdkafka_version"]

MIN_VERSION = 0x020A0000  # 2.10.0

if lib.rd_kafka_version() < MIN_VERSION:  # pragma: no cover - depends on the build
    raise ImportError(
        f"rdk needs librdkafka >= 2.10, but loaded {ffi.string(lib.rd_kafka_version_str()).decode()}"
    )

log = logging.getLogger("rdk")

# ---- versions --------------------------------------------------------------


def librdkafka_version() -> str:
    """The linked librdkafka's version string, e.g. ``"2.15.1"``."""
    return ffi.string(lib.rd_kafka_version_str()).decode()


def built_against() -> int:
    """RD_KAFKA_VERSION of the headers the extension was compiled against."""
    return int(lib.RDK_BUILT_AGAINST)


def features() -> set[str]:
    """librdkafka's ``builtin.features`` (``ssl``, ``sasl_scram``, ``zstd``...) as a set."""
    conf = lib.rd_kafka_conf_new()
    try:
        size = ffi.new("size_t *", 1024)
        buf = ffi.new("char[]", 1024)
        if lib.rd_kafka_conf_get(conf, b"builtin.features", buf, size) != lib.RD_KAFKA_CONF_OK:
            return set()
        return set(filter(None, ffi.string(buf).decode().split(",")))
    finally:
        lib.rd_kafka_conf_destroy(conf)


# ---- errors ------------------------------------------------------------------


def _load_error_table() -> tuple[dict[int, str], dict[int, str]]:
    descs = ffi.new("struct rd_kafka_err_desc **")
    count = ffi.new("size_t *")
    lib.rd_kafka_get_err_descs(descs, count)
    names: dict[int, str] = {}
    texts: dict[int, str] = {}
    for i in range(count[0]):
        d = descs[0][i]
        if d.name == ffi.NULL:
            continue
        names[int(d.code)] = ffi.string(d.name).decode()
        texts[int(d.code)] = ffi.string(d.desc).decode() if d.desc != ffi.NULL else ""
    return names, texts


_ERR_NAMES, _ERR_TEXTS = _load_error_table()
ERROR_CODES: dict[str, int] = {name: code for code, name in _ERR_NAMES.items()}

# Errors a retry can cure (librdkafka retries these itself inside message.timeout.ms).
_RETRIABLE = {
    ERROR_CODES[name]
    for name in (
        "_TRANSPORT", "_TIMED_OUT", "_MSG_TIMED_OUT", "_ALL_BROKERS_DOWN", "_QUEUE_FULL",
        "_RESOLVE", "_WAIT_COORD", "REQUEST_TIMED_OUT", "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_FOR_PARTITION", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR", "KAFKA_STORAGE_ERROR", "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH",
        "OFFSET_NOT_AVAILABLE", "THROTTLING_QUOTA_EXCEEDED",
    )
    if name in ERROR_CODES
}


def err_name(code: int) -> str:
    return _ERR_NAMES.get(code) or ffi.string(lib.rd_kafka_err2name(code)).decode()


def err_description(code: int) -> str:
    return _ERR_TEXTS.get(code) or ffi.string(lib.rd_kafka_err2str(code)).decode()


def is_retriable(code: int) -> bool:
    return code in _RETRIABLE


# Errors that say the client's credentials or the broker's certificate were refused: a retry
# with the same configuration fails the same way, so waits that see one end at once.
AUTH_FAILURES = frozenset(
    ERROR_CODES[name] for name in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL")
    if name in ERROR_CODES
)


# What librdkafka says when security.protocol does not match the listener (rdkafka_ssl.c,
# rdkafka_broker.c): TLS spoken to a plaintext listener, plaintext to a TLS one. Retrying
# with the same configuration fails the same way: waits end at once, with this text.
PROTOCOL_HINTS = ("connecting to a PLAINTEXT broker listener?", "connecting to a SSL listener?")


def is_protocol_mismatch(text: str) -> bool:
    """Whether librdkafka's ``text`` says security.protocol does not match the listener."""
    return any(hint in text for hint in PROTOCOL_HINTS)


def is_auth_failure(error: KafkaError | int) -> bool:
    """True for an authentication or TLS-handshake failure (``_AUTHENTICATION``,
    ``SASL_AUTHENTICATION_FAILED``, ``_SSL``), or a ``_TRANSPORT`` error whose text says
    security.protocol does not match the listener."""
    if isinstance(error, KafkaError):
        return error.code in AUTH_FAILURES or (error.name == "_TRANSPORT"
                                               and is_protocol_mismatch(error.description))
    return int(error) in AUTH_FAILURES


install_error_table(lambda code: (err_name(code), err_description(code), is_retriable(code)))


def check(err: int, context: str | None = None) -> None:
    """Raise KafkaError for a non-zero librdkafka return code."""
    if err:
        raise KafkaError(int(err), context=context)


def check_error(error: Any, context: str | None = None) -> None:
    """Raise (and free) an ``rd_kafka_error_t *`` as KafkaError; nothing for NULL."""
    if error == ffi.NULL:
        return
    try:
        code = int(lib.rd_kafka_error_code(error))
        text = ffi.string(lib.rd_kafka_error_string(error)).decode(errors="replace")
    finally:
        lib.rd_kafka_error_destroy(error)
    raise KafkaError(code, text, context=context)


def last_error(context: str | None = None) -> KafkaError:
    """The calling thread's last librdkafka error (legacy API calls that return -1)."""
    return KafkaError(int(lib.rd_kafka_last_error()), context=context)


# ---- configuration -----------------------------------------------------------

_SECRET = re.compile(r"password|secret|private|\.pem$|oauthbearer\.config|jaas", re.I)


def is_secret(name: str) -> bool:
    """True for properties whose values must never reach logs, messages or reprs."""
    return bool(_SECRET.search(name))


def redact(props: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``props`` with secret values replaced by ``***``."""
    return {k: ("***" if is_secret(str(k)) else v) for k, v in props.items()}


def conf_value(name: str, value: Any) -> str:
    """A Python value as librdkafka's property text (True -> "true", 5 -> "5")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"configuration property {name!r}: {value} is not a finite number")
    if isinstance(value, (int, float, str)):
        return str(value)
    raise ConfigError(
        f"configuration property {name!r}: expected str, int, float or bool, "
        f"got {type(value).__name__}"
    )


# Properties naming a file librdkafka reads when it creates the client: a missing one is
# reported by name here, not as OpenSSL's "x509 certificate routines::system lib" later.
_FILE_PROPERTIES = frozenset((
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
    "ssl.crl.location", "ssl.engine.location", "sasl.kerberos.keytab",
))


def _check_file(name: str, text: str, what: str) -> None:
    """ConfigError naming ``name`` and the path when the file it names is missing or
    unreadable (``ssl.ca.location`` may also be a folder, or ``probe``)."""
    if name not in _FILE_PROPERTIES or not text or (name == "ssl.ca.location" and text == "probe"):
        return
    if not os.path.exists(text):
        raise ConfigError(f"{what}: {name}={text!r}: no such file")
    if not os.access(text, os.R_OK):
        raise ConfigError(f"{what}: {name}={text!r}: the file cannot be read (permissions)")


def _set_all(
    setter: Callable[..., int], conf: Any, props: Mapping[str, Any], what: str
) -> None:
    errstr = ffi.new("char[]", 512)
    for name, value in props.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{what}: property names must be non-empty str, got {name!r}")
        text = conf_value(name, value)
        _check_file(name, text, what)
        res = setter(conf, name.encode(), text.encode(), errstr, 512)
        if res != lib.RD_KAFKA_CONF_OK:
            message = ffi.string(errstr).decode(errors="replace").strip()
            if is_secret(name):
                message = message.replace(text, "***")
            raise ConfigError(f"{what}: {message}{_as_given(name, text, message)}")


_CONF_NAMED = re.compile(r'(?:property:?|for) "([^"]+)"')


def _as_given(name: str, text: str, message: str) -> str:
    """What librdkafka's refusal ``message`` leaves out of what the caller gave: the value,
    and the name when it was an alias (``linger.ms`` is reported as its canonical name
    ``queue.buffering.max.ms``); "" when the message names both."""
    named = _CONF_NAMED.findall(message)
    canonical = named[-1] if named else name
    shown = "***" if is_secret(name) else text
    if canonical == name and (f'"{text}"' in message or is_secret(name)
                              or message.startswith("No such configuration property")):
        return ""
    alias = f", an alias of {canonical!r}" if canonical != name else ""
    return f" (given: {name}={shown!r}{alias})"


def _filled(conf: Any, setter: Callable[..., int], destroy: Callable[[Any], None],
            props: Mapping[str, Any], what: str) -> Any:
    """``conf`` with every property of ``props`` set; destroyed if librdkafka refuses one."""
    try:
        _set_all(setter, conf, props, what)
    except BaseException:
        destroy(conf)
        raise
    return conf


def new_conf(props: Mapping[str, Any], what: str = "driver_options") -> Any:
    """A new rd_kafka_conf_t holding ``props`` (caller owns it; rd_kafka_new consumes it)."""
    return _filled(lib.rd_kafka_conf_new(), lib.rd_kafka_conf_set, lib.rd_kafka_conf_destroy,
                   props, what)


def new_topic_conf(props: Mapping[str, Any], what: str = "topic_options") -> Any:
    """A new rd_kafka_topic_conf_t holding ``props`` (caller owns it)."""
    return _filled(lib.rd_kafka_topic_conf_new(), lib.rd_kafka_topic_conf_set,
                   lib.rd_kafka_topic_conf_destroy, props, what)


def validate_topic_options(props: Mapping[str, Any]) -> None:
    """Raise ConfigError now if librdkafka refuses any topic property."""
    lib.rd_kafka_topic_conf_destroy(new_topic_conf(props))


def validate_options(props: Mapping[str, Any], what: str = "driver_options") -> None:
    """Raise ConfigError now (prefixed with ``what``) if librdkafka refuses any global property."""
    lib.rd_kafka_conf_destroy(new_conf(props, what))


# ---- metadata structs ----------------------------------------------------------


class PartitionMetadata:
    """One partition in [rdk.admin.TopicMetadata][]'s ``partitions``.

    Args:
        id: The partition number.
        leader: The leader's broker id (-1: none).
        replicas: The broker ids of the replicas.
        isrs: The broker ids of the in-sync replicas.
        error: The partition's metadata error, or None.

    Attributes:
        id: The partition number.
        leader: The leader's broker id (-1: none).
        replicas: The broker ids of the replicas.
        isrs: The broker ids of the in-sync replicas.
        error: The partition's metadata error ([rdk.KafkaError][]), or None.
    """

    __slots__ = ("error", "id", "isrs", "leader", "replicas")

    def __init__(self, id: int, leader: int, replicas: list[int], isrs: list[int],
                 error: KafkaError | None) -> None:
        self.id, self.leader, self.replicas, self.isrs, self.error = id, leader, replicas, isrs, error

    def __repr__(self) -> str:
        return (f"PartitionMetadata(id={self.id}, leader={self.leader}, "
                f"replicas={self.replicas}, isrs={self.isrs})")


class TopicMetadata:
    """One topic of [rdk.Admin.list_topics][].

    Args:
        name: The topic name.
        partitions: Its partitions.
        error: The topic's metadata error, or None.

    Attributes:
        name: The topic name.
        partitions: Its [rdk.admin.PartitionMetadata][], one per partition.
        error: The topic's metadata error ([rdk.KafkaError][]), or None.
    """

    __slots__ = ("error", "name", "partitions")

    def __init__(self, name: str, partitions: list[PartitionMetadata], error: KafkaError | None):
        self.name, self.partitions, self.error = name, partitions, error

    def __repr__(self) -> str:
        return f"TopicMetadata(name={self.name!r}, partitions={len(self.partitions)})"


# ---- authentication ----------------------------------------------------------------

_AUTH_CHECK_STEP = 0.5  # seconds: how soon a wait for a broker notices an auth failure
_ERR_TIMED_OUT = ERROR_CODES["_TIMED_OUT"]
_ERR_TRANSPORT = ERROR_CODES["_TRANSPORT"]


def auth_error(failure: KafkaError, bootstrap: str, what: str) -> KafkaError:
    """``failure`` (an auth/TLS error event) as the error of the call ``what`` that waited."""
    if failure.name == "_TRANSPORT":  # is_protocol_mismatch
        return KafkaError(failure.code, f"connection to broker {bootstrap or '?'} failed: "
                          f"{failure.description} (does security.protocol match the "
                          "broker's listener?)", context=what)
    kind = "TLS handshake" if failure.name == "_SSL" else "authentication"
    return KafkaError(failure.code, f"{kind} with broker {bootstrap or '?'} failed: "
                      f"{failure.description}", context=what)


def check_oauth_cb(oauth_cb: Any, props: Mapping[str, Any]) -> Callable[[str], Any] | None:
    """``oauth_cb`` checked against the properties librdkafka would use instead of it."""
    if oauth_cb is None:
        return None
    if not callable(oauth_cb):
        raise TypeError(f"oauth_cb must be callable, got {type(oauth_cb).__name__}")
    if str(props.get("sasl.oauthbearer.method", "default")).lower() == "oidc":
        raise ConfigError("oauth_cb and sasl.oauthbearer.method=oidc exclude each other: with "
                          "oidc librdkafka fetches the tokens itself")
    if str(props.get("enable.sasl.oauthbearer.unsecure.jwt", "false")).lower() in ("true", "1"):
        raise ConfigError("oauth_cb and enable.sasl.oauthbearer.unsecure.jwt=true exclude each "
                          "other: with the latter librdkafka makes the tokens itself")
    return cast(Callable[[str], Any], oauth_cb)


def _oauth_token(oauth_cb: Any, config: str) -> tuple[str, int, str, list[str]]:
    """Call ``oauth_cb(config)``; its (token, expiry epoch seconds[, principal[, extensions]])
    checked, as (token, lifetime in epoch ms, principal, [key, value, ...])."""
    result = oauth_cb(config)
    if not isinstance(result, tuple) or not 2 <= len(result) <= 4:
        raise TypeError("oauth_cb must return (token, expiry_epoch_seconds[, principal"
                        f"[, extensions]]), got {type(result).__name__}")
    token, expiry, principal, extensions = result + (None,) * (4 - len(result))
    if not isinstance(token, str) or not token:
        raise TypeError(f"oauth_cb: the token must be a non-empty str, got {type(token).__name__}")
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)) or not math.isfinite(expiry):
        raise TypeError(f"oauth_cb: the expiry must be epoch seconds (int or float), got {expiry!r}")
    if principal is None:
        principal = ""
    if not isinstance(principal, str):
        raise TypeError(f"oauth_cb: the principal must be str, got {type(principal).__name__}")
    flat: list[str] = []
    for key, value in (extensions or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"oauth_cb: extensions must be {{str: str}}, got {key!r}: {value!r}")
        flat += [key, value]
    return token, int(expiry * 1000), principal, flat


# ---- client handle ---------------------------------------------------------------

_NO_ARGUMENT = object()
_DIGITS = re.compile(r"\d+")


def _digits_out(text: str) -> str:
    """A log line with its numbers blanked: the key under which repeats are counted."""
    return _DIGITS.sub("#", text)


_SYSLOG_TO_LOGGING = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}

EVENTS_ALL = (lib.RD_KAFKA_EVENT_DR | lib.RD_KAFKA_EVENT_STATS | lib.RD_KAFKA_EVENT_ERROR
              | lib.RD_KAFKA_EVENT_LOG)


def _destroy(state: dict) -> None:
    """Free a Client's C objects exactly once, children before the handle.

    The event thread is stopped first (at interpreter exit the finalizer can run while it
    still polls), waiting ``state["join_timeout"]`` seconds (5 by default). If it is still
    inside a user callback by then, the C objects are freed by a helper thread once that
    callback returns, never under it, and this call returns on time.
    """
    stopping, thread, main_queue = state.pop("event_thread", (None, None, None))
    if thread is threading.current_thread():  # closed by one of its handlers: it ends after it
        stopping.set()
        if state.get("serving"):  # the poll that runs the handler still holds an event and
            state["free_when_served"] = True  # the delivery buffer: free once it returns
            return
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        stopping.set()
        lib.rd_kafka_queue_yield(main_queue)
        timeout = state.pop("join_timeout", 5.0)
        thread.join(timeout)
        if thread.is_alive():
            log.log(logging.WARNING if timeout >= 0.5 else logging.DEBUG,
                    "rdk: event thread %s is still in a callback; its librdkafka handle "
                    "is freed when that callback returns", thread.name)
            # at interpreter exit 3.12+ starts no thread: the handle is then left to the OS
            with contextlib.suppress(RuntimeError):
                threading.Thread(target=_destroy_after, args=(thread, state), daemon=True,
                                 name=f"{thread.name}-reaper").start()
            return
    _free(state)


def _destroy_after(thread: threading.Thread, state: dict) -> None:
    thread.join()
    _free(state)


def _free(state: dict) -> None:
    for rkt in state.pop("topics", {}).values():
        lib.rd_kafka_topic_destroy(rkt)
    for q in state.pop("queues", []):
        lib.rd_kafka_queue_destroy(q)
    deliveries = state.pop("deliveries", None)
    if deliveries is not None:
        lib.rdk_deliveries_free(deliveries)
    rk = state.pop("rk", None)
    if rk is not None:
        lib.rd_kafka_destroy(rk)
    state.clear()


class RepeatLimiter:
    """Lets the same line through once per ``interval`` seconds; counts what it held back.

    librdkafka repeats a connection failure every retry (an unreachable broker gave 83
    warnings in 6 s): one client says it once, then every ``interval`` with the count.
    """

    def __init__(self, interval: float = 10.0) -> None:
        self.interval = interval
        self._seen: dict[Any, tuple[float, int]] = {}  # key -> (last shown, held back since)

    def allow(self, key: Any) -> tuple[bool, int]:
        """(show it now?, how many of it were held back since it was last shown)."""
        now = time.monotonic()
        last, held = self._seen.get(key, (-1e18, 0))
        if now - last >= self.interval:
            self._seen[key] = (now, 0)
            if len(self._seen) > 1024:  # bounded: drop the oldest keys
                for old in sorted(self._seen, key=lambda k: self._seen[k][0])[:512]:
                    del self._seen[old]
            return True, held
        self._seen[key] = (last, held + 1)
        return False, held + 1

    def log(self, logger: Any, level: int, key: Any, fmt: str, *args: Any) -> None:
        """``logger.log(level, fmt, *args)`` if ``allow(key)``, saying how many were held."""
        show, held = self.allow(key)
        if not show:
            return
        if held:
            fmt += f" (and {held} more like it in the last {self.interval:g} s)"
        logger.log(level, fmt, *args)


def _new_handle(kind: str, props: Mapping[str, Any], topic_props: Mapping[str, Any],
                events: int) -> Any:
    """``rd_kafka_new`` of ``kind`` ("producer" or "consumer") with ``props``, ``topic_props``
    and ``events`` on the main queue; ConfigError with librdkafka's text if it refuses."""
    conf = new_conf({"log.queue": True, **props})
    if topic_props:
        # Set on the global conf, librdkafka applies them to its default topic conf on
        # top of topic-level properties given in props (message.timeout.ms, acks...);
        # replacing the default topic conf would silently drop those.
        validate_topic_options(topic_props)
        try:
            _set_all(lib.rd_kafka_conf_set, conf, topic_props, "topic_options")
        except BaseException:
            lib.rd_kafka_conf_destroy(conf)
            raise
    lib.rd_kafka_conf_set_events(conf, events)
    errstr = ffi.new("char[]", 512)
    rk_type = lib.RD_KAFKA_PRODUCER if kind == "producer" else lib.RD_KAFKA_CONSUMER
    rk = lib.rd_kafka_new(rk_type, conf, errstr, 512)
    if rk == ffi.NULL:
        lib.rd_kafka_conf_destroy(conf)
        raise ConfigError(ffi.string(errstr).decode(errors="replace"))
    return rk


def _read_metadata(md: Any) -> list[TopicMetadata]:
    """The topics of a ``struct rd_kafka_metadata`` (the caller frees it)."""
    result = []
    for i in range(md.topic_cnt):
        t = md.topics[i]
        parts = []
        for j in range(t.partition_cnt):
            p = t.partitions[j]
            parts.append(PartitionMetadata(
                int(p.id), int(p.leader),
                [int(p.replicas[k]) for k in range(p.replica_cnt)],
                [int(p.isrs[k]) for k in range(p.isr_cnt)],
                KafkaError(p.err) if p.err else None,
            ))
        parts.sort(key=lambda p: p.id)
        result.append(TopicMetadata(ffi.string(t.topic).decode(), parts,
                                    KafkaError(t.err) if t.err else None))
    return result


def _read_log(ev: Any) -> tuple[int, str, str] | None:
    """(logging level, facility, line) of a log event; None if librdkafka has none."""
    fac = ffi.new("const char **")
    text = ffi.new("const char **")
    level = ffi.new("int *")
    if lib.rd_kafka_event_log(ev, fac, text, level) != 0:
        return None
    return (_SYSLOG_TO_LOGGING.get(level[0], 10), ffi.string(fac[0]).decode(errors="replace"),
            ffi.string(text[0]).decode(errors="replace"))


def _set_token(rk: Any, oauth_cb: Any, config: str, logger: Any) -> bool:
    """Ask ``oauth_cb(sasl.oauthbearer.config)`` for a token and hand it to librdkafka (True);
    when the callback raises or returns something unusable, tell librdkafka why
    (rd_kafka_oauthbearer_set_token_failure: it reports ``_AUTHENTICATION`` and asks again
    in 10 s) and log it (False)."""
    errstr = ffi.new("char[]", 512)
    try:
        token, lifetime_ms, principal, extensions = _oauth_token(oauth_cb, config)
        keep = [ffi.new("char[]", x.encode()) for x in extensions]
        array = ffi.new("const char *[]", keep) if keep else ffi.NULL
        err = lib.rd_kafka_oauthbearer_set_token(
            rk, token.encode(), lifetime_ms, principal.encode(), array, len(keep),
            errstr, 512)
        if err:
            raise ValueError(f"librdkafka refused the token: "
                             f"{ffi.string(errstr).decode(errors='replace')}")
        return True
    except BaseException as e:  # on the event thread: reported, never raised
        # the callback's failure is the token's failure (SystemExit too: this thread
        # cannot exit the program)
        why = f"oauth_cb failed: {type(e).__name__}" + (f": {e}" if str(e) else "")
        logger.error("rdk: %s", why, exc_info=not isinstance(e, (ValueError, TypeError)))
        lib.rd_kafka_oauthbearer_set_token_failure(rk, why.encode(errors="replace"))
        return False


# Clients alive in this process: a forked child must never free or use its parent's handles.
_LIVE_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()


def _forget_parent_clients() -> None:
    for client in list(_LIVE_CLIENTS):
        client._orphan()


os.register_at_fork(after_in_child=_forget_parent_clients)


class Client:
    """Owns one rd_kafka_t: its main event queue, topic handles and event thread.

    ``handlers`` receive what arrives on the main queue, on the event thread:
    ``on_deliveries(deliveries)`` (an ``rdk_deliveries *`` already folded in C),
    ``on_stats(dict)``, ``on_error(KafkaError)``. Log lines go to ``logger``.
    ``on_poll()`` runs on the event thread after every poll of the main queue
    (``wake()`` makes the current or next poll return at once).
    Exceptions raised by handlers (``BaseException`` too: ``SystemExit`` in a background
    thread cannot exit the program) are logged and never stop the thread. Repeated librdkafka
    errors and warnings are rate-limited per client (``RepeatLimiter``).

    librdkafka handles do not survive ``fork()``: in a child process every use raises
    ClosedError at once and ``close()`` returns without touching the parent's handle.
    """

    def __init__(
        self,
        kind: str,
        props: Mapping[str, Any],
        topic_props: Mapping[str, Any] | None = None,
        *,
        logger: logging.Logger | logging.LoggerAdapter | None = None,
        on_deliveries: Callable[[Any], None] | None = None,
        on_stats: Callable[[dict], None] | None = None,
        on_error: Callable[[KafkaError], None] | None = None,
        on_poll: Callable[[], None] | None = None,
        poll_interval_ms: int = 100,
        start_thread: bool = True,
        extra_events: int = 0,
        oauth_cb: Callable[[str], Any] | None = None,
    ) -> None:
        self.logger = logger or log
        self._oauth_cb = check_oauth_cb(oauth_cb, props)
        self._protocol = str(props.get("security.protocol", "plaintext")).upper()
        self._plaintext = self._protocol in ("PLAINTEXT", "SASL_PLAINTEXT")
        self._apiversion_drops = 0  # connections dropped during ApiVersion (_protocol_mismatch)
        self._auth_failure: KafkaError | None = None
        self.bootstrap = str(props.get("bootstrap.servers") or props.get("metadata.broker.list") or "")
        self._on_deliveries = on_deliveries
        self._on_stats = on_stats
        self._on_error = on_error
        self._on_poll = on_poll
        self._poll_interval_ms = poll_interval_ms
        self._topic_props = dict(topic_props or {})
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._repeats = RepeatLimiter()
        self.closed = False
        self.pid = os.getpid()  # the process the handle belongs to

        # extra_events: e.g. RD_KAFKA_EVENT_REBALANCE, which then arrives on the consumer
        # queue (see consumer_queue) for the caller to serve
        if oauth_cb is not None:  # token refreshes arrive on the main queue: _set_token
            extra_events |= lib.RD_KAFKA_EVENT_OAUTHBEARER_TOKEN_REFRESH
        rk = _new_handle(kind, props, self._topic_props, EVENTS_ALL | extra_events)
        main_queue = lib.rd_kafka_queue_get_main(rk)
        deliveries = lib.rdk_deliveries_new(8192)
        self.rk = rk
        self.main_queue = main_queue
        self.deliveries = deliveries
        self._state: dict = {"rk": rk, "topics": {}, "queues": [main_queue], "deliveries": deliveries}
        self._finalizer = weakref.finalize(self, _destroy, self._state)
        check(lib.rd_kafka_set_log_queue(rk, main_queue), "set_log_queue")
        self._thread: threading.Thread | None = None
        if start_thread:
            self._thread = threading.Thread(
                target=self._event_loop, name=f"rdk-events-{self.name}", daemon=True
            )
            self._thread.start()
            self._state["event_thread"] = (self._stopping, self._thread, main_queue)
        _LIVE_CLIENTS.add(self)

    @property
    def auth_failure(self) -> KafkaError | None:
        """The last authentication / TLS handshake failure (or security.protocol mismatch)
        librdkafka reported, None once a broker answered after it: waits for the broker end
        at once on it."""
        return self._auth_failure

    @auth_failure.setter
    def auth_failure(self, failure: KafkaError | None) -> None:
        if failure is None:
            self._apiversion_drops = 0  # a broker answered: earlier drops were passing
        self._auth_failure = failure

    @property
    def name(self) -> str:
        return ffi.string(lib.rd_kafka_name(self.rk)).decode()

    # -- topics and queues ---------------------------------------------------
    def topic(self, name: str) -> Any:
        """The cached rd_kafka_topic_t for ``name`` (created on first use)."""
        topics = self._state["topics"]
        rkt = topics.get(name)
        if rkt is None:
            with self._lock:
                self.ensure_open()
                rkt = topics.get(name)
                if rkt is None:
                    rkt = lib.rd_kafka_topic_new(self.rk, name.encode(), ffi.NULL)
                    if rkt == ffi.NULL:
                        raise last_error(f"topic {name!r}")
                    topics[name] = rkt
        return rkt

    def new_queue(self) -> Any:
        with self._lock:
            self.ensure_open()
            q = lib.rd_kafka_queue_new(self.rk)
            self._state["queues"].insert(0, q)
            return q

    def consumer_queue(self) -> Any:
        """A group consumer's queue (rd_kafka_queue_get_consumer), freed with the client."""
        with self._lock:
            self.ensure_open()
            q = lib.rd_kafka_queue_get_consumer(self.rk)
            if q == ffi.NULL:
                raise ConfigError("this client has no consumer group (group.id is not set)")
            self._state["queues"].insert(0, q)
            return q

    def release_queue(self, q: Any) -> None:
        """Destroy a queue made by new_queue() (idempotent)."""
        with self._lock:
            queues = self._state.get("queues", [])
            if q in queues:
                queues.remove(q)
                lib.rd_kafka_queue_destroy(q)

    def ensure_open(self) -> None:
        """Raise ClosedError once close() was called, or in a process forked after creation."""
        if self.pid != os.getpid():
            raise ClosedError(self.forked_message())
        if self.closed:
            raise ClosedError("this client is closed")

    def forked_message(self) -> str:
        return (f"this client was created in process {self.pid} and this is process "
                f"{os.getpid()}: librdkafka handles do not survive fork(); create the client "
                "in the process that uses it")

    @property
    def in_child(self) -> bool:
        """True in a process forked after this client was created."""
        return self.pid != os.getpid()

    def keep_at_exit(self) -> None:
        """Never free the handle at interpreter exit: a thread is still inside a C call on
        it (it is still freed as usual once nothing refers to this client)."""
        self._finalizer.atexit = False

    def _orphan(self) -> None:
        """In a forked child: never free the parent's C objects (their threads are gone)."""
        self.closed = True
        self._finalizer.detach()

    # -- events ----------------------------------------------------------------
    def _event_loop(self) -> None:
        on_poll = self._on_poll
        while not self._stopping.is_set():
            self._state["serving"] = True  # a handler that closes the client defers the free
            self.serve_events(self._poll_interval_ms)
            self._state["serving"] = False
            if self._state.pop("free_when_served", False):  # to here
                _free(self._state)
                return
            if on_poll is not None:
                self._call0(on_poll)

    def on_event_thread(self) -> bool:
        """True when called from this client's event thread (inside one of its handlers)."""
        return self._thread is not None and threading.current_thread() is self._thread

    @property
    def event_thread(self) -> threading.Thread | None:
        """The thread that polls the main queue and runs the handlers (None if not started)."""
        return self._thread

    def wake(self) -> None:
        """Make the event thread's current (or next) wait on the main queue return now (under
        close()'s lock: the event thread may close the client meanwhile, as aio's stop does)."""
        with self._lock:
            if not self.closed:
                lib.rd_kafka_queue_yield(self.main_queue)

    def serve_events(self, timeout_ms: int) -> int:
        """Poll the main queue once (waiting up to timeout_ms); dispatch what arrived."""
        d = self.deliveries
        handled = 0
        ev = lib.rdk_poll_events(self.main_queue, timeout_ms, d)
        while True:
            if d.n_runs or d.n_failed:
                handled += d.n_runs + d.n_failed
                self._call(self._on_deliveries, d)
            if ev == ffi.NULL:
                if d.pending == ffi.NULL:
                    return handled
            else:
                handled += 1
                try:
                    self._dispatch(ev)
                finally:
                    lib.rd_kafka_event_destroy(ev)
            if self._stopping.is_set():  # close() is waiting: what is left dies with the handle
                return handled
            ev = lib.rdk_poll_events(self.main_queue, 0, d)
            if ev == ffi.NULL and not (d.n_runs or d.n_failed) and d.pending == ffi.NULL:
                return handled

    def _dispatch(self, ev: Any) -> None:
        etype = lib.rd_kafka_event_type(ev)
        if etype == lib.RD_KAFKA_EVENT_STATS:
            if self._on_stats is not None:
                text = ffi.string(lib.rd_kafka_event_stats(ev)).decode(errors="replace")
                self._call(self._on_stats, json.loads(text))
        elif etype == lib.RD_KAFKA_EVENT_ERROR:
            err = lib.rd_kafka_event_error(ev)
            text = ffi.string(lib.rd_kafka_event_error_string(ev)).decode(errors="replace")
            error = KafkaError(err, text, fatal=bool(lib.rd_kafka_event_error_is_fatal(ev)))
            if is_auth_failure(error):
                self.auth_failure = error
            if self._on_error is not None:
                self._call(self._on_error, error)
            else:
                self._repeats.log(self.logger, logging.WARNING, (err, text), "librdkafka error: %s",
                                  error)
        elif etype == lib.RD_KAFKA_EVENT_LOG:
            entry = _read_log(ev)
            if entry is not None:
                lvl, facility, line = entry
                mismatch = self._protocol_mismatch(line)
                if mismatch is not None:  # logged, maybe never raised as an error event
                    self.auth_failure = KafkaError(_ERR_TRANSPORT, mismatch)
                if lvl >= logging.WARNING:
                    self._repeats.log(self.logger, lvl, (facility, _digits_out(line)),
                                      "librdkafka %s: %s", facility, line)
                else:
                    self.logger.log(lvl, "librdkafka %s: %s", facility, line)
        elif etype == lib.RD_KAFKA_EVENT_OAUTHBEARER_TOKEN_REFRESH and self._oauth_cb is not None:
            config = lib.rd_kafka_event_config_string(ev)
            if _set_token(self.rk, self._oauth_cb, ffi.string(config).decode(errors="replace")
                          if config != ffi.NULL else "", self.logger):
                self.auth_failure = None  # new credentials: an earlier refusal says nothing now

    def _protocol_mismatch(self, line: str) -> str | None:
        """The text of a security.protocol that does not match the listener, or None.
        librdkafka says so itself for TLS spoken to a plaintext listener; a plaintext
        client that a TLS listener hangs up on during ApiVersion (twice: not one dropped
        connection) gets only "Disconnected", so rdk adds librdkafka's hint for it."""
        if is_protocol_mismatch(line):
            return line
        if (self._plaintext and "Disconnected" in line and "in state APIVERSION_QUERY" in line):
            self._apiversion_drops += 1
            if self._apiversion_drops >= 2:
                return (f"{line}: the broker hangs up before answering ApiVersion, as a TLS "
                        "listener does to a plaintext client (security.protocol="
                        f"{self._protocol}: connecting to a SSL listener?)")
        return None

    def _call0(self, fn: Callable[[], None]) -> None:
        self._call(fn, _NO_ARGUMENT)

    def _call(self, fn: Callable | None, arg: Any) -> None:
        if fn is None:
            return
        try:
            fn() if arg is _NO_ARGUMENT else fn(arg)
        except Exception:  # a user callback must never kill the event thread
            self.logger.exception("exception in callback %r", getattr(fn, "__name__", fn))
        except BaseException as e:  # SystemExit/KeyboardInterrupt here cannot stop the program
            self.logger.error("callback %r raised %s; a callback on rdk's event thread cannot "
                              "exit the program, so it was logged and ignored",
                              getattr(fn, "__name__", fn), type(e).__name__, exc_info=True)

    # -- metadata ----------------------------------------------------------------
    def metadata(self, topic: str | None = None, timeout: float = 10.0) -> list[TopicMetadata]:
        """Topic metadata: one topic (without auto-creating it) or all topics."""
        self.ensure_open()
        mdp = ffi.new("const struct rd_kafka_metadata **")
        rkt = self.topic(topic) if topic is not None else ffi.NULL
        what = f"metadata for {topic!r}" if topic else "metadata"
        deadline = time.monotonic() + timeout
        step = min(timeout, _AUTH_CHECK_STEP)
        while True:
            # short steps while no broker answers (_TRANSPORT, or _TIMED_OUT from a slow or
            # still-connecting broker), so that an authentication failure ends the wait at
            # once; any other answer ends it.
            err = lib.rd_kafka_metadata(self.rk, 0 if topic else 1, rkt, mdp, max(1, int(step * 1000)))
            left = deadline - time.monotonic()
            if err not in (_ERR_TRANSPORT, _ERR_TIMED_OUT) or left <= 0:
                break
            self.raise_auth_failure(what)
            # a slow broker's answer may need longer than a step: steps grow when one timed out
            step = min(left, _AUTH_CHECK_STEP if err == _ERR_TRANSPORT else step * 2)
        if err == _ERR_TRANSPORT:
            self.raise_auth_failure(what)
        check(err, what)
        self.auth_failure = None  # a broker answered: whatever failed before is cured
        md = mdp[0]
        try:
            return _read_metadata(md)
        finally:
            lib.rd_kafka_metadata_destroy(md)

    def raise_auth_failure(self, what: str) -> None:
        """Raise the KafkaError of the last authentication failure (naming the broker and
        librdkafka's text), if one is current."""
        failure = self.auth_failure
        if failure is not None:
            raise auth_error(failure, self.bootstrap, what)

    def partition_count(self, topic: str, timeout: float = 10.0) -> int:
        """Partitions of ``topic``; KafkaError UNKNOWN_TOPIC_OR_PART if it does not exist."""
        for t in self.metadata(topic, timeout):
            if t.name == topic:
                if t.error is not None:
                    raise KafkaError(t.error.code, context=f"topic {topic!r}")
                if not t.partitions:
                    raise KafkaError(ERROR_CODES["UNKNOWN_TOPIC_OR_PART"], context=f"topic {topic!r}")
                return len(t.partitions)
        raise KafkaError(ERROR_CODES["UNKNOWN_TOPIC_OR_PART"], context=f"topic {topic!r}")

    # -- lifetime ----------------------------------------------------------------
    def stop_events(self, timeout: float = 5.0) -> None:
        """Stop the event thread (it finishes the callback it is in)."""
        self._stopping.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            lib.rd_kafka_queue_yield(self.main_queue)
            t.join(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the event thread and free every C object. Idempotent.

        Waits at most ``timeout`` seconds for the event thread: if a user callback holds it
        longer, the C objects are freed as soon as that callback returns. In a forked child it
        returns at once and frees nothing (the handle is the parent's)."""
        if self.in_child:
            self._orphan()
            return
        with self._lock:
            if self.closed:
                return
            self.closed = True
        self._state["join_timeout"] = timeout
        self._finalizer()


def broker_ids(client: Client, timeout: float) -> set[int]:
    """The ids of the brokers a metadata answer lists (the live, unfenced ones)."""
    client.ensure_open()
    mdp = ffi.new("const struct rd_kafka_metadata **")
    check(lib.rd_kafka_metadata(client.rk, 0, ffi.NULL, mdp, int(timeout * 1000)), "metadata")
    md = mdp[0]
    try:
        return {int(md.brokers[i].id) for i in range(md.broker_cnt)}
    finally:
        lib.rd_kafka_metadata_destroy(md)
