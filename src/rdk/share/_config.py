"""A ShareConsumer's arguments, checked once, and the librdkafka properties they make.

Every check of ``rdk.ShareConsumer(...)``'s arguments lives here (the error names the bad
argument), and so do the handle's librdkafka properties: librdkafka, the validator of its
own properties, checks them at construction, not at ``start()``.
"""

from __future__ import annotations

import logging
from typing import Any

from .. import _binding, validate
from .._loop_thread import LoopThread, is_event_loop
from ..errors import ConfigError

__all__ = ["ShareConfig"]

log = logging.getLogger("rdk")


class ShareConfig:
    """The checked arguments of ``rdk.ShareConsumer`` (same names), plus ``loop_thread``
    (runs the awaitables ``receive_callback`` returns), ``driver_options`` (checked) and
    ``props`` (the handle's librdkafka properties)."""

    def __init__(self, broker: Any, topics: Any, receive_callback: Any, *, group_id: Any,
                 start_offset: Any, max_messages_per_callback: Any, stats_callback: Any,
                 statistics_interval_ms: Any, driver_options: Any, logger: Any, loop: Any,
                 decode: Any) -> None:
        self.broker = validate.check_broker(broker)
        self.topics = check_topics(topics)
        self.group_id = validate.check_group_id(group_id)
        self.receive_callback = validate.check_callable(receive_callback, "receive_callback")
        self.stats_callback = validate.check_callable(stats_callback, "stats_callback")
        self.start_offset = validate.check_choice(start_offset, "start_offset",
                                                  (None, "latest", "earliest"))
        self.max_messages_per_callback = validate.check_int(
            max_messages_per_callback, "max_messages_per_callback", minimum=1, maximum=1_000_000)
        self.statistics_interval_ms = validate.check_int(
            statistics_interval_ms, "statistics_interval_ms", minimum=0, maximum=86_400_000)
        self.decode = validate.check_choice(decode, "decode", (None, "utf-8"))
        self.logger: logging.Logger | logging.LoggerAdapter = validate.check_logger(logger) or log
        if loop is not None and not is_event_loop(loop):
            raise TypeError(f"loop must be an asyncio event loop, got {type(loop).__name__}")
        self.loop_thread = LoopThread(loop, name=f"rdk-share-asyncio-{group_id}")
        self.loop_thread.check_open()
        options = validate.check_options(driver_options, "driver_options")
        validate.check_bootstrap_rule(self.broker, options)
        for name in ("group.id", "share.acknowledgement.mode"):
            if name in options:
                raise ConfigError(f"driver_options: {name!r} is set by ShareConsumer "
                                  "(group_id=; acknowledgement is always explicit)")
        self.driver_options = options
        self.props = {
            "max.poll.records": self.max_messages_per_callback,
            "statistics.interval.ms": self.statistics_interval_ms if self.stats_callback else 0,
            **options,
            "bootstrap.servers": self.broker,
            "group.id": group_id,
            "share.acknowledgement.mode": "explicit",
            "log.queue": True,
        }
        _binding.validate_options(self.props)  # librdkafka refuses bad properties now

    @property
    def wants_stats(self) -> bool:
        """Whether librdkafka's statistics callback is set (a stats_callback and an interval)."""
        return self.stats_callback is not None and bool(self.statistics_interval_ms)

    def admin_options(self) -> dict[str, Any]:
        """The driver options that apply to the Admin client ``start()`` uses."""
        return {k: v for k, v in self.driver_options.items()
                if not k.startswith("share.") and k not in ("max.poll.records",)}


def check_topics(topics: Any) -> list[str]:
    """``topics`` as a non-empty list of distinct, valid topic names."""
    if isinstance(topics, str):
        return [validate.check_topic_name(topics, "topics")]
    if not isinstance(topics, (list, tuple)):
        raise TypeError(f"topics must be a str or a list of str, got {type(topics).__name__}")
    if not topics:
        raise ValueError("topics: the list of topics is empty")
    names = [validate.check_topic_name(t, f"topics[{i}]") for i, t in enumerate(topics)]
    if len(set(names)) != len(names):
        raise ValueError(f"topics: {names!r} names a topic twice")
    return names
