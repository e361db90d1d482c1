"""rdk against Apache Kafka's Java client, confluent-kafka and native C, on Apache Kafka
(issues 27 and 35).

``python bench/java_peer.py`` starts ONE ``rdk.testing.KafkaCluster(1)`` (Apache Kafka 4.3.1,
KRaft, one JVM) and measures, in the same run and on that broker:

- throughput: produce and consume, msgs/s, MB/s (value bytes / 1e6) and the client's CPU µs
  per message, 100 B, 1 KiB and 10 KiB values, 4, 64 and 1 024 partitions. Peers: rdk
  (objects), rdk Arrow (consume only: ``Fetcher`` batches to ``rdk.arrow.record_batch``, as
  the Spark source reads), confluent-kafka, the Java client and native C (bench/native.c,
  librdkafka's own batch calls, compiled by bench/run.py against the same patched static
  librdkafka rdk links; librdkafka's ``rdkafka_performance`` is not in the source
  scripts/build-librdkafka.sh builds from, so native.c stands for it). CPU: each peer's own
  process (``getrusage``/``CLOCK_PROCESS_CPUTIME_ID``) over the timed window; the Java tools'
  JVM over its whole run (``os.wait4``: start-up and JIT included, an upper bound). Peak
  RSS: each peer's process over its whole run (its ``VmHWM``, sampled every 5 ms). The
  Python peers and native C also report when their last message was enqueued
  (``enqueue_seconds``; the enqueue rate table): the rest of a produce run waits for acks.
  rdk and confluent-kafka run bench/contenders/*_client.py (rdk: ``Producer.send`` of chunks
  of min(10 000, count / partitions) messages, each to one partition in turn; ``Consumer``
  with offset files and a ``receive_callback``; confluent-kafka: ``produce`` per message,
  ``consume(n)``); the Java client runs Kafka's own
  ``org.apache.kafka.tools.ProducerPerformance`` (its final line: the steady state after
  ``--warmup-records`` = 10 %; the whole run's figure is in the JSON) and
  ``ConsumerPerformance`` (``fetch.nMsg.sec``: the group's first rebalance left out;
  ``nMsg.sec`` in the JSON). Each produce writes a fresh topic (checked against the broker's
  high watermarks); every consumer reads the topic rdk produced.
- end-to-end latency p50/p99/p99.9 of a paced producer and a consumer in the same process
  (send time in the payload, CLOCK_MONOTONIC) at 1k, 10k, 50k msgs/s, with linger 0 ms, 5 ms
  and each client's default (rdk: ``queue_buffering_max_ms=250``, kafka-native's; librdkafka
  and so confluent-kafka: 5 ms), for rdk and confluent-kafka; Kafka's ``EndToEndLatency`` as
  the Java reference (one message at a time: ``send().get()``, then ``poll`` until it
  arrives; linger 0, the consumer's fetch.max.wait.ms 0; whole milliseconds). Latency runs
  also report the process's CPU seconds per thread (``thread_cpu_seconds``).

First each peer produces and consumes 200 000 x 100 B once, not kept (the fresh broker's
JIT warm-up would otherwise fall on whoever runs first). Every point runs ``--repeat`` times
(default 3, peers interleaved, their order rotated per repeat); the JSON
(bench/java_peer.json, ``--out``) keeps every run and min/median per point; ``--table``
prints the markdown tables of an existing JSON. ``--quick``: every peer at every size and
partition count (3 of the 9 cells) with tiny counts, one latency point, one repetition (a smoke
test, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CONTENDER_DIR = HERE / "contenders"
DEFAULT_OUT = HERE / "java_peer.json"
RDK_ARROW = "rdk Arrow"  # consume only: Fetcher batches to pyarrow RecordBatches
NATIVE = "native C"  # bench/native.c on the same static (patched) librdkafka rdk links
PYTHON_PEERS = {"rdk": "rdk_client.py", RDK_ARROW: "rdk_client.py",
                "confluent-kafka": "confluent_client.py"}
JAVA = "java"
PEERS = ["rdk", RDK_ARROW, "confluent-kafka", JAVA, NATIVE]
CONSUME_ONLY = {RDK_ARROW}
LATENCY_PEERS = {"rdk", "confluent-kafka"}
# "rdk queue=30000": rdk producing with queue.buffering.max.messages=30000 (a memory bound);
# produce only, like every variant
VARIANT = re.compile(r"^(rdk|confluent-kafka|native C) queue=([0-9]+)$")
SCALE_PARTITIONS = 512  # issue 35: >= 1.3 x confluent-kafka from here up (scale sweep)


def base_peer(peer: str) -> tuple[str, dict[str, Any]]:
    """A peer's client and the producer settings its variant adds."""
    m = VARIANT.match(peer)
    if m is None:
        return peer, {}
    return m.group(1), {"queue.buffering.max.messages": int(m.group(2))}


def check_peer(peer: str) -> str:
    if peer not in PEERS and VARIANT.match(peer) is None:
        raise argparse.ArgumentTypeError(f"unknown peer {peer!r}: one of {', '.join(PEERS)}, "
                                         "or one of rdk, confluent-kafka, native C followed by "
                                         "' queue=N'")
    return peer

# The settings every peer shares (the names are the same in librdkafka and the Java client).
COMMON_PRODUCER: dict[str, Any] = {
    "acks": "1",
    "linger.ms": 5,
    "compression.type": "none",
    "enable.idempotence": "false",
    "batch.size": 1000000,  # librdkafka's default; the Java client's is 16 384
}
LIBRDKAFKA_PRODUCER = {**COMMON_PRODUCER, "batch.num.messages": 10000,
                       "queue.buffering.max.messages": 2000000,
                   "queue.buffering.max.kbytes": 1048576}
JAVA_PRODUCER = {**COMMON_PRODUCER, "buffer.memory": 536870912}  # 64 partitions x 1 MB batches
LIBRDKAFKA_CONSUMER: dict[str, Any] = {  # as bench/run.py's CONSUMER_SETTINGS
    "fetch.queue.backoff.ms": 10,
    "fetch.wait.max.ms": 100,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "queued.max.messages.kbytes": 65536,
}
JAVA_CONSUMER: dict[str, Any] = {
    "fetch.max.wait.ms": 100,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "max.poll.records": 10000,
}
LATENCY_CONSUMER = {**LIBRDKAFKA_CONSUMER, "fetch.wait.max.ms": 10}
JVM_OPTIONS = ["-Xmx1g", "-XX:+UseParallelGC"]
SEND_CHUNK = 10000
CONSUME_BATCH = 10000
DEFAULT_LINGER = "default"  # a latency point without linger.ms: each client's own default
LATENCY_PARTITIONS = 4


def plan(quick: bool, duration: float | None) -> dict[str, Any]:
    if quick:  # every peer at every size and partition count, tiny counts: a smoke test
        return {"sizes": [100, 1024, 10240], "partitions": [4, 64, 1024],
                "cells": [[100, 4], [1024, 64], [10240, 1024]],  # the suite's time: 3 of 9
                "counts": {100: 5000, 1024: 2000, 10240: 1000},
                "rates": [1000], "lingers": [5], "duration": duration or 2.0,
                "e2e_records": 300, "repeat": 1}
    return {"sizes": [100, 1024, 10240], "partitions": [4, 64, 1024],
            "counts": {100: 1000000, 1024: 200000, 10240: 40000},
            "rates": [1000, 10000, 50000], "lingers": [0, 5, DEFAULT_LINGER],
            "duration": duration or 10.0, "e2e_records": 5000, "repeat": 3}


# ---- the contender processes --------------------------------------------------------------

def child_main(peer: str, job_json: str) -> None:
    """Run a bench/contenders script with LatencyRecorder also reporting p99.9 (common.py
    reports p50/p99/max)."""
    import runpy

    sys.path.insert(0, str(CONTENDER_DIR))
    import common  # type: ignore[import-not-found]

    plain = common.LatencyRecorder.result

    def result(self: Any, produced: int, seconds: float) -> dict[str, Any]:
        out = plain(self, produced, seconds)
        lat = sorted(self.latencies)
        out["p999_ms"] = round(lat[(len(lat) - 1) * 999 // 1000] / 1e6, 3) if lat else -1.0
        usage = resource.getrusage(resource.RUSAGE_SELF)
        out["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # the whole process, start-up in
        return out

    common.LatencyRecorder.result = result
    plain_report = common.report

    def report(out: dict[str, Any]) -> None:
        plain_report({**out, "thread_cpu_seconds": _thread_cpu()})

    common.report = report
    threading.Thread(target=_watch_threads, name="java-peer-cpu", daemon=True).start()
    script = str(CONTENDER_DIR / PYTHON_PEERS[peer])
    sys.argv = [script, job_json]
    runpy.run_path(script, run_name="__main__")


_THREAD_CPU: dict[int, tuple[str, float]] = {}


def _watch_threads() -> None:
    """Every 0.2 s, each live thread's CPU seconds (/proc/self/task/TID/stat) under its name
    (Python's name where it is a Python thread, else the OS name: librdkafka's rdk:broker...):
    the last reading survives the thread, so the figures cover threads that ended."""
    tick = os.sysconf("SC_CLK_TCK")
    while True:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    head, rest = f.read().rsplit(")", 1)
            except OSError:
                continue
            fields = rest.split()
            name = names.get(int(tid)) or head.split("(", 1)[1]
            _THREAD_CPU[int(tid)] = (name, (int(fields[11]) + int(fields[12])) / tick)
        time.sleep(0.2)


def _thread_cpu() -> dict[str, float]:
    """CPU seconds per thread name (threads of one name summed; digits dropped)."""
    out: dict[str, float] = {}
    for name, cpu in list(_THREAD_CPU.values()):
        key = re.sub(r"\d+", "N", name)
        out[key] = round(out.get(key, 0.0) + cpu, 3)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


class Finished:
    """A child process's exit code, output and its own resource use."""

    def __init__(self, returncode: int, stdout: str, stderr: str, usage: Any,
                 peak_rss_bytes: int) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.cpu_seconds = usage.ru_utime + usage.ru_stime  # os.wait4: this child's alone
        self.peak_rss_bytes = peak_rss_bytes
        self.wall_seconds = 0.0  # Popen to exit: the whole run, start-up included


def vm_hwm(pid: int) -> int:
    """``VmHWM`` of /proc/PID/status in bytes (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_measured(argv: list[str], timeout: float) -> Finished | None:
    """Run ``argv`` from the repository root; None if it outlived ``timeout`` (it is killed).

    CPU: ``os.wait4``'s rusage, this child's alone (RUSAGE_CHILDREN sums them all). Peak RSS:
    the child's ``VmHWM``, read as soon as Popen returns (the child has exec'd by then) and
    every 5 ms while it runs (a high-water mark, so only growth in its last 5 ms can be
    missed). Not ``ru_maxrss``: Linux carries the RSS peak of the memory the child held before
    ``exec`` (the parent's, under vfork) into it."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT)
        expired, ended = threading.Event(), threading.Event()
        peak = [0]

        def watch() -> None:
            while True:  # a child of a few milliseconds still gets a reading
                peak[0] = max(peak[0], vm_hwm(proc.pid))
                if ended.wait(0.005):
                    return

        def kill() -> None:
            expired.set()
            proc.kill()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - began
        finally:
            timer.cancel()
            ended.set()
            watcher.join()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if expired.is_set():
            return None
        out.seek(0)
        err.seek(0)
        done = Finished(proc.returncode, out.read().decode(errors="replace"),
                        err.read().decode(errors="replace"), usage, peak[0])
        done.wall_seconds = wall
        return done


def run_python(peer: str, job: dict[str, Any], timeout: float) -> tuple[dict | None, str]:
    """One contender in its own process. rdk's consumer keeps its offset files in a directory
    made here and removed after the process exited: a user's offset files stay, so removing
    2 048 of them (0.2 s) is not part of the client's whole run."""
    with tempfile.TemporaryDirectory(prefix="rdk-bench-") as offset_dir:
        job = {**job, "options": {**job.get("options", {}), "offset_dir": offset_dir}}
        argv = [sys.executable, str(Path(__file__).resolve()), "--child", peer, json.dumps(job)]
        done = run_measured(argv, timeout)
    if done is None:
        return None, f"timed out after {timeout:.0f} s"
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            return {**json.loads(line[len("RESULT "):]), "peak_rss_bytes": done.peak_rss_bytes,
                    "wall_seconds": done.wall_seconds}, ""
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return None, f"exit code {done.returncode}: {' | '.join(tail)}"


_LAST_CHILD: list[float] = [0.0, 0]  # CPU seconds and peak RSS bytes of the last JVM run_java ran


def run_java(libs: Path, tool: str, args: list[str], timeout: float) -> tuple[str, str]:
    argv = ["java", *JVM_OPTIONS, "-cp", f"{libs}/*", f"org.apache.kafka.tools.{tool}", *args]
    done = run_measured(argv, timeout)
    if done is None:
        return "", f"timed out after {timeout:.0f} s"
    _LAST_CHILD[:] = [done.cpu_seconds, done.peak_rss_bytes]
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return done.stdout, f"exit code {done.returncode}: {' | '.join(tail)}"
    return done.stdout, ""


def run_native(job: dict[str, Any], timeout: float) -> tuple[dict | None, str]:
    """bench/native.c (compiled by bench/run.py against the static librdkafka rdk links, the
    same patched source): librdkafka's own batch calls with nothing in between."""
    from dataclasses import asdict

    sys.path[:0] = [str(HERE), str(CONTENDER_DIR)]
    import common  # type: ignore[import-not-found]
    import run as bench_run  # type: ignore[import-not-found]

    binary, why = bench_run.build_native()
    if binary is None:
        return None, f"native C unavailable: {why}"
    argv = bench_run.native_argv(binary, asdict(common.Job(**job)))  # the Job's defaults filled in
    done = run_measured(argv, timeout)
    if done is None:
        return None, f"timed out after {timeout:.0f} s"
    result = bench_run.parse_result(done.stdout)
    if result is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"exit code {done.returncode}: {' | '.join(tail)}"
    return {**result, "peak_rss_bytes": done.peak_rss_bytes, "wall_seconds": done.wall_seconds}, ""


def props_args(props: dict[str, Any]) -> list[str]:
    return [f"{k}={v}" for k, v in props.items()]


_PRODUCED = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)")
_STEADY = re.compile(r"^(\d+) steady state records sent, ([\d.]+) records/sec")
_E2E = re.compile(r"Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)")


def java_produce(libs: Path, bootstrap: str, topic: str, count: int, size: int,
                 timeout: float) -> tuple[dict | None, str]:
    out, problem = run_java(libs, "ProducerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(count),
        "--record-size", str(size), "--throughput", "-1",
        "--warmup-records", str(count // 10),
        "--command-property", *props_args(JAVA_PRODUCER)], timeout)
    whole = [m for m in map(_PRODUCED.match, out.splitlines()) if m]
    steady = [m for m in map(_STEADY.match, out.splitlines()) if m]
    if problem or not whole or not steady:
        return None, problem or f"no summary lines in: {out.strip()[-300:]}"
    # the final line: the steady state after the first 10 % (JIT warm-up and first metadata
    # out, as the consumers' clocks leave their first 10 % out); the whole run's line is kept
    sent, rate = int(whole[-1].group(1)), float(steady[-1].group(2))
    return {"count": sent, "seconds": int(steady[-1].group(1)) / rate if rate else 0.0,
            "process_cpu_seconds": _LAST_CHILD[0], "peak_rss_bytes": _LAST_CHILD[1],
            "msgs_per_s": rate, "whole_run_msgs_per_s": float(whole[-1].group(2)),
            "line": steady[-1].group(0), "whole_run_line": whole[-1].group(0)}, ""


def java_consume(libs: Path, bootstrap: str, topic: str, count: int,
                 timeout: float) -> tuple[dict | None, str]:
    out, problem = run_java(libs, "ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(count),
        "--group", f"java-peer-{uuid.uuid4().hex[:8]}", "--timeout", "30000",
        "--command-property", *props_args(JAVA_CONSUMER)], timeout)
    lines = out.strip().splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if problem or header is None or header + 1 >= len(lines):
        return None, problem or f"no CSV line in: {out.strip()[-300:]}"
    names = [n.strip() for n in lines[header].split(",")]
    values = dict(zip(names, (v.strip() for v in lines[header + 1].split(",")), strict=False))
    consumed = int(values["data.consumed.in.nMsg"])
    fetch_ms = float(values["fetch.time.ms"])
    # fetch.nMsg.sec: messages over the time after the group's first rebalance (start-up
    # out, as the Python peers' clocks leave it out); nMsg.sec counts the rebalance too
    return {"count": consumed, "seconds": fetch_ms / 1000, "msgs_per_s": float(values["fetch.nMsg.sec"]),
            "process_cpu_seconds": _LAST_CHILD[0], "peak_rss_bytes": _LAST_CHILD[1],
            "msgs_per_s_with_rebalance": float(values["nMsg.sec"]),
            "rebalance_ms": float(values["rebalance.time.ms"]), "csv": lines[header + 1]}, ""


def java_e2e(libs: Path, bootstrap: str, topic: str, records: int, size: int,
             timeout: float) -> tuple[dict | None, str]:
    t0 = time.perf_counter()
    out, problem = run_java(libs, "EndToEndLatency", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
        "--producer-acks", COMMON_PRODUCER["acks"], "--record-size", str(size)], timeout)
    seconds = time.perf_counter() - t0
    m = _E2E.search(out)
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    if problem or not m:
        return None, problem or f"no percentiles in: {out.strip()[-300:]}"
    return {"count": records, "p50_ms": float(m.group(1)), "p99_ms": float(m.group(2)),
            "p999_ms": float(m.group(3)), "avg_ms": float(avg.group(1)) if avg else None,
            "rate": records / seconds, "seconds_with_jvm_start": seconds}, ""


# ---- the run ------------------------------------------------------------------------------

def python_job(kind: str, bootstrap: str, topic: str, partitions: int, count: int, size: int,
               timeout: float, **extra: Any) -> dict[str, Any]:
    return {"scenario": kind, "bootstrap": bootstrap, "topic": topic, "partitions": partitions,
            "count": count, "size": size,
            # every partition gets data: at 1 024 partitions 10 000-message chunks would
            # reach only the first count / 10 000 of them
            "chunk": max(1, min(SEND_CHUNK, count // partitions)),
            "batch": max(1, min(CONSUME_BATCH, count // 20)), "wait_ms": 1000,
            "timeout": timeout, "idle": 20.0, "producer": dict(LIBRDKAFKA_PRODUCER),
            "consumer": dict(LIBRDKAFKA_CONSUMER), "options": {}, **extra}


def high_watermarks(admin: Any, topic: str, partitions: int) -> int:
    """The topic's message count: every partition's watermarks in one lookup
    (``Admin.topic_watermarks``; one call per partition took about 10 s at 1 024)."""
    return sum(hi for _lo, hi in admin.topic_watermarks(topic, range(partitions), timeout=60).values())


class Bench:
    def __init__(self, args: argparse.Namespace, cluster: Any, libs: Path) -> None:
        from rdk.admin import Admin

        self.args, self.cluster, self.libs = args, cluster, libs
        self.bootstrap = cluster.bootstrap_servers
        self.admin = Admin(self.bootstrap)
        self.runs: list[dict[str, Any]] = []
        self.produced: list[str] = []  # this point's topics, deleted once it is measured
        self.warming = False
        self.timeout = args.timeout

    def log(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    def topic(self, partitions: int, tag: str) -> str:
        name = f"jp-{tag}-{uuid.uuid4().hex[:8]}"
        self.cluster.create_topic(name, partitions)
        return name

    def record(self, run: dict[str, Any]) -> None:
        if self.warming:
            run["point"] = f"{run.get('point')} (warm-up, not kept)"
        else:
            self.runs.append(run)
        figures = {k: run[k] for k in ("msgs_per_s", "p50_ms", "p99_ms", "p999_ms") if k in run}
        self.log(f"{run['kind']} {run['peer']} {run.get('point')}: "
                 f"{run['problem'] or json.dumps(figures)}")

    def settle(self) -> None:
        """Write the page cache's dirty pages out before a run (``os.sync``), so that no run
        shares the disk with the writeback of the runs before it (a run writes up to 400 MB;
        ``produce_cell`` also deletes each topic it no longer needs at once)."""
        os.sync()

    def produce(self, peer: str, size: int, partitions: int, count: int, repeat: int) -> str:
        try:
            topic = self.topic(partitions, "p")
        except Exception as e:  # the broker could not make the topic: this run fails, not the bench
            self.record(self.figures("produce", peer, size, partitions, count, repeat, None,
                                     f"creating the topic: {e}"))
            return ""
        self.settle()
        if peer == JAVA:
            r, problem = java_produce(self.libs, self.bootstrap, topic, count, size, self.timeout)
        else:
            client, extra = base_peer(peer)
            job = python_job("produce", self.bootstrap, topic, partitions, count, size, self.timeout)
            job["producer"].update(extra)
            run = run_native if client == NATIVE else partial(run_python, client)
            r, problem = run(job, self.timeout + 60)
            if r:
                r["msgs_per_s"] = r["count"] / r["seconds"] if r.get("seconds") else 0.0
        if r and not problem:
            try:
                on_broker = high_watermarks(self.admin, topic, partitions)
            except Exception as e:
                on_broker, problem = -1, f"high watermarks: {e}"
            if not problem and on_broker != count:
                problem = f"{on_broker} messages on the broker, {count} sent"
        self.record(self.figures("produce", peer, size, partitions, count, repeat, r, problem))
        self.produced.append(topic)
        return topic if not problem else ""

    def consume(self, peer: str, topic: str, size: int, partitions: int, count: int,
                repeat: int) -> None:
        self.settle()
        if peer == JAVA:
            r, problem = java_consume(self.libs, self.bootstrap, topic, count, self.timeout)
        else:
            job = python_job("arrow" if peer == RDK_ARROW else "consume", self.bootstrap, topic,
                             partitions, count, size, self.timeout)
            run = run_native if peer == NATIVE else partial(run_python, peer)
            r, problem = run(job, self.timeout + 60)
            if r:
                timed = r.get("timed_count", r.get("count", 0))
                r["msgs_per_s"] = timed / r["seconds"] if r.get("seconds") else 0.0
                if r.get("errors") or r.get("bad_size"):
                    problem = f"errors {r.get('errors')}, wrong sizes {r.get('bad_size')}"
        if r and not problem and r["count"] != count:
            problem = f"consumed {r['count']} of {count}"
        self.record(self.figures("consume", peer, size, partitions, count, repeat, r, problem))

    @staticmethod
    def figures(kind: str, peer: str, size: int, partitions: int, count: int, repeat: int,
                r: dict | None, problem: str) -> dict[str, Any]:
        run: dict[str, Any] = {"kind": kind, "peer": peer, "size": size, "partitions": partitions,
                               "count": count, "repeat": repeat,
                               "point": f"{size} B x {partitions} partitions",
                               "problem": problem, "raw": r or {}}
        if r and not problem:
            run["msgs_per_s"] = r["msgs_per_s"]
            run["mb_per_s"] = r["msgs_per_s"] * size / 1e6
            timed = r.get("timed_count", r.get("count"))
            if r.get("cpu_seconds") is not None and timed:
                # the peer's own process, every thread, over the timed window
                run["cpu_us_per_msg"] = r["cpu_seconds"] / timed * 1e6
            elif r.get("process_cpu_seconds") and r.get("count"):
                # the Java tools: the JVM's whole run (start-up and JIT included) per message
                run["cpu_us_per_msg"] = r["process_cpu_seconds"] / r["count"] * 1e6
                run["cpu_whole_process"] = True
            if r.get("peak_rss_bytes"):
                run["peak_rss_mib"] = r["peak_rss_bytes"] / 2**20  # the peer's process, whole run
            if r.get("enqueue_seconds") and r.get("seconds"):
                # a producer's time until its last message was enqueued; the rest of the
                # timed window is flush(), waiting for the broker's acknowledgements
                run["enqueue_msgs_per_s"] = r["count"] / r["enqueue_seconds"]
            if r.get("wall_seconds") and r.get("count"):
                # start-up included: interpreter, imports, connect, metadata, the consumer's
                # assignment and first fetches, the producer's final flush
                run["whole_msgs_per_s"] = r["count"] / r["wall_seconds"]
        return run

    def throughput(self, order: list[str], repeat: int) -> None:
        p = self.args.plan
        cells = p.get("cells") or [[s, n] for s in p["sizes"] for n in p["partitions"]]
        for size, partitions in cells:
            count = p["counts"][size]
            source = self.produce_cell(order, size, partitions, count, repeat)
            for peer in order:
                if VARIANT.match(peer):
                    continue  # variants are producer settings
                if source:
                    self.consume(peer, source, size, partitions, count, repeat)
                else:
                    self.record(self.figures("consume", peer, size, partitions, count, repeat,
                                             None, "no topic was produced in full"))
            self.drop(self.produced)
            self.produced = []

    def produce_cell(self, order: list[str], size: int, partitions: int, count: int,
                     repeat: int) -> str:
        """Each producer of the cell in ``order``; the topic the consumers read comes back
        (rdk's, else the first produced in full). Every other topic is deleted as soon as it
        is counted, so a cell does not keep five 400 MB topics (10 KiB) on disk. (It did not
        steady the 10 KiB cells: there every producer still ranges over 2-5 x between
        repeats; the disk decides.)"""
        keep_for = "rdk" if "rdk" in order else next(p for p in order if p not in CONSUME_ONLY)
        source = ""
        for peer in order:
            if peer in CONSUME_ONLY:
                continue
            topic = self.produce(peer, size, partitions, count, repeat)
            if topic and (peer == keep_for or not source):
                if source:  # rdk's replaces a fallback kept so far
                    self.drop_now(source)
                source = topic
            elif topic:
                self.drop_now(topic)
        return source

    def drop_now(self, topic: str) -> None:
        if topic in self.produced:
            self.produced.remove(topic)
        self.drop([topic])

    def drop(self, topics: list[str]) -> None:
        """Delete topics once measured (1 GiB per throughput point otherwise stays on disk)."""
        if not topics:
            return
        try:
            self.admin.delete_topics(topics)
        except Exception as e:  # the disk fills a little sooner, nothing more
            self.log(f"deleting {topics}: {e}")

    def latency(self, order: list[str], repeat: int) -> None:
        p = self.args.plan
        size = 100
        for rate in p["rates"]:
            for linger in p["lingers"]:
                for peer in order:
                    if peer not in LATENCY_PEERS:
                        continue
                    topic = self.topic(LATENCY_PARTITIONS, "l")
                    producer = dict(LIBRDKAFKA_PRODUCER)
                    if linger == DEFAULT_LINGER:
                        del producer["linger.ms"]
                    else:
                        producer["linger.ms"] = linger
                    duration = p["duration"]
                    job = python_job("latency", self.bootstrap, topic, LATENCY_PARTITIONS, 0, size,
                                     self.timeout, rate=rate, duration=duration,
                                     warmup=int(rate * duration / 10), wait_ms=100,
                                     batch=CONSUME_BATCH,
                                     producer=producer, consumer=dict(LATENCY_CONSUMER))
                    r, problem = run_python(peer, job, self.timeout + duration + 60)
                    if r and not problem and r["count"] != r["produced"]:
                        problem = f"received {r['count']} of {r['produced']}"
                    run = {"kind": "latency", "peer": peer, "rate": rate, "linger": linger,
                           "size": size, "partitions": LATENCY_PARTITIONS, "repeat": repeat,
                           "point": f"{rate}/s linger {linger}", "problem": problem, "raw": r or {}}
                    if r and not problem:
                        run.update({k: r[k] for k in ("p50_ms", "p99_ms", "p999_ms")})
                    self.record(run)
                    self.drop([topic])
        topic = self.topic(1, "e2e")
        r, problem = java_e2e(self.libs, self.bootstrap, topic, p["e2e_records"], size,
                              self.timeout)
        run = {"kind": "java_e2e", "peer": JAVA, "size": size, "partitions": 1, "repeat": repeat,
               "records": p["e2e_records"], "point": "EndToEndLatency", "problem": problem,
               "raw": r or {}}
        if r and not problem:
            run.update({k: r[k] for k in ("p50_ms", "p99_ms", "p999_ms", "rate")})
        self.record(run)

    def warm_up(self) -> None:
        """A fresh broker's JVM is still compiling: whoever runs first would pay for it. Each
        peer produces and consumes 200 000 x 100 B on 4 partitions once, not kept."""
        self.warming = True
        for peer in self.args.peers:
            if VARIANT.match(peer):
                continue
            topic = self.produce(peer, 100, 4, 200000, -1) if peer not in CONSUME_ONLY else ""
            if topic:
                self.consume(peer, topic, 100, 4, 200000, -1)
        self.drop(self.produced)
        self.produced = []
        self.warming = False

    def run(self) -> None:
        repeats = self.args.plan["repeat"]
        if not self.args.quick:
            self.warm_up()
        for repeat in range(repeats):
            peers = self.args.peers
            k = repeat % len(peers)
            order = peers[k:] + peers[:k]
            self.log(f"repeat {repeat + 1}/{repeats}, order {order}")
            if not self.args.latency_only:
                self.throughput(order, repeat)
            if not self.args.throughput_only:
                self.latency(order, repeat)
        self.admin.close()


# ---- summary and tables -------------------------------------------------------------------

def min_med(values: list[float]) -> dict[str, Any]:
    return {"min": min(values), "median": statistics.median(values), "n": len(values)} if values else {}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    thr: dict[str, Any] = {}
    lat: dict[str, Any] = {}
    for r in runs:
        if r["kind"] in ("produce", "consume"):
            key = f"{r['kind']} {r['size']}B {r['partitions']}p"
            cell = thr.setdefault(key, {"kind": r["kind"], "size": r["size"],
                                        "partitions": r["partitions"], "peers": {}})
            peer = cell["peers"].setdefault(r["peer"], {"msgs": [], "mb": [], "cpu": [], "rss": [],
                                                        "whole": [], "enqueue": [], "failed": []})
            if r["problem"]:
                peer["failed"].append(r["problem"])
            else:
                peer["msgs"].append(r["msgs_per_s"])
                peer["mb"].append(r["mb_per_s"])
                if "cpu_us_per_msg" in r:
                    peer["cpu"].append(r["cpu_us_per_msg"])
                if "peak_rss_mib" in r:
                    peer["rss"].append(r["peak_rss_mib"])
                if "whole_msgs_per_s" in r:
                    peer["whole"].append(r["whole_msgs_per_s"])
                if "enqueue_msgs_per_s" in r:
                    peer["enqueue"].append(r["enqueue_msgs_per_s"])
        else:
            key = "java_e2e" if r["kind"] == "java_e2e" else f"{r['rate']}/s linger {r['linger']}"
            cell = lat.setdefault(key, {"rate": r.get("rate"), "linger": r.get("linger"), "peers": {}})
            peer = cell["peers"].setdefault(r["peer"], {"p50": [], "p99": [], "p999": [], "failed": []})
            if r["problem"]:
                peer["failed"].append(r["problem"])
            else:
                for q in ("p50", "p99", "p999"):
                    peer[q].append(r[f"{q}_ms"])
    for cell in thr.values():
        for peer in cell["peers"].values():
            peer["msgs_per_s"], peer["mb_per_s"] = min_med(peer.pop("msgs")), min_med(peer.pop("mb"))
            peer["cpu_us_per_msg"] = min_med(peer.pop("cpu"))
            peer["peak_rss_mib"] = min_med(peer.pop("rss"))
            peer["whole_msgs_per_s"] = min_med(peer.pop("whole"))
            peer["enqueue_msgs_per_s"] = min_med(peer.pop("enqueue"))
    for cell in lat.values():
        for peer in cell["peers"].values():
            for q in ("p50", "p99", "p999"):
                peer[f"{q}_ms"] = min_med(peer.pop(q))
    return {"throughput": thr, "latency": lat, "goals": goals(thr, lat)}


def _median(cell: dict, peer: str, figure: str) -> float | None:
    return cell["peers"].get(peer, {}).get(figure, {}).get("median")


def goals(thr: dict, lat: dict) -> list[dict[str, Any]]:
    out = []
    for key, cell in thr.items():
        rdk = _median(cell, "rdk", "msgs_per_s")
        for other, target in ((JAVA, 1.0), ("confluent-kafka", 1.0)):  # issue 35
            o = _median(cell, other, "msgs_per_s")
            ratio = rdk / o if rdk and o else None
            out.append({"goal": f"{key}: rdk >= {target:g} x {other}", "ratio": ratio,
                        "holds": None if ratio is None else ratio >= target})
        # issue 35: half confluent-kafka's CPU per message; 0.9 x native C at 100 B x 4
        mine, theirs = (_median(cell, "rdk", "cpu_us_per_msg"),
                        _median(cell, "confluent-kafka", "cpu_us_per_msg"))
        ratio = mine / theirs if mine and theirs else None
        goal = {"goal": f"{key}: rdk CPU/msg <= 0.5 x confluent-kafka's", "ratio": ratio,
                "holds": None if ratio is None else ratio <= 0.5}
        native = _median(cell, NATIVE, "cpu_us_per_msg")
        if native and theirs:
            # librdkafka alone, no Python: a goal below this ratio asks a binding for less
            # CPU than the C library itself uses
            goal["native_c_ratio"] = native / theirs
        out.append(goal)
        mine, theirs = (_median(cell, "rdk", "peak_rss_mib"),
                        _median(cell, "confluent-kafka", "peak_rss_mib"))
        ratio = mine / theirs if mine and theirs else None
        out.append({"goal": f"{key}: rdk peak RSS <= 1.2 x confluent-kafka's", "ratio": ratio,
                    "holds": None if ratio is None else ratio <= 1.2})
        if cell["partitions"] >= SCALE_PARTITIONS:  # the scale sweep's goal, start included too
            for figure, what in (("msgs_per_s", ""), ("whole_msgs_per_s", " (whole run)")):
                mine, theirs = _median(cell, "rdk", figure), _median(cell, "confluent-kafka", figure)
                ratio = mine / theirs if mine and theirs else None
                out.append({"goal": f"{key}: rdk >= 1.3 x confluent-kafka{what}", "ratio": ratio,
                            "holds": None if ratio is None else ratio >= 1.3})
        for peer in cell["peers"]:  # memory-bounded variants against confluent-kafka
            if not VARIANT.match(peer):
                continue
            for figure, target, sign in (("msgs_per_s", 1.0, ">="), ("peak_rss_mib", 1.2, "<=")):
                mine, theirs = _median(cell, peer, figure), _median(cell, "confluent-kafka", figure)
                ratio = mine / theirs if mine and theirs else None
                word = "msgs/s" if figure == "msgs_per_s" else "peak RSS"
                holds = None if ratio is None else (ratio >= target if sign == ">=" else ratio <= target)
                out.append({"goal": f"{key}: {peer} {word} {sign} {target:g} x confluent-kafka's",
                            "ratio": ratio, "holds": holds})
        if cell["size"] == 100 and cell["partitions"] == 4:
            o = _median(cell, NATIVE, "msgs_per_s")
            ratio = rdk / o if rdk and o else None
            out.append({"goal": f"{key}: rdk >= 0.9 x native C", "ratio": ratio,
                        "holds": None if ratio is None else ratio >= 0.9})
    for key, cell in lat.items():
        if key == "java_e2e":
            continue
        rdk, conf = _median(cell, "rdk", "p99_ms"), _median(cell, "confluent-kafka", "p99_ms")
        ratio = rdk / conf if rdk is not None and conf else None
        out.append({"goal": f"latency {key}: rdk p99 <= confluent-kafka p99", "ratio": ratio,
                    "holds": None if rdk is None or conf is None else rdk <= conf})
    return out


def _num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "-"
    return f"{v:,.{digits}f}".replace(",", " ")


def _cell(stats: dict, digits: int = 0) -> str:
    if not stats:
        return "failed"
    return f"{_num(stats['median'], digits)} ({_num(stats['min'], digits)})"


def headline(cells: dict[str, Any]) -> list[str]:
    """README's table: per path and size, at each partition count, rdk's msgs/s over
    confluent-kafka's and (in brackets) its CPU per message over confluent-kafka's."""
    sizes = sorted({c["size"] for c in cells.values()})
    parts = sorted({c["partitions"] for c in cells.values()})
    out = ["**rdk / confluent-kafka**: msgs/s ratio (CPU per message ratio), medians", "",
           "| path | " + " | ".join(f"{p:,} partitions".replace(",", " ") for p in parts) + " |",
           "|---|" + "---:|" * len(parts)]
    for kind in ("produce", "consume"):
        for size in sizes:
            label = f"{size} B" if size < 1024 else f"{size // 1024} KiB"
            row = [f"{kind} {label}"]
            for p in parts:
                cell = cells.get(f"{kind} {size}B {p}p")
                rates = [_median(cell, q, "msgs_per_s") for q in ("rdk", "confluent-kafka")] \
                    if cell else [None, None]
                cpus = [_median(cell, q, "cpu_us_per_msg") for q in ("rdk", "confluent-kafka")] \
                    if cell else [None, None]
                text = f"{rates[0] / rates[1]:.2f} x" if rates[0] and rates[1] else "-"
                if cpus[0] and cpus[1]:
                    text += f" ({cpus[0] / cpus[1]:.2f})"
                row.append(text)
            out.append("| " + " | ".join(row) + " |")
    return out


def _figure_rows(cells: list[dict], peers: list[str], figure: str) -> list[str]:
    """A table's rows: each cell's median ``figure`` per peer."""
    out = []
    for cell in cells:
        row = [cell["kind"], f"{cell['size']} B", str(cell["partitions"])]
        row += [_num(cell["peers"].get(p, {}).get(figure, {}).get("median"), 0) for p in peers]
        out.append("| " + " | ".join(row) + " |")
    return out


def tables(data: dict[str, Any]) -> str:
    s = data["summary"]
    labels = {"rdk": "rdk", RDK_ARROW: "rdk Arrow", "confluent-kafka": "confluent-kafka",
              JAVA: "Java client", NATIVE: "native C"}
    cells = sorted(s["throughput"].values(), key=lambda c: (c["kind"] != "produce", c["size"],
                                                             c["partitions"]))
    shown = data["meta"].get("peers", PEERS)  # this run's peers
    out = headline(s["throughput"])
    head = "| path | size | partitions | " + " | ".join(labels.get(p, p) for p in shown)
    rule = "|---|---:|---:|" + "---:|" * len(shown)
    out += ["", "**Throughput** (msgs/s, median (min) of the repeats)", "",
            head + " | rdk / confluent | rdk / Java | rdk / native C |", rule + "---:|" * 3]
    for cell in cells:
        peers = cell["peers"]
        row = [cell["kind"], f"{cell['size']} B", str(cell["partitions"])]
        row += [_cell(peers[p].get("msgs_per_s", {})) if p in peers else "—" for p in shown]
        rdk = _median(cell, "rdk", "msgs_per_s")
        for other in ("confluent-kafka", JAVA, NATIVE):
            o = _median(cell, other, "msgs_per_s")
            row.append(f"{rdk / o:.2f} x" if rdk and o else "-")
        out.append("| " + " | ".join(row) + " |")
    out += ["", "**Client CPU per message** (µs, median; the Python peers' and native C's process"
            " over the timed window, the Java tools' JVM over its whole run, start-up included)"
            " and **MB/s** (value bytes / 1e6, median)", "",
            head + " | rdk / confluent CPU | rdk / native C CPU | confluent / native C CPU | "
            + " | ".join(f"{labels.get(p, p)} MB/s" for p in shown) + " |", rule + "---:|" * (3 + len(shown))]
    for cell in cells:
        peers = cell["peers"]
        row = [cell["kind"], f"{cell['size']} B", str(cell["partitions"])]
        row += [_num(peers.get(p, {}).get("cpu_us_per_msg", {}).get("median"), 2) for p in shown]
        cpu = {p: _median(cell, p, "cpu_us_per_msg") for p in ("rdk", "confluent-kafka", NATIVE)}
        for a, b in (("rdk", "confluent-kafka"), ("rdk", NATIVE), ("confluent-kafka", NATIVE)):
            row.append(f"{cpu[a] / cpu[b]:.2f}" if cpu[a] and cpu[b] else "-")
        row += [_num(peers.get(p, {}).get("mb_per_s", {}).get("median"), 1) for p in shown]
        out.append("| " + " | ".join(row) + " |")
    out += ["", "**Peak RSS** (MiB, median; each peer's process over its whole run)", "",
            head + " |", rule]
    out += _figure_rows(cells, shown, "peak_rss_mib")
    out += ["", "**Whole run** (msgs/s over each process's life, start-up included: interpreter, "
            "imports, connecting, metadata, the consumer's assignment and first fetch, the "
            "producer's final flush; median; the Java tools' figures are their own)", "", head + " |",
            rule]
    out += _figure_rows(cells, shown, "whole_msgs_per_s")
    produce_cells = [c for c in cells if c["kind"] == "produce"]
    if any(p.get("enqueue_msgs_per_s") for c in produce_cells for p in c["peers"].values()):
        out += ["", "**Enqueue rate** (producers: msgs/s until the last message was enqueued; the "
                "rest of the timed window is flush(), waiting for the broker's acknowledgements; "
                "median)", "", head + " |", rule]
        out += _figure_rows(produce_cells, shown, "enqueue_msgs_per_s")
    if not s["latency"]:
        out += ["", "(no latency points in this run)"]
    out += ["", "**End-to-end latency** (ms, 100 B, 4 partitions, median (min) of the repeats)", "",
            "| rate | linger | peer | p50 | p99 | p99.9 |", "|---:|---|---|---:|---:|---:|"]
    for key, cell in s["latency"].items():
        if key == "java_e2e":
            continue
        linger = cell["linger"]
        label = ("default (rdk 250, librdkafka 5)" if linger == DEFAULT_LINGER else f"{linger} ms")
        for peer, st in cell["peers"].items():
            row = [f"{cell['rate']:,}/s".replace(",", " "), label, peer]
            row += [_cell(st.get(f"{q}_ms", {}), 2) for q in ("p50", "p99", "p999")]
            out.append("| " + " | ".join(row) + " |")
    e2e = s["latency"].get("java_e2e")
    if e2e:
        st = e2e["peers"].get(JAVA, {})
        row = ["one at a time", "0 ms", "Java EndToEndLatency"]
        row += [_cell(st.get(f"{q}_ms", {}), 2) for q in ("p50", "p99", "p999")]
        out.append("| " + " | ".join(row) + " |")
    out += _goal_lines(s["goals"])
    return "\n".join(out)


def _goal_lines(goals: list[dict[str, Any]]) -> list[str]:
    """The goals' summary (held and missed per goal, the cells where the CPU goal is below
    native C's own CPU) and every goal's ratio."""
    out = ["", "**Goals** (issue 35; every cell's ratio is in the JSON's ``summary.goals``)", "",
            "| goal | holds in | missed in |", "|---|---|---|"]
    grouped: dict[str, tuple[list[str], list[str]]] = {}
    for g in goals:
        cell, _, what = g["goal"].partition(": ")
        held, missed = grouped.setdefault(what, ([], []))
        if g["holds"] is not None:
            (held if g["holds"] else missed).append(f"{cell} {g['ratio']:.2f}")
    for what, (held, missed) in grouped.items():
        out.append(f"| {what} | {len(held)} of {len(held) + len(missed)} | "
                   f"{'; '.join(missed) or 'none'} |")
    floor = [g["goal"].partition(": ")[0] + f" {g['native_c_ratio']:.2f}" for g in goals
             if g.get("native_c_ratio", 0) > 0.5]
    if floor:
        out += ["", f"The CPU goal asks for less than native C's own CPU per message (librdkafka "
                f"with no Python; native C / confluent-kafka CPU > 0.5) in {len(floor)} cells: "
                + "; ".join(floor) + "."]
    out += ["", "| goal | ratio | holds |", "|---|---:|---|"]
    for g in goals:
        holds = {True: "holds", False: "MISSED", None: "unknown"}[g["holds"]]
        ratio = "-" if g["ratio"] is None else f"{g['ratio']:.2f}"
        out.append(f"| {g['goal']} | {ratio} | {holds} |")
    return out


def machine() -> dict[str, Any]:
    load = os.getloadavg()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in load],
            "platform": platform.platform(), "python": platform.python_version(),
            "java": (java.stderr.splitlines() or ["?"])[0]}


def settings() -> dict[str, Any]:
    return {"producer_all": COMMON_PRODUCER, "producer_librdkafka": LIBRDKAFKA_PRODUCER,
            "producer_java": JAVA_PRODUCER, "consumer_librdkafka": LIBRDKAFKA_CONSUMER,
            "consumer_java": JAVA_CONSUMER, "latency_consumer_librdkafka": LATENCY_CONSUMER,
            "java_jvm": JVM_OPTIONS, "send_chunk": SEND_CHUNK, "consume_batch": CONSUME_BATCH}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python bench/java_peer.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="every size and partition count, tiny counts, one run each (smoke test)")
    p.add_argument("--repeat", type=int, default=None, help="runs per point (default 3; quick 1)")
    p.add_argument("--duration", type=float, default=None,
                   help="seconds of sending per latency point (default 10; quick 2)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON (default %(default)s)")
    p.add_argument("--table", action="store_true", help="print the tables of --out and exit")
    p.add_argument("--throughput-only", action="store_true")
    p.add_argument("--latency-only", action="store_true")
    p.add_argument("--rates", default=None, help="latency rates, comma-separated (msgs/s)")
    p.add_argument("--lingers", default=None,
                   help="latency linger.ms values, comma-separated; 'default' = the client's own")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    p.add_argument("--peers", type=lambda v: [check_peer(x.strip()) for x in v.split(",")],
                   default=None, help=f"comma-separated, in this order (default: {','.join(PEERS)}); "
                   "'rdk queue=N' is rdk producing with queue.buffering.max.messages=N")
    p.add_argument("--partitions", default=None,
                   help="partition counts, comma-separated (default 4,64,1024): every size at each")
    p.add_argument("--sizes", default=None, help="message sizes in bytes, comma-separated "
                   "(default 100,1024,10240)")
    p.add_argument("--broker-heap-mib", type=int, default=384,
                   help="the broker JVM's maximum heap (default %(default)s; 8 192 partitions "
                   "need more)")
    p.add_argument("--count", type=int, default=None,
                   help="messages per run at every size (default 1 M at 100 B, 200 k at 1 KiB, "
                   "40 k at 10 KiB)")
    p.add_argument("--child", nargs=2, metavar=("PEER", "JOB"), help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.child:
        child_main(*args.child)
        return 0
    if args.table:
        print(tables(json.loads(args.out.read_text())))
        return 0
    from rdk.testing import KafkaCluster, kafka_libs

    args.plan = plan(args.quick, args.duration)
    if args.repeat:
        args.plan["repeat"] = args.repeat
    if args.rates:
        args.plan["rates"] = [int(r) for r in args.rates.split(",")]
    if args.partitions or args.sizes:
        args.plan.pop("cells", None)  # every size at every partition count
    if args.partitions:
        args.plan["partitions"] = [int(n) for n in args.partitions.split(",")]
    if args.sizes:
        args.plan["sizes"] = [int(n) for n in args.sizes.split(",")]
    if args.count:
        args.plan["counts"] = {size: args.count for size in args.plan["sizes"]}
    args.peers = args.peers or list(PEERS)
    if args.lingers:
        args.plan["lingers"] = [v if v == DEFAULT_LINGER else float(v) for v in args.lingers.split(",")]
    libs = kafka_libs()
    started = time.time()
    before = machine()
    # a deleted topic's files go at once (default: a minute later), their dirty pages unwritten
    with KafkaCluster(1, heap_mib=args.broker_heap_mib, config={"file.delete.delay.ms": 0}) as cluster:
        bench = Bench(args, cluster, libs)
        bench.run()
    data = {"meta": {"quick": args.quick, "repeat": args.plan["repeat"], "plan": args.plan,
                     "peers": args.peers,
                     "command": " ".join(["python bench/java_peer.py", *(argv or sys.argv[1:])]),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
                     "seconds": round(time.time() - started, 1), "machine_before": before,
                     "machine_after": machine(), "broker": f"Apache Kafka {cluster.version}, "
                     f"1 node KRaft (rdk.testing.KafkaCluster(1), heap {args.broker_heap_mib} MiB)",
                     "settings": settings()},
            "runs": bench.runs}
    data["summary"] = summarise(bench.runs)
    args.out.write_text(json.dumps(data, indent=1))
    print(tables(data))
    failed = [r for r in bench.runs if r["problem"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
