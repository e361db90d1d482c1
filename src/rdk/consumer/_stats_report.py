"""Stats reporting: librdkafka's statistics JSON -> ConsumerStats -> ``stats_callback``.

Runs on rdk's event thread for the client; a callback that raises is logged and the
consumer goes on (it cannot stop the program from there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import stats

if TYPE_CHECKING:
    from ._state import ConsumerState

__all__ = ["StatsReporter"]


class StatsReporter:
    """Builds :class:`rdk.ConsumerStats` for the consumer's assignment with the buffered
    counts and next offsets of its ``state``, keeps the last one, calls ``callback``.
    ``first_topic``: the topic whose partitions ``ConsumerStats.partitions`` shows."""

    def __init__(self, callback: Callable[[stats.ConsumerStats], Any] | None,
                 state: ConsumerState, first_topic: str | None) -> None:
        self.callback = callback
        self.state = state
        self.logger = state.logger
        self.topic = state.name
        self.first_topic = first_topic
        self.last: stats.ConsumerStats | None = None

    def report(self, rdkafka_stats: dict) -> None:
        state = self.state
        keys = state.assignment()
        info = stats.topics_stats(rdkafka_stats, keys, buffered=state.buffered(keys),
                                  next_offsets=state.positions.get(keys), shared_queue=True,
                                  first_topic=self.first_topic)
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
