"""The state rdk.Producer shares with its collaborators (``_sending``, ``_transactions``,
``_lifetime``, ``_events``): the condition and what it guards, the Client, the checks every
call makes, and the close at interpreter exit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .. import _binding, _exit
from ..errors import ClosedError, KafkaError
from ._accounting import Ledger
from ._balancers import Balancers
from ._config import ProducerConfig, timeout_seconds
from ._events import EventHandlers
from ._lifetime import Closer
from ._sending import Sender
from ._transactions import Transactions

log = logging.getLogger("rdk")


class ProducerCore:
    """rdk.Producer's state and the private checks its calls share (Producer is the API)."""

    transactional_id: str | None
    balancer: str
    on_queue_full: str

    def _start(self, cfg: ProducerConfig, oauth_cb: Callable[[str], Any] | None) -> None:
        """The state, the collaborators and the Client of a producer made from ``cfg``."""
        self._stats_cb = cfg.stats_cb
        self._max_messages = cfg.max_messages
        self._cond = threading.Condition(threading.Lock())  # guards the ledger and the flags below
        self._ledger = Ledger(self._cond, cfg.dr_cb)
        self._balancers = Balancers(cfg.balancer, cfg.driver)
        self._active = 0  # send() calls inside the C enqueue
        self._closing = False
        self._fatal: KafkaError | None = None
        self._sender = Sender(self)
        self._txn = Transactions(self)
        self._closer = Closer(self)
        events = EventHandlers(self)
        self._client = _binding.Client(
            "producer", cfg.props, cfg.topic_props,
            on_deliveries=events._on_deliveries, on_stats=events._on_stats,
            on_error=events._on_error, on_poll=events._on_poll, oauth_cb=oauth_cb,
        )
        self._rk = self._client.rk
        _exit.register(self, _exit.PRODUCERS)

    def _close_at_exit(self, timeout: float) -> None:
        """The interpreter exits with this producer open: ``stop(timeout)``, and say what was
        not delivered (see rdk._exit)."""
        if self._closing:
            return
        result = self._closer.stop(timeout_seconds(timeout))
        if result:
            log.warning("rdk.Producer at interpreter exit: %d message(s) not delivered (%d still "
                        "queued at the %.1f s exit deadline, %d failed); call flush() or stop() "
                        "before the program ends", int(result), result.queued, timeout,
                        result.failed)

    def _check_open(self) -> None:
        if self._closing:
            raise ClosedError("Producer is stopped: it cannot be used after stop()")
        self._client.ensure_open()  # a forked child: ClosedError naming the fork

    def _not_on_event_thread(self, what: str) -> None:
        if self._client.on_event_thread():
            raise RuntimeError(f"Producer.{what}() cannot be called from a producer callback: "
                               "callbacks run on the thread that serves delivery reports")
