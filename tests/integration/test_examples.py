"""Every example in examples/ runs to completion with small counts.

Without RDK_BROKERS each one starts its own embedded broker; one run goes to Tansu through
RDK_BROKERS to show that path works too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, brokers: str | None = None,
                timeout: float = 120) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RDK_BROKERS"}
    if brokers:
        env["RDK_BROKERS"] = brokers
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                       text=True, timeout=timeout, env=env, check=False)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def test_simple_produces_round_robin_and_consumes_with_an_offset_directory(tmp_path):
    out = run_example("simple.py", "--messages", "12", "--offset-dir", str(tmp_path))
    assert "using an embedded mock cluster" in out
    assert "received 12 of 12 messages" in out
    lines = [line.split() for line in out.splitlines() if line.startswith("message:")]
    assert sorted(int(line[2]) for line in lines) == sorted([0, 1, 2, 3] * 3)  # round robin
    assert sorted(f.name for f in tmp_path.glob("*.offset")) == [
        f"example-{p}.offset" for p in range(4)]
    assert all(f.read_text() == "2\n" for f in tmp_path.glob("*.offset"))


def test_simple_runs_against_rdk_brokers_and_resumes_from_its_offsets(tansu, tmp_path):
    topic = f"simple-{uuid.uuid4().hex[:8]}"
    first = run_example("simple.py", "--topic", topic, "--messages", "8",
                        "--offset-dir", str(tmp_path), brokers=tansu.bootstrap_servers)
    assert "embedded" not in first and "received 8 of 8" in first
    second = run_example("simple.py", "--topic", topic, "--messages", "4",
                         "--offset-dir", str(tmp_path), brokers=tansu.bootstrap_servers)
    assert "received 4 of 4" in second
    # the second run saw only its own messages: it resumed after the first run's offsets
    assert len([line for line in second.splitlines() if line.startswith("message:")]) == 4


def test_multiprocess_consumes_everything_across_worker_slots():
    out = run_example("multiprocess.py", "--workers", "2", "--partitions", "4",
                      "--messages", "800")
    slots = set(re.findall(r"\[slot (\d)/2 pid \d+\]", out))
    assert slots == {"0", "1"}
    for line in out.splitlines():
        if line.startswith("[slot 0/2"):
            assert set(re.search(r"partitions \[(.*)\]", line)[1].split(", ")) <= {"0", "2"}
    assert "800 messages recorded as processed" in out
    assert "waiting_kafka=0 waiting_local=0 kafka_log_size=800" in out


def test_pause_resume_keeps_batches_in_flight_under_the_limit():
    out = run_example("pause_resume.py", "--messages", "800", "--batch", "40", "--high", "3",
                      "--low", "1")
    m = re.search(r"processed (\d+) of (\d+) messages \(complete\); paused (\d+) times; "
                  r"at most (\d+) batches were in flight", out)
    assert m, out
    processed, total, pauses, peak = map(int, m.groups())
    assert processed == total == 800
    assert pauses >= 1 and "resume:" in out
    assert peak <= 3  # paused at the limit: no batch is delivered beyond it


def test_binary_keys_headers_round_trip_byte_for_byte():
    out = run_example("binary_keys_headers.py", "--messages", "40")
    assert "45 messages round-tripped byte for byte: 1 tombstone(s)" in out


def test_prometheus_stats_exports_consumer_and_producer_figures():
    out = run_example("prometheus_stats.py", "--messages", "1200", "--interval-ms", "100")
    assert "consumed 1200 of 1200 messages" in out
    metrics = dict(line.rsplit(" ", 1) for line in out.splitlines() if line.startswith("rdk_"))
    for p in range(3):
        labels = f'{{partition="{p}",topic="prometheus-stats"}}'
        assert float(metrics[f"rdk_consumer_kafka_log_size{labels}"]) == 400
        assert float(metrics[f"rdk_consumer_waiting_kafka{labels}"]) == 0
        assert float(metrics[f"rdk_consumer_waiting_local{labels}"]) == 0
    assert float(metrics["rdk_producer_send_queue_length"]) == 0
    assert float(metrics['rdk_consumer_messages_total{topic="prometheus-stats"}']) == 1200


@pytest.mark.parametrize("name", ["simple.py", "multiprocess.py", "pause_resume.py",
                                  "binary_keys_headers.py", "prometheus_stats.py"])
def test_every_example_has_a_docstring_with_how_to_run_it(name):
    text = (EXAMPLES / name).read_text()
    assert text.startswith('"""') and f"python examples/{name}" in text
