"""The standalone-cluster tests' helpers, and the Spark jobs they submit (this file is both).

As a module (tests/spark/test_cluster.py): ``Cluster`` starts and stops
scripts/spark-cluster.sh, builds the packed environment and runs ``spark-submit`` exactly
as the shipping recipe of docs/guide/spark.md says (client mode: the archive shipped with ``--archives
rdk-env.tar.gz#env``, ``spark.pyspark.python=./env/bin/python``, and the same archive
unpacked as ``./env`` in the directory spark-submit runs in).

As a script, run by spark-submit on the cluster's driver with ``./env/bin/python`` (rdk
from the wheel, pyspark from Spark's own ``pyspark.zip``): ``cluster_helpers.py JOB
'{"arg": ...}'``; it prints one line ``RESULT {json}`` for the test to read. It imports
nothing from the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "spark-cluster.sh"
RESULT = "RESULT "
SUBMIT_TIMEOUT = 300.0  # seconds for one spark-submit; the whole job, JVMs included


# ---- the tests' side ------------------------------------------------------------------------
class Cluster:
    """A master and two workers from scripts/spark-cluster.sh, its state in ``state``."""

    def __init__(self, state: Path, python: str = sys.executable) -> None:
        self.state = state
        import pyspark

        self.spark_home = os.path.dirname(pyspark.__file__)
        self.env = {**os.environ, "RDK_SPARK_CLUSTER_DIR": str(state), "PYTHON": python,
                    "SPARK_HOME": self.spark_home, "SPARK_LOCAL_IP": "127.0.0.1"}
        self.spark_submit = os.path.join(self.spark_home, "bin", "spark-submit")
        self.url = ""
        self.archive = ""
        self.submit_dir = state / "submit"
        self.submits = 0

    def script(self, command: str, timeout: float = 300.0) -> str:
        done = subprocess.run(["bash", str(SCRIPT), command], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)
        assert done.returncode == 0, (
            f"spark-cluster.sh {command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done.stdout.strip()

    def start(self) -> None:
        # the recipe of docs/guide/spark.md: the wheel, a venv with it and pyarrow, venv-pack -p
        self.archive = self.script("env", timeout=900).splitlines()[-1]
        self.url = self.script("start").splitlines()[-1]
        # client mode: the driver starts ./env/bin/python too (the data source's planning)
        (self.submit_dir / "env").mkdir(parents=True)
        subprocess.run(["tar", "-xzf", self.archive, "-C", "env"], cwd=self.submit_dir,
                       check=True, timeout=300)

    def stop(self) -> None:
        groups = [int(p.read_text()) for p in self.state.glob("*.pid")]
        self.script("stop", timeout=120)
        shutil.rmtree(self.submit_dir / "env", ignore_errors=True)
        left = [g for g in groups if group_alive(g)]
        assert not left, f"spark-cluster.sh stop left process groups {left} running"
        strays = working_in(self.state)
        assert not strays, f"processes still working in the cluster's folders: {strays}"

    def worker_pid(self, n: int) -> int:
        return int((self.state / f"worker-{n}.pid").read_text())

    def submit(self, job: str, spark_conf: dict[str, str] | None = None, **args) -> dict:
        """spark-submit this file's ``job`` in client mode (with ``spark_conf`` added to its
        Spark configuration); its RESULT, or AssertionError with the driver's log."""
        self.submits += 1
        log = self.state / f"submit-{self.submits}-{job}.log"
        conf = {"spark.pyspark.python": "./env/bin/python", "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4",
                **(spark_conf or {})}
        cmd = [self.spark_submit, "--master", self.url, "--archives", f"{self.archive}#env",
               *(part for key, value in conf.items() for part in ("--conf", f"{key}={value}")),
               __file__, job, json.dumps(args)]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=self.submit_dir, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(SUBMIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"spark-submit {job} ran over {SUBMIT_TIMEOUT} s; "
                                     f"log {log}:\n{tail(log)}") from None
            finally:  # over time or interrupted: no driver, JVM or Python worker stays
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(30)
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(RESULT)]
        assert code == 0 and lines, f"spark-submit {job} exited {code}; log {log}:\n{tail(log)}"
        return {**json.loads(lines[-1][len(RESULT):]), "log": str(log)}


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def working_in(folder: Path) -> list[str]:
    """Processes whose working directory is in ``folder`` (executors, their Python workers)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cwd", "cmdline"]):
        cwd = proc.info["cwd"] or ""
        if cwd == str(folder) or cwd.startswith(f"{folder}/"):
            found.append(f"{proc.info['pid']}: {' '.join(proc.info['cmdline'] or [])[:200]}")
    return found


def tail(path: Path, lines: int = 60) -> str:
    text = path.read_text(errors="replace").splitlines()
    keep = [ln for ln in text if " INFO " not in ln]  # Spark's INFO chatter hides the error
    return "\n".join(keep[-lines:])


def executors_of(worker_pid: int) -> list:
    """The executor JVMs (psutil.Process) a standalone worker has started."""
    import psutil

    found = []
    for child in psutil.Process(worker_pid).children(recursive=True):
        try:
            if any("CoarseGrainedExecutorBackend" in part for part in child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def commits(checkpoint: Path) -> int:
    """Micro-batches a streaming query has committed to its checkpoint."""
    folder = checkpoint / "commits"
    return sum(1 for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else 0


# ---- the driver's side: the jobs ----------------------------------------------------------
def session(name: str):
    from pyspark.sql import SparkSession

    import rdk.spark

    spark = SparkSession.builder.appName(name).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    rdk.spark.register(spark)
    return spark


def where_rdk_runs(spark) -> list[list[str]]:
    """(rdk's file, the interpreter, the working directory) of every executor's Python."""

    def probe(_):
        import rdk

        yield (rdk.__file__, sys.executable, os.getcwd())

    slots = spark.sparkContext.defaultParallelism
    return sorted({tuple(r) for r in spark.sparkContext.parallelize(range(slots), slots)
                   .mapPartitions(probe).collect()})


def job_batch(spark, bootstrap: str, source: str, sink: str) -> dict:
    """Read ``source``, count per key, write the counts to ``sink``."""
    from pyspark.sql import functions as F

    df = (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).load())
    read = df.count()
    per_key = df.groupBy("key").agg(F.count("*").alias("n"))
    (per_key.select("key", F.col("n").cast("string").cast("binary").alias("value"))
     .write.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink).mode("append").save())
    import rdk

    return {"read": read, "partitions": df.rdd.getNumPartitions(),
            "executors": where_rdk_runs(spark), "driver_rdk": rdk.__file__,
            "master": spark.sparkContext.master}


def job_stream(spark, bootstrap: str, topic: str, checkpoint: str, output: str,
               max_per_trigger: int, attempts: int = 3) -> dict:
    """An AvailableNow query from ``topic`` into a parquet sink, restarted from its
    checkpoint (up to ``attempts`` runs) if Spark stops it; then what the sink holds.

    The result says how often that happened: ``restarts`` (runs after the first),
    ``failures`` (why each run stopped) and ``completed`` (whether a run finished); a test
    asserts them, so a restart never hides a query that failed."""
    from pyspark.sql import functions as F

    processed, failures, runs, completed = 0, [], 0, False
    for _ in range(attempts):
        runs += 1
        stream = (spark.readStream.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", max_per_trigger).load())
        query = (stream.select("partition", "offset", F.col("value").cast("string").alias("value"))
                 .writeStream.format("parquet").option("path", output)
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        try:
            query.awaitTermination(SUBMIT_TIMEOUT)
        except Exception as e:  # the query stopped: restart it from the checkpoint
            failures.append(f"{type(e).__name__}: {str(e)[:300]}")
        finally:
            query.stop()
        processed += sum(p["numInputRows"] for p in query.recentProgress)
        if query.exception() is None and not query.isActive:
            completed = True
            break
    out = spark.read.parquet(output)
    per_partition = {str(r["partition"]): [r["rows"], r["offsets"], r["first"], r["last"]]
                     for r in out.groupBy("partition").agg(
                         F.count("*").alias("rows"), F.countDistinct("offset").alias("offsets"),
                         F.min("offset").alias("first"), F.max("offset").alias("last")).collect()}
    return {"processed": processed, "restarts": runs - 1, "failures": failures,
            "completed": completed, "rows": out.count(), "per_partition": per_partition}


def job_eos_speculation(spark, bootstrap: str, source: str, slow_batch: int,
                        runs: list[dict]) -> dict:
    """For each of ``runs`` (output, checkpoint, markers, at_least_once) in turn: an
    AvailableNow query from ``source`` through a Python UDF into the rdkafka sink
    (``exactlyOnce``, unless ``at_least_once``) whose task 0 of micro-batch ``slow_batch``
    stalls, once the sink took some of its rows, until a speculative copy of it has got
    further (spark.speculation, set by the test); then the output's values read back with
    read_committed, the markers the attempts left and the sink's log end, per run. Each
    output topic has as many partitions as ``source``: task i writes partition i."""
    from pyspark.sql import functions as F

    results = []
    for run in runs:
        output, markers = run["output"], Path(run["markers"])
        watched = output if run["at_least_once"] else f"{output}.rdk-staging"
        # a plain (pickled) UDF: the packed environment has no pandas for mapInArrow
        stall = F.udf(_stall_until_copied(bootstrap, watched, markers, slow_batch), "binary",
                      useArrow=False)
        slowed = (spark.readStream.format("rdkafka")
                  .option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
                  .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 1600)
                  .load().select(stall(F.col("value")).alias("value"),
                                 # task i writes partition i (of the staging topic, if exactly once)
                                 F.spark_partition_id().alias("partition")))
        if not run["at_least_once"]:
            slowed = slowed.drop("partition")  # the sink stages task i's rows in partition i
        writer = (slowed.writeStream.format("rdkafka")
                  .option("kafka.bootstrap.servers", bootstrap).option("topic", output)
                  .option("checkpointLocation", run["checkpoint"]).trigger(availableNow=True))
        if not run["at_least_once"]:
            writer = writer.option("exactlyOnce", "true")
        writer.start().awaitTermination(SUBMIT_TIMEOUT)
        rows = (spark.read.format("rdkafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", output).option("kafka.isolation.level", "read_committed")
                .load().select("value").collect())
        results.append({"values": sorted(bytes(r.value).split(b"|")[0].decode() for r in rows),
                        "markers": sorted(p.name for p in markers.iterdir()),
                        "log_end": _log_end(bootstrap, watched)})
    return {"runs": results}


def _log_end(bootstrap: str, topic: str) -> int:
    """The log end of every partition of ``topic``, summed (open transactions included)."""
    import rdk

    with rdk.Admin(bootstrap, {"isolation.level": "read_uncommitted"}) as admin:
        return sum(admin.query_watermarks(topic, p)[1] for p in range(admin.partition_count(topic)))


STALL_AT = 250
"""The row at which the slow attempt stalls: Spark hands a plain UDF's Python worker rows in
groups of 100, so the sink has the first 200 of that attempt's rows by then."""


def _stall_until_copied(bootstrap: str, watched: str, markers: Path, slow_batch: int):
    seen: dict[int, int] = {}  # rows per task attempt, in this Python worker

    def written() -> int:
        """The log end of the partition that task 0's rows go to, and only they."""
        import rdk

        with rdk.Admin(bootstrap, {"isolation.level": "read_uncommitted"}) as admin:
            return admin.query_watermarks(watched, 0)[1]

    def wait_for(done, timeout: float = 240.0) -> bool:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stall(value: bytes) -> bytes:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if (ctx.partitionId() != 0
                or int(ctx.getLocalProperty("streaming.sql.batchId")) != slow_batch):
            return value + PAD
        attempt = ctx.attemptNumber()
        n = seen[ctx.taskAttemptId()] = seen.get(ctx.taskAttemptId(), 0) + 1
        if n == 1:
            (markers / f"attempt-{attempt}-started").touch()
            (markers / f"attempt-{attempt}-log-end").write_text(str(written()))
            # a copy hands the sink nothing before the original's rows are in the log (so
            # that what the original sees grow there is its own)
            if attempt > 0 and not wait_for(lambda: (markers / "original-stalled").exists()):
                (markers / "copy-started-before-a-stall").touch()  # the test fails on it
        if n == STALL_AT and attempt == 0:
            before = int((markers / "attempt-0-log-end").read_text())
            if not wait_for(lambda: written() > before):
                raise RuntimeError("the sink wrote nothing of this task within 240 s")
            # attempt 0 is alive and waiting: an attempt > 0 now can only be a
            # speculative copy (a retry follows a failed attempt)
            (markers / "original-stalled").touch()
            # resume once the copy's rows are in the log too: this attempt handed the sink
            # fewer than STALL_AT rows, so STALL_AT more in the partition include the copy's
            if not wait_for(lambda: any(markers.glob("copy-*-passed-original"))
                            and written() - before >= STALL_AT):
                (markers / "no-speculative-copy").touch()  # the test fails on it
        if n == STALL_AT + 50 and attempt > 0:
            (markers / f"copy-{attempt}-passed-original").touch()
        return value + PAD

    return stall


PAD = b"|" + b"." * 2048
"""2 KiB more a row: a Python worker's 64 KiB output buffer flushes every few dozen rows."""


JOBS = {"batch": job_batch, "stream": job_stream, "eos_speculation": job_eos_speculation}


def main(argv: list[str]) -> int:
    job, args = argv[0], json.loads(argv[1])
    spark = session(f"rdk-cluster-test-{job}")
    try:
        t = time.perf_counter()
        result = JOBS[job](spark, **args)
        result["seconds"] = round(time.perf_counter() - t, 1)
    finally:
        spark.stop()
    print(RESULT + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
