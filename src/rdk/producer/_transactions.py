"""The work behind rdk.Producer's transaction calls (``init_transactions`` ...
``abort_transaction``): their checks, their librdkafka calls, and the count of calls still
inside librdkafka that ``stop()`` must not free the handle under."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._binding import transactions as _txn
from .._binding.partitions import partition_list
from ..errors import ClosedError, TransactionError
from ..transactions import GroupMetadata, borrowed_pointer
from ._config import ERR_NOT_CONFIGURED, INT32_MAX, timeout_seconds
from ._txn_checks import check_offsets, check_partitions_exist

if TYPE_CHECKING:
    from ._state import ProducerState


class Transactions:
    """One producer's transaction calls; the state they share with ``stop()`` is guarded by
    the producer's condition."""

    def __init__(self, state: ProducerState) -> None:
        self._s = state
        self.calls = 0  # transaction calls inside librdkafka (guarded by the producer's _cond)
        self.partitions: dict[str, int] = {}  # topic -> partitions seen in metadata
        self.close_deferred = False  # stop() left the handle to the last of them

    def init(self, timeout: Any) -> None:
        ms = self._timeout_ms(timeout, "init_transactions")
        self._call("init_transactions", _txn.init_transactions, ms)

    def begin(self) -> None:
        self._check("begin_transaction")
        self._call("begin_transaction", _txn.begin_transaction)

    def send_offsets(self, offsets: Mapping[tuple[str, int], int], group_metadata: Any,
                     timeout: Any) -> None:
        start = time.monotonic()
        checked = check_offsets(offsets)
        if not isinstance(group_metadata, GroupMetadata):
            raise TypeError("group_metadata must be an rdk.GroupMetadata (from "
                            f"Consumer.group_metadata()), got {type(group_metadata).__name__}")
        ms = self._timeout_ms(timeout, "send_offsets_to_transaction")
        parts = partition_list((t, p, offset) for (t, p), offset in checked.items())
        with borrowed_pointer(group_metadata) as cgmd:  # its close() waits for this call
            check_partitions_exist(self._s.client, checked, self.partitions, start + ms / 1000)
            ms = max(0, ms - int((time.monotonic() - start) * 1000))
            self._call("send_offsets_to_transaction", _txn.send_offsets_to_transaction, parts,
                       cgmd, ms)

    def commit(self, timeout: Any) -> None:
        ms = self._timeout_ms(timeout, "commit_transaction")
        self._call("commit_transaction", _txn.commit_transaction, ms)

    def abort(self, timeout: Any) -> None:
        ms = self._timeout_ms(timeout, "abort_transaction")
        self._call("abort_transaction", _txn.abort_transaction, ms)

    def defer_close(self) -> bool:
        """For ``stop()``, under the producer's condition: whether a transaction call is still
        inside librdkafka, which then frees the handle when it returns."""
        self.close_deferred = self.calls > 0
        return self.close_deferred

    def _check(self, what: str) -> None:
        self._s.check_open()
        if self._s.transactional_id is None:
            raise TransactionError(
                ERR_NOT_CONFIGURED, f"{what}() needs a transactional producer: "
                "create it with Producer(..., transactional_id=...)", context=what)

    def _timeout_ms(self, timeout: Any, what: str) -> int:
        self._check(what)
        ms = int(timeout_seconds(timeout) * 1000)
        self._s.not_on_event_thread(what)  # it waits for reports that thread delivers
        return min(ms, INT32_MAX)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """One librdkafka transaction call (``fn(rk, *args)`` raises its TransactionError);
        stop() never frees the handle under it."""
        p = self._s
        with p.cond:
            if p.closing:
                raise ClosedError(f"Producer is stopped: {what}() after stop() is not allowed")
            on_event_thread = p.client.on_event_thread()
            if not on_event_thread:
                self.calls += 1
        if on_event_thread:  # begin_transaction() from a callback: the Client frees the
            fn(p.rk, *args)  # handle only after the callback
            return
        try:
            fn(p.rk, *args)
        finally:
            with p.cond:
                self.calls -= 1
                close_now = self.close_deferred and self.calls == 0
                p.cond.notify_all()
            if close_now:
                p.client.close()
