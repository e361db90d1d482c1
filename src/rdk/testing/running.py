"""``RunningCluster``: a cluster somebody else runs."""

from __future__ import annotations

from ..validate import check_broker
from ._base import EmbeddedBroker, create_topics

__all__ = ["RunningCluster"]


class RunningCluster(EmbeddedBroker):
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

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create topic ``name`` through [rdk.Admin][] unless it exists.

        Args:
            name: The topic name.
            partitions: Its partition count.

        Raises:
            rdk.KafkaError: The cluster refused.
        """
        create_topics(self.bootstrap_servers, {name: partitions})

    def close(self) -> None:
        """Nothing: the cluster keeps running."""
        pass
