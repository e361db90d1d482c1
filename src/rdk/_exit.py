"""Exit is a lifecycle event: what rdk does with objects still open when the interpreter exits.

Python runs ``atexit`` handlers once the main thread has finished and every non-daemon
thread has been joined. rdk's handler runs before the finalizers that free C handles
(``weakref.finalize``) and before multiprocessing's (which would join worker processes
that never end), and closes, in this order and within one shared deadline
(:func:`exit_timeout`, 10 s unless ``RDK_EXIT_TIMEOUT`` or :func:`set_exit_timeout` say
otherwise), every rdk object still open in this process:

1. consumers: stop fetching, wait for in-flight callbacks, record the offsets of settled
   batches (never of unsettled ones: an uncommitted ``batches()`` batch is read again);
2. worker pools: a graceful stop of every worker process (each stops its consumer as above);
3. producers: flush what is queued, then purge; what was not delivered is logged;
4. the other clients (Admin).

Before this, a consumer left running crashed the process at exit: the finalizer freed its
librdkafka handle while its fetch thread was still inside a C call on that handle.

No new thread is started on this path (CPython 3.12+ refuses to start threads at exit).
Objects of a process this one was forked from are left alone (their ``pid`` differs).
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
import weakref
from typing import Any, Protocol

__all__ = ["exit_timeout", "set_exit_timeout"]

log = logging.getLogger("rdk")

CONSUMERS, POOLS, PRODUCERS, CLIENTS = range(4)
_STAGE_NAMES = ("consumer", "worker pool", "producer", "client")


class ClosesAtExit(Protocol):
    def _close_at_exit(self, timeout: float) -> None: ...


_open: list[weakref.WeakSet[Any]] = [weakref.WeakSet() for _ in _STAGE_NAMES]
_lock = threading.Lock()
_exiting = False


def _initial_timeout() -> float:
    text = os.environ.get("RDK_EXIT_TIMEOUT", "")
    try:
        value = float(text) if text else 10.0
    except ValueError:
        log.warning("rdk: RDK_EXIT_TIMEOUT=%r is not a number; using 10 s", text)
        return 10.0
    return value if math.isfinite(value) and value >= 0 else 10.0


_timeout = _initial_timeout()


def exit_timeout() -> float:
    """Seconds rdk may spend at interpreter exit closing what the program left open."""
    return _timeout


def set_exit_timeout(seconds: float) -> None:
    """Set how long rdk may spend at interpreter exit closing what is still open (10 s by
    default, or ``RDK_EXIT_TIMEOUT``). 0 stops everything at once: in-flight callbacks are
    not waited for and queued messages are purged (and reported as not delivered).

    Args:
        seconds: The time allowed at exit, finite and >= 0.

    Raises:
        TypeError: ``seconds`` is not a number.
        ValueError: ``seconds`` is negative, inf or nan.
    """
    global _timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"seconds must be a number, got {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
    _timeout = float(seconds)


def register(obj: ClosesAtExit, stage: int) -> None:
    """Close ``obj`` at exit (``obj._close_at_exit(seconds)``) unless it closed before."""
    with _lock:
        _open[stage].add(obj)
        # ours must run before handlers registered after rdk was imported (multiprocessing's
        # joins worker processes that never end): atexit runs the last registered first
        atexit.unregister(_at_exit)
        atexit.register(_at_exit)


def unregister(obj: object, stage: int) -> None:
    with _lock:
        _open[stage].discard(obj)


def exiting() -> bool:
    """True once the interpreter's exit has begun closing rdk objects."""
    return _exiting


def _at_exit() -> None:
    global _exiting
    _exiting = True
    deadline = time.monotonic() + _timeout
    pid = os.getpid()
    for stage, name in enumerate(_STAGE_NAMES):
        with _lock:
            objects = [o for o in _open[stage] if getattr(o, "_pid", pid) == pid]
        for obj in objects:
            try:
                obj._close_at_exit(max(0.0, deadline - time.monotonic()))
            except BaseException:  # one object's failure must not keep the others open
                log.exception("rdk: closing a %s at interpreter exit failed", name)


# weakref.finalize registers its own atexit function when the first finalizer is made;
# make sure that happened before ours, so that ours (registered later) runs first
weakref.finalize(ClosesAtExit, lambda: None).atexit = False
atexit.register(_at_exit)
