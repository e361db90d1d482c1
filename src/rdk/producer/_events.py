"""rdk.Producer's handlers of its Client's event thread: delivery reports, polls, stats
and librdkafka errors."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import _binding
from ..errors import KafkaError
from ._accounting import run_user
from ._types import StatsInfo

if TYPE_CHECKING:
    from ._state import ProducerState

log = logging.getLogger("rdk")


class EventHandlers:
    """The ``_on_*`` handlers a producer gives its Client (they run on the event thread; their
    names are the ones the Client logs when one raises)."""

    def __init__(self, state: ProducerState) -> None:
        self._s = state

    def _on_deliveries(self, d: Any) -> None:
        if d.n_runs:  # delivered: the broker took our credentials
            self._s.client.auth_failure = None
        self._s.ledger.on_deliveries(d)
        for notify in self._s.on_deliveries:
            notify()

    def _on_poll(self) -> None:
        client = self._s.client
        if client is None:  # the event thread polls before the client is stored
            return
        self._s.balancers.run_lookups(client)
        self._s.ledger.serve_pending()
        for step in self._s.on_poll:  # last: rdk.aio's stop may close the client here
            step()

    def _on_stats(self, stats: dict) -> None:
        p = self._s
        if p.stats_cb is not None:
            run_user(p.stats_cb, "stats_callback",
                     StatsInfo(p.ledger.queue_length, stats, p.ledger.dropped))

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal:
            self._s.fatal = error
            log.error("rdk.Producer: fatal librdkafka error: %s", error)
        elif _binding.is_auth_failure(error):
            log.error("rdk.Producer: authentication failed, nothing is delivered until it "
                      "succeeds: %s", error)
            for notify in self._s.on_auth_failure:
                notify(error)
        else:
            log.warning("rdk.Producer: librdkafka error: %s", error)
