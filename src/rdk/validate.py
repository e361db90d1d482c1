"""Checks of user input at the public boundary; each message names the bad thing.

One policy for every public entry point (Producer, Consumer, Admin, workers, CLI, Spark):

- a value of the wrong **type** raises ``TypeError``;
- a value of the right type but out of range or not one of the choices raises ``ValueError``;
- a configuration property that librdkafka (or rdk) refuses raises ``rdk.ConfigError``
  (a ``ValueError``), carrying librdkafka's text;

and every message names the argument (``stats_callback must be callable, got int``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

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
