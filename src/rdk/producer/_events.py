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
    from ._core import ProducerCore

log = logging.getLogger("rdk")


class EventHandlers:
    """The ``_on_*`` handlers a producer gives its Client (they run on the event thread; their
    names are the ones the Client logs when one raises)."""

    def __init__(self, producer: ProducerCore) -> None:
        self._p = producer

    def _on_deliveries(self, d: Any) -> None:
        if d.n_runs:  # delivered: the broker took our credentials
            self._p._client.auth_failure = None
        self._p._ledger.on_deliveries(d)

    def _on_poll(self) -> None:
        client = self._p.__dict__.get("_client")
        if client is None:  # the event thread polls before __init__ has stored the client
            return
        self._p._balancers.run_lookups(client)
        self._p._ledger.serve_pending()

    def _on_stats(self, stats: dict) -> None:
        p = self._p
        if p._stats_cb is not None:
            run_user(p._stats_cb, "stats_callback",
                     StatsInfo(p._ledger.queue_length, stats, p._ledger.dropped))

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal:
            self._p._fatal = error
            log.error("rdk.Producer: fatal librdkafka error: %s", error)
        elif _binding.is_auth_failure(error):
            log.error("rdk.Producer: authentication failed, nothing is delivered until it "
                      "succeeds: %s", error)
        else:
            log.warning("rdk.Producer: librdkafka error: %s", error)
