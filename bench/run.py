"""rdk's benchmark: rdk against confluent-kafka, kafka-python and native librdkafka.

``python bench/run.py`` (or ``rdk bench``) runs every scenario on two brokers it starts
itself, librdkafka's mock cluster (``python -m rdk.mock``, its own process) and Tansu,
each started afresh for each scenario with fresh topics. Every contender runs in its own
process, in turn, with the same settings; each scenario is repeated (``--repeat``,
default 3) and the median is reported. The harness checks every run: produced counts
against the broker's high watermarks, consumed counts against what it put on the topic.
It prints a table, writes ``bench/results.json`` and with ``--plot`` a PNG.

``--quick`` uses small counts and one repetition: a smoke test that every contender
produced and consumed every message, not a measurement.

``--family scale`` runs the scale family instead (issue 15): a partition sweep (4, 64, 512,
2,048 partitions; consume into objects, Arrow, produce), the producer at 2,048 partitions
with ``partition=None`` (each rdk balancer against librdkafka's default partitioner), a
message-size sweep (10 B to 1 MiB), rdk's offset files against a no-op store, a paused
consumer at 2,048 partitions and an ``rdk.workers`` pool of 1 and 2 processes. It prints
two sweep tables next to the usual one and with ``--plot`` writes ``bench/scale.png``
(msgs/s against partitions and against message size, per broker). ``--family all`` runs both.
"""

import argparse
import contextlib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rdk.mock import start_broker
from rdk.producer import BALANCERS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTENDER_DIR = HERE / "contenders"
NATIVE_SRC = HERE / "native.c"
NATIVE_BIN = HERE / "native"
DEFAULT_OUT = HERE / "results.json"
DEFAULT_PLOT = HERE / "results.png"
DEFAULT_SCALE_OUT = HERE / "scale.json"
DEFAULT_SCALE_PLOT = HERE / "scale.png"
MiB = 1024 * 1024

# The same settings for every contender (librdkafka names; kafka-python gets its
# equivalents where it has them, see contenders/kafka_python_client.py).
PRODUCER_SETTINGS: dict[str, Any] = {
    "linger.ms": 5,
    "batch.num.messages": 10000,
    "batch.size": 1000000,
    "acks": "all",
    "compression.type": "none",
    "enable.idempotence": "false",
    "queue.buffering.max.messages": 2000000,
    "queue.buffering.max.kbytes": 1048576,
}
CONSUMER_SETTINGS: dict[str, Any] = {
    # librdkafka's default (1000) stalls any client slower than its fetcher for a second
    # whenever a partition queue passes queued.min.messages; rdk's Consumer defaults to 10,
    # so every librdkafka-based contender gets 10 here
    "fetch.queue.backoff.ms": 10,
    "fetch.wait.max.ms": 100,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "queued.max.messages.kbytes": 65536,
}
LATENCY_CONSUMER_SETTINGS = {**CONSUMER_SETTINGS, "fetch.wait.max.ms": 10}
SEND_CHUNK = 10000  # messages per send call (chunk i goes to partition i % partitions)
CONSUME_BATCH = 10000  # most messages per consume call
CONSUME_WAIT_MS = 1000
LATENCY_WAIT_MS = 100
IDLE = 20.0  # a consumer that got nothing new for this long gives up (the run fails)
MOCK_PARTITION_BYTES = 4.5 * MiB  # the mock cluster keeps ~5 MiB per partition
RECORD_OVERHEAD = 16  # bytes a record costs on the broker beyond its value (estimate)

CONTENDERS = ["rdk", "confluent-kafka", "kafka-python", "native C"]
BASELINE = "confluent-kafka"
NATIVE = "native C"
SCRIPTS = {"rdk": "rdk_client.py", "confluent-kafka": "confluent_client.py",
           "kafka-python": "kafka_python_client.py"}
BROKERS = ["mock", "tansu"]
FAMILIES = ["core", "scale", "all"]

# Variants of a contender (scale family): its process with extra job options. They run
# whenever their base contender is selected (--contenders).
NOOP = "rdk no-op store"
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    NOOP: ("rdk", {"offset_store": "noop"}),
    "rdk pool 1": ("rdk", {"workers": 1}),
    "rdk pool 2": ("rdk", {"workers": 2}),
    **{f"rdk balancer={b}": ("rdk", {"balancer": b}) for b in BALANCERS},
}


def base_of(contender: str) -> str:
    return VARIANTS[contender][0] if contender in VARIANTS else contender


@dataclass
class Scenario:
    """One benchmark scenario; ``count``/``quick_count`` are messages (or bytes of backlog)."""

    name: str
    kind: str  # produce | consume | arrow | latency | paused_rss
    title: str
    size: int
    count: int
    quick_count: int
    contenders: list[str]
    rate: int = 10000
    duration: float = 10.0
    quick_duration: float = 1.0
    hold: float = 5.0
    quick_hold: float = 1.0
    family: str = "core"
    partitions: int = 0  # 0: partitions_for() decides
    options: dict[str, Any] = field(default_factory=dict)  # job options for every contender
    producer_extra: dict[str, Any] = field(default_factory=dict)  # extra producer settings
    axis: str = ""  # "partitions" | "size": the sweep this scenario is a point of
    point: int = 0  # the partition count or message size on that axis


SCENARIOS = [
    Scenario("produce_100b", "produce", "produce 1 M x 100 B to 4 partitions", 100,
             1_000_000, 20_000, CONTENDERS),
    Scenario("produce_1k", "produce", "produce 200 k x 1 KiB to 4 partitions", 1024,
             200_000, 5_000, CONTENDERS),
    Scenario("consume_objects", "consume", "consume 1 M x 100 B into message objects", 100,
             1_000_000, 20_000, CONTENDERS),
    Scenario("consume_arrow", "arrow", "consume 1 M x 100 B into Arrow", 100,
             1_000_000, 20_000, ["rdk", NATIVE]),
    Scenario("latency", "latency", "end-to-end latency at 10 k msg/s, 100 B", 100,
             0, 0, CONTENDERS),
    Scenario("paused_rss", "paused_rss", "peak RSS of a paused consumer, 1 GiB backlog",
             1024, 1024 * MiB, 16 * MiB, ["rdk", "confluent-kafka"]),
]

# ---- the scale family (issue 15) --------------------------------------------------------

SWEEP_PARTITIONS = [4, 64, 512, 2048]
SWEEP_SIZES = [10, 100, 1024, 64 * 1024, MiB]
SIZE_PARTITIONS = 128  # size sweep: enough for the mock cluster's retention at every size
SIZE_BUDGET = 256 * MiB  # size sweep: value bytes per run, at most SCALE_COUNT messages
QUICK_SIZE_BUDGET = 16 * MiB
SCALE_COUNT, QUICK_SCALE_COUNT = 1_000_000, 20_000
NOOP_AT = (4, 512, 2048)  # partition counts where rdk also runs with a no-op offset store
# 1 MiB values (plus record overhead) exceed librdkafka's default message.max.bytes
# (1,000,000): the size sweep raises it for every contender alike
SIZE_PRODUCER = {"message.max.bytes": 4 * MiB}


def scale_batch(count: int, size: int) -> int:
    """Most messages per consume call in the scale family. A consume call waits (up to
    wait_ms) for a full batch: with few large messages a batch of 10 000 would be the whole
    run, timed as one wait. At most 1/20 of the run and 16 MiB per batch, for every contender
    alike."""
    return max(1, min(CONSUME_BATCH, count // 20, 16 * MiB // size))


def whole_batches(count: int, batch: int) -> int:
    """``count`` rounded down to a whole number of consume batches (as is below one batch).

    native C's ``rd_kafka_consume_batch_queue`` and confluent-kafka's ``consume(n, timeout)``
    return when they have ``batch`` messages or when ``wait_ms`` (1 s) passes. With a topic of
    k x batch + r messages the last call asks for ``batch`` but only r are left, so it waits the
    whole second and the timed window grows by it: on the mock cluster at 4 partitions
    (162,710 = 20 x 8,135 + 10) that turned ~0.05 s of consuming into ~1.05 s for those two
    contenders (~0.13 M instead of ~2-3 M msg/s), while rdk, whose call waits only for the
    first message, was not delayed. A topic of whole batches lets every contender's last call
    fill up without waiting; every contender reads the same topic, so it stays fair."""
    return count - count % batch if count >= batch else count


def _scale_scenarios() -> list[Scenario]:
    out = []
    objects, arrow, produce = (["rdk", BASELINE, NATIVE], ["rdk", NATIVE],
                               ["rdk", BASELINE, NATIVE])
    for n in SWEEP_PARTITIONS:
        common = dict(family="scale", partitions=n, axis="partitions", point=n)
        out += [
            Scenario(f"part{n}_consume", "consume",
                     f"consume 100 B into objects from {n} partitions", 100, SCALE_COUNT,
                     QUICK_SCALE_COUNT, objects + ([NOOP] if n in NOOP_AT else []), **common),
            Scenario(f"part{n}_arrow", "arrow", f"consume 100 B into Arrow from {n} partitions",
                     100, SCALE_COUNT, QUICK_SCALE_COUNT, arrow, **common),
            Scenario(f"part{n}_produce", "produce",
                     f"produce 100 B to {n} explicit partitions", 100, SCALE_COUNT,
                     QUICK_SCALE_COUNT, produce, **common),
        ]
    out.append(Scenario(
        "part2048_produce_any", "produce",
        "produce 100 B to 2048 partitions with partition=None (rdk balancers; librdkafka's "
        "default partitioner for confluent-kafka and native C)", 100, SCALE_COUNT,
        QUICK_SCALE_COUNT, [f"rdk balancer={b}" for b in BALANCERS] + [BASELINE, NATIVE],
        family="scale", partitions=2048, options={"any_partition": True}))
    for size in SWEEP_SIZES:
        count = min(SCALE_COUNT, SIZE_BUDGET // size)
        quick = min(QUICK_SCALE_COUNT, QUICK_SIZE_BUDGET // size)
        common = dict(family="scale", partitions=SIZE_PARTITIONS, axis="size", point=size,
                      producer_extra=SIZE_PRODUCER)
        label = size_label(size)
        read = whole_batches(count, scale_batch(count, size))  # what make_job's consumers get
        out += [
            Scenario(f"size{size}_produce", "produce",
                     f"produce {count:,} x {label} to {SIZE_PARTITIONS} partitions", size,
                     count, quick, produce, **common),
            Scenario(f"size{size}_consume", "consume",
                     f"consume {read:,} x {label} into objects", size, count, quick,
                     objects, **common),
            Scenario(f"size{size}_arrow", "arrow", f"consume {read:,} x {label} into Arrow",
                     size, count, quick, arrow, **common),
        ]
    out += [
        Scenario("part2048_paused_rss", "paused_rss",
                 "peak RSS of a paused consumer, 1 GiB backlog on 2048 partitions", 1024,
                 1024 * MiB, 16 * MiB, ["rdk", BASELINE], family="scale", partitions=2048),
        Scenario("workers_64", "consume",
                 "rdk.workers pool of 1 and 2 processes (and one Consumer) on 64 partitions, "
                 "100 B", 100, SCALE_COUNT, QUICK_SCALE_COUNT, ["rdk", "rdk pool 1", "rdk pool 2"],
                 family="scale", partitions=64),
    ]
    return out


def size_label(size: int) -> str:
    if size >= MiB and size % MiB == 0:
        return f"{size // MiB} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


SCALE_SCENARIOS = _scale_scenarios()
ALL_SCENARIOS = SCENARIOS + SCALE_SCENARIOS


def family_scenarios(family: str) -> list[Scenario]:
    return {"core": SCENARIOS, "scale": SCALE_SCENARIOS, "all": ALL_SCENARIOS}[family]


# ---- brokers (started by rdk.mock's start_broker) ------------------------------


def watermarks(broker: str, bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(low, high) of every partition. The mock cluster's ListOffsets answer is right;
    Tansu's "latest" is not, so there rdk.Admin.watermarks confirms it with a fetch."""
    import logging

    from rdk import Admin

    if broker == "mock":
        return listed_watermarks(bootstrap, topic, partitions)
    # a short fetch wait keeps Tansu's confirming fetch quick (the admin's producer handle
    # warns that the property is not its own: silenced)
    logging.getLogger("rdk").setLevel(logging.ERROR)
    with Admin(bootstrap, {"fetch.wait.max.ms": 10}) as admin:
        return [admin.watermarks(topic, p, timeout=30) for p in range(partitions)]


# ---- native C ----------------------------------------------------------------------------


def librdkafka_prefix() -> Path | None:
    for prefix in (os.environ.get("RDK_LIBRDKAFKA_PREFIX"), ROOT / ".deps" / "librdkafka"):
        if prefix and (Path(prefix) / "lib" / "librdkafka.a").exists():
            return Path(prefix)
    return None


def build_native() -> tuple[Path | None, str]:
    """Compile bench/native.c against the static librdkafka rdk links; (binary, why not)."""
    prefix = librdkafka_prefix()
    if prefix is None:
        return None, "no static librdkafka (run scripts/build-librdkafka.sh)"
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        return None, "no C compiler"
    static = prefix / "lib" / "librdkafka.a"
    if NATIVE_BIN.exists() and NATIVE_BIN.stat().st_mtime >= max(
            NATIVE_SRC.stat().st_mtime, static.stat().st_mtime):
        return NATIVE_BIN, ""
    cmd = [gcc, "-O2", "-Wall", "-o", str(NATIVE_BIN), str(NATIVE_SRC),
           f"-I{prefix / 'include'}", str(static),
           "-lssl", "-lcrypto", "-lz", "-lzstd", "-lm", "-ldl", "-lpthread", "-lrt"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, "gcc failed: " + done.stderr.strip()[-500:]
    return NATIVE_BIN, ""


def native_argv(binary: Path, job: dict[str, Any]) -> list[str]:
    mode = {"produce": "produce", "consume": "consume", "arrow": "consume",
            "latency": "latency"}[job["scenario"]]
    args = [str(binary), mode, f"bootstrap={job['bootstrap']}", f"topic={job['topic']}",
            f"partitions={job['partitions']}", f"count={job['count']}", f"size={job['size']}",
            f"chunk={job['chunk']}", f"batch={job['batch']}", f"wait={job['wait_ms']}",
            f"arrow={int(job['scenario'] == 'arrow')}", f"rate={job['rate']}",
            f"duration={job['duration']}", f"warmup={job['warmup']}", f"timeout={job['timeout']}",
            f"idle={job['idle']}", f"any={int(bool(job.get('options', {}).get('any_partition')))}"]
    args += [f"P.{k}={v}" for k, v in job["producer"].items()]
    args += [f"C.{k}={v}" for k, v in job["consumer"].items()]
    return args


# ---- one run -----------------------------------------------------------------------------


@dataclass
class Run:
    broker: str
    scenario: str
    contender: str
    repeat: int
    status: str = "ok"  # ok | failed | unavailable | unsupported
    problem: str = ""
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def msgs_per_s(self) -> float | None:
        """Messages in the timed window per second (consumers: after the first batch)."""
        r = self.result
        if (self.status != "ok" or not r.get("seconds") or not r.get("count")
                or not r.get("timed_count", r["count"])):
            return None  # nothing timed (a tiny --quick run: everything in the first batch)
        return r.get("timed_count", r["count"]) / r["seconds"]

    @property
    def cpu_us_per_msg(self) -> float | None:
        """CPU time of the contender's process (all threads) per message of the timed window."""
        r = self.result
        timed = r.get("timed_count", r.get("count"))
        if self.status != "ok" or r.get("cpu_seconds") is None or not timed:
            return None
        return r["cpu_seconds"] / timed * 1e6

    @property
    def mb_per_s(self) -> float | None:
        r = self.result
        rate = self.msgs_per_s
        if rate is None:
            return None
        return rate * r.get("bytes", 0) / r["count"] / 1e6


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return None


def execute(contender: str, job: dict[str, Any], native: Path | None) -> tuple[dict | None, str]:
    """Run one contender process; (result, problem)."""
    if contender in VARIANTS:
        base, extra = VARIANTS[contender]
        contender, job = base, {**job, "options": {**job.get("options", {}), **extra}}
    if contender == NATIVE:
        argv = native_argv(native, job)
    else:
        argv = [sys.executable, str(CONTENDER_DIR / SCRIPTS[contender]), json.dumps(job)]
    limit = job["timeout"] + job.get("duration", 0) + job.get("hold_seconds", 0) + 60
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=limit, cwd=ROOT,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {limit:.0f} s"
    result = parse_result(done.stdout)
    if result is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"exit code {done.returncode}: {' | '.join(tail)}"
    return result, ""


def listed_watermarks(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, int]]:
    """(low, high) as ListOffsets answers them, 16 partitions at a time."""
    import logging
    from concurrent.futures import ThreadPoolExecutor

    from rdk import Admin

    logging.getLogger("rdk").setLevel(logging.ERROR)
    with Admin(bootstrap) as admin, ThreadPoolExecutor(min(16, partitions)) as pool:
        return list(pool.map(lambda p: admin.query_watermarks(topic, p, timeout=30),
                             range(partitions)))


def verify_by_consuming(job: dict[str, Any], native: Path | None) -> str:
    """Tansu at many partitions, where confirming its high watermarks with a fetch takes
    ~15 ms a partition (27 s at 2,048): the native consumer reads the topic back and must
    get exactly job["count"] messages of the right size, without gaps in any partition,
    and ListOffsets (which on Tansu can only under-count) must not show more."""
    if native is None:
        return "cannot verify: the native C consumer is unavailable"
    listed = sum(high for _, high in listed_watermarks(job["bootstrap"], job["topic"],
                                                       job["partitions"]))
    if listed > job["count"]:
        return f"the broker lists {listed} messages, expected {job['count']}"
    back, problem = execute(NATIVE, {**job, "scenario": "consume", "wait_ms": 100,
                                     "options": {}}, native)
    if back is None:
        return f"reading the topic back: {problem}"
    if back.get("count") != job["count"] or back.get("gaps") or back.get("errors"):
        return (f"read back {back.get('count')} of {job['count']} messages "
                f"({back.get('gaps')} gaps, {back.get('errors')} errors)")
    if back.get("bytes") != job["count"] * job["size"]:
        return f"read back {back.get('bytes')} value bytes, expected {job['count'] * job['size']}"
    return ""


# Tansu: from this many partitions on, produce runs are verified by reading the topic back
# (verify_by_consuming) and filled topics by ListOffsets alone (their consumers count)
TANSU_FETCH_CHECK_LIMIT = 256


def verify(scenario: Scenario, job: dict[str, Any], result: dict[str, Any], broker: str,
           native: Path | None = None) -> str:
    """What is wrong with a finished run ("" when every message is accounted for)."""
    kind = scenario.kind
    if result.get("errors"):
        return f"{result['errors']} error messages" + (f" ({result['error']})"
                                                       if result.get("error") else "")
    if result.get("bad_size"):
        return f"{result['bad_size']} batches ended with a value of the wrong size"
    if kind == "produce":
        if result.get("count") != job["count"]:
            return f"delivered {result.get('count')} of {job['count']}"
        if broker != "mock" and job["partitions"] > TANSU_FETCH_CHECK_LIMIT:
            return verify_by_consuming(job, native)
        marks = watermarks(broker, job["bootstrap"], job["topic"], job["partitions"])
        on_broker = sum(high for _, high in marks)
        if on_broker != job["count"]:
            return f"broker high watermarks add up to {on_broker}, expected {job['count']}"
    elif kind in ("consume", "arrow"):
        if result.get("count") != job["count"]:
            return f"consumed {result.get('count')} of {job['count']}"
    elif kind == "latency":
        total = int(job["rate"] * job["duration"])
        if result.get("count") != total or result.get("produced", total) != total:
            return (f"sent {result.get('produced')} and received {result.get('count')} "
                    f"of {total}")
        if result.get("duplicates"):
            return f"{result['duplicates']} duplicates"
    elif kind == "paused_rss" and not result.get("count"):
        return "received nothing before pausing"
    return ""


def size_refused(native: Path | None, job: dict[str, Any]) -> str:
    """The broker's error when it refuses one message of ``job["size"]`` from the native
    producer (with the scenario's settings), "" when it takes it (or it cannot be told)."""
    if native is None:
        return ""
    result, _ = execute(NATIVE, {**job, "scenario": "produce", "count": 1, "chunk": 1,
                                       "options": {}}, native)
    if result is None or result.get("count") == 1:
        return ""
    return (f"the broker refused a {size_label(job['size'])} message: "
            f"{result.get('error') or 'delivery failed'} (message.max.bytes="
            f"{job['producer'].get('message.max.bytes', 'default')})")


# ---- a scenario on one broker ------------------------------------------------------------


def partitions_for(scenario: Scenario, broker: str, count: int) -> int:
    """4 partitions, or enough that the mock cluster's retention keeps everything (scale
    scenarios name their partition count)."""
    if scenario.partitions:
        return scenario.partitions
    if scenario.kind in ("produce", "latency"):
        return 4
    messages = count if scenario.kind != "paused_rss" else count // scenario.size
    needed = math.ceil(messages * (scenario.size + RECORD_OVERHEAD) / MOCK_PARTITION_BYTES)
    if scenario.kind == "paused_rss" or broker == "mock":
        return max(4, 1 << max(0, needed - 1).bit_length())
    return 4


def mock_capacity(partitions: int, size: int) -> int:
    """Messages of ``size`` the mock cluster keeps on ``partitions`` partitions."""
    return int(partitions * MOCK_PARTITION_BYTES // (size + RECORD_OVERHEAD))


def make_job(scenario: Scenario, broker: str, bootstrap: str, topic: str, quick: bool,
             timeout: float) -> dict[str, Any]:
    count = scenario.quick_count if quick else scenario.count
    parts = partitions_for(scenario, broker, count)
    if scenario.family == "scale" and scenario.kind in ("consume", "arrow") and broker == "mock":
        count = min(count, mock_capacity(parts, scenario.size))  # as many as it keeps
    chunk, batch = SEND_CHUNK, CONSUME_BATCH
    if scenario.family == "scale":
        # every partition gets sends; a send pool of at most 64 MiB (1 MiB values)
        chunk = max(1, min(SEND_CHUNK, count // parts, 64 * MiB // scenario.size))
        if scenario.options.get("any_partition"):
            chunk = SEND_CHUNK  # the library spreads each call over the partitions
        batch = scale_batch(count, scenario.size)
    if scenario.kind in ("consume", "arrow"):
        count = whole_batches(count, batch)
    duration = scenario.quick_duration if quick else scenario.duration
    job = {"scenario": scenario.kind, "bootstrap": bootstrap, "topic": topic,
           "partitions": parts, "count": count, "size": scenario.size, "chunk": chunk,
           "batch": batch, "wait_ms": CONSUME_WAIT_MS, "rate": scenario.rate,
           "duration": 0.0, "warmup": 0, "hold_seconds": 0.0, "timeout": timeout, "idle": IDLE,
           "producer": {**PRODUCER_SETTINGS, **scenario.producer_extra},
           "consumer": dict(CONSUMER_SETTINGS), "options": dict(scenario.options)}
    if scenario.kind == "latency":
        job.update(duration=duration, warmup=int(scenario.rate * duration / 10),
                   wait_ms=LATENCY_WAIT_MS, consumer=dict(LATENCY_CONSUMER_SETTINGS))
    elif scenario.kind == "paused_rss":
        job.update(count=count // scenario.size,
                   hold_seconds=scenario.quick_hold if quick else scenario.hold)
    return job


def fill_topic(native: Path | None, job: dict[str, Any], broker: str) -> str:
    """Put job["count"] messages evenly on the job's topic with the native producer."""
    if native is None:
        return "the native C producer (which fills consume topics) is unavailable"
    fill = {**job, "scenario": "produce", "chunk": math.ceil(job["count"] / job["partitions"])}
    result, problem = execute(NATIVE, fill, native)
    if problem:
        return f"filling {job['topic']}: {problem}"
    if result.get("count") != job["count"]:
        return f"filling {job['topic']}: delivered {result.get('count')} of {job['count']}"
    if broker != "mock" and job["partitions"] > TANSU_FETCH_CHECK_LIMIT:
        marks = listed_watermarks(job["bootstrap"], job["topic"], job["partitions"])
        if any(low != 0 for low, _ in marks) or sum(h for _, h in marks) > job["count"]:
            return f"filling {job['topic']}: the broker lists {marks[:4]}... (low must be 0)"
        return ""  # ListOffsets under-counts on Tansu; every consumer run counts exactly
    marks = watermarks(broker, job["bootstrap"], job["topic"], job["partitions"])
    per_part = [high - low for low, high in marks]
    if any(low != 0 for low, _ in marks) or sum(per_part) != job["count"]:
        return (f"filling {job['topic']}: the broker holds {sum(per_part)} of {job['count']} "
                f"messages (low watermarks {[low for low, _ in marks][:8]}...): retention "
                "deleted some; use more partitions or fewer messages")
    return ""


def contender_available(name: str, native: Path | None, native_why: str) -> str:
    """"" when the contender can run here, else why not."""
    import importlib.util

    name = base_of(name)
    if name == NATIVE:
        return "" if native is not None else native_why
    module = {"rdk": "rdk", "confluent-kafka": "confluent_kafka", "kafka-python": "kafka"}[name]
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed (pip install rdk[bench])"
    return ""


def run_scenario(scenario: Scenario, broker: str, args: argparse.Namespace,
                 native: Path | None, unavailable: dict[str, str], log) -> list[Run]:
    contenders = [c for c in scenario.contenders if base_of(c) in args.contenders]
    tag = uuid.uuid4().hex[:6]
    shared = scenario.kind in ("consume", "arrow", "paused_rss")
    topics: dict[tuple[str, int], str] = {}
    for rep in range(args.repeat):
        for c in contenders:
            slug = re.sub(r"[^A-Za-z0-9.-]+", "-", c)
            topics[(c, rep)] = (f"{scenario.name}-{tag}" if shared
                                else f"{scenario.name}-{slug}-{rep}-{tag}").replace("_", "-")
    probe = make_job(scenario, broker, "", "", args.quick, args.timeout)
    runs: list[Run] = []
    wanted = {t: probe["partitions"] for t in set(topics.values())}
    size_probe = f"{scenario.name}-probe-{tag}".replace("_", "-")
    if scenario.size > 1_000_000:
        wanted[size_probe] = 1
    try:
        server = start_broker(broker, wanted)
    except Exception as e:  # a broker that cannot start fails this scenario's runs
        return [Run(broker, scenario.name, c, r, "failed", f"broker: {e}")
                for (c, r) in topics]
    try:
        fill_problem = ""
        if scenario.size > 1_000_000:
            refused = size_refused(native, {**probe, "bootstrap": server.bootstrap_servers,
                                            "topic": size_probe, "partitions": 1})
            if refused:
                log(f"  [{broker}] {scenario.name}: unsupported: {refused}")
                return [Run(broker, scenario.name, c, r + 1, "unsupported", refused)
                        for r in range(args.repeat) for c in contenders]
        if shared:
            job0 = make_job(scenario, broker, server.bootstrap_servers,
                            next(iter(topics.values())), args.quick, args.timeout)
            fill_problem = fill_topic(native, job0, broker)
            if fill_problem:
                log(f"  [{broker}] {scenario.name}: {fill_problem}")
        for rep in range(args.repeat):
            for c in contenders:
                run = Run(broker, scenario.name, c, rep + 1)
                runs.append(run)
                if unavailable.get(base_of(c)):
                    run.status, run.problem = "unavailable", unavailable[base_of(c)]
                    continue
                if fill_problem:
                    run.status, run.problem = "failed", fill_problem
                    continue
                job = make_job(scenario, broker, server.bootstrap_servers, topics[(c, rep)],
                               args.quick, args.timeout)
                began = time.monotonic()
                run_one(run, scenario, job, native)
                log(f"  {describe_run(run)} [{time.monotonic() - began:.1f} s]")
    finally:
        server.close()
    return runs


def run_one(run: Run, scenario: Scenario, job: dict[str, Any], native: Path | None) -> None:
    """Execute one run and record its result, or why it has none, in ``run``."""
    result, problem = execute(run.contender, job, native)
    if result is not None and result.get("unavailable"):
        run.status, run.problem = "unavailable", result.get("reason", "")
    elif result is not None and result.get("unsupported"):
        run.status, run.problem = "unsupported", result.get("reason", "")
    elif result is None:
        run.status, run.problem = "failed", problem
    else:
        run.result = result
        problem = verify(scenario, job, result, run.broker, native)
        if problem:
            run.status, run.problem = "failed", problem


def describe_run(run: Run) -> str:
    head = f"[{run.broker}] {run.scenario} {run.contender} #{run.repeat}:"
    if run.status != "ok":
        return f"{head} {run.status.upper()} {run.problem}"
    r = run.result
    if "p99_ms" in r:
        return f"{head} p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms ({r['count']} msgs)"
    if "peak_rss" in r:
        return (f"{head} peak RSS {r['peak_rss'] / MiB:.0f} MiB (baseline "
                f"{r['baseline_rss'] / MiB:.0f} MiB, {r['count']} received, "
                f"{r.get('after_pause', 0)} after pause)")
    if run.msgs_per_s is None:
        return f"{head} {r['count']} msgs, too few timed for a rate"
    return f"{head} {run.msgs_per_s:,.0f} msg/s, {run.mb_per_s:.1f} MB/s ({r['count']} msgs)"


# ---- summary -----------------------------------------------------------------------------

# scale family: rdk's offset store (consume runs) and Consumer.start(); the pool's workers
EXTRA_FIGURES = ("start_seconds", "offset_files_per_s", "sync_calls_per_s",
                 "offset_flushes_per_s", "workers", "children_cpu_seconds")


def medians(rows: list[Run]) -> dict[str, Any]:
    """The median of every figure over a cell's verified runs."""

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    cell = {"msgs_per_s": med([r.msgs_per_s for r in rows]),
            "mb_per_s": med([r.mb_per_s for r in rows]),
            "cpu_us_per_msg": med([r.cpu_us_per_msg for r in rows]),
            "count": rows[0].result.get("count")}  # messages per run (verified)
    for key in ("p50_ms", "p99_ms", "peak_rss", "baseline_rss", "after_pause", *EXTRA_FIGURES):
        if key in rows[0].result:
            cell[key] = med([r.result.get(key) for r in rows])
    per_process = [statistics.mean(r.result["cpu_us_per_msg_per_process"])
                   for r in rows if r.result.get("cpu_us_per_msg_per_process")]
    if per_process:
        cell["cpu_us_per_msg_per_process"] = statistics.median(per_process)
    return cell


def summarise(runs: list[Run]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """summary[broker][scenario][contender] = medians over the verified runs."""
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for run in runs:
        cell = out.setdefault(run.broker, {}).setdefault(run.scenario, {}).setdefault(
            run.contender, {"runs": 0, "ok": 0, "status": run.status, "problems": [],
                            "_rows": []})
        cell["runs"] += 1
        if run.status == "ok":
            cell["ok"] += 1
            cell["_rows"].append(run)
        elif run.problem and run.problem not in cell["problems"]:
            cell["problems"].append(run.problem)
        if cell["status"] == "ok" and run.status == "failed":
            cell["status"] = "failed"
    for broker in out.values():
        for scenario in broker.values():
            for cell in scenario.values():
                rows = cell.pop("_rows")
                if not rows:
                    continue
                if cell["status"] != "ok" and cell["ok"]:
                    cell["status"] = "partly failed"
                cell.update(medians(rows))
            base = scenario.get(BASELINE, {}).get("msgs_per_s")
            native = scenario.get(NATIVE, {}).get("msgs_per_s")
            for cell in scenario.values():
                v = cell.get("msgs_per_s")
                if "p99_ms" in cell or "peak_rss" in cell:  # not a throughput scenario
                    cell["msgs_per_s"] = cell["mb_per_s"] = v = None
                cell["vs_confluent"] = v / base if v and base else None
                cell["vs_native"] = v / native if v and native else None
    return out


def target_specs() -> list[tuple[str, str, str, float, str]]:
    """(scenario, text, figure, bound, ">=" or "<=") of every target: issue 7's for the core
    family, issue 15's for the scale family."""
    limit = CONSUMER_SETTINGS["queued.max.messages.kbytes"] * 1024 + 64 * MiB
    specs = [
        ("produce_100b", "produce 1 M x 100 B >= 2 x confluent-kafka", "vs_confluent", 2.0, ">="),
        ("produce_1k", "produce 200 k x 1 KiB >= 2 x confluent-kafka", "vs_confluent", 2.0, ">="),
        ("consume_objects", "consume into objects >= 1.3 x confluent-kafka", "vs_confluent", 1.3,
         ">="),
        ("consume_arrow", "Arrow consume >= 0.7 x native C", "vs_native", 0.7, ">="),
        ("latency", "latency p99 <= confluent-kafka's", "p99_vs_confluent", 1.0, "<="),
        ("paused_rss", f"paused RSS <= queued.max.messages.kbytes + 64 MiB ({limit // MiB} MiB)",
         "peak_rss", float(limit), "<="),
    ]
    for n in SWEEP_PARTITIONS:
        specs += [
            (f"part{n}_consume", f"consume objects at {n} partitions >= 1.3 x confluent-kafka",
             "vs_confluent", 1.3, ">="),
            (f"part{n}_arrow", f"Arrow at {n} partitions >= 0.8 x native C", "vs_native", 0.8,
             ">="),
            (f"part{n}_produce", f"produce 100 B at {n} partitions >= 2 x confluent-kafka",
             "vs_confluent", 2.0, ">="),
        ]
    for size in SWEEP_SIZES:
        specs += [
            (f"size{size}_produce", f"produce {size_label(size)} >= 1 x confluent-kafka",
             "vs_confluent", 1.0, ">="),
            (f"size{size}_arrow", f"Arrow {size_label(size)} >= 0.8 x native C", "vs_native",
             0.8, ">="),
        ]
    specs += [
        ("part2048_paused_rss", f"paused RSS at 2048 partitions <= queued.max.messages.kbytes "
         f"+ 64 MiB ({limit // MiB} MiB)", "peak_rss", float(limit), "<="),
        ("part2048_paused_rss", "paused RSS at 2048 partitions <= confluent-kafka's",
         "peak_rss_vs_confluent", 1.0, "<="),
        ("part2048_consume", "offset files cost <= 10 % of consume throughput at 2048 "
         "partitions (rdk >= 0.9 x rdk no-op store)", "vs_noop", 0.9, ">="),
    ]
    return specs


def check_targets(summary: dict, brokers: list[str]) -> list[dict[str, Any]]:
    """Each target on each broker: holds, missed, or unknown (and why)."""
    out = []
    for broker in brokers:
        for scenario, text, key, bound, op in target_specs():
            if scenario not in summary.get(broker, {}):
                continue  # not run this time
            cells = summary[broker][scenario]
            rdk = cells.get("rdk", {})
            value = rdk.get(key)
            other = {"p99_vs_confluent": (BASELINE, "p99_ms"),
                     "peak_rss_vs_confluent": (BASELINE, "peak_rss"),
                     "vs_noop": (NOOP, "msgs_per_s")}.get(key)
            if other is not None:
                mine = rdk.get(other[1])
                base = cells.get(other[0], {}).get(other[1])
                value = mine / base if mine is not None and base else None
            if value is None:
                problems = [p for c in cells.values() for p in c.get("problems", [])]
                why = "; ".join(dict.fromkeys(problems)) or "not measured"
                state = "unknown"
            else:
                holds = value >= bound if op == ">=" else value <= bound
                state, why = ("holds" if holds else "MISSED"), ""
            out.append({"broker": broker, "scenario": scenario, "target": text, "figure": key,
                        "value": value, "bound": bound, "state": state, "why": why})
    return out


def fmt(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value / scale, spec)


def table(summary: dict, scenarios: list[Scenario], brokers: list[str]) -> str:
    titles = {s.name: s.title for s in scenarios}
    head = ("scenario", "contender", "msgs/s", "MB/s", "x confluent", "x native C",
            "CPU us/msg", "p50 ms", "p99 ms", "peak RSS MiB", "runs ok")
    lines = []
    for broker in brokers:
        rows = [head]
        for s in scenarios:
            for c, cell in summary.get(broker, {}).get(s.name, {}).items():
                if cell["status"] in ("unsupported",):
                    continue
                if not cell.get("ok"):
                    rows.append((s.name, c, cell["status"], "", "", "", "", "", "", "",
                                 f"0/{cell['runs']}"))
                    continue
                rows.append((s.name, c, fmt(cell.get("msgs_per_s"), ",.0f")
                             if "p99_ms" not in cell and "peak_rss" not in cell else "-",
                             fmt(cell.get("mb_per_s"), ".1f")
                             if "p99_ms" not in cell and "peak_rss" not in cell else "-",
                             fmt(cell.get("vs_confluent"), ".2f"),
                             fmt(cell.get("vs_native"), ".2f"),
                             fmt(cell.get("cpu_us_per_msg"), ".2f"),
                             fmt(cell.get("p50_ms"), ".2f"), fmt(cell.get("p99_ms"), ".2f"),
                             fmt(cell.get("peak_rss"), ".0f", MiB), f"{cell['ok']}/{cell['runs']}"))
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
        lines.append(f"\nbroker: {broker}")
        for i, r in enumerate(rows):
            lines.append("  ".join(str(v).rjust(w) if j >= 2 else str(v).ljust(w)
                                   for j, (v, w) in enumerate(zip(r, widths, strict=True))))
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
    lines.append("\nscenarios: " + "; ".join(f"{k} = {v}" for k, v in titles.items()))
    return "\n".join(lines)


def markdown(summary: dict, scenarios: list[Scenario], brokers: list[str]) -> str:
    """The figures as a Markdown table (what docs/performance.md shows)."""
    head = ["broker", "scenario", "contender", "msgs/s", "MB/s", "x confluent", "x native C",
            "CPU us/msg", "p50 / p99 ms", "peak RSS MiB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "--:|" * (len(head) - 3)]
    for broker in brokers:
        for s in scenarios:
            for c, cell in summary.get(broker, {}).get(s.name, {}).items():
                if cell["status"] == "unsupported":
                    continue
                if not cell.get("ok"):
                    cells = [broker, s.name, c, cell["status"]] + [""] * (len(head) - 4)
                else:
                    lat = (f"{cell['p50_ms']:.1f} / {cell['p99_ms']:.1f}"
                           if cell.get("p99_ms") is not None else "")
                    cells = [broker, s.name, c, fmt(cell.get("msgs_per_s"), ",.0f"),
                             fmt(cell.get("mb_per_s"), ".1f"), fmt(cell.get("vs_confluent"), ".2f"),
                             fmt(cell.get("vs_native"), ".2f"),
                             fmt(cell.get("cpu_us_per_msg"), ".2f"), lat,
                             fmt(cell.get("peak_rss"), ".0f", MiB)]
                lines.append("| " + " | ".join("" if v == "-" else v for v in cells) + " |")
    return "\n".join(lines)


# ---- the scale family's tables and plot --------------------------------------------------

SWEEP_KINDS = (("consume", "consume into objects"), ("arrow", "consume into Arrow"),
               ("produce", "produce, explicit partitions"))


def sweep_grid(summary: dict, scenarios: list[Scenario], broker: str, axis: str,
               kind: str) -> tuple[list[int], list[str], dict[tuple[str, int], dict]]:
    """(points on the axis, contenders, {(contender, point): summary cell})."""
    points, contenders, cells = [], [], {}
    for s in scenarios:
        if s.axis != axis or s.kind != kind:
            continue
        for c, cell in summary.get(broker, {}).get(s.name, {}).items():
            if s.point not in points:
                points.append(s.point)
            if c not in contenders:
                contenders.append(c)
            cells[(c, s.point)] = cell
    return points, contenders, cells


def sweep_cell(cell: dict | None, with_ratios: bool = True) -> str:
    if not cell:
        return ""
    if not cell.get("ok"):
        return cell["status"]
    text = fmt(cell.get("msgs_per_s"), ",.0f")
    ratios = [f"{label}{cell[key]:.2f}" for key, label in (("vs_confluent", "c"),
                                                          ("vs_native", "n"))
              if cell.get(key) is not None and with_ratios]
    return text + (f" ({' '.join(ratios)})" if ratios else "")


def axis_label(axis: str, point: int) -> str:
    return f"{point} partitions" if axis == "partitions" else size_label(point)


def sweep_tables(summary: dict, scenarios: list[Scenario], brokers: list[str],
                 md: bool = False) -> str:
    """msgs/s per contender against partitions and against message size, with the ratio to
    confluent-kafka (c) and native C (n); the message counts under each column."""
    lines = []
    for axis, what in (("partitions", "partition sweep (100 B)"),
                       ("size", f"size sweep ({SIZE_PARTITIONS} partitions)")):
        for broker in brokers:
            for kind, title in SWEEP_KINDS:
                points, contenders, cells = sweep_grid(summary, scenarios, broker, axis, kind)
                if not points:
                    continue
                head = ["contender"] + [axis_label(axis, p) for p in points]
                rows = [[c] + [sweep_cell(cells.get((c, p))) for p in points]
                        for c in contenders]
                counts = ["messages/run"] + [
                    fmt(next((cells[(c, p)].get("count") for c in contenders
                              if cells.get((c, p), {}).get("count")), None), ",.0f")
                    for p in points]
                rows.append(counts)
                caption = (f"{broker}: {what}, {title}: msgs/s (x confluent-kafka c, "
                           "x native C n)")
                if md:
                    lines += [f"\n**{caption}**\n", "| " + " | ".join(head) + " |",
                              "|---|" + "--:|" * len(points)]
                    lines += ["| " + " | ".join(r) + " |" for r in rows]
                    continue
                widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
                lines.append(f"\n{caption}")
                for i, r in enumerate([head, *rows]):
                    lines.append("  ".join(v.rjust(w) if j else v.ljust(w)
                                           for j, (v, w) in enumerate(zip(r, widths, strict=True))))
                    if i == 0:
                        lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def scale_details(summary: dict, scenarios: list[Scenario], brokers: list[str],
                  md: bool = False) -> str:
    """rdk's offset files against the no-op store, Consumer.start() time, and the pool."""
    head = ["broker", "scenario", "contender", "msgs/s", "x no-op store", "start s",
            "offset files/s", "syncs/s", "CPU us/msg/process"]
    rows = []
    names = [s.name for s in scenarios if s.family == "scale" and s.kind == "consume"
             and (s.axis == "partitions" or s.name.startswith("workers"))]
    for broker in brokers:
        for name in names:
            cells = summary.get(broker, {}).get(name, {})
            noop = cells.get(NOOP, {}).get("msgs_per_s")
            for c, cell in cells.items():
                if base_of(c) != "rdk" or not cell.get("ok"):
                    continue
                v = cell.get("msgs_per_s")
                rows.append([broker, name, c, fmt(v, ",.0f"),
                             fmt(v / noop if v and noop and c != NOOP else None, ".2f"),
                             fmt(cell.get("start_seconds"), ".2f"),
                             fmt(cell.get("offset_files_per_s"), ",.0f"),
                             fmt(cell.get("sync_calls_per_s"), ",.1f"),
                             fmt(cell.get("cpu_us_per_msg_per_process",
                                          cell.get("cpu_us_per_msg")), ".2f")])
    if not rows:
        return ""
    caption = ("rdk consume: offset files against a no-op store, Consumer.start() (locks and "
               "reads of the offset files), offset-file writes and sync calls per second of "
               "the consumer's life; pool: CPU per message per worker process")
    if md:
        return "\n".join([f"\n**{caption}**\n", "| " + " | ".join(head) + " |",
                          "|---|---|---|" + "--:|" * (len(head) - 3)]
                         + ["| " + " | ".join("" if v == "-" else v for v in r) + " |"
                            for r in rows])
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    lines = [f"\n{caption}"]
    for i, r in enumerate([head, *rows]):
        lines.append("  ".join(v.rjust(w) if j >= 3 else v.ljust(w)
                               for j, (v, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def plot_scale(summary: dict, scenarios: list[Scenario], brokers: list[str], path: Path) -> None:
    """Per broker, two log-log panels: msgs/s against partitions and against message size;
    a colour per contender, a line style per kind (consume, Arrow, produce)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"rdk": "tab:blue", BASELINE: "tab:orange", NATIVE: "tab:green",
               NOOP: "tab:purple"}
    styles = {"consume": ("-", "o"), "arrow": (":", "s"), "produce": ("--", "^")}
    fig, axes = plt.subplots(len(brokers), 2, figsize=(13, 4.8 * len(brokers)), squeeze=False)
    for row, broker in zip(axes, brokers, strict=True):
        for ax, axis in zip(row, ("partitions", "size"), strict=True):
            drawn = False
            ticks: set[int] = set()
            for kind, _ in SWEEP_KINDS:
                points, contenders, cells = sweep_grid(summary, scenarios, broker, axis, kind)
                ticks.update(points)
                for c in contenders:
                    xs = [p for p in points if cells.get((c, p), {}).get("msgs_per_s")]
                    if not xs:
                        continue
                    ys = [cells[(c, p)]["msgs_per_s"] for p in xs]
                    line, marker = styles[kind]
                    ax.plot(xs, ys, linestyle=line, marker=marker,
                            color=colours.get(c, "tab:gray"), label=f"{c}, {kind}")
                    drawn = True
            ax.set_xscale("log", base=2)
            if ticks:
                ax.set_xticks(sorted(ticks), [str(t) if axis == "partitions" else size_label(t)
                                              for t in sorted(ticks)])
                ax.minorticks_off()
            if drawn:
                ax.set_yscale("log")
            ax.set_xlabel("partitions (100 B messages)" if axis == "partitions"
                          else f"message size, bytes ({SIZE_PARTITIONS} partitions)")
            ax.set_ylabel("messages / s")
            against = "partitions" if axis == "partitions" else "message size"
            ax.set_title(f"{broker}: msgs/s against {against}")
            ax.grid(True, which="both", alpha=0.3)
            if drawn:
                ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / MiB, 1)
    with contextlib.suppress(OSError):
        info["load_average_at_start"] = os.getloadavg()
    versions = {}
    with contextlib.suppress(Exception):
        import rdk

        versions["rdk"] = rdk.__version__
        versions["librdkafka (rdk, native C)"] = rdk.librdkafka_version()
    with contextlib.suppress(Exception):
        import confluent_kafka

        versions["confluent-kafka"] = (f"{confluent_kafka.__version__} (librdkafka "
                                       f"{confluent_kafka.libversion()[0]})")
    with contextlib.suppress(Exception):
        import kafka

        versions["kafka-python"] = kafka.__version__
    info["versions"] = versions
    return info


def settings_text() -> str:
    prod = ", ".join(f"{k}={v}" for k, v in PRODUCER_SETTINGS.items())
    cons = ", ".join(f"{k}={v}" for k, v in CONSUMER_SETTINGS.items())
    return (f"producer: {prod}; {SEND_CHUNK} messages per send call, each call to one "
            f"partition in turn\nconsumer: {cons}; up to {CONSUME_BATCH} messages per consume "
            f"call waiting up to {CONSUME_WAIT_MS} ms; latency runs use fetch.wait.max.ms="
            f"{LATENCY_CONSUMER_SETTINGS['fetch.wait.max.ms']} and return on the first ready "
            f"message (wait {LATENCY_WAIT_MS} ms)\nkafka-python gets the equivalents it has "
            "(linger_ms, batch_size, acks, enable_idempotence, fetch_*; api_version=(2, 3));\n"
            "produce timing: a connected producer, from the first send to the last delivery "
            "report; consume timing: from the batch that passes the first 10 % of the messages "
            "to the last one processed, counting only the messages after that batch (start-up "
            "excluded); confluent-kafka produces "
            "without a per-message delivery callback; every run is checked against the "
            "broker (high watermarks) or the known topic contents")


def scale_settings_text() -> str:
    return (f"scale family: sends of count / partitions messages (at most {SEND_CHUNK} and 64 MiB), one "
            "partition after another, so every partition gets some (partition=None: "
            f"{SEND_CHUNK} per call); consume calls take at most count / 20 messages and 16 MiB "
            f"(waiting up to {CONSUME_WAIT_MS} ms for them) and consume topics hold a whole "
            "number of such batches, so no last call waits for a batch that cannot fill; "
            f"size sweep: {SIZE_PARTITIONS} "
            f"partitions, min({SCALE_COUNT:,} messages, {SIZE_BUDGET // MiB} MiB) per run, "
            + ", ".join(f"{k}={v}" for k, v in SIZE_PRODUCER.items()) + " for every producer; "
            "on the mock cluster consume topics hold as many messages as its retention keeps; "
            f"on Tansu above {TANSU_FETCH_CHECK_LIMIT} partitions produce runs are verified by "
            "reading the topic back with the native consumer")


def plot(summary: dict, scenarios: list[Scenario], brokers: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s.name for s in scenarios if s.kind in ("produce", "consume", "arrow")]
    fig, axes = plt.subplots(1, len(brokers), figsize=(6 * len(brokers), 4.5), squeeze=False)
    for ax, broker in zip(axes[0], brokers, strict=True):
        width = 0.8 / len(CONTENDERS)
        for i, c in enumerate(CONTENDERS):
            values = [(summary.get(broker, {}).get(n, {}).get(c, {}).get("msgs_per_s") or 0) / 1e6
                      for n in names]
            ax.bar([x + i * width for x in range(len(names))], values, width, label=c)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(names))])
        ax.set_xticklabels(names, rotation=15)
        ax.set_ylabel("million messages / s")
        ax.set_title(f"rdk bench on {broker}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- command line ------------------------------------------------------------------------


def build_parser(prog: str = "python bench/run.py") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n")[0],
        epilog="example: %(prog)s --quick   |   %(prog)s --repeat 5 --plot")
    p.add_argument("--quick", action="store_true",
                   help="small counts, one repetition (a smoke test, not a measurement)")
    p.add_argument("--repeat", type=int, default=None,
                   help="runs per contender and scenario; the median is reported (default 3, "
                        "--quick 1)")
    p.add_argument("--brokers", default=",".join(BROKERS),
                   help=f"comma-separated subset of {','.join(BROKERS)}")
    p.add_argument("--family", default="core", choices=FAMILIES,
                   help="core: the six scenarios of issue 7 (default); scale: partition and size "
                        "sweeps, offset files, paused RSS at 2048 partitions, worker pools "
                        "(issue 15); all: both")
    p.add_argument("--scenarios", default=None,
                   help="comma-separated subset of the family's scenarios (default all of "
                        "them); core: " + ",".join(s.name for s in SCENARIOS)
                        + "; scale: " + ",".join(s.name for s in SCALE_SCENARIOS))
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help="comma-separated subset of " + ",".join(CONTENDERS))
    p.add_argument("--out", type=Path, default=None,
                   help="results JSON (bench/results.json; --family scale: bench/scale.json)")
    p.add_argument("--plot", nargs="?", type=Path, const=True, default=None,
                   help="also write a matplotlib PNG (default bench/results.png; the scale "
                        "family's sweeps: bench/scale.png)")
    p.add_argument("--markdown", type=Path, default=None,
                   help="also write the figures as a Markdown table (for docs/performance.md)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    return p


def _pick(parser: argparse.ArgumentParser, text: str, allowed: list[str], what: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in chosen if x not in allowed]
    if bad or not chosen:
        parser.error(f"--{what}: unknown {bad or text!r}; choose from {', '.join(allowed)}")
    return chosen


def write_figures(args: argparse.Namespace, summary: dict, scenarios: list[Scenario]) -> None:
    """--plot (core: bench/results.png; scale: bench/scale.png) and --markdown."""
    scale = [s for s in scenarios if s.family == "scale"]
    core = [s for s in scenarios if s.family == "core"]
    if args.plot:
        given = args.plot if isinstance(args.plot, Path) else None
        if core:
            path = given or DEFAULT_PLOT
            plot(summary, core, args.brokers, path)
            print(f"wrote {path}")
        if scale:
            path = (given.with_name(given.stem + "-scale" + given.suffix) if given and core
                    else given or DEFAULT_SCALE_PLOT)
            plot_scale(summary, scale, args.brokers, path)
            print(f"wrote {path}")
    if args.markdown:
        text = markdown(summary, scenarios, args.brokers)
        if scale:
            text += ("\n" + sweep_tables(summary, scale, args.brokers, md=True)
                     + "\n" + scale_details(summary, scale, args.brokers, md=True))
        args.markdown.write_text(text + "\n")
        print(f"wrote {args.markdown}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns 0 when every run was verified (targets do not matter)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.brokers = _pick(parser, args.brokers, BROKERS, "brokers")
    args.contenders = _pick(parser, args.contenders, CONTENDERS, "contenders")
    family = family_scenarios(args.family)
    wanted = (_pick(parser, args.scenarios, [s.name for s in family], "scenarios")
              if args.scenarios is not None else [s.name for s in family])
    scenarios = [s for s in family if s.name in wanted]
    if args.out is None:
        args.out = DEFAULT_SCALE_OUT if args.family == "scale" else DEFAULT_OUT
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.time()
    info = machine()
    native, native_why = build_native()  # the consume scenarios' filler, a contender or not
    unavailable = {c: contender_available(c, native, native_why) for c in args.contenders}
    for c, why in unavailable.items():
        if why:
            log(f"{c}: unavailable ({why})")
    log(f"settings:\n{settings_text()}")
    runs: list[Run] = []
    for broker in args.brokers:
        for scenario in scenarios:
            log(f"[{broker}] {scenario.name}: {scenario.title}"
                + (" (quick counts)" if args.quick else ""))
            began = time.monotonic()
            runs += run_scenario(scenario, broker, args, native, unavailable, log)
            log(f"  ({time.monotonic() - began:.1f} s)")
    summary = summarise(runs)
    targets = check_targets(summary, args.brokers)

    print(table(summary, scenarios, args.brokers))
    scale = [s for s in scenarios if s.family == "scale"]
    if scale:
        print(sweep_tables(summary, scale, args.brokers))
        print(scale_details(summary, scale, args.brokers))
    print("\nsettings (every contender):\n" + settings_text())
    if scale:
        print(scale_settings_text())
    print("\ntargets" + (" (quick mode: small counts, not meaningful)" if args.quick else "") + ":")
    for t in targets:
        print(f"  [{t['broker']}] {t['target']}: {t['state']}"
              + (f" ({t['value']:.3g})" if t["value"] is not None and t["figure"] != "peak_rss"
                 else f" ({t['value'] / MiB:.0f} MiB)" if t["value"] is not None else "")
              + (f" - {t['why']}" if t["why"] else ""))
    failed = [r for r in runs if r.status == "failed"]
    info["load_average_at_end"] = os.getloadavg()
    report = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": "python bench/run.py" + ("" if argv is None and len(sys.argv) <= 1 else
                                            " " + " ".join(argv if argv is not None else sys.argv[1:])),
        "quick": args.quick, "repeat": args.repeat, "seconds": round(time.time() - started, 1),
        "machine": info,
        "settings": {"producer": PRODUCER_SETTINGS, "consumer": CONSUMER_SETTINGS,
                     "latency_consumer": LATENCY_CONSUMER_SETTINGS, "send_chunk": SEND_CHUNK,
                     "consume_batch": CONSUME_BATCH, "consume_wait_ms": CONSUME_WAIT_MS,
                     "latency_wait_ms": LATENCY_WAIT_MS,
                     **({"scale": scale_settings_text(),
                         "size_sweep_producer_extra": SIZE_PRODUCER,
                         "size_sweep_partitions": SIZE_PARTITIONS,
                         "size_sweep_budget_bytes": SIZE_BUDGET} if scale else {})},
        "family": args.family,
        "scenarios": [asdict(s) for s in scenarios],
        "runs": [asdict(r) for r in runs],
        "summary": summary,
        "targets": targets,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"\nwrote {args.out}" + (f" in {report['seconds']:.0f} s" if report["seconds"] else ""))
    write_figures(args, summary, scenarios)
    if failed:
        print(f"{len(failed)} run(s) FAILED verification: see above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
