"""Where the examples find Kafka: ``RDK_BROKERS`` if set, else an embedded broker.

Without ``RDK_BROKERS`` an in-process librdkafka mock cluster is started (real TCP listeners
on 127.0.0.1, so worker processes can reach it too) and stopped when the example ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import rdk
from rdk.mock import MockCluster


@contextmanager
def kafka(topic: str, partitions: int) -> Iterator[str]:
    """Bootstrap servers with ``topic`` present (created with ``partitions`` if missing)."""
    brokers = os.environ.get("RDK_BROKERS")
    if brokers:
        with rdk.Admin(brokers) as admin:
            admin.create_topics({topic: partitions}, exist_ok=True)
        yield brokers
        return
    with MockCluster(1) as cluster:
        cluster.create_topic(topic, partitions)
        print(f"(no RDK_BROKERS: using an embedded mock cluster at {cluster.bootstrap_servers})")
        yield cluster.bootstrap_servers
