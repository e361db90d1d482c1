"""The state rdk.Producer shares with its parts (``_sending``, ``_transactions``,
``_lifetime``, ``_events``): the condition and what it guards, the Client, and the checks
every call makes. It imports none of the parts, which annotate it (no import circle)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import ClosedError, KafkaError
from ._accounting import Ledger
from ._balancers import Balancers
from ._config import ProducerConfig


class ProducerState:
    """What a producer's parts share: the condition and what it guards (the ledger and the
    flags), the Client, and the checks every call makes."""

    def __init__(self, cfg: ProducerConfig) -> None:
        self.stats_cb = cfg.stats_cb
        self.max_messages = cfg.max_messages
        self.on_queue_full = cfg.on_queue_full
        self.transactional_id = cfg.transactional_id
        self.cond = threading.Condition(threading.Lock())  # guards the ledger and the flags below
        self.ledger = Ledger(self.cond, cfg.dr_cb)
        self.balancers = Balancers(cfg.balancer, cfg.driver)
        self.active = 0  # send() calls inside the C enqueue
        self.closing = False
        self.fatal: KafkaError | None = None
        self.on_auth_failure: list[Callable[[KafkaError], None]] = []  # rdk.aio's pending sends
        self.on_deliveries: list[Callable[[], None]] = []  # rdk.aio's waits for room
        self.on_poll: list[Callable[[], None]] = []  # rdk.aio's flush, stop and lookups
        self.client: Any = None  # the Client, once made (its event thread may poll before)
        self.rk: Any = None

    def check_open(self) -> None:
        if self.closing:
            raise ClosedError("Producer is stopped: it cannot be used after stop()")
        self.client.ensure_open()  # a forked child: ClosedError naming the fork

    def not_on_event_thread(self, what: str) -> None:
        if self.client.on_event_thread():
            raise RuntimeError(f"Producer.{what}() cannot be called from a producer callback: "
                               "callbacks run on the thread that serves delivery reports")
