"""scripts/plots.py draws every plot of docs/performance.md from docs/data/, and names the file
and the key when a result file is missing or malformed.

The plots are drawn once per module into a temporary folder (``--out``), a few seconds.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "plots.py"
DATA = ROOT / "docs" / "data"

# each SVG and the series labels (legend entries) it must show
EXPECTED = {
    "throughput_partitions.svg": ["rdk", "confluent-kafka", "native C", "messages / s (median)",
                                  "partitions"],
    "java_peer_throughput.svg": ["rdk", "confluent-kafka", "Java client", "4 partitions",
                                 "64 partitions"],
    "java_peer_cpu.svg": ["rdk", "confluent-kafka", "client CPU µs / message"],
    "latency_percentiles.svg": ["rdk, 1,000 msg/s", "confluent-kafka, 50,000 msg/s",
                                "Java EndToEndLatency", "p99.9"],
    "spark_rows.svg": ["Spark's ceiling", "rdk rdkafka source", "count + groupBy", "rows / s"],
    "spark_jvm.svg": ["Spark's JVM Kafka connector", "rdk rdkafka source", "parquet", "stream",
                      "sink", "Apache Kafka"],
    "start_cost.svg": ["rdk start(), fresh", "confluent-kafka first batch", "rdk long, steady",
                       "peak RSS, MiB (median)"],
    "share_throughput.svg": ["rdk.ShareConsumer", "Java KafkaShareConsumer",
                             "confluent-kafka ShareConsumer"],
}


def run_plots(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def plots_dir(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("plots")
    done = run_plots("--out", str(out))
    assert done.returncode == 0, f"plots.py failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.fixture(scope="module")
def plots_module():
    spec = importlib.util.spec_from_file_location("rdk_docs_plots", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def svg_text(path: pathlib.Path) -> str:
    """Every text node of the SVG (it must parse as XML, with an <svg> root)."""
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg"), f"{path.name}: root element is {root.tag}"
    return "\n".join(t for t in root.itertext() if t.strip())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_plot_is_written_with_its_series(plots_dir, name):
    path = plots_dir / name
    assert path.is_file(), f"{name} was not written"
    assert path.stat().st_size > 5_000, f"{name} is nearly empty ({path.stat().st_size} bytes)"
    text = svg_text(path)
    missing = [label for label in EXPECTED[name] if label not in text]
    assert not missing, f"{name} lacks the labels {missing}"
    assert "<dc:date>" not in path.read_text(), f"{name} carries a date: not deterministic"


def test_no_other_svg_and_the_page_shows_every_plot(plots_dir):
    assert sorted(p.name for p in plots_dir.glob("*.svg")) == sorted(EXPECTED)
    page = (ROOT / "docs" / "performance.md").read_text()
    for name in EXPECTED:
        assert f"(assets/plots/{name})" in page, f"docs/performance.md does not show {name}"


def test_plots_are_deterministic(plots_dir, plots_module, tmp_path):
    plots_module.draw(DATA, tmp_path)
    for name in EXPECTED:
        assert (tmp_path / name).read_bytes() == (plots_dir / name).read_bytes(), \
            f"{name} differs between two runs"


def copy_data(tmp_path: pathlib.Path) -> pathlib.Path:
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    return data


def test_a_missing_key_names_the_file_and_the_key(plots_module, tmp_path, capsys):
    data = copy_data(tmp_path)
    doc = json.loads((data / "java_peer.json").read_text())
    del doc["summary"]["latency"]["10000/s linger 5"]
    (data / "java_peer.json").write_text(json.dumps(doc))
    assert plots_module.main(["--data", str(data), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(data / "java_peer.json") in err, err
    assert "'summary.latency.10000/s linger 5'" in err, err


def test_a_value_that_is_not_a_number_is_named(plots_module, tmp_path, capsys):
    data = copy_data(tmp_path)
    doc = json.loads((data / "share_bench.json").read_text())
    doc["summary"]["64p x4"]["peers"]["rdk"]["median"] = "fast"
    (data / "share_bench.json").write_text(json.dumps(doc))
    assert plots_module.main(["--data", str(data), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "share_bench.json" in err and "'summary.64p x4.peers.rdk.median'" in err, err
    assert "number" in err, err


def test_a_missing_or_broken_file_is_named_through_the_command_line(tmp_path):
    data = copy_data(tmp_path)
    (data / "spark_bench.json").unlink()
    done = run_plots("--data", str(data), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "spark_bench.json: file not found" in done.stderr, done.stderr
    assert "bench/spark_bench.py" in done.stderr, "the message says which bench writes the file"
    (data / "spark_bench.json").write_text("{ not json")
    done = run_plots("--data", str(data), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "spark_bench.json: not valid JSON" in done.stderr, done.stderr
