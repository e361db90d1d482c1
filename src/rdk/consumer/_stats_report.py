"""Stats reporting: librdkafka's statistics JSON -> ConsumerStats -> ``stats_callback``.

Runs on rdk's event thread for the client; a callback that raises is logged and the
consumer goes on (it cannot stop the program from there).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import stats
from ._pipeline import FetchPipeline
from ._progress import Key

__all__ = ["StatsReporter"]


class StatsReporter:
    """Builds :class:`rdk.ConsumerStats` for the assigned ``keys()`` with the fetch
    ``pipeline()``'s buffered counts and positions, keeps the last one, calls ``callback``."""

    def __init__(self, callback: Callable[[stats.ConsumerStats], Any] | None,
                 logger: logging.Logger | logging.LoggerAdapter, topic: str,
                 first_topic: str | None, keys: Callable[[], list[Key]],
                 pipeline: Callable[[], FetchPipeline | None]) -> None:
        self.callback = callback
        self.logger = logger
        self.topic = topic
        self.first_topic = first_topic
        self.keys = keys
        self.pipeline = pipeline
        self.last: stats.ConsumerStats | None = None

    def report(self, rdkafka_stats: dict) -> None:
        pipeline, keys = self.pipeline(), self.keys()
        info = stats.topics_stats(
            rdkafka_stats, keys,
            buffered=pipeline.buffered_keys(keys) if pipeline is not None else None,
            next_offsets=pipeline.next_offsets(keys) if pipeline is not None else None,
            shared_queue=True, first_topic=self.first_topic)
        self.last = info
        if self.callback is None:
            return
        try:
            self.callback(info)
        except Exception:
            self.logger.exception("consumer of %s: stats_callback raised", self.topic)
        except BaseException as e:  # it runs on the client's event thread
            self.logger.error("consumer of %s: stats_callback raised %s; it runs on rdk's event "
                              "thread, so it cannot stop the program: logged, the consumer goes on",
                              self.topic, type(e).__name__, exc_info=True)
