"""The documentation's plots, drawn from the benchmark result files in docs/data/.

    .venv/bin/python scripts/plots.py [--data docs/data] [--out docs/assets/plots]

One SVG per plot (matplotlib, Agg backend), deterministic: no date in the metadata, a fixed
hash salt for the element ids, text kept as text. docs/performance.md shows them next to the
tables of the same files; ``scripts/docs.sh build`` runs this first. Each data file is the
JSON a benchmark wrote (its command, date and machine are in it, or, where the bench does not
record them, in ``<name>.meta.json`` beside it):

- ``scale_partitions.json``: ``bench/run.py --family scale`` (partition sweep) -> throughput_partitions.svg
- ``java_peer.json``: ``bench/java_peer.py`` -> java_peer_throughput.svg, java_peer_cpu.svg,
  latency_percentiles.svg
- ``spark_bench.json``: ``bench/spark_bench.py --json`` -> spark_rows.svg
- ``start_cost.json``: ``bench/start_cost.py`` -> start_cost.svg
- ``share_bench.json``: ``bench/share_bench.py`` -> share_throughput.svg

(``core_mock.json``, ``bench/run.py``'s core family, backs the page's summary table; no plot.)

A missing or malformed file stops it with the file and the key named (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
OUT = ROOT / "docs" / "assets" / "plots"

COLOURS = {"rdk": "tab:blue", "confluent-kafka": "tab:orange", "native C": "tab:green",
           "rdk no-op store": "tab:purple", "Java client": "tab:red"}


class DataError(Exception):
    """A result file is missing or does not hold what a plot needs."""


class Data:
    """One result file; ``get`` names the file and the key path when a key is missing."""

    def __init__(self, path: Path, made_by: str) -> None:
        self.path = path
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise DataError(f"{path}: file not found (it is the output of `{made_by}`)") from None
        try:
            self.doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: not valid JSON ({e})") from None

    def get(self, *keys: str | int, number: bool = False, within: Any = None) -> Any:
        """doc[k1][k2]...; ``within`` starts from that sub-document instead (its keys are
        appended to the path given in the message). ``number``: the value must be a number."""
        node = self.doc if within is None else within
        for i, key in enumerate(keys):
            where = ".".join(str(k) for k in keys[: i + 1])
            in_dict = isinstance(node, dict) and key in node
            in_list = isinstance(node, list) and isinstance(key, int) and -len(node) <= key < len(node)
            if in_dict or in_list:
                node = node[key]
            else:
                raise DataError(f"{self.path}: missing key {where!r}")
        if number and (isinstance(node, bool) or not isinstance(node, int | float)
                       or not math.isfinite(node)):
            raise DataError(f"{self.path}: key {'.'.join(str(k) for k in keys)!r} should be a "
                            f"number, not {node!r}")
        return node


# ---- figure helpers ------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({
        "svg.hashsalt": "rdk-docs",  # element ids the same on every run
        "svg.fonttype": "none",  # text as text: smaller, searchable
        "font.size": 9,
        "axes.titlesize": 10,
        "legend.fontsize": 8,
    })
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "scripts/plots.py"})
    import matplotlib.pyplot as plt

    plt.close(fig)


def _millions(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:g} M"))


def _partition_axis(ax, points: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(points, [f"{p:,}" for p in points])
    ax.minorticks_off()
    ax.set_xlabel("partitions")


# ---- (a) throughput against partitions: bench/run.py --family scale ---------------------------

SCALE_PATHS = [("consume", "consume 100 B into message objects"),
               ("arrow", "consume 100 B into Arrow"),
               ("produce", "produce 100 B, explicit partitions")]


def throughput_partitions(data: Data, out: Path) -> Path:
    scenarios = data.get("scenarios")
    summary = data.get("summary")
    if not isinstance(scenarios, list) or not scenarios:
        raise DataError(f"{data.path}: key 'scenarios' should be a non-empty list")
    sweep: dict[str, list[tuple[int, str]]] = {}
    for i in range(len(scenarios)):
        if data.get("scenarios", i, "axis") == "partitions":
            kind = data.get("scenarios", i, "kind")
            sweep.setdefault(kind, []).append((data.get("scenarios", i, "point", number=True),
                                               data.get("scenarios", i, "name")))
    kinds = [(k, t) for k, t in SCALE_PATHS if k in sweep]
    if not kinds:
        raise DataError(f"{data.path}: no scenario with axis 'partitions' (key 'scenarios')")
    brokers = [b for b in ("mock", "tansu") if b in summary] or sorted(summary)
    if not brokers:
        raise DataError(f"{data.path}: key 'summary' holds no broker")
    plt = _pyplot()
    fig, axes = plt.subplots(len(brokers), len(kinds), figsize=(4.2 * len(kinds), 3.4 * len(brokers)),
                             squeeze=False, sharex=True)
    for row, broker in zip(axes, brokers, strict=True):
        for ax, (kind, title) in zip(row, kinds, strict=True):
            points = sorted(sweep[kind])
            contenders: list[str] = []
            for _, name in points:
                for c in data.get("summary", broker, name):
                    if c not in contenders:
                        contenders.append(c)
            for c in contenders:
                xs, ys = [], []
                for point, name in points:
                    cell = data.get("summary", broker, name).get(c)
                    if cell and cell.get("msgs_per_s") is not None:
                        xs.append(point)
                        ys.append(data.get("summary", broker, name, c, "msgs_per_s", number=True))
                ax.plot(xs, ys, marker="o", color=COLOURS.get(c, "tab:gray"), label=c,
                        linestyle=":" if "no-op" in c else "-")
            _partition_axis(ax, [p for p, _ in points])
            _millions(ax)
            ax.set_ylim(bottom=0)
            ax.set_ylabel("messages / s (median)")
            ax.set_title(f"{broker}: {title}")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower left")
    fig.suptitle("Throughput against partitions, 100 B messages: each contender in its own process, "
                 "in the same run (median of runs)", fontsize=9)
    fig.tight_layout()
    path = out / "throughput_partitions.svg"
    _save(fig, path)
    return path


# ---- Apache Kafka: rdk, confluent-kafka, Java client: bench/java_peer.py ------------------------

JAVA_PEERS = [("rdk", "rdk"), ("rdk Arrow", "rdk Arrow"), ("confluent-kafka", "confluent-kafka"),
              ("java", "Java client"), ("native C", "native C")]
COLOURS["rdk Arrow"] = "tab:cyan"


def _java_peer_bars(data: Data, out: Path, figure: str, ylabel: str, name: str,
                    title: str) -> Path:
    """One panel per (size, produce|consume), bars per peer at each partition count; a peer the
    cell lacks (rdk Arrow does not produce) leaves its slot empty."""
    sizes = data.get("meta", "plan", "sizes")
    partitions = data.get("meta", "plan", "partitions")
    cells = data.get("summary", "throughput")
    plt = _pyplot()
    fig, axes = plt.subplots(len(sizes), 2, figsize=(10, 3.3 * len(sizes)), squeeze=False)
    width = 0.8 / len(JAVA_PEERS)
    for row, size in zip(axes, sizes, strict=True):
        for ax, kind in zip(row, ("produce", "consume"), strict=True):
            for i, (peer, label) in enumerate(JAVA_PEERS):
                xs, med, low = [], [], []
                for x, p in enumerate(partitions):
                    key = f"{kind} {size}B {p}p"
                    if key not in cells:
                        raise DataError(f"{data.path}: key 'summary' > 'throughput' > {key!r} is missing")
                    stats = cells[key]["peers"].get(peer, {}).get(figure)
                    if not stats:
                        continue
                    xs.append(x + (i - (len(JAVA_PEERS) - 1) / 2) * width)
                    med.append(data.get("summary", "throughput", key, "peers", peer, figure,
                                        "median", number=True))
                    low.append(data.get("summary", "throughput", key, "peers", peer, figure,
                                        "min", number=True))
                if not xs:
                    continue
                ax.bar(xs, med, width, color=COLOURS[label], label=label)
                ax.errorbar(xs, med, yerr=[[m - lo for m, lo in zip(med, low, strict=True)],
                                           [0] * len(med)],
                            fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
            ax.set_xticks(range(len(partitions)), [f"{p:,} partitions" for p in partitions])
            ax.set_yscale("log")
            ax.set_ylabel(ylabel, fontsize=8)
            ax.set_title(f"{kind} {size:,} B messages")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"{title} on {data.get('meta', 'broker')}, each peer in its own process, "
                 "in one run", fontsize=9)
    fig.tight_layout()
    path = out / name
    _save(fig, path)
    return path


def java_peer_throughput(data: Data, out: Path) -> Path:
    return _java_peer_bars(data, out, "msgs_per_s", "messages / s (median; whisker: min; log)",
                           "java_peer_throughput.svg", "Throughput")


def java_peer_cpu(data: Data, out: Path) -> Path:
    return _java_peer_bars(data, out, "cpu_us_per_msg", "client CPU µs / message (median; log)",
                           "java_peer_cpu.svg", "Client CPU per message")


PERCENTILES = [("p50_ms", "p50"), ("p99_ms", "p99"), ("p999_ms", "p99.9")]
RATE_STYLES = {1000: ("-", "o"), 10000: ("--", "s"), 50000: (":", "^")}


def latency_percentiles(data: Data, out: Path) -> Path:
    from matplotlib.ticker import FuncFormatter

    rates = data.get("meta", "plan", "rates")
    lingers = data.get("meta", "plan", "lingers")
    java = [data.get("summary", "latency", "java_e2e", "peers", "java", key, "median", number=True)
            for key, _ in PERCENTILES]
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(lingers), figsize=(4.2 * len(lingers), 3.8), sharey=True,
                             squeeze=False)
    xs = list(range(len(PERCENTILES)))
    top = max(java)
    for ax, linger in zip(axes[0], lingers, strict=True):
        for rate in rates:
            key = f"{rate}/s linger {linger}"
            line, marker = RATE_STYLES.get(rate, ("-.", "x"))
            for peer in ("rdk", "confluent-kafka"):
                ys = [data.get("summary", "latency", key, "peers", peer, p, "median", number=True)
                      for p, _ in PERCENTILES]
                top = max(top, *ys)
                ax.plot(xs, ys, linestyle=line, marker=marker, color=COLOURS[peer],
                        label=f"{peer}, {rate:,} msg/s")
        if linger == 0:  # EndToEndLatency runs with linger.ms=0
            ax.plot(xs, java, color=COLOURS["Java client"], marker="D", linestyle="-.",
                    label="Java EndToEndLatency (one message at a time, whole ms)")
        ax.set_xticks(xs, [label for _, label in PERCENTILES])
        ax.set_xlabel("percentile")
        ax.set_title("linger: each client's default\n(rdk 250 ms, librdkafka 5 ms)" if linger == "default"
                     else f"linger {linger} ms")
        ax.grid(True, which="both", alpha=0.3)
    # symmetric log: EndToEndLatency prints whole milliseconds, so its p50 can be 0
    axes[0][0].set_yscale("symlog", linthresh=1)
    axes[0][0].set_ylim(0, top * 1.6)
    axes[0][0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0][0].set_ylabel("latency, ms (median of runs; log above 1)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.suptitle(f"End-to-end latency percentiles, 100 B, 4 partitions, paced producer and consumer "
                 f"in one process, on {data.get('meta', 'broker')}", fontsize=9)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    path = out / "latency_percentiles.svg"
    _save(fig, path)
    return path


# ---- (c) Spark rows/s: bench/spark_bench.py --json ----------------------------------------------

SPARK_CONTENDERS = [("ceiling", "Spark's ceiling (in-memory Arrow)", "tab:gray"),
                    ("rdk", "rdk rdkafka source", COLOURS["rdk"]),
                    ("jvm", "Spark's JVM Kafka connector", "tab:red"),
                    ("naive", "naive (driver-side confluent-kafka read)", "tab:olive")]
SPARK_QUERIES = [("count_s", "count()"), ("groupby_s", "groupBy(key).count()"),
                 ("both_s", "count + groupBy")]


def spark_rows(data: Data, out: Path) -> Path:
    """rdkafka against the ceiling and the naive way (spark_bench.json)."""
    return _spark_plot(data, out, "spark_rows.svg")


def spark_jvm(data: Data, out: Path) -> Path:
    """rdkafka against Spark's own JVM connector on Apache Kafka (spark_jvm.json): every
    scenario of the run (``scenarios``), or the two batch queries of an older file."""
    data.get("results", "jvm")
    if "scenarios" not in data.doc:
        return _spark_plot(data, out, "spark_jvm.svg")
    names = data.get("scenario_names")
    present = [c for c in SPARK_CONTENDERS if c[0] in data.get("scenarios", names[0])]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 3.8))
    width = 0.8 / len(present)
    for i, (key, label, colour) in enumerate(present):
        ys = [data.get("scenarios", name, key, "rows_per_s", number=True) for name in names]
        xs = [x + (i - (len(present) - 1) / 2) * width for x in range(len(names))]
        bars = ax.bar(xs, ys, width, label=label, color=colour)
        ax.bar_label(bars, [f"{y / 1e3:,.0f} k" for y in ys], fontsize=7)
    ax.set_xticks(range(len(names)), names)
    title = (f"Spark, {data.get('messages', number=True):,} x {data.get('value_size')} B in "
             f"{data.get('partitions')} partitions, local[2], Apache Kafka")
    return _finish_bars(fig, ax, out / "spark_jvm.svg", "rows / s (median)", title, fontsize=8)


def _finish_bars(fig, ax, path: Path, ylabel: str, title: str, **legend: Any) -> Path:
    """Millions on the y axis, its label, a grid, the legend and the title; saved to ``path``."""
    _millions(ax)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(**legend)
    ax.set_title(title)
    fig.tight_layout()
    _save(fig, path)
    return path


def _spark_plot(data: Data, out: Path, name: str) -> Path:
    rows = data.get("messages", number=True)
    results = data.get("results")
    present = [c for c in SPARK_CONTENDERS if c[0] in results]
    for k in ("ceiling", "rdk"):
        data.get("results", k)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.8 / len(present)
    for i, (key, label, colour) in enumerate(present):
        ys = []
        for q, _ in SPARK_QUERIES:
            if q == "both_s" and q not in results[key]:  # written by report() for every contender
                seconds = (data.get("results", key, "count_s", number=True)
                           + data.get("results", key, "groupby_s", number=True))
            else:
                seconds = data.get("results", key, q, number=True)
            ys.append(rows / seconds)
        xs = [x + (i - (len(present) - 1) / 2) * width for x in range(len(SPARK_QUERIES))]
        bars = ax.bar(xs, ys, width, label=label, color=colour)
        ax.bar_label(bars, [f"{y / 1e3:,.0f} k" for y in ys], fontsize=7)
    ax.set_xticks(range(len(SPARK_QUERIES)), [q for _, q in SPARK_QUERIES])
    _millions(ax)
    ax.set_ylabel("rows / s (median)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    ax.set_title(f"Spark batch read, {rows:,} x {data.get('value_size')} B in "
                 f"{data.get('partitions')} partitions, local[2], broker {data.get('broker')}")
    fig.tight_layout()
    path = out / name
    _save(fig, path)
    return path


# ---- (d) start cost and first batch against partitions: bench/start_cost.py ---------------------

START_PEERS = ["rdk", "confluent-kafka"]


def start_cost(data: Data, out: Path) -> Path:
    points = data.get("points")
    if not isinstance(points, list) or not points:
        raise DataError(f"{data.path}: key 'points' should be a non-empty list")
    parts = [data.get("points", i, "partitions", number=True) for i in range(len(points))]
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))

    def series(peer: str, *keys: str) -> tuple[list[int], list[float]]:
        xs, ys = [], []
        for i, p in enumerate(parts):
            summary = data.get("points", i, "summary", peer)
            if keys[0] == "long" and "long" not in summary:  # no long topic at 4 partitions
                continue
            xs.append(p)
            ys.append(data.get("points", i, "summary", peer, *keys, number=True))
        return xs, ys

    ax = axes[0]
    for peer in START_PEERS:
        c = COLOURS[peer]
        start = "start()" if peer == "rdk" else "assign()"
        ax.plot(*series(peer, "fresh", "start_s", "median"), color=c, marker="o", linestyle="--",
                label=f"{peer} {start}, fresh")
        ax.plot(*series(peer, "reused", "start_s", "median"), color=c, marker="s", linestyle=":",
                label=f"{peer} {start}, reused")
        ax.plot(*series(peer, "fresh", "first_batch_s", "median"), color=c, marker="^",
                label=f"{peer} first batch")
    ax.set_yscale("log")
    ax.set_ylabel("seconds (median, log)")
    ax.set_title("start and first batch")
    ax = axes[1]
    for peer in START_PEERS:
        c = COLOURS[peer]
        ax.plot(*series(peer, "fresh", "e2e_msgs_per_s", "median"), color=c, marker="o",
                linestyle="--", label=f"{peer} short, e2e")
        ax.plot(*series(peer, "fresh", "steady_msgs_per_s", "median"), color=c, marker="s",
                label=f"{peer} short, steady")
        ax.plot(*series(peer, "long", "steady_msgs_per_s", "median"), color=c, marker="^",
                linestyle=":", label=f"{peer} long, steady")
    _millions(ax)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("messages / s (median)")
    ax.set_title("consume throughput")
    ax = axes[2]
    for peer in START_PEERS:
        c = COLOURS[peer]
        xs, ys = series(peer, "fresh", "peak_rss", "median")
        ax.plot(xs, [y / 2**20 for y in ys], color=c, marker="o", label=f"{peer} short")
        xs, ys = series(peer, "long", "peak_rss", "median")
        ax.plot(xs, [y / 2**20 for y in ys], color=c, marker="^", linestyle=":", label=f"{peer} long")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("peak RSS, MiB (median)")
    ax.set_title("memory")
    for ax in axes:
        _partition_axis(ax, parts)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    date = data.get("meta", "date")
    fig.suptitle(f"rdk.Consumer vs confluent-kafka against partitions, mock cluster, 100 B "
                 f"({date})", fontsize=9)
    fig.tight_layout()
    path = out / "start_cost.svg"
    _save(fig, path)
    return path


# ---- (e) share-group consume throughput: bench/share_bench.py ----------------------------------

SHARE_PEERS = [("rdk", "rdk.ShareConsumer", COLOURS["rdk"]),
               ("java", "Java KafkaShareConsumer", COLOURS["Java client"]),
               ("confluent-kafka", "confluent-kafka ShareConsumer", COLOURS["confluent-kafka"]),
               ("java-tool", "Java ShareConsumerPerformance (join included)", "tab:pink")]


def share_throughput(data: Data, out: Path) -> Path:
    summary = data.get("summary")
    if not isinstance(summary, dict) or not summary:
        raise DataError(f"{data.path}: key 'summary' should hold the points")
    keys = sorted(summary, key=lambda k: (data.get("summary", k, "partitions", number=True),
                                          data.get("summary", k, "members", number=True)))
    peers = [p for p in SHARE_PEERS
             if any(p[0] in data.get("summary", k, "peers") for k in keys)]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 3.9))
    width = 0.8 / len(peers)
    for i, (peer, label, colour) in enumerate(peers):
        med = [data.get("summary", k, "peers", peer, "median", number=True) for k in keys]
        low = [data.get("summary", k, "peers", peer, "min", number=True) for k in keys]
        xs = [x + (i - (len(peers) - 1) / 2) * width for x in range(len(keys))]
        ax.bar(xs, med, width, color=colour, label=label)
        ax.errorbar(xs, med, yerr=[[m - lo for m, lo in zip(med, low, strict=True)], [0] * len(med)],
                    fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    ax.set_xticks(range(len(keys)), [
        f"{data.get('summary', k, 'partitions')} partitions\n"
        f"{data.get('summary', k, 'members')} member{'s' if data.get('summary', k, 'members') != 1 else ''}"
        for k in keys])
    title = (f"Share-group consume, {data.get('meta', 'plan', 'count'):,} x "
             f"{data.get('meta', 'size')} B, {data.get('meta', 'broker')}")
    return _finish_bars(fig, ax, out / "share_throughput.svg", "records / s (median; whisker: min)",
                        title)


# ---- command line ------------------------------------------------------------------------------

# data file -> (the command that writes it, the plots drawn from it)
PLOTS: dict[str, tuple[str, list[Callable[[Data, Path], Path]]]] = {
    "scale_partitions.json": ("python bench/run.py --family scale --scenarios part4_consume,... "
                              "--out docs/data/scale_partitions.json (see docs/performance.md)",
                              [throughput_partitions]),
    "java_peer.json": ("python bench/java_peer.py --duration 5 --out docs/data/java_peer.json "
                       "--peers \"rdk,rdk Arrow,confluent-kafka,java,native C,rdk queue=30000\"",
                       [java_peer_throughput, java_peer_cpu, latency_percentiles]),
    "spark_bench.json": (".venv/bin/python bench/spark_bench.py --messages 500000 --repeat 3 "
                         "--json docs/data/spark_bench.json", [spark_rows]),
    "spark_jvm.json": (".venv/bin/python bench/spark_bench.py --broker kafka --messages 1000000 "
                       "--scenarios count,groupby,parquet,stream,sink --repeat 3 --warmup 1 "
                       "--skip-naive --json docs/data/spark_jvm.json",
                       [spark_jvm]),
    "start_cost.json": (".venv/bin/python bench/start_cost.py --partitions 4,512,2048,8192 "
                        "--repeat 3 --out docs/data/start_cost.json",
                        [start_cost]),
    "share_bench.json": ("python bench/share_bench.py --repeat 3 --out docs/data/share_bench.json",
                         [share_throughput]),
}
EXPECTED = ["throughput_partitions.svg", "java_peer_throughput.svg", "java_peer_cpu.svg",
            "latency_percentiles.svg", "spark_rows.svg", "spark_jvm.svg", "start_cost.svg",
            "share_throughput.svg"]


def draw(data_dir: Path, out: Path) -> list[Path]:
    # every file read first: a missing or broken one stops it before any SVG is written
    loaded = [(Data(data_dir / name, made_by), plots) for name, (made_by, plots) in PLOTS.items()]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for data, plots in loaded:
        for plot in plots:
            try:
                written.append(plot(data, out))
            except DataError:
                raise
            except (TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError) as e:
                raise DataError(f"{data.path}: unexpected content for {plot.__name__} "
                                f"({type(e).__name__}: {e})") from e
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the result files (default docs/data)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the SVGs go (default docs/assets/plots)")
    args = ap.parse_args(argv)
    try:
        written = draw(args.data, args.out)
    except DataError as e:
        print(f"plots.py: error: {e}", file=sys.stderr)
        return 2
    print(f"plots: {len(written)} SVGs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
