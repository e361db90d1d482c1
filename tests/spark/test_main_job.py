"""The main job (README's first command), examples/spark_pipeline.py, runs to the end on the
embedded Apache Kafka (the default) and on Tansu. Its ``--broker mock`` option is not run
here, to keep the suite within its time budget (each run starts a broker and a Spark
session, ~45 s): it differs from these runs only in the broker it starts and in spreading
the clicks over more partitions (the mock keeps ~5 MiB per partition)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("broker", ["kafka", "tansu"])
def test_the_main_job_passes_its_checks_on_an_embedded_broker(broker, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RDK_BROKERS"}
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spark_pipeline.py"), "--events", "20000",
         "--broker", broker, "--workdir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "all checks passed" in done.stdout, out[-3000:]
    # the streaming step read the new clicks only, and the consumers kept progress files
    assert "3b. stream, second run (new clicks only)" in done.stdout
    assert list(tmp_path.rglob("*.offset")), "the worker-slot consumers wrote no offset files"
