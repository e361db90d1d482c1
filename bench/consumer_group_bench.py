"""Group mode vs worker-slot mode: rdk.Consumer throughput on one mock cluster.

The mock cluster runs in another process (``python -m rdk.mock``); 100-byte messages,
45 000 per partition (what its retention keeps) but at most 1 M in all, on 4 partitions
(or ``--partitions N``). Each pass reads them all with one
consumer per mode, alternating, timed from the first message (a group's join is not
throughput), touching every ``Message.value``.

Usage: ``.venv/bin/python bench/consumer_group_bench.py [passes] [--partitions N]``
(default 3 passes, 4 partitions).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import rdk

PARTITIONS = 4
PER_PARTITION = 45_000
TOTAL = PER_PARTITION * PARTITIONS


def fill(bootstrap: str) -> None:
    with rdk.Producer(bootstrap, queue_buffering_max_messages=2_000_000) as p:
        for part in range(PARTITIONS):
            for start in range(0, PER_PARTITION, 5000):
                p.send("bench", part, [b"x" * 100] * min(5000, PER_PARTITION - start))
        assert p.flush(60) == 0


def one_pass(bootstrap: str, mode: str) -> float:
    """msg/s of one consumer reading the whole topic in ``mode`` ("slot" or "group")."""
    done, first = threading.Event(), threading.Event()
    count = [0]

    def receive(batch: rdk.Batch) -> None:
        for m in batch.messages:
            m.value  # noqa: B018 - touch every value, as an application would
        count[0] += len(batch.messages)
        first.set()
        if count[0] >= TOTAL:
            done.set()

    directory = tempfile.mkdtemp(prefix="rdk-bench-off-")
    group = f"bench-{uuid.uuid4().hex[:8]}" if mode == "group" else None
    c = rdk.Consumer(bootstrap, "bench", None if group else directory, receive, group_id=group)
    try:
        c.start()
        assert first.wait(60), "nothing arrived"
        t0, n0 = time.perf_counter(), count[0]
        assert done.wait(120), f"{mode}: {count[0]} of {TOTAL} messages"
        return (TOTAL - n0) / (time.perf_counter() - t0)
    finally:
        c.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main(passes: int) -> None:
    mock = subprocess.Popen([sys.executable, "-m", "rdk.mock", "--brokers", "1", "--topic",
                             f"bench:{PARTITIONS}"], stdout=subprocess.PIPE, text=True)
    try:
        assert mock.stdout is not None
        bootstrap = mock.stdout.readline().strip().split("=", 1)[1]
        fill(bootstrap)
        results: dict[str, list[float]] = {"slot": [], "group": []}
        for _ in range(passes):
            for mode in results:
                results[mode].append(one_pass(bootstrap, mode))
        for mode, rates in results.items():
            rates.sort()
            print(f"{mode}: median {rates[len(rates) // 2] / 1e6:.2f} M msg/s, "
                  f"all {[round(r / 1e6, 2) for r in rates]}")
    finally:
        mock.terminate()
        mock.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("passes", nargs="?", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    PARTITIONS = args.partitions
    PER_PARTITION = min(45_000, 1_000_000 // PARTITIONS)
    TOTAL = PER_PARTITION * PARTITIONS
    main(args.passes)
