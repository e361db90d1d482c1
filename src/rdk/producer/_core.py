"""The state rdk.Producer shares with its parts (``_sending``, ``_transactions``,
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


class ProducerCore:
    """rdk.Producer's parts and the private checks its calls share (Producer is the API)."""

    transactional_id: str | None
    balancer: str
    on_queue_full: str

    def _start(self, cfg: ProducerConfig, oauth_cb: Callable[[str], Any] | None) -> None:
        """The state, the parts and the Client of a producer made from ``cfg``."""
        s = self._s = ProducerState(cfg)
        self._txn = Transactions(s)
        self._closer = Closer(s, self._txn)
        self._sender = Sender(s, self._closer)
        events = EventHandlers(s)
        s.client = _binding.Client(
            "producer", cfg.props, cfg.topic_props,
            on_deliveries=events._on_deliveries, on_stats=events._on_stats,
            on_error=events._on_error, on_poll=events._on_poll, oauth_cb=oauth_cb,
        )
        s.rk = s.client.rk
        _exit.register(self, _exit.PRODUCERS)

    # the Producer's own view of the shared state
    @property
    def _client(self) -> Any:
        return self._s.client

    @property
    def _balancers(self) -> Balancers:
        return self._s.balancers

    @property
    def _ledger(self) -> Ledger:
        return self._s.ledger

    @property
    def _closing(self) -> bool:
        return self._s.closing

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
        self._s.check_open()

    def _not_on_event_thread(self, what: str) -> None:
        self._s.not_on_event_thread(what)
