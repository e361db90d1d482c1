"""Worker slots: kafka-native's rule for splitting a topic's partitions between processes.

Worker ``worker_slot`` of ``num_workers`` owns every partition ``p`` with
``p % num_workers == worker_slot``, so N workers own disjoint sets that cover the topic.
"""

from __future__ import annotations

from .validate import check_int

# the rule behind Consumer(num_workers=, worker_slot=), workers and the Spark source; users
# see it as Consumer.partitions, not as these functions
__all__: list[str] = []


def owns(partition: int, num_workers: int, worker_slot: int) -> bool:
    """True when worker ``worker_slot`` of ``num_workers`` owns ``partition`` (the rule itself).

    Not checked: callers validate the pair once with :func:`check_slot`.
    """
    return partition % num_workers == worker_slot


def check_slot(num_workers: int, worker_slot: int) -> tuple[int, int]:
    """Validate the pair: ``num_workers >= 1`` and ``0 <= worker_slot < num_workers``."""
    check_int(num_workers, "num_workers")
    check_int(worker_slot, "worker_slot")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if not 0 <= worker_slot < num_workers:
        raise ValueError(
            f"worker_slot must be in 0..{num_workers - 1} for num_workers={num_workers}, "
            f"got {worker_slot}"
        )
    return num_workers, worker_slot


def owned_partitions(partition_count: int, num_workers: int = 1, worker_slot: int = 0,
                     topic: str | None = None) -> list[int]:
    """The partitions worker ``worker_slot`` owns among ``partition_count``.

    A topic with fewer partitions than workers raises ValueError naming both counts (some
    worker would own nothing).
    """
    check_slot(num_workers, worker_slot)
    check_int(partition_count, "partition_count", minimum=0)
    if partition_count < num_workers:
        what = f"topic {topic!r}" if topic else "the topic"
        raise ValueError(
            f"{what} has {partition_count} partition(s), fewer than num_workers={num_workers}; "
            "every worker slot must own at least one partition"
        )
    return [p for p in range(partition_count) if owns(p, num_workers, worker_slot)]
