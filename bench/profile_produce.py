"""Where the producer's instructions go per message, at a few partition counts (callgrind).

Like bench/profile_consume.py: the producing process runs under ``valgrind --tool=callgrind``
twice (``--small`` and ``--large`` messages, sent in 10 000-message ``send()`` calls to the
partitions in turn, as bench/java_peer.py sends) against the mock cluster in its own process,
and the difference per message is reported, with the top functions' self cost (every thread).
The same figure at 4 and 64 partitions says whether rdk does more work per message with more
partitions or only waits longer (issue 35: 64 partitions halved rdk's produce rate on Apache
Kafka while its CPU per message stayed below confluent-kafka's).

    .venv/bin/python bench/profile_produce.py --size 1024 --partitions 4,64
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

from profile_consume import functions

SETTINGS = {"batch.size": 1000000, "batch.num.messages": 10000, "acks": "1",
            "queue.buffering.max.messages": 2000000, "queue.buffering.max.kbytes": 1048576}


def produce(bootstrap: str, topic: str, partitions: int, count: int, size: int) -> None:
    import rdk

    chunk = [os.urandom(size)] * 10000
    with rdk.Producer(bootstrap, queue_buffering_max_ms=5, on_queue_full="block",
                      driver_options=SETTINGS) as p:
        p.partition_count(topic, timeout=30)
        for i in range(count // 10000):
            p.send(topic, i % partitions, chunk)
        p.flush(120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", default="4,64")
    ap.add_argument("--small", type=int, default=20000)
    ap.add_argument("--large", type=int, default=100000)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        bootstrap, topic, parts, count, size = args.child
        produce(bootstrap, topic, int(parts), int(count), int(size))
        return
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    from rdk.testing.mock import MockClusterProcess

    counts = [int(p) for p in args.partitions.split(",")]
    work = tempfile.mkdtemp(prefix="rdk-callgrind-")
    with MockClusterProcess({f"p{n}": n for n in counts}) as broker:
        for parts in counts:
            runs = []
            for n in (args.small, args.large):
                out = os.path.join(work, f"callgrind.{parts}.{n}.out")
                subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                sys.executable, __file__, "--child", broker.bootstrap_servers,
                                f"p{parts}", str(parts), str(n), str(args.size)],
                               capture_output=True, check=True, timeout=3600)
                runs.append((n, *functions(out)))
            (n1, t1, f1), (n2, t2, f2) = runs
            diff = Counter({k: (f2[k] - f1.get(k, 0)) / (n2 - n1) for k in f2})
            print(f"produce {args.size} B, {parts} partitions: "
                  f"{(t2 - t1) / (n2 - n1):,.0f} instructions per message", flush=True)
            for name, cost in diff.most_common(args.top):
                print(f"  {cost:10,.1f}  {name}", flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
