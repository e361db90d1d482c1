"""rdk.workers: the checks of a ``WorkerPool``'s arguments, made in the parent before any
worker starts (a factory a worker could not unpickle or call fails here, not N times)."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import Any

from ..validate import check_callable, check_group_id, check_int, check_timeout

__all__ = ["check_pool_arguments"]


def check_pool_arguments(num_workers: int, consumer_factory: Callable[..., Any], *,
                         stats_callback: Callable[..., None] | None, max_restarts: int | None,
                         restart_backoff: float, stop_timeout: float, healthy_after: float,
                         group_id: str | None) -> None:
    """TypeError or ValueError for the first of ``WorkerPool``'s arguments that is wrong."""
    check_int(num_workers, "num_workers", minimum=1)
    if group_id is not None:
        check_group_id(group_id)
    check_callable(consumer_factory, "consumer_factory", required=True)
    check_callable(stats_callback, "stats_callback")
    if max_restarts is not None:
        check_int(max_restarts, "max_restarts", minimum=0)
    check_timeout(restart_backoff, "restart_backoff")
    check_timeout(stop_timeout, "stop_timeout")
    check_timeout(healthy_after, "healthy_after")
    try:
        pickle.dumps(consumer_factory)
    except RuntimeError:
        pass  # holds multiprocessing objects, which pickle only while spawning: fine
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError(
            "consumer_factory must be picklable to reach the worker processes (a module-level "
            f"function, a class or a functools.partial of one), got {consumer_factory!r}: {e}"
        ) from None
    if stats_callback is not None and not _accepts_keyword(consumer_factory, "stats_callback"):
        raise TypeError(
            "with stats_callback, consumer_factory must accept a stats_callback keyword "
            "(pass it on to rdk.Consumer)"
        )
    if group_id is not None and not _accepts_keyword(consumer_factory, "group_id"):
        raise TypeError("with group_id, consumer_factory must accept a group_id keyword "
                        "(pass it on to rdk.Consumer)")


def _accepts_keyword(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # cannot tell; let the call decide
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)
