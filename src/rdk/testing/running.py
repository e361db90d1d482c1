"""``RunningCluster``: a cluster somebody else runs."""

from __future__ import annotations

from ..validate import check_broker
from ._base import EmbeddedBroker, create_topics

__all__ = ["RunningCluster"]


class RunningCluster(EmbeddedBroker):
    """A cluster somebody else runs (``bootstrap_servers``); ``close()`` leaves it running."""

    kind = "external"

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = check_broker(bootstrap_servers, "bootstrap_servers")

    def create_topic(self, name: str, partitions: int = 1) -> None:
        create_topics(self.bootstrap_servers, {name: partitions})

    def close(self) -> None:
        pass
