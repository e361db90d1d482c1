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

    def submit(self, job: str, **args) -> dict:
        """spark-submit this file's ``job`` in client mode; its RESULT, or AssertionError with
        the driver's log."""
        self.submits += 1
        log = self.state / f"submit-{self.submits}-{job}.log"
        cmd = [self.spark_submit, "--master", self.url,
               "--archives", f"{self.archive}#env",
               "--conf", "spark.pyspark.python=./env/bin/python",
               "--conf", "spark.ui.enabled=false",
               "--conf", "spark.ui.showConsoleProgress=false",
               "--conf", "spark.sql.shuffle.partitions=4",
               __file__, job, json.dumps(args)]
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=self.submit_dir, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(SUBMIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
                raise AssertionError(f"spark-submit {job} ran over {SUBMIT_TIMEOUT} s; "
                                     f"log {log}:\n{tail(log)}") from None
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


JOBS = {"batch": job_batch, "stream": job_stream}


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
