"""rdk.Producer's parts built around their shared ``ProducerState`` (``_state``), and the
close at interpreter exit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import _binding, _exit
from ._accounting import Ledger
from ._balancers import Balancers
from ._config import ProducerConfig, timeout_seconds
from ._events import EventHandlers
from ._lifetime import Closer
from ._sending import Sender
from ._state import ProducerState
from ._transactions import Transactions

log = logging.getLogger("rdk")


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
