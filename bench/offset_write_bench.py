"""What one commit of many offset files costs: a fresh temp file renamed over each offset
file (``rdk.offsets.write_offset_files``, what every commit did before 2026-11-30) against the
consumer's ``FileOffsetStore``, which keeps one temp file per partition and swaps names
with the offset file (``OffsetFileWriter``, ``renameat2(RENAME_EXCHANGE)``).

Each way runs in its own process, the order alternating, ``--repeat`` times. A process
writes ``--partitions`` offset files once (creating them, not timed), then ``--commits``
commits of every partition, timed one by one (wall time and the writing thread's CPU).
Commits are ``--gap`` seconds apart, as a consumer's commits of thousands of partitions are
(its CPU-share bound spaces them seconds apart): the kept temp files are rewritten only
after ``SHADOW_SETTLE_SECONDS``. The file system is the one of ``--dir`` (default: the
system's temp directory).

    .venv/bin/python bench/offset_write_bench.py --out docs/data/offset_writes.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WAYS = ("rename", "swap")


def child(way: str, directory: str, partitions: int, commits: int, gap: float) -> dict:
    from rdk.offsets import FileOffsetStore, _files, read_offset_file, write_offset_files

    topic = "bench-offsets"
    store = FileOffsetStore(directory, topic)

    def commit(value: int) -> None:
        offsets = {p: value for p in range(partitions)}
        if way == "rename":
            write_offset_files(directory, topic, offsets)
        else:
            store.commit(offsets)

    commit(1_000_000)  # the files exist from here on, as in a consumer's steady state
    walls, cpus = [], []
    for i in range(commits):
        time.sleep(gap)  # the consumer's pause between two commits, not a synchronisation
        t, c = time.perf_counter(), time.thread_time()
        commit(1_000_001 + i)
        walls.append(time.perf_counter() - t)
        cpus.append(time.thread_time() - c)
    last = read_offset_file(os.path.join(directory, f"{topic}-{partitions - 1}.offset"))
    assert last == 1_000_000 + commits, last
    store.close()
    return {"way": way, "wall_s": walls, "cpu_s": cpus,
            "exchange": way == "swap" and _files._renameat2 is not None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=2048)
    ap.add_argument("--commits", type=int, default=4)
    ap.add_argument("--gap", type=float, default=0.6, help="seconds between two commits")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", help="where the offset directories go (its file system is measured)")
    ap.add_argument("--out", help="write the figures to this JSON file")
    ap.add_argument("--child", nargs=2, metavar=("WAY", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.partitions, args.commits, args.gap)))
        return
    started, load_before = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.getloadavg()
    runs = []
    for r in range(args.repeat):
        for way in WAYS if r % 2 == 0 else WAYS[::-1]:
            d = tempfile.mkdtemp(prefix="rdk-offset-bench-", dir=args.dir)
            try:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", way, d, "--partitions", str(args.partitions),
                     "--commits", str(args.commits), "--gap", str(args.gap)],
                    capture_output=True, text=True, check=True, timeout=600).stdout
            finally:
                shutil.rmtree(d, ignore_errors=True)
            runs.append(json.loads(out.strip().splitlines()[-1]))
    summary = {}
    for way in WAYS:
        mine = [r for r in runs if r["way"] == way]
        walls = [statistics.median(r["wall_s"]) for r in mine]
        cpus = [statistics.median(r["cpu_s"]) for r in mine]
        summary[way] = {"commit_wall_ms": round(1000 * statistics.median(walls), 1),
                        "commit_cpu_ms": round(1000 * statistics.median(cpus), 1),
                        "cpu_us_per_file": round(1e6 * statistics.median(cpus) / args.partitions, 1),
                        "runs": len(mine)}
    result = {"meta": {"command": "python " + " ".join([os.path.relpath(__file__), *sys.argv[1:]]),
                       "started": started, "load_average_before": load_before,
                       "load_average_after": os.getloadavg(), "cpus": os.cpu_count(),
                       "platform": platform.platform(), "partitions": args.partitions,
                       "commits_per_run": args.commits, "gap_s": args.gap},
              "summary": summary, "runs": runs}
    for way, s in summary.items():
        print(f"{way:7s} one commit of {args.partitions} files: {s['commit_wall_ms']} ms wall, "
              f"{s['commit_cpu_ms']} ms CPU ({s['cpu_us_per_file']} us per file), median of "
              f"{s['runs']} runs")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
