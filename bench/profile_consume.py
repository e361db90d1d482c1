"""Where the consumer's instructions go per message: callgrind on the mock cluster.

Wall-clock rates on a shared machine say little; instruction counts do not depend on the
load. This script fills a topic of the mock cluster (its own process) with ``--size`` byte
messages, then runs the consuming process under ``valgrind --tool=callgrind`` twice, reading
``--small`` and ``--large`` messages, and reports the difference per message:

    instructions per message = (I(large) - I(small)) / (messages(large) - messages(small))

so interpreter start-up, imports and connection set-up cancel out. The top functions are the
same difference per function (callgrind_annotate's self cost, every thread; librdkafka's
fetch threads included). Paths (``--path``):

- ``callback``: ``rdk.Consumer`` with a ``receive_callback`` reading every ``m.value``;
- ``batches``: ``for batch in consumer.batches()``, the same reading;
- ``arrow``: ``Fetcher`` batches to ``rdk.arrow.record_batch`` (the Spark source's path).

``--copy`` runs the former path for comparison: the batch copies every payload into its
contiguous buffer first (``keep`` off), and the bytes objects (or Arrow's buffer) are a
second copy.

    .venv/bin/python bench/profile_consume.py --path callback --size 1024
    .venv/bin/python bench/profile_consume.py --path callback --size 1024 --copy
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

TOPIC = "profile"


def fill(bootstrap: str, partitions: int, count: int, size: int) -> None:
    import rdk

    payload = os.urandom(size)
    with rdk.Producer(bootstrap) as p:
        per = count // partitions
        for part in range(partitions):
            for start in range(0, per, 10000):
                p.send(TOPIC, part, [payload] * min(10000, per - start))
        p.flush(60)


def consume(bootstrap: str, path: str, count: int, copy: bool) -> int:
    """Read ``count`` messages (at least) along ``path``; returns how many were read."""
    import rdk

    if copy:  # the former path: payloads copied into the batch's buffer, then again
        from rdk.consumer import _pipeline
        new_buffer = _pipeline._BufferPool._new_buffer

        def copying(self):  # type: ignore[no-untyped-def]
            b = new_buffer(self)
            b.keep = 0
            return b
        _pipeline._BufferPool._new_buffer = copying  # type: ignore[method-assign]
    seen = 0
    if path == "arrow":
        from rdk import _binding
        from rdk._binding import lib
        from rdk._binding.fetch import Fetcher
        from rdk.arrow import record_batch

        client = _binding.Client("consumer", {"bootstrap.servers": bootstrap,
                                              "enable.partition.eof": False})
        parts = client.partition_count(TOPIC, timeout=30)
        fetcher = Fetcher(client, TOPIC, 10000, keep=not copy)
        for p in range(parts):
            fetcher.start(p, lib.RD_KAFKA_OFFSET_BEGINNING)
        while seen < count:
            b = fetcher.fetch(100)
            if b.n:
                seen += record_batch(b, TOPIC).num_rows
        fetcher.close()
        client.close()
        return seen
    tmp = tempfile.mkdtemp(prefix="rdk-profile-")
    try:
        if path == "callback":
            import threading
            done = threading.Event()

            def receive(batch: rdk.Batch) -> None:
                nonlocal seen
                for m in batch.messages:
                    m.value  # noqa: B018 - read every payload
                seen += len(batch.messages)
                if seen >= count:
                    done.set()
            c = rdk.Consumer(bootstrap, TOPIC, tmp, receive)
            c.start()
            done.wait(600)
            c.stop()
        else:
            c = rdk.Consumer(bootstrap, TOPIC, tmp)
            for batch in c.batches(timeout=600):
                for m in batch.messages:
                    m.value  # noqa: B018
                seen += len(batch.messages)
                batch.commit()
                if seen >= count:
                    break
            c.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return seen


def callgrind(bootstrap: str, path: str, count: int, copy: bool, out: str) -> int:
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
           sys.executable, __file__, "--child", bootstrap, "--path", path, "--count", str(count)]
    if copy:
        cmd.append("--copy")
    # pyarrow imports numpy where it is installed, and OpenBLAS's threads spin a while after
    # it loads: millions of instructions that vary run to run and are not the consumer's
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise SystemExit(f"callgrind run failed: {done.stderr[-2000:]}")
    return int(lines[-1])


def functions(out: str) -> tuple[int, Counter[str]]:
    """(total instructions, self instructions per function) of a callgrind output file."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", out],
                          capture_output=True, text=True, check=True).stdout
    total = 0
    per: Counter[str] = Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?\(?\s*PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*(?:\[.*\])?$", line)
        if m and ":" in m.group(2):
            name = re.sub(r" \([\d,]+x\)$", "", m.group(2).split(":", 1)[1].strip())
            per[name] += int(m.group(1).replace(",", ""))
    return total, per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", choices=("callback", "batches", "arrow"), default="callback")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--small", type=int, default=5000)
    ap.add_argument("--large", type=int, default=15000)
    ap.add_argument("--copy", action="store_true", help="the former two-copy path")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(consume(args.child, args.path, args.count, args.copy))
        return
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    from rdk.testing.mock import MockClusterProcess

    work = tempfile.mkdtemp(prefix="rdk-callgrind-")
    with MockClusterProcess({TOPIC: args.partitions}) as broker:
        fill(broker.bootstrap_servers, args.partitions, args.large + 10000, args.size)
        runs = []
        for n in (args.small, args.large):
            out = os.path.join(work, f"callgrind.{n}.out")
            got = callgrind(broker.bootstrap_servers, args.path, n, args.copy, out)
            runs.append((got, *functions(out)))
    (n1, t1, f1), (n2, t2, f2) = runs
    per_msg = (t2 - t1) / (n2 - n1)
    diff = Counter({k: (f2[k] - f1.get(k, 0)) / (n2 - n1) for k in f2})
    top = diff.most_common(args.top)
    mode = "copy (former)" if args.copy else "keep (one copy)"
    print(f"{args.path}, {args.size} B, {args.partitions} partitions, {mode}: "
          f"{per_msg:,.0f} instructions per message ({n1} and {n2} messages read)")
    for name, cost in top:
        print(f"  {cost:10,.1f}  {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"path": args.path, "size": args.size, "partitions": args.partitions,
                       "mode": mode, "instructions_per_message": per_msg,
                       "messages": [n1, n2], "top": top,
                       "command": " ".join(sys.argv), "load_average": os.getloadavg(),
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())},
                      f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
