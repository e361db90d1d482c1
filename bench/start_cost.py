"""Start cost, first batch, throughput and memory of a consumer against the partition count
(issue 26): rdk.Consumer (worker-slot mode, offset files) against confluent-kafka's Consumer
(``assign()`` of every partition, ``consume(num_messages=10000)`` loop).

The broker is librdkafka's mock cluster served by ``python -m rdk.mock`` in its own process
(``rdk.testing.MockClusterProcess``), one per partition count, holding two topics of 100 B
messages that this (unmeasured) process fills with rdk.Producer: ``short`` (500 k messages, or
as many as the mock keeps at that count: it keeps ~4.5 MiB per partition) and ``long`` (3 M,
only where the mock keeps them). Every measured run is a fresh process running one contender
once (``--child``), bounded in time; figures come from that process. After the fill each
contender reads the short topic once, unmeasured (``warmup`` in the JSON: the first read
after a fill was slow for whichever contender came first).

- ``fresh``: from before the Consumer is built: ``build_s`` (constructor), ``start_s``
  (rdk ``start()``; confluent-kafka ``assign()`` at OFFSET_BEGINNING), ``first_batch_s`` (the
  first batch in the callback / the first non-empty ``consume``), ``e2e_msgs_per_s`` (the
  whole short topic over the time from construction to the last message),
  ``steady_msgs_per_s`` (from the batch that passes 10 % to the last), ``peak_rss``
  (VmHWM of the process, bytes). The run ends with the progress stored: rdk's offset files,
  confluent-kafka's ``commit()`` to its group.
- ``reused``: a second process over the same offset directory (the same group id), with
  every partition's offset stored: rdk ``start()`` (locks and reads the stored offsets),
  confluent-kafka ``assign()`` at OFFSET_STORED (asynchronous: librdkafka fetches the
  committed offsets after it returns). Nothing is left to read; the run stops there.
- ``long``: a fresh process reading the long topic; ``steady_msgs_per_s`` and ``peak_rss``.

Both contenders get bench/run.py's consumer settings. Each point runs ``--repeat`` times
(contender order alternating); the JSON keeps every run and min/median per figure.

    python bench/start_cost.py          # 4, 512, 2048, 8192 partitions, 3 repeats: the JSON
                                        # (bench/start_cost.json), the PNG next to it, tables
    python bench/start_cost.py --quick  # 2 small points, 1 repeat (smoke test)
    python bench/start_cost.py --plot   # no run: tables and PNG from the existing JSON
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "start_cost.json"
MiB = 1024 * 1024
SIZE = 100
BATCH = 10000  # most messages per batch / consume call
WARMUP_FRACTION = 0.1
MOCK_PARTITION_BYTES = 4.5 * MiB  # the mock keeps ~5 MiB per partition (as bench/run.py)
RECORD_OVERHEAD = 16
SHORT_COUNT = 500_000
LONG_COUNT = 3_000_000
POINTS = [4, 512, 2048, 8192]
QUICK_POINTS = [4, 64]
QUICK_SHORT = 40_000
RUN_TIMEOUT = 240.0  # the most one child may take
IDLE = 30.0  # a child that got nothing new for this long gives up
SETTLE = 3.0  # seconds between filling the topics and the first measured run
CONTENDERS = ["rdk", "confluent-kafka"]
# bench/run.py's consumer settings, for both contenders (rdk takes the last as a keyword)
CONSUMER_SETTINGS: dict[str, Any] = {
    "fetch.queue.backoff.ms": 10,
    "fetch.wait.max.ms": 100,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "queued.max.messages.kbytes": 65536,
}
PRODUCER_SETTINGS: dict[str, Any] = {
    "linger.ms": 5, "batch.num.messages": 10000, "batch.size": 1000000, "acks": "all",
    "compression.type": "none", "enable.idempotence": "false",
}
FIGURES = {  # figure -> (kinds of run that report it, lower is better)
    "start_s": (("fresh", "reused"), True),
    "build_s": (("fresh", "reused"), True),
    "first_batch_s": (("fresh",), True),
    "e2e_msgs_per_s": (("fresh",), False),
    "steady_msgs_per_s": (("fresh", "long"), False),
    "peak_rss": (("fresh", "reused", "long"), True),
}


# ---- the measured child --------------------------------------------------------------

def peak_rss() -> int:
    """VmHWM of this process, bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class Clock:
    """Times of one consuming run, from ``t0`` (before the Consumer is built)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.t0 = time.perf_counter()
        self.got = 0
        self.first = self.warm = self.last = 0.0
        self.warm_got = 0
        self.bad = 0
        self.done = threading.Event()
        self.seen = time.monotonic()

    def batch(self, n: int, arrived: float) -> None:
        if not self.first:
            self.first = arrived
        self.got += n
        if not self.warm and self.got > self.count * WARMUP_FRACTION:
            self.warm, self.warm_got = arrived, self.got
        self.last = time.perf_counter()
        self.seen = time.monotonic()
        if self.got >= self.count:
            self.done.set()

    def alive(self, deadline: float) -> bool:
        now = time.monotonic()
        return now < deadline and now - self.seen < IDLE

    def result(self, timed: dict[str, float]) -> dict[str, Any]:
        if self.got != self.count or self.bad:
            raise SystemExit(f"consumed {self.got} of {self.count} messages ({self.bad} batches "
                             "with a wrong size)")
        out = {**timed, "count": self.got, "first_batch_s": self.first - self.t0,
               "e2e_msgs_per_s": self.got / (self.last - self.t0)}
        if self.last > self.warm:
            out["steady_msgs_per_s"] = (self.got - self.warm_got) / (self.last - self.warm)
        return out


def child_rdk(job: dict[str, Any]) -> dict[str, Any]:
    from rdk import Consumer

    clock = Clock(job["count"])

    def receive(info: Any) -> None:
        arrived = time.perf_counter()
        msgs = info.messages
        for m in msgs:
            if len(m.value) != SIZE:
                clock.bad += 1
        clock.batch(len(msgs), arrived)

    driver = {k: v for k, v in CONSUMER_SETTINGS.items() if k != "queued.max.messages.kbytes"}
    t0 = clock.t0 = time.perf_counter()
    c = Consumer(job["bootstrap"], job["topic"], job["offset_dir"], receive,
                 max_messages_per_callback=BATCH, driver_options=driver,
                 queued_max_messages_kbytes=CONSUMER_SETTINGS["queued.max.messages.kbytes"])
    t1 = time.perf_counter()
    c.start()
    t2 = time.perf_counter()
    timed = {"build_s": t1 - t0, "start_s": t2 - t1}
    if job["kind"] == "reused":
        c.stop()
        return {**timed, "peak_rss": peak_rss()}
    deadline = time.monotonic() + job["timeout"]
    while not clock.done.wait(0.05) and clock.alive(deadline):
        pass
    rss = peak_rss()
    c.stop()
    return {**clock.result(timed), "peak_rss": max(rss, peak_rss())}


def child_confluent(job: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_STORED, Consumer, TopicPartition

    clock = Clock(job["count"])
    conf = {"bootstrap.servers": job["bootstrap"], "group.id": job["group"],
            "enable.auto.commit": False, "enable.partition.eof": False, **CONSUMER_SETTINGS}
    reused = job["kind"] == "reused"
    t0 = clock.t0 = time.perf_counter()
    c = Consumer(conf)
    t1 = time.perf_counter()
    start = OFFSET_STORED if reused else OFFSET_BEGINNING
    c.assign([TopicPartition(job["topic"], p, start) for p in range(job["partitions"])])
    t2 = time.perf_counter()
    timed = {"build_s": t1 - t0, "start_s": t2 - t1}
    if reused:
        c.close()
        return {**timed, "peak_rss": peak_rss()}
    deadline = time.monotonic() + job["timeout"]
    while not clock.done.is_set() and clock.alive(deadline):
        msgs = c.consume(BATCH, 1.0)
        if not msgs:
            continue
        arrived = time.perf_counter()
        for m in msgs:
            if m.error() is not None or len(m.value()) != SIZE:
                clock.bad += 1
        clock.batch(len(msgs), arrived)
    rss = peak_rss()
    if job["kind"] == "fresh":
        c.commit(asynchronous=False)  # the stored progress the reused run starts from
    c.close()
    return {**clock.result(timed), "peak_rss": max(rss, peak_rss())}


def child(job_json: str) -> int:
    job = json.loads(job_json)
    run = child_rdk if job["contender"] == "rdk" else child_confluent
    print("RESULT " + json.dumps(run(job)), flush=True)
    return 0


# ---- the harness -----------------------------------------------------------------------

def mock_capacity(partitions: int) -> int:
    return int(partitions * MOCK_PARTITION_BYTES // (SIZE + RECORD_OVERHEAD))


def whole(count: int) -> int:
    """``count`` rounded down to whole batches (confluent-kafka's consume(n, timeout) would
    wait its whole timeout for a remainder)."""
    return count // BATCH * BATCH if count >= BATCH else count


def fill(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    """Put ``count`` 100 B messages evenly on ``topic``; seconds it took."""
    from rdk import Producer

    failed: list[int] = [0]

    def on_report(info: Any) -> None:
        failed[0] += len(info.errors)

    payload = bytes(range(97, 123)) * (SIZE // 26 + 1)
    t0 = time.perf_counter()
    p = Producer(bootstrap, delivery_report_callback=on_report, on_queue_full="block",
                 queue_buffering_max_messages=2_000_000, queue_buffering_max_ms=5,
                 driver_options={k: v for k, v in PRODUCER_SETTINGS.items() if k != "linger.ms"})
    per, extra = divmod(count, partitions)
    for part in range(partitions):
        n = per + (part < extra)
        for i in range(0, n, BATCH):
            p.send(topic, part, [payload[:SIZE]] * min(BATCH, n - i))
    left = p.flush(300)
    p.stop()
    if failed[0] or left:
        raise RuntimeError(f"filling {topic}: {failed[0]} failed deliveries, {left}")
    return time.perf_counter() - t0


def run_child(job: dict[str, Any], log: Any) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(job)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=job["timeout"] + 30,
                              check=False)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {job['timeout'] + 30:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    log(f"    {job['contender']} {job['kind']} failed: {done.stderr[-2000:]}")
    return {"failed": why}


def summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def measure_point(partitions: int, short: int, long: int | None, repeat: int,
                  log: Any) -> dict[str, Any]:
    from rdk.testing import MockClusterProcess

    point: dict[str, Any] = {"partitions": partitions, "short_count": short}
    if long:
        point["long_count"] = long
    else:
        point["long_skipped"] = (f"the mock keeps ~{mock_capacity(partitions):,} x 100 B at "
                                 f"{partitions} partitions, not {LONG_COUNT:,}")
    topics = {"short": partitions, **({"long": partitions} if long else {})}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        c: {"fresh": [], "reused": [], "long": []} for c in CONTENDERS}
    with MockClusterProcess(topics) as broker, \
            tempfile.TemporaryDirectory(prefix="rdk-start-cost-") as tmp:
        boot = broker.bootstrap_servers
        point["fill_s"] = fill(boot, "short", partitions, short)
        if long:
            point["fill_s"] += fill(boot, "long", partitions, long)
        time.sleep(SETTLE)  # the mock answers slowly for a while after a big fill
        # one unmeasured read of the short topic by each contender: the first read after a
        # fill was slow for whoever came first (2048 and 8192 partitions, 2026-11-25)
        point["warmup"] = [run_child({"contender": c, "bootstrap": boot, "partitions": partitions,
                                      "timeout": RUN_TIMEOUT, "group": f"warmup-{i}",
                                      "offset_dir": os.path.join(tmp, f"warmup-{i}"),
                                      "kind": "fresh", "topic": "short", "count": short}, log)
                           for i, c in enumerate(CONTENDERS)]
        for rep in range(repeat):
            order = CONTENDERS if rep % 2 == 0 else CONTENDERS[::-1]
            for contender in order:
                tag = f"{contender.replace('-', '')}-{rep + 1}"
                base = {"contender": contender, "bootstrap": boot, "partitions": partitions,
                        "timeout": RUN_TIMEOUT, "group": f"start-cost-{tag}",
                        "offset_dir": os.path.join(tmp, tag)}
                kinds = [("fresh", "short", short), ("reused", "short", 0)]
                if long:
                    kinds.append(("long", "long", long))
                for kind, topic, count in kinds:
                    job = {**base, "kind": kind, "topic": topic, "count": count}
                    if kind == "long":
                        job.update(group=job["group"] + "-long",
                                   offset_dir=job["offset_dir"] + "-long")
                    result = run_child(job, log)
                    if "failed" in result:  # once more; the failure stays in the JSON
                        point.setdefault("failures", []).append(
                            {"contender": contender, "kind": kind, "rep": rep + 1,
                             "error": result["failed"]})
                        if kind != "reused":  # a new directory and group: nothing stored
                            job.update(group=job["group"] + "-retry",
                                       offset_dir=job["offset_dir"] + "-retry")
                        if kind == "fresh":  # the reused run starts from the retry's
                            base.update(group=job["group"], offset_dir=job["offset_dir"])
                        result = run_child(job, log)
                    runs[contender][kind].append(result)
                    log(f"  {partitions:>5} partitions  {contender:<15} {kind:<6} rep {rep + 1}: "
                        + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                    for k, v in result.items()))
    point["runs"] = runs
    point["summary"] = summarise(runs)
    return point


def summarise(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """{contender: {kind: {figure: {min, median, max}}}} over the runs that did not fail."""
    out: dict[str, Any] = {}
    for contender, kinds in runs.items():
        for kind, results in kinds.items():
            ok = [r for r in results if "failed" not in r]
            for figure, (where, _) in FIGURES.items():
                values = [r[figure] for r in ok if figure in r]
                if kind in where and values:
                    out.setdefault(contender, {}).setdefault(kind, {})[figure] = summary(values)
    return out


def med(point: dict[str, Any], contender: str, kind: str, figure: str) -> float | None:
    cell = point["summary"].get(contender, {}).get(kind, {}).get(figure)
    return cell["median"] if cell else None


def goals(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's goals, on medians: each with the figure, the limit and whether it holds."""
    out = []

    def add(name: str, partitions: int, value: float | None, limit: float | None,
            lower_is_better: bool) -> None:
        entry: dict[str, Any] = {"goal": name, "partitions": partitions}
        if value is None or limit is None:
            entry["status"] = "unknown"
        else:
            ok = value <= limit if lower_is_better else value >= limit
            entry.update(value=value, limit=limit, status="holds" if ok else "MISSED")
        out.append(entry)

    for p in points:
        n = p["partitions"]
        if n == 2048:
            add("rdk start() <= 0.1 s at 2048 partitions (fresh)", n,
                med(p, "rdk", "fresh", "start_s"), 0.1, True)
            add("rdk start() <= 0.1 s at 2048 partitions (reused)", n,
                med(p, "rdk", "reused", "start_s"), 0.1, True)
        c_first = med(p, "confluent-kafka", "fresh", "first_batch_s")
        add("first batch <= 2 x confluent-kafka's", n, med(p, "rdk", "fresh", "first_batch_s"),
            2 * c_first if c_first else None, True)
        for kind, figure, what in (("fresh", "e2e_msgs_per_s", "short run, from construction"),
                                   ("fresh", "steady_msgs_per_s", "short run, steady"),
                                   ("long", "steady_msgs_per_s", "long run, steady")):
            if kind == "long" and "long_count" not in p:
                continue
            c = med(p, "confluent-kafka", kind, figure)
            add(f"consume >= 1.3 x confluent-kafka ({what})", n, med(p, "rdk", kind, figure),
                1.3 * c if c else None, False)
        for kind in ("fresh", "long"):
            if kind == "long" and "long_count" not in p:
                continue
            c = med(p, "confluent-kafka", kind, "peak_rss")
            add(f"peak RSS <= confluent-kafka + 20 % ({'short' if kind == 'fresh' else 'long'} run)",
                n, med(p, "rdk", kind, "peak_rss"), 1.2 * c if c else None, True)
    return out


def fmt(v: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if v is None else format(v / scale, spec)


def table(data: dict[str, Any]) -> str:
    """One markdown table: medians (min) per partition count and contender."""
    head = ["partitions", "contender", "start fresh s", "start reused s", "first batch s",
            "short msg/s (e2e)", "short msg/s (steady)", "long msg/s", "peak RSS MiB short",
            "peak RSS MiB long"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["--:"] * len(head)) + "|"]

    def cell(p: dict[str, Any], c: str, kind: str, figure: str, spec: str,
             scale: float = 1.0) -> str:
        s = p["summary"].get(c, {}).get(kind, {}).get(figure)
        if not s:
            return "-"
        return f"{fmt(s['median'], spec, scale)} ({fmt(s['min'], spec, scale)})"

    for p in data["points"]:
        for c in CONTENDERS:
            lines.append("| " + " | ".join([
                str(p["partitions"]), c,
                cell(p, c, "fresh", "start_s", ".3f"), cell(p, c, "reused", "start_s", ".3f"),
                cell(p, c, "fresh", "first_batch_s", ".3f"),
                cell(p, c, "fresh", "e2e_msgs_per_s", ".2f", 1e6) + " M",
                cell(p, c, "fresh", "steady_msgs_per_s", ".2f", 1e6) + " M",
                cell(p, c, "long", "steady_msgs_per_s", ".2f", 1e6) + " M",
                cell(p, c, "fresh", "peak_rss", ".0f", MiB),
                cell(p, c, "long", "peak_rss", ".0f", MiB)]) + " |")
    counts = ", ".join(f"{p['partitions']}: short {p['short_count']:,}"
                       + (f", long {p['long_count']:,}" if "long_count" in p else ", no long run")
                       for p in data["points"])
    return "\n".join(lines) + f"\n\nMedian (min; max for msg/s is in the JSON). Messages: {counts}."


def goal_table(data: dict[str, Any]) -> str:
    lines = ["| goal | partitions | rdk | limit | status |", "|---|--:|--:|--:|---|"]
    for g in data["goals"]:
        spec, scale = (".0f", MiB) if "RSS" in g["goal"] else (".3f", 1.0)
        if "msg" in g["goal"] or "consume" in g["goal"]:
            spec, scale = ".2f", 1e6
        lines.append(f"| {g['goal']} | {g['partitions']} | {fmt(g.get('value'), spec, scale)} | "
                     f"{fmt(g.get('limit'), spec, scale)} | {g['status']} |")
    return "\n".join(lines) + "\n\n(msg/s in M, RSS in MiB, times in s; medians.)"


def plot(data: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("start() / assign() (s)", [("fresh", "start_s", "fresh"),
                                          ("reused", "start_s", "reused")]),
              ("first batch from construction (s)", [("fresh", "first_batch_s", "")]),
              ("msg/s", [("fresh", "e2e_msgs_per_s", "short, e2e"),
                         ("long", "steady_msgs_per_s", "long, steady")]),
              ("peak RSS (MiB)", [("fresh", "peak_rss", "short"), ("long", "peak_rss", "long")])]
    colours = {"rdk": "tab:blue", "confluent-kafka": "tab:orange"}
    styles = ["-", "--"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, (title, series) in zip(axes.flat, panels, strict=True):
        for c in CONTENDERS:
            for (kind, figure, label), style in zip(series, styles, strict=False):
                xs, ys = [], []
                for p in data["points"]:
                    v = med(p, c, kind, figure)
                    if v:
                        xs.append(p["partitions"])
                        ys.append(v / MiB if figure == "peak_rss" else v)
                if xs:
                    ax.plot(xs, ys, style, marker="o", color=colours[c],
                            label=f"{c} {label}".strip())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = [p["partitions"] for p in data["points"]]
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("partitions")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    meta = data["meta"]
    fig.suptitle(f"rdk vs confluent-kafka on the mock cluster, 100 B messages "
                 f"(medians of {meta['repeat']}; {meta['date']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="2 small points, 1 repeat")
    ap.add_argument("--repeat", type=int, default=None, help="runs per point (default 3)")
    ap.add_argument("--partitions", help="comma-separated counts (default 4,512,2048,8192)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON (bench/start_cost.json)")
    ap.add_argument("--plot", action="store_true",
                    help="no run: the table and the PNG (next to --out) from the existing JSON")
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if args.plot:
        data = json.loads(args.out.read_text())
    else:
        points = QUICK_POINTS if args.quick else POINTS
        if args.partitions:
            points = [int(x) for x in args.partitions.split(",")]
        repeat = args.repeat or (1 if args.quick else 3)
        data = {"meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": args.quick, "repeat": repeat,
            "size": SIZE, "batch": BATCH, "consumer_settings": CONSUMER_SETTINGS,
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_average_start": list(os.getloadavg()),
            "versions": versions(),
            "note": "shared machine: other jobs ran during the measurement"},
            "points": []}
        t0 = time.perf_counter()
        for n in points:
            cap = whole(mock_capacity(n))
            short = min(whole(QUICK_SHORT if args.quick else SHORT_COUNT), cap)
            long = None if args.quick or cap < LONG_COUNT else LONG_COUNT
            log(f"{n} partitions: short {short:,}, long {long or 'skipped'}")
            data["points"].append(measure_point(n, short, long, repeat, log))
        data["meta"]["load_average_end"] = list(os.getloadavg())
        data["meta"]["seconds"] = time.perf_counter() - t0
        data["goals"] = goals(data["points"])
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        log(f"wrote {args.out}")
    print(table(data))
    print()
    print(goal_table(data))
    png = args.out.with_suffix(".png")
    plot(data, png)
    log(f"wrote {png}")
    failed = [(p["partitions"], c, k) for p in data["points"] for c, kinds in p["runs"].items()
              for k, rs in kinds.items() for r in rs if "failed" in r]
    if failed:
        log(f"failed runs: {failed}")
    return 1 if failed else 0


def versions() -> dict[str, str]:
    out = {}
    try:
        import confluent_kafka

        v = confluent_kafka.version()  # a str in 2.x, (str, int) in older releases
        out["confluent-kafka"] = v if isinstance(v, str) else v[0]
        out["confluent librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    import rdk

    out["rdk"] = getattr(rdk, "__version__", "?")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
