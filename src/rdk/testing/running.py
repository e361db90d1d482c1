"""``RunningCluster``: a cluster somebody else runs."""

from __future__ import annotations

from ..validate import check_broker
from ._base import AdminTopicsBroker

__all__ = ["RunningCluster"]


class RunningCluster(AdminTopicsBroker):
    """A cluster somebody else runs (``bootstrap_servers``); ``close()`` leaves it running.

    Args:
        bootstrap_servers: The cluster's comma-separated ``host:port`` list.

    Raises:
        TypeError: ``bootstrap_servers`` is not a str.
        ValueError: ``bootstrap_servers`` is not a ``host:port`` list.
    """

    kind = "external"
    """``"external"``."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = check_broker(bootstrap_servers, "bootstrap_servers")
        """The cluster's ``host:port`` list."""

    def close(self) -> None:
        """Nothing: the cluster keeps running."""
        pass
