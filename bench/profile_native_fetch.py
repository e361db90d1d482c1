"""librdkafka's own consume cost per message at many partitions, two builds side by side
(callgrind): bench/native.c compiled against each librdkafka prefix reads 10 000 and then
40 000 x 1 KiB messages from ``--partitions`` partitions of the mock cluster; the difference
per message is reported with the top functions (issue 35, patch 0005).

    gcc -O2 -o /tmp/native-old bench/native.c -I OLD/include OLD/lib/librdkafka.a \
        -lssl -lcrypto -lz -lzstd -lm -ldl -lpthread -lrt
    .venv/bin/python bench/profile_native_fetch.py --partitions 2048 /tmp/native-old bench/native
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections import Counter

from profile_consume import functions


def run(prefix: list[str], binary: str, *args: str) -> dict:
    out = subprocess.run([*prefix, binary, *args], capture_output=True, text=True, timeout=3600,
                         check=False)
    lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise SystemExit(f"{binary} failed: {out.stderr[-500:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binaries", nargs="+", help="bench/native.c builds to compare")
    ap.add_argument("--partitions", type=int, default=2048)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    from rdk.testing.mock import MockClusterProcess

    work = tempfile.mkdtemp(prefix="rdk-callgrind-")
    with MockClusterProcess({"t": args.partitions}) as broker:
        bs, parts = broker.bootstrap_servers, args.partitions
        run([], args.binaries[0], "produce", f"bootstrap={bs}", "topic=t", "count=50000",
            "size=1024", f"partitions={parts}", f"chunk={max(1, 50000 // parts)}")
        for binary in args.binaries:
            runs = []
            for n in (10000, 40000):
                out = os.path.join(work, f"{os.path.basename(binary)}.{n}.out")
                r = run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"], binary,
                        "consume", f"bootstrap={bs}", "topic=t", f"count={n}", f"partitions={parts}",
                        "batch=1000", "wait=100", "C.fetch.wait.max.ms=100",
                        "C.fetch.queue.backoff.ms=10")
                runs.append((r["count"], *functions(out)))
            (n1, t1, f1), (n2, t2, f2) = runs
            diff = Counter({k: (f2[k] - f1.get(k, 0)) / (n2 - n1) for k in f2})
            print(f"{binary}: {(t2 - t1) / (n2 - n1):,.0f} instructions per message "
                  f"({n1} and {n2} read, {parts} partitions)", flush=True)
            for name, cost in diff.most_common(args.top):
                print(f"  {cost:10,.1f}  {name}", flush=True)


if __name__ == "__main__":
    main()
