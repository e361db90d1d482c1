"""kafka-native's node-cluster pattern with rdk.workers: one consumer process per worker slot.

    python examples/multiprocess.py --workers 3 --messages 3000
    RDK_BROKERS=localhost:9092 python examples/multiprocess.py --forever   # Ctrl-C stops

Worker i owns the partitions p with p % workers == i. A worker that dies is restarted in
the same slot; SIGTERM/Ctrl-C stops every worker gracefully (each finishes its batch and
writes its offsets). The parent receives every worker's stats and their sums; without
--forever it stops the pool once the summed stats say every message was handed over.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from functools import partial

from _broker import kafka

import rdk
from rdk import workers
from rdk.offsets import list_offset_files, read_offset_file


def handle(batch: rdk.Batch) -> None:
    """receive_callback in each worker process (module level: it must be picklable)."""
    slot, num = workers.current_slot()
    parts = sorted({m.partition for m in batch.messages})
    print(f"[slot {slot}/{num} pid {os.getpid()}] {len(batch.messages)} messages "
          f"from partitions {parts}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="consumers in N processes with rdk.workers")
    parser.add_argument("--topic", default="multiprocess")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--offset-dir", default=None, help="default: a new temporary directory")
    parser.add_argument("--forever", action="store_true", help="run until SIGTERM/Ctrl-C")
    args = parser.parse_args()
    offset_dir = args.offset_dir or tempfile.mkdtemp(prefix="kafka-offsets-")

    with kafka(args.topic, args.partitions) as broker:
        with rdk.Producer(broker, balancer="round_robin") as producer:
            producer.send(args.topic, None, [b"job %d" % i for i in range(args.messages)])
            producer.flush(30)
        with rdk.Admin(broker) as admin:  # what the consumers' kafka_log_size will add up to
            count = admin.partition_count(args.topic)
            log_size = sum(high - low for low, high in
                           (admin.watermarks(args.topic, p) for p in range(count)))

        factory = partial(rdk.Consumer, broker, args.topic, offset_dir, handle,
                          max_messages_per_callback=500, statistics_interval_ms=500)
        pool: workers.WorkerPool

        def on_stats(info: workers.PoolStats) -> None:
            # runs in the parent: the figures of every slot and their sums
            print(f"stats: waiting_kafka={info.waiting_kafka} waiting_local={info.waiting_local} "
                  f"kafka_log_size={info.kafka_log_size} slots={sorted(info.slots)}", flush=True)
            if (not args.forever and info.kafka_log_size == log_size
                    and info.waiting_kafka == 0 and info.waiting_local == 0):
                pool.stop()  # graceful: in-flight batches finish, offsets are written

        pool = workers.WorkerPool(args.workers, factory, stats_callback=on_stats)
        pool.run()  # until request_stop() or SIGTERM/SIGINT

    stored = {f.partition: read_offset_file(f.path) for f in list_offset_files(offset_dir, args.topic)}
    done = sum(v + 1 for v in stored.values())
    print(f"stopped; offsets {stored}: {done} messages recorded as processed")


if __name__ == "__main__":
    main()
