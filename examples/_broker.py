"""Where the examples find Kafka: ``RDK_BROKERS`` if set, else an embedded broker.

- ``kafka(topic, partitions)``: without ``RDK_BROKERS`` an in-process librdkafka mock
  cluster is started (real TCP listeners on 127.0.0.1, so worker processes can reach it
  too) and stopped when the example ends.
- ``start_broker(kind, topics)``: rdk.mock's, for an example that picks its broker
  ("mock": the mock cluster in its own process; "tansu"; or HOST:PORT of a running cluster).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rdk.mock import MockCluster, start_broker

__all__ = ["kafka", "start_broker"]


@contextmanager
def kafka(topic: str, partitions: int) -> Iterator[str]:
    """Bootstrap servers with ``topic`` present (created with ``partitions`` if missing)."""
    brokers = os.environ.get("RDK_BROKERS")
    if brokers:
        with start_broker(brokers, {topic: partitions}) as cluster:
            yield cluster.bootstrap_servers
        return
    with MockCluster(1) as cluster:
        cluster.create_topic(topic, partitions)
        print(f"(no RDK_BROKERS: using an embedded mock cluster at {cluster.bootstrap_servers})")
        yield cluster.bootstrap_servers
