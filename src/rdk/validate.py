"""Checks of user input at the public boundary; each message names the bad thing.

One policy for every public entry point (Producer, Consumer, Admin, workers, CLI, Spark):

- a value of the wrong **type** raises ``TypeError``;
- a value of the right type but out of range or not one of the choices raises ``ValueError``;
- a configuration property that librdkafka (or rdk) refuses raises ``rdk.ConfigError``
  (a ``ValueError``), carrying librdkafka's text;

and every message names the argument (``stats_callback must be callable, got int``).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import Any

# the checks are rdk's own, shared by every package; none of them is API
__all__: list[str] = []

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_HOSTPORT = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def check_topic_name(topic: Any, what: str = "topic") -> str:
    """Kafka's legal topic names: 1-249 of [A-Za-z0-9._-], and not '.' or '..'."""
    if not isinstance(topic, str):
        raise TypeError(f"{what} must be str, got {type(topic).__name__}")
    if not _TOPIC.match(topic) or topic in (".", ".."):
        raise ValueError(
            f"{what} {topic!r} is not a legal Kafka topic name "
            "(1-249 characters of A-Z a-z 0-9 . _ -, not '.' or '..')"
        )
    return topic


# librdkafka left-trims every string property as it sets it (rd_kafka_anyconf_set_prop() in
# rdkafka_conf.c: ``while (isspace((int)*value)) value++``, the C locale's white space), so a
# group.id " g" joins group "g"; and a C string ends at the first NUL.
_C_SPACE = " \t\n\v\f\r"


def check_group_id(group_id: Any, what: str = "group_id") -> str:
    """A group id that librdkafka passes to the broker unchanged: a non-empty str that does
    not start with white space (librdkafka strips it: the consumer would join another group
    than the one Admin and rdk set up) and holds no NUL character."""
    if not isinstance(group_id, str):
        raise TypeError(f"{what} must be str, got {type(group_id).__name__}")
    if not group_id:
        raise ValueError(f"{what} must not be empty")
    if group_id[0] in _C_SPACE:
        raise ValueError(
            f"{what} {group_id!r} starts with white space, which librdkafka strips from "
            f"group.id (its consumer would join {group_id.lstrip(_C_SPACE)!r}, not the group "
            "Admin calls name): drop the leading white space")
    if "\0" in group_id:
        raise ValueError(f"{what} {group_id!r} contains a NUL character, where librdkafka's "
                         "C string would end")
    return group_id


def check_broker(broker: Any, what: str = "broker") -> str:
    """A comma-separated list of host:port (an optional scheme:// prefix is allowed)."""
    if not isinstance(broker, str):
        raise TypeError(f"{what} must be a str like 'host:9092,host2:9092', got {type(broker).__name__}")
    entries = [e.strip() for e in broker.split(",")]
    if not broker.strip() or any(not e for e in entries):
        raise ValueError(f"{what} {broker!r}: expected a comma-separated list of host:port")
    for e in entries:
        m = _HOSTPORT.match(e)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise ValueError(f"{what} {broker!r}: {e!r} is not host:port with a port in 1-65535")
    return broker


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (not a bool) within [minimum, maximum]."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_number(value: Any, name: str, *, minimum: float | None = None) -> float:
    """A finite int or float (not a bool), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_timeout(value: Any, name: str = "timeout") -> float:
    """A number of seconds >= 0 (inf allowed where a caller waits without limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if value != value or value < 0:
        raise ValueError(f"{name} must be >= 0 seconds, got {value}")
    return float(value)


def check_wait(value: Any, name: str, maximum: float) -> float:
    """A timeout in seconds (>= 0, not nan) for a call that can wait at most ``maximum``:
    ``inf`` or any longer value means "without a practical limit", i.e. ``maximum``."""
    return min(check_timeout(value, name), maximum)


def check_callable(value: Any, name: str, *, required: bool = False) -> Any:
    """A callable, or None unless ``required``."""
    if value is None:
        if required:
            raise TypeError(f"{name} is required")
        return None
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_options(value: Any, name: str) -> dict:
    """A mapping of librdkafka properties (None: empty), copied into a dict."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of librdkafka properties, got {type(value).__name__}")
    return dict(value)


def check_choice(value: Any, name: str, choices: tuple) -> Any:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


_BOOTSTRAP_PROPERTIES = ("bootstrap.servers", "metadata.broker.list")


def check_bootstrap_rule(broker: str, driver_options: Mapping[str, Any]) -> None:
    """One rule for every client: the ``broker`` argument names the cluster.

    ``driver_options`` may repeat it under ``bootstrap.servers`` (or its alias
    ``metadata.broker.list``) only with the same value; a different one raises ConfigError
    naming both, instead of one of them being silently ignored.
    """
    from .errors import ConfigError

    for name in _BOOTSTRAP_PROPERTIES:
        if name in driver_options and str(driver_options[name]) != broker:
            raise ConfigError(
                f"driver_options[{name!r}]={driver_options[name]!r} disagrees with broker="
                f"{broker!r}: the broker argument names the cluster; drop {name!r} from "
                "driver_options or give the same value")


# -- ^regex topic subscriptions ---------------------------------------------------------------
#
# librdkafka matches a "^regex" subscription with rd_regex_comp() (src/rdregex.c). Our build
# has HAVE_REGEX, so that is libc's regcomp(pattern, REG_EXTENDED | REG_NOSUB): POSIX
# extended regex with the GNU extensions, not Python's ``re``. The pattern is compiled here
# with the very same call, in the same process (same libc, same locale), and the Python
# habits that POSIX reads differently without an error are refused as well.

_REG_EXTENDED = 1
_REG_NOSUB = 8
# GNU ERE escapes with the meaning Python gives them; \1-\9 are back-references in both.
_GNU_ESCAPES = frozenset("wWsSbB123456789")
_ESCAPE_ADVICE = {
    "d": "use [0-9]",
    "D": "use [^0-9]",
    "A": "use ^",
    "Z": "use $",
    "z": "use $",
}
_libc_regex: Any = None


def _libc() -> Any:
    """libc's regcomp/regerror/regfree (those librdkafka links), or False where absent."""
    global _libc_regex
    if _libc_regex is None:
        import ctypes

        try:
            libc = ctypes.CDLL(None)
            funcs = (libc.regcomp, libc.regerror, libc.regfree)
        except (OSError, AttributeError):  # not a POSIX libc: librdkafka uses its own regexp.c
            _libc_regex = False
        else:
            funcs[0].argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
            funcs[0].restype = ctypes.c_int
            funcs[1].argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
            funcs[1].restype = ctypes.c_size_t
            funcs[2].argtypes = [ctypes.c_void_p]
            funcs[2].restype = None
            _libc_regex = funcs
    return _libc_regex


def _posix_compile_error(pattern: str) -> str | None:
    """regerror()'s text if libc's regcomp(REG_EXTENDED | REG_NOSUB) refuses ``pattern``."""
    funcs = _libc()
    if not funcs:
        return None
    import ctypes

    regcomp, regerror, regfree = funcs
    regex_t = (ctypes.c_uint64 * 64)()  # 512 bytes, aligned; glibc's regex_t is 64
    r = regcomp(regex_t, pattern.encode(), _REG_EXTENDED | _REG_NOSUB)
    if r == 0:
        regfree(regex_t)
        return None
    text = ctypes.create_string_buffer(256)
    regerror(r, regex_t, text, len(text))
    return text.value.decode(errors="replace") or f"regcomp error {r}"


def _python_only(pattern: str) -> str | None:
    """Why ``pattern`` means something else to POSIX ERE than to Python, or None."""
    i, n = 0, len(pattern)
    bracket = -1  # index of the '[' that opened the bracket expression we are in
    interval = False  # inside {m,n}
    while i < n:
        c = pattern[i]
        if bracket >= 0:
            if c == "\\":
                return (f"a backslash inside [...] is a literal backslash in POSIX regex, not an "
                        f"escape ({pattern[bracket:i + 2]!r}); write the characters alone, "
                        "e.g. [0-9._-], with ] first and - last")
            if c == "[" and i + 1 < n and pattern[i + 1] in ":.=":  # [:digit:] [.x.] [=x=]
                end = pattern.find(pattern[i + 1] + "]", i + 2)
                i = n if end < 0 else end + 2
                continue
            if c == "]" and i > bracket + 1 and not (i == bracket + 2 and pattern[bracket + 1] == "^"):
                bracket = -1
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e.isascii() and e.isalnum() and e not in _GNU_ESCAPES:
                advice = _ESCAPE_ADVICE.get(e, "write the character itself or a [...] class")
                return (f"\\{e} is not supported by librdkafka's POSIX extended regex (it matches "
                        f"a literal {e!r}); {advice}")
            i += 2
            continue
        if c == "[":
            bracket = i
        elif c == "{":
            interval = True
        elif c == "(" and pattern.startswith("(?", i):
            return ("(?...) groups (look-around, non-capturing, named, inline flags) are not "
                    "supported by librdkafka's POSIX extended regex")
        elif (c in "*+?" or (c == "}" and interval)) and i + 1 < n and pattern[i + 1] in "?+":
            q = pattern[i] + pattern[i + 1]
            return (f"{q!r}: lazy and possessive quantifiers are not supported by librdkafka's "
                    f"POSIX extended regex (it reads {q!r} as two quantifiers in a row); "
                    f"drop the trailing {pattern[i + 1]!r}")
        if c == "}":
            interval = False
        i += 1
    return None


def check_topic_pattern(pattern: Any, what: str = "topic") -> str:
    """A ``^regex`` topic subscription in the dialect librdkafka matches it with.

    That is POSIX extended regex as libc's ``regcomp(REG_EXTENDED | REG_NOSUB)`` compiles it
    (GNU extensions ``\\w \\W \\s \\S \\b \\B`` and back-references included), not Python's
    ``re``: ``\\d`` is a literal ``d`` there and ``(?!...)`` does not compile. Raises
    ValueError naming the pattern and the reason for what librdkafka could not compile and
    for the Python-only forms it would silently read otherwise.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"{what} must be a str, got {type(pattern).__name__}")
    if not pattern.startswith("^"):
        raise ValueError(f"{what} pattern {pattern!r}: a topic pattern starts with '^'")
    if "\0" in pattern:
        raise ValueError(f"{what} pattern {pattern!r}: contains a NUL character")
    reason = _python_only(pattern)
    if reason is None:
        error = _posix_compile_error(pattern)
        if error is not None:
            reason = f"not a valid regular expression in librdkafka's POSIX extended dialect ({error})"
    if reason is not None:
        raise ValueError(f"{what} pattern {pattern!r}: {reason}")
    return pattern


def check_logger(logger: Any) -> logging.Logger | logging.LoggerAdapter | None:
    """``logger`` itself (None allowed); TypeError naming it when it is not a logger."""
    if logger is not None and not isinstance(logger, (logging.Logger, logging.LoggerAdapter)):
        raise TypeError(f"logger must be a logging.Logger, got {type(logger).__name__}")
    return logger
