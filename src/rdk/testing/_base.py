"""The small interface every embedded broker offers."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["AdminTopicsBroker", "EmbeddedBroker", "create_topics"]


class EmbeddedBroker:
    """What every embedded broker offers: ``bootstrap_servers``, ``create_topic(name,
    partitions=1)``, ``close()`` (idempotent) and a context manager that closes it."""

    bootstrap_servers: str
    """The ``host:port`` list clients connect to."""
    kind: str = "?"
    """The broker kind's name (a key of ``KINDS``, or ``"external"``)."""

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create topic ``name`` with ``partitions`` partitions.

        Args:
            name: The topic name.
            partitions: Its partition count.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Stop the broker and free what it holds (idempotent)."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self, 'bootstrap_servers', '?')}>"


def create_topics(bootstrap: str, topics: Mapping[str, int]) -> None:
    """Create ``topics`` ({name: partitions}) where missing, through rdk's Admin."""
    from ..admin import Admin

    if topics:
        with Admin(bootstrap) as admin:
            admin.create_topics(dict(topics), exist_ok=True)


class AdminTopicsBroker(EmbeddedBroker):
    """An embedded broker whose topics are created through rdk's Admin (a real cluster's
    CreateTopics)."""

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create topic ``name`` through [rdk.Admin][] unless it exists.

        Args:
            name: The topic name.
            partitions: Its partition count.

        Raises:
            rdk.KafkaError: The cluster refused.
        """
        create_topics(self.bootstrap_servers, {name: partitions})
