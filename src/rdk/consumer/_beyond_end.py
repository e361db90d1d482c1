"""on_offset_out_of_range for brokers that do not report a fetch beyond the log end.

Kafka answers a fetch beyond the log end with OFFSET_OUT_OF_RANGE and librdkafka applies
auto.offset.reset; Tansu answers with no data and the high watermark. So while idle, a
partition whose next offset lies beyond the high watermark of the last Fetch response
(librdkafka's cached one) is treated the same way, once this is seen on two checks in a
row. Restarting where librdkafka already reset the partition is harmless: nothing of it
was delivered since (our position did not move), librdkafka's version barrier drops what
the old fetch still brings, and "latest" restarts at the high watermark seen on the first
check, so messages that arrived in between are fetched again rather than skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from .._binding import ERROR_CODES, Client
from .._binding.partitions import OFFSET_BEGINNING, cached_high_watermark
from ..errors import KafkaError

__all__ = ["BeyondEndRule"]

_OUT_OF_RANGE = ERROR_CODES["OFFSET_OUT_OF_RANGE"]


class BeyondEndRule:
    """Checks the owned partitions' next offsets (the consumer's ``positions``) against
    librdkafka's cached high watermark.

    ``fail(err)`` is called for ``policy="error"``; ``restart((topic, partition), offset)``
    otherwise.
    """

    def __init__(self, client: Client, topic: str, partitions: Sequence[int], positions: Any,
                 policy: str, logger: logging.Logger | logging.LoggerAdapter, *,
                 fail: Callable[[KafkaError], None],
                 restart: Callable[[tuple[str, int], int], None]) -> None:
        self.client = client
        self.topic = topic
        self.partitions = list(partitions)
        self.positions = positions  # the consumer's Positions: next offset, -1 unknown
        self.policy = policy
        self.logger = logger
        self._fail = fail
        self._restart = restart
        self._reset_at: dict[int, int] = {}              # partition -> offset it was reset at
        self._beyond: dict[int, tuple[int, int]] = {}    # partition -> (offset, high) first seen

    def check(self) -> None:
        """One check (on the fetch thread, while idle)."""
        topic = self.topic
        nexts = self.positions.get([(topic, p) for p in self.partitions])
        for p in self.partitions:
            e = nexts[(topic, p)]
            seen = self._beyond.get(p)
            if seen is not None and seen[0] != e:
                del self._beyond[p]  # the position moved: messages came
                seen = None
            if e < 0 or self._reset_at.get(p) == e:
                continue
            hi = cached_high_watermark(self.client, topic, p)
            if hi is None or e <= hi:
                self._beyond.pop(p, None)
                continue
            if not self._beyond_end(p, e, hi, seen):
                return

    def _beyond_end(self, p: int, e: int, hi: int, seen: tuple[int, int] | None) -> bool:
        """Partition ``p``'s next offset ``e`` lies beyond ``hi``; False once failed."""
        text = f"next offset {e} is beyond the high watermark {hi}"
        if self.policy == "error":
            self._fail(KafkaError(_OUT_OF_RANGE, text, context=f"consume {self.topic}[{p}]"))
            return False
        if seen is None:
            self._beyond[p] = (e, hi)
            return True
        del self._beyond[p]
        self.logger.warning("consumer of %s: partition %d: %s; resetting to %s", self.topic,
                            p, text, self.policy)
        self._reset_at[p] = e
        # "latest" from the Fetch high watermark: Tansu's ListOffsets(latest) is wrong
        restart = OFFSET_BEGINNING if self.policy == "earliest" else min(seen[1], hi)
        self._restart((self.topic, p), restart)
        return True
