"""Share-group consume throughput: rdk.ShareConsumer vs Kafka's Java share consumer (issue 28).

``python bench/share_bench.py`` starts ONE ``rdk.testing.KafkaCluster(1)`` (Apache Kafka 4.3.1,
KRaft, one JVM), writes 100 B messages to a fresh topic per partition count (4 and 64) with
rdk.Producer, and measures share-consume throughput (msgs/s, every record accepted) of:

- ``rdk``: rdk.ShareConsumer (explicit acknowledgement: each batch accepted by one C call when
  its callback returns), in 1 and in 4 separate processes of one share group;
- ``java``: a small Java program (``JAVA_SOURCE`` below, compiled with javac against
  ``.deps/kafka-4.3.1/libs``): one KafkaShareConsumer per thread (1 and 4 threads of one JVM),
  implicit acknowledgement (= accept), timed as the Python peers are;
- ``java-tool``: Kafka's ``org.apache.kafka.tools.ShareConsumerPerformance`` ``--threads`` 1
  and 4; its ``nMsg.sec`` (its clock includes the share-group join, ~5 s here, so at these
  counts it measures the join; kept as the reference the issue names);
- ``confluent-kafka``: its preview ``ShareConsumer`` (implicit acknowledgement) in 1 and in 4
  processes, when the installed confluent-kafka has one.

Every run uses a fresh share group whose ``share.auto.offset.reset`` is set to earliest with
``rdk.Admin.alter_group_config`` before any member starts, and checks that the records
received (summed over the processes/threads) equal the topic's high watermarks. Python
peers: each process counts what it receives in a shared counter and stops when the group has
it all; throughput = total / (last record's arrival - first record's arrival, across the
processes), so start-up and the share-group join are left out (the Java program likewise).

Each point runs ``--repeat`` times (default 3, peers' order rotated per repeat); the JSON
(bench/share_bench.json, ``--out``) keeps every run and min/median per point; ``--table``
prints the markdown table of an existing JSON. ``--quick``: 20 000 messages, 4 partitions, 2 members,
one repetition (a smoke test, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "share_bench.json"
SIZE = 100
MAX_POLL_RECORDS = 500  # the Java client's and librdkafka's default; the same for every peer
JVM_OPTIONS = ["-Xmx1g", "-XX:+UseParallelGC"]
PEERS = ("rdk", "java", "java-tool", "confluent-kafka")
IDLE_SECONDS = 60.0  # a member that sees nothing new for this long gives up
JAVA_CLASS = "ShareBenchConsume"
# The Java client timed as the Python peers are: KafkaShareConsumer per thread (implicit
# acknowledgement: every record accepted), a shared counter, first record to last record.
JAVA_SOURCE = r"""
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareBenchConsume {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], group = a[2];
        long total = Long.parseLong(a[3]);
        int threads = Integer.parseInt(a[4]);
        String maxPoll = a[5];
        AtomicLong counter = new AtomicLong();
        long[] first = new long[threads], last = new long[threads], mine = new long[threads];
        String[] problem = new String[threads];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int k = i;
            ts[i] = new Thread(() -> {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("group.id", group);
                p.put("max.poll.records", maxPoll);
                p.put("key.deserializer", ByteArrayDeserializer.class.getName());
                p.put("value.deserializer", ByteArrayDeserializer.class.getName());
                try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(topic));
                    long since = System.nanoTime();
                    while (counter.get() < total) {
                        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                        long now = System.nanoTime();
                        int n = rs.count();
                        if (n > 0) {
                            if (first[k] == 0) first[k] = now;
                            last[k] = now;
                            since = now;
                            mine[k] += n;
                            counter.addAndGet(n);
                        } else if (now - since > 60_000_000_000L) {
                            problem[k] = "stalled at " + counter.get() + " of " + total;
                            break;
                        }
                    }
                } catch (Exception e) {
                    problem[k] = e.toString();
                }
            });
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        long count = 0, lo = Long.MAX_VALUE, hi = 0;
        StringBuilder per = new StringBuilder(), bad = new StringBuilder();
        for (int i = 0; i < threads; i++) {
            count += mine[i];
            if (first[i] != 0) { lo = Math.min(lo, first[i]); hi = Math.max(hi, last[i]); }
            per.append(i == 0 ? "" : ",").append(mine[i]);
            if (problem[i] != null) bad.append(problem[i]).append("; ");
        }
        double seconds = hi > 0 ? (hi - lo) / 1e9 : 0.0;
        System.out.println("RESULT " + count + " " + seconds + " " + per + " PROBLEM " + bad);
    }
}
"""


def plan(quick: bool, count: int | None) -> dict[str, Any]:
    if quick:
        return {"partitions": [4], "members": [2], "count": count or 20000, "repeat": 1}
    return {"partitions": [4, 64], "members": [1, 4], "count": count or 200000, "repeat": 3}


def has_confluent_share() -> bool:
    try:
        import confluent_kafka
    except ImportError:
        return False
    return hasattr(confluent_kafka, "ShareConsumer")


# ---- one member process (rdk or confluent-kafka) -------------------------------------------

def member_main(peer: str, bootstrap: str, topic: str, group: str, total: int,
                counter: Any, results: Any, index: int) -> None:
    first = last = 0.0
    mine = 0
    problem = ""
    try:
        if peer == "rdk":
            import rdk

            def handle(info: Any) -> None:
                nonlocal first, last, mine
                now = time.monotonic()
                n = len(info.messages)
                if not first:
                    first = now
                last = now
                mine += n
                with counter.get_lock():
                    counter.value += n

            consumer = rdk.ShareConsumer(bootstrap, [topic], handle, group_id=group,
                                         start_offset="earliest",
                                         max_messages_per_callback=MAX_POLL_RECORDS)
            consumer.start()
            seen, since = -1, time.monotonic()
            while counter.value < total:
                if counter.value != seen:
                    seen, since = counter.value, time.monotonic()
                elif time.monotonic() - since > IDLE_SECONDS:
                    problem = f"stalled at {seen} of {total}"
                    break
                time.sleep(0.005)
            consumer.stop(30)
        else:
            import confluent_kafka

            c = confluent_kafka.ShareConsumer({
                "bootstrap.servers": bootstrap, "group.id": group,
                "max.poll.records": MAX_POLL_RECORDS})
            c.subscribe([topic])
            since = time.monotonic()
            while counter.value < total:
                batch = c.poll(0.2)
                now = time.monotonic()
                n = 0
                for m in batch:
                    if m.error() is None:
                        n += 1
                if n:
                    if not first:
                        first = now
                    last, since = now, now
                    mine += n
                    with counter.get_lock():
                        counter.value += n
                elif now - since > IDLE_SECONDS:
                    problem = f"stalled at {counter.value} of {total}"
                    break
            c.close()
    except Exception as e:  # reported, not raised: the parent checks every member
        problem = f"{type(e).__name__}: {e}"
    results.put({"index": index, "count": mine, "first": first, "last": last,
                 "problem": problem})


def run_members(peer: str, bootstrap: str, topic: str, group: str, total: int,
                members: int, timeout: float) -> tuple[dict | None, str]:
    ctx = multiprocessing.get_context("spawn")
    counter = ctx.Value("q", 0)
    results = ctx.Queue()
    procs = [ctx.Process(target=member_main, args=(peer, bootstrap, topic, group, total,
                                                   counter, results, i), daemon=True)
             for i in range(members)]
    for p in procs:
        p.start()
    got: list[dict] = []
    deadline = time.monotonic() + timeout
    while len(got) < members and time.monotonic() < deadline:
        try:
            got.append(results.get(timeout=1))
        except Exception:  # queue.Empty
            if not any(p.is_alive() for p in procs) and results.empty():
                break
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    if len(got) < members:
        return None, f"{members - len(got)} member(s) reported nothing"
    problems = [r["problem"] for r in got if r["problem"]]
    count = sum(r["count"] for r in got)
    firsts = [r["first"] for r in got if r["first"]]
    seconds = max(r["last"] for r in got) - min(firsts) if firsts else 0.0
    out = {"count": count, "seconds": seconds,
           "msgs_per_s": count / seconds if seconds > 0 else 0.0,
           "per_member": sorted(r["count"] for r in got)}
    return out, "; ".join(problems)


# ---- Java ----------------------------------------------------------------------------------

def run_java(libs: Path, bootstrap: str, topic: str, group: str, total: int, threads: int,
             timeout: float) -> tuple[dict | None, str]:
    argv = ["java", *JVM_OPTIONS, "-cp", f"{libs}/*",
            "org.apache.kafka.tools.ShareConsumerPerformance", "--bootstrap-server", bootstrap,
            "--topic", topic, "--group", group, "--num-records", str(total),
            "--threads", str(threads), "--timeout", "30000",
            "--command-property", f"max.poll.records={MAX_POLL_RECORDS}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    lines = done.stdout.strip().splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if done.returncode != 0 or header is None or header + 1 >= len(lines):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"exit code {done.returncode}: {' | '.join(tail)}"
    names = [n.strip() for n in lines[header].split(",")]
    row = lines[-1]  # the summary: the last line (per-consumer lines come before it)
    values = dict(zip(names, (v.strip() for v in row.split(",")), strict=False))
    count = int(values["data.consumed.in.nMsg"])
    out = {"count": count, "msgs_per_s": float(values["nMsg.sec"]), "csv": row,
           "header": lines[header]}
    if "fetch.nMsg.sec" in values:
        out["fetch_msgs_per_s"] = float(values["fetch.nMsg.sec"])
    return out, ""


def compile_java(libs: Path, workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / f"{JAVA_CLASS}.java").write_text(JAVA_SOURCE)
    subprocess.run(["javac", "-cp", f"{libs}/*", "-d", str(workdir),
                    str(workdir / f"{JAVA_CLASS}.java")], check=True, capture_output=True)
    return workdir


def run_java_client(libs: Path, classes: Path, bootstrap: str, topic: str, group: str,
                    total: int, threads: int, timeout: float) -> tuple[dict | None, str]:
    argv = ["java", *JVM_OPTIONS, "-cp", f"{classes}:{libs}/*", JAVA_CLASS, bootstrap, topic,
            group, str(total), str(threads), str(MAX_POLL_RECORDS)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              check=False)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("RESULT ")), None)
    if done.returncode != 0 or line is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"exit code {done.returncode}: {' | '.join(tail)}"
    head, _, problem = line.partition(" PROBLEM ")
    _, count, seconds, per = head.split()
    count_i, secs = int(count), float(seconds)
    return {"count": count_i, "seconds": secs, "msgs_per_s": count_i / secs if secs > 0 else 0.0,
            "per_member": sorted(int(v) for v in per.split(","))}, problem.strip().rstrip(";")


# ---- the run -------------------------------------------------------------------------------

def produce(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    import rdk

    p = rdk.Producer(bootstrap, on_queue_full="block",
                     driver_options={"linger.ms": 5, "batch.num.messages": 10000})
    p.partition_count(topic, timeout=30)
    payload = b"x" * SIZE
    per, extra = divmod(count, partitions)
    for part in range(partitions):
        n = per + (1 if part < extra else 0)
        for start in range(0, n, 10000):
            p.send(topic, part, [payload] * min(10000, n - start))
    left = p.flush(120)
    p.stop()
    if left:
        raise RuntimeError(f"{left} messages not delivered")


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def bench(args: argparse.Namespace, cluster: Any, libs: Path) -> list[dict[str, Any]]:
    import rdk

    bootstrap = cluster.bootstrap_servers
    admin = rdk.Admin(bootstrap)
    peers = ["rdk", "java", "java-tool"] + (["confluent-kafka"] if has_confluent_share() else [])
    classes = compile_java(libs, Path(tempfile.mkdtemp(prefix="share_bench_java_")))
    runs: list[dict[str, Any]] = []
    try:
        for partitions in args.plan["partitions"]:
            topic = f"sb-{partitions}p-{uuid.uuid4().hex[:8]}"
            cluster.create_topic(topic, partitions)
            produce(bootstrap, topic, partitions, args.plan["count"])
            total = sum(admin.watermarks(topic, p, timeout=30)[1] for p in range(partitions))
            log(f"{topic}: {total} messages of {SIZE} B in {partitions} partitions")
            for rep in range(args.plan["repeat"]):
                order = peers[rep % len(peers):] + peers[:rep % len(peers)]
                for members in args.plan["members"]:
                    for peer in order:
                        group = f"sb-{peer}-{uuid.uuid4().hex[:8]}"
                        admin.alter_group_config(group, {"share.auto.offset.reset": "earliest"})
                        if peer == "java":
                            r, problem = run_java_client(libs, classes, bootstrap, topic, group,
                                                         total, members, args.timeout)
                        elif peer == "java-tool":
                            r, problem = run_java(libs, bootstrap, topic, group, total, members,
                                                  args.timeout)
                        else:
                            r, problem = run_members(peer, bootstrap, topic, group, total,
                                                     members, args.timeout)
                        r = r or {"count": 0, "msgs_per_s": 0.0}
                        if not problem and r["count"] != total:
                            problem = f"received {r['count']} of {total}"
                        run = {"peer": peer, "partitions": partitions, "members": members,
                               "repeat": rep, "expected": total, "problem": problem, **r}
                        runs.append(run)
                        figure = problem or f"{r['msgs_per_s']:,.0f} msgs/s"
                        log(f"{peer} x{members} {partitions}p: {figure}")
    finally:
        admin.close()
    return runs


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    cells: dict[str, Any] = {}
    for r in runs:
        key = f"{r['partitions']}p x{r['members']}"
        cell = cells.setdefault(key, {"partitions": r["partitions"], "members": r["members"],
                                      "peers": {}})
        cell["peers"].setdefault(r["peer"], [])
        if not r["problem"]:
            cell["peers"][r["peer"]].append(r["msgs_per_s"])
    for cell in cells.values():
        cell["peers"] = {p: ({"median": statistics.median(v), "min": min(v), "max": max(v),
                              "runs": len(v)} if v else {})
                         for p, v in cell["peers"].items()}
        med = {p: s.get("median") for p, s in cell["peers"].items()}
        rdk = med.get("rdk")
        cell["rdk_over_java"] = rdk / med["java"] if rdk and med.get("java") else None
        conf = med.get("confluent-kafka")
        cell["rdk_over_confluent"] = rdk / conf if rdk and conf else None
    return cells


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}".replace(",", " ")


def table(data: dict[str, Any]) -> str:
    meta = data["meta"]
    out = [f"**Share-consume throughput** (msgs/s, {SIZE} B, {meta['plan']['count']:,} messages "
           f"per run, median (min) of {meta['plan']['repeat']}; every record accepted)", "",
           "| partitions | members | rdk.ShareConsumer | Java KafkaShareConsumer "
           "| confluent-kafka ShareConsumer | rdk / Java | rdk / confluent "
           "| Java ShareConsumerPerformance (join included) |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for cell in sorted(data["summary"].values(), key=lambda c: (c["partitions"], c["members"])):
        row = [str(cell["partitions"]), str(cell["members"])]
        for peer in ("rdk", "java", "confluent-kafka"):
            s = cell["peers"].get(peer)
            if s is None:
                row.append("n/a")
            elif not s:
                row.append("failed")
            else:
                row.append(f"{_num(s['median'])} ({_num(s['min'])})")
        for ratio in ("rdk_over_java", "rdk_over_confluent"):
            row.append("-" if cell[ratio] is None else f"{cell[ratio]:.2f} x")
        tool = cell["peers"].get("java-tool")
        row.append("n/a" if tool is None else "failed" if not tool else
                   f"{_num(tool['median'])} ({_num(tool['min'])})")
        out.append("| " + " | ".join(row) + " |")
    if not meta.get("confluent_share_consumer"):
        out += ["", "confluent-kafka: the installed version has no ShareConsumer."]
    return "\n".join(out)


def machine() -> dict[str, Any]:
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()],
            "platform": platform.platform(), "python": platform.python_version(),
            "java": (java.stderr.splitlines() or ["?"])[0]}


def versions() -> dict[str, Any]:
    import rdk

    out: dict[str, Any] = {"rdk": getattr(rdk, "__version__", "?")}
    try:
        import confluent_kafka

        out["confluent_kafka"] = getattr(confluent_kafka, "__version__", None)
        out["confluent_librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        out["confluent_kafka"] = None
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python bench/share_bench.py",
                                description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20 000 messages, 4 partitions, once")
    p.add_argument("--repeat", type=int, default=None, help="runs per point (default 3)")
    p.add_argument("--count", type=int, default=None, help="messages per topic (default 200000)")
    p.add_argument("--partitions", default=None, help="comma-separated (default 4,64)")
    p.add_argument("--members", default=None, help="processes/threads, comma-separated (1,4)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON (default %(default)s)")
    p.add_argument("--table", action="store_true", help="print the table of --out and exit")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return 0
    from rdk.testing import KafkaCluster, kafka_libs

    args.plan = plan(args.quick, args.count)
    if args.repeat:
        args.plan["repeat"] = args.repeat
    if args.partitions:
        args.plan["partitions"] = [int(v) for v in args.partitions.split(",")]
    if args.members:
        args.plan["members"] = [int(v) for v in args.members.split(",")]
    libs = kafka_libs()
    started = time.time()
    before = machine()
    with KafkaCluster(1) as cluster:
        runs = bench(args, cluster, libs)
        broker = f"Apache Kafka {cluster.version}, 1 node KRaft (rdk.testing.KafkaCluster(1))"
    data = {"meta": {"quick": args.quick, "plan": args.plan, "size": SIZE,
                     "max_poll_records": MAX_POLL_RECORDS, "jvm": JVM_OPTIONS,
                     "confluent_share_consumer": has_confluent_share(),
                     "command": " ".join(["python bench/share_bench.py",
                                          *(sys.argv[1:] if argv is None else argv)]),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
                     "seconds": round(time.time() - started, 1), "machine_before": before,
                     "machine_after": machine(), "broker": broker, "versions": versions()},
            "runs": runs, "summary": summarise(runs)}
    args.out.write_text(json.dumps(data, indent=1))
    print(table(data))
    return 1 if any(r["problem"] for r in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
