"""The work behind rdk.Producer's flush() and stop(): draining the queue (short flushes
that notice an authentication failure), purging what is left before the deadline, and
freeing the handle (unless a transaction call is still inside librdkafka)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from .. import _binding, _exit
from .._binding import produce as _produce
from ..errors import KafkaError
from ._config import AUTH_PROBE, PURGE_ALL
from ._types import FlushResult

if TYPE_CHECKING:
    from ._state import ProducerState
    from ._transactions import Transactions

log = logging.getLogger("rdk")


class Closer:
    """One producer's draining, flush and stop (its condition guards what they share)."""

    def __init__(self, state: ProducerState, txn: Transactions) -> None:
        self._s = state
        self._txn = txn

    def flush(self, timeout: float) -> FlushResult:
        """Producer.flush() once its arguments are checked."""
        p = self._s
        queued = self.drain(time.monotonic() + timeout, stop_on_auth=True)
        failure = self.auth_failed("flush()") if queued else None
        if failure is not None:
            raise KafkaError(failure.code, f"{failure.description}; {queued} message(s) still "
                             "queued (librdkafka retries them until message.timeout.ms; stop() "
                             "fails them at once)", context=failure.context)
        with p.cond:
            return FlushResult(queued, p.ledger.take_failed())

    def auth_failed(self, what: str) -> KafkaError | None:
        """The KafkaError of a current authentication failure: one librdkafka reported and
        no broker answers now (a short metadata request, made only after such a report)."""
        client = self._s.client
        if client.auth_failure is None:
            return None
        try:
            client.metadata(None, AUTH_PROBE)
        except KafkaError as e:
            if _binding.is_auth_failure(e):
                return KafkaError(e.code, e.description, context=what)
        return None

    def drain(self, deadline: float, stop_on_auth: bool = False) -> int:
        p = self._s
        settled = p.ledger.settled
        while True:
            with p.cond:
                if settled():
                    return 0
            left = deadline - time.monotonic()
            if left <= 0 or (stop_on_auth and p.client.auth_failure is not None
                             and self.auth_failed("flush") is not None):
                with p.cond:
                    return p.ledger.queue_length
            # linger is immediate while rd_kafka_flush runs; it returns once librdkafka
            # has handed every report to our event thread (short calls: an authentication
            # failure is noticed within AUTH_PROBE seconds)
            _produce.flush(p.rk, max(1, int(min(left, AUTH_PROBE) * 1000)))
            with p.cond:
                p.cond.wait_for(settled, max(0.0, min(0.2, deadline - time.monotonic())))

    def stop(self, timeout: float) -> FlushResult:
        """Producer.stop() once ``timeout`` is checked (see there)."""
        p = self._s
        if p.client.in_child:  # no lock: the parent's threads may have held it at fork
            p.closing = True
            p.client.close()
            return FlushResult()
        with p.cond:
            if p.closing:
                return FlushResult()
            p.not_on_event_thread("stop")
            p.closing = True
            p.cond.notify_all()
        p.balancers.close()
        start = time.monotonic()
        deadline = start + timeout
        left = self._drain_or_purge(start, deadline, timeout)
        with p.cond:  # a transaction call still inside librdkafka closes it on return
            deferred = self._txn.defer_close()
            if deferred:
                log.warning("rdk.Producer.stop(): a transaction call is still running; the "
                            "librdkafka handle is freed when it returns")
        if not deferred:
            p.client.close(max(0.0, deadline - time.monotonic()))  # a stuck callback cannot hold us
        _exit.unregister(p, _exit.PRODUCERS)
        with p.cond:
            return FlushResult(left, p.ledger.take_failed())

    def _drain_or_purge(self, start: float, deadline: float, timeout: float) -> int:
        """Wait for the sends inside the C call, drain until shortly before ``deadline``,
        then purge what is left (reported as failed): the messages still queued."""
        p = self._s
        purge_at = deadline - min(1.0, timeout * 0.25)  # time left to report what is purged
        close_at = deadline - min(0.1, timeout * 0.05)  # time left to free the handle
        with p.cond:  # blocked sends see _closing and return
            p.cond.wait_for(lambda: p.active == 0, max(0.0, purge_at - start))
        left = self.drain(purge_at, stop_on_auth=True)
        if left:
            failure = self.auth_failed("stop()")
            _produce.purge(p.rk, PURGE_ALL)  # purged messages are reported as failed
            if failure is not None:
                log.error("rdk.Producer.stop(): %d message(s) not delivered: %s", left, failure)
            left = self.drain(close_at)
        return left
