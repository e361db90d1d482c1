"""rdk.Producer's constructor arguments, checked, and the librdkafka properties they make;
the constants and the timeout rule the producer's modules share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _binding
from .._binding.produce import MAX_TIMEOUT, PARTITION_UA, PURGE_ALL, timeout_seconds  # noqa: F401 (the producer's modules take them from here)
from ..errors import ConfigError
from ..validate import (
    check_bootstrap_rule,
    check_broker,
    check_callable,
    check_choice,
    check_int,
    check_number,
    check_options,
)
from ._balancers import BALANCERS, topic_properties

QUEUE_FULL_POLICIES = ("drop", "block", "raise")

UA = PARTITION_UA
AUTH_PROBE = 0.5  # seconds: a drain notices an authentication failure this soon
INT32_MAX = 0x7FFFFFFF
ERR_STATE = _binding.ERROR_CODES["_STATE"]
ERR_NOT_CONFIGURED = _binding.ERROR_CODES["_NOT_CONFIGURED"]


def _check_transactional_id(value: Any, driver: Mapping[str, Any]) -> str | None:
    """``transactional_id``, or ``driver_options["transactional.id"]``; never two different."""
    if value is not None:
        if not isinstance(value, str):
            raise TypeError(f"transactional_id must be str or None, got {type(value).__name__}")
        if not value:
            raise ValueError("transactional_id must be a non-empty str")
    given = driver.get("transactional.id")
    if value is not None and given is not None and str(given) != value:
        raise ConfigError(f"driver_options['transactional.id']={given!r} disagrees with "
                          f"transactional_id={value!r}: give it once")
    if value is None and given is not None and str(given):
        return str(given)
    return value


@dataclass
class ProducerConfig:
    """What ``Producer(...)``'s arguments come to, every one checked (see rdk.Producer)."""

    stats_cb: Callable[..., Any] | None
    dr_cb: Callable[..., Any] | None
    transactional_id: str | None
    balancer: str
    on_queue_full: str
    driver: dict[str, Any]  # driver_options, checked (with transactional.id)
    props: dict[str, Any]  # the librdkafka global properties
    topic_props: dict[str, Any]  # the librdkafka topic properties
    max_messages: int  # effective queue.buffering.max.messages (driver_options win)

    @classmethod
    def check(cls, broker: Any, stats_callback: Any, delivery_report_callback: Any,
              statistics_interval_ms: Any, queue_buffering_max_messages: Any,
              queue_buffering_max_ms: Any, driver_options: Any, topic_options: Any,
              balancer: Any, on_queue_full: Any, transactional_id: Any) -> ProducerConfig:
        """Check ``Producer(...)``'s arguments (in its parameters' order) in the order the
        constructor always has."""
        check_broker(broker)
        stats_cb = check_callable(stats_callback, "stats_callback")
        dr_cb = check_callable(delivery_report_callback, "delivery_report_callback")
        check_int(statistics_interval_ms, "statistics_interval_ms", maximum=INT32_MAX)
        check_int(queue_buffering_max_messages, "queue_buffering_max_messages", maximum=INT32_MAX)
        check_number(queue_buffering_max_ms, "queue_buffering_max_ms")
        for kwname, prop, value in (
            ("statistics_interval_ms", "statistics.interval.ms", statistics_interval_ms),
            ("queue_buffering_max_messages", "queue.buffering.max.messages", queue_buffering_max_messages),
            ("queue_buffering_max_ms", "queue.buffering.max.ms", queue_buffering_max_ms),
        ):
            _binding.validate_options({prop: value}, kwname)  # librdkafka's range checks and text
        driver = check_options(driver_options, "driver_options")
        topic = check_options(topic_options, "topic_options")
        check_bootstrap_rule(broker, driver)
        txn_id = _check_transactional_id(transactional_id, driver)
        if transactional_id is not None:
            driver["transactional.id"] = transactional_id
        balancer = check_choice(balancer, "balancer", BALANCERS)
        on_queue_full = check_choice(on_queue_full, "on_queue_full", QUEUE_FULL_POLICIES)
        if str(driver.get("delivery.report.only.error", "false")).lower() in ("true", "1"):
            raise ConfigError("driver_options: delivery.report.only.error would break rdk's delivery "
                              "accounting; delivery_report_callback already reports failures only")
        props: dict[str, Any] = {
            "bootstrap.servers": broker,
            "statistics.interval.ms": statistics_interval_ms if stats_callback else 0,
            "queue.buffering.max.messages": queue_buffering_max_messages,
            "queue.buffering.max.ms": queue_buffering_max_ms,
            "allow.auto.create.topics": False,
            **driver,
        }
        _binding.validate_options(driver, "driver_options")
        topic_props = topic_properties(balancer, topic)
        _binding.validate_topic_options(topic_props)
        max_messages = int(driver.get("queue.buffering.max.messages", queue_buffering_max_messages))
        return cls(stats_cb, dr_cb, txn_id, balancer, on_queue_full, driver, props, topic_props,
                   max_messages)
