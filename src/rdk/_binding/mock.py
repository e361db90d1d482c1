"""librdkafka's mock cluster (``rd_kafka_mock_*``): the only caller of those functions.

Each call is checked (a refusal raises rdk.KafkaError with the context given); names go in
as ``str``. ``rdk.testing.mock.MockCluster`` checks the user's arguments and calls these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import RdkError
from . import check, ffi, lib


def cluster_new(rk: Any, num_brokers: int) -> tuple[Any, str]:
    """(a mock cluster of ``num_brokers`` owned by handle ``rk``, its bootstrap servers)."""
    mc = lib.rd_kafka_mock_cluster_new(rk, num_brokers)
    if mc == ffi.NULL:
        raise RdkError("rd_kafka_mock_cluster_new failed")
    return mc, ffi.string(lib.rd_kafka_mock_cluster_bootstraps(mc)).decode()


def group_initial_rebalance_delay(mc: Any, delay_ms: int) -> None:
    """The cluster's ``group.initial.rebalance.delay.ms``: how long a new group waits for
    more members before its first assignment."""
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms(mc, delay_ms)


def cluster_destroy(mc: Any) -> None:
    """Destroy the cluster (before the handle that owns it)."""
    lib.rd_kafka_mock_cluster_destroy(mc)


def topic_create(mc: Any, name: str, partitions: int, replication_factor: int) -> None:
    check(lib.rd_kafka_mock_topic_create(mc, name.encode(), partitions, replication_factor),
          f"mock topic {name!r}")


def broker_set_down(mc: Any, broker_id: int) -> None:
    check(lib.rd_kafka_mock_broker_set_down(mc, broker_id), f"broker {broker_id} down")


def broker_set_up(mc: Any, broker_id: int) -> None:
    check(lib.rd_kafka_mock_broker_set_up(mc, broker_id), f"broker {broker_id} up")


def broker_remove_from_metadata(mc: Any, broker_id: int) -> None:
    check(lib.rd_kafka_mock_broker_remove_from_metadata(mc, broker_id),
          f"broker {broker_id} remove from metadata")


def broker_set_rtt(mc: Any, broker_id: int, rtt_ms: int) -> None:
    check(lib.rd_kafka_mock_broker_set_rtt(mc, broker_id, rtt_ms), "broker rtt")


def coordinator_set(mc: Any, key_type: str, key: str, broker_id: int) -> None:
    check(lib.rd_kafka_mock_coordinator_set(mc, key_type.encode(), key.encode(), broker_id),
          f"{key_type} coordinator of {key!r} on broker {broker_id}")


def partition_set_leader(mc: Any, topic: str, partition: int, broker_id: int) -> None:
    check(lib.rd_kafka_mock_partition_set_leader(mc, topic.encode(), partition, broker_id),
          f"leader of {topic}[{partition}]")


def partition_set_follower(mc: Any, topic: str, partition: int, broker_id: int) -> None:
    check(lib.rd_kafka_mock_partition_set_follower(mc, topic.encode(), partition, broker_id),
          f"follower of {topic}[{partition}]")


def push_request_errors(mc: Any, api_key: int, codes: Sequence[int]) -> None:
    """The next ``len(codes)`` requests of ``api_key`` fail with these codes, in order."""
    arr = ffi.new("rd_kafka_resp_err_t[]", list(codes))
    lib.rd_kafka_mock_push_request_errors_array(mc, api_key, len(codes), arr)


def clear_request_errors(mc: Any, api_key: int) -> None:
    lib.rd_kafka_mock_clear_request_errors(mc, api_key)


def topic_set_error(mc: Any, topic: str, code: int) -> None:
    lib.rd_kafka_mock_topic_set_error(mc, topic.encode(), code)
