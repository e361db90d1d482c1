"""The rdk command line: arguments, version, mock, offsets show/set, stats, bench."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import wait_until

import rdk
import rdk.cli._bench
import rdk.cli._framing
import rdk.cli._ui
from rdk import Admin, cli
from rdk.offsets import (
    list_offset_files,
    lock_partitions,
    offset_file_path,
    read_offset_file,
    write_offset_file,
)
from rdk.testing import MockCluster

PY = sys.executable


def rdk_cli(*argv: str, input: bytes | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run ``python -m rdk ARGV`` in a subprocess (bytes in, bytes out)."""
    return subprocess.run([PY, "-m", "rdk", *argv], input=input, capture_output=True, check=False,
                          timeout=timeout)


# ---- bad arguments: one line, exit code 2 --------------------------------------------------

BAD_ARGUMENTS = [
    [],
    ["nonsense"],
    ["produce", "-t", "x"],                                   # -b missing
    ["produce", "-b", "nohostport", "-t", "x"],               # not host:port
    ["produce", "-b", "h:99999", "-t", "x"],                  # port out of range
    ["produce", "-b", "h:1", "-t", "bad/topic"],              # illegal topic name
    ["produce", "-b", "h:1", "-t", "x", "-p", "-1"],
    ["produce", "-b", "h:1", "-t", "x", "-p", "0", "--balancer", "fnv1a"],
    ["produce", "-b", "h:1", "-t", "x", "--balancer", "nope"],
    ["produce", "-b", "h:1", "-t", "x", "--key-delimiter", ""],
    ["consume", "-b", "h:1", "-t", "x"],                      # --offset-dir missing
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--format", "xml"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--count", "0"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--from", "middle"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--workers", "0"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--slot", "1"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--slot", "2", "--of", "2"],
    ["consume", "-b", "h:1", "-t", "x", "--offset-dir", "d", "--workers", "2", "--slot", "0",
     "--of", "2"],
    ["offsets"],
    ["offsets", "show"],
    ["offsets", "set", "d", "-t", "x"],                      # --to missing
    ["offsets", "set", "d", "-t", "x", "--to", "-5"],
    ["offsets", "set", "d", "-t", "x", "--to", "soon"],
    ["offsets", "set", "d", "-t", "x", "--to", "latest"],     # needs -b
    ["stats", "-b", "h:1"],
    ["stats", "-b", "h:1", "-t", "x", "--interval", "0"],
    ["mock", "--brokers", "0"],
    ["mock", "--topic", "t:zero"],
]


@pytest.mark.parametrize("argv", BAD_ARGUMENTS, ids=lambda a: " ".join(a) or "<none>")
def test_bad_arguments_print_one_line_and_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        code = cli.main(argv)
        raise SystemExit(code)
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "error:" in lines[0]


def test_console_script_and_module_exit_2_on_bad_arguments():
    r = rdk_cli("consume", "-b", "localhost:9092", "-t", "x", "--format", "xml", "--offset-dir", "d")
    assert r.returncode == 2
    assert r.stderr.decode().count("\n") == 1
    assert b"--format" in r.stderr
    script = os.path.join(os.path.dirname(PY), "rdk")
    r2 = subprocess.run([script, "produce"], capture_output=True, timeout=60, check=False)
    assert r2.returncode == 2
    assert r2.stderr.decode().count("\n") == 1


@pytest.mark.parametrize("command", [
    ["produce"], ["consume"], ["offsets"], ["offsets", "show"], ["offsets", "set"], ["stats"],
    ["mock"], ["version"], ["bench"],
])
def test_every_subcommand_help_shows_examples(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([*command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert f"rdk {' '.join(command)}" in out.split("examples:")[1]


def test_version_shows_rdk_librdkafka_and_features(capsys):
    assert cli.main(["version"]) == 0
    out = capsys.readouterr().out
    assert f"rdk {rdk.__version__}" in out
    assert f"librdkafka {rdk.librdkafka_version()}" in out
    assert "2.15" in out
    for feature in rdk.features():
        assert feature in out


def test_bench_says_clearly_when_bench_run_py_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli._bench, "bench_candidates", lambda: [tmp_path / "bench" / "run.py"])
    assert cli.main(["bench"]) == 1
    err = capsys.readouterr().err
    assert "bench/run.py was not found" in err and "source repository" in err


def test_bench_runs_no_bench_run_py_of_a_directory_that_is_not_a_clone(tmp_path, monkeypatch):
    stranger = tmp_path / "bench" / "run.py"
    stranger.parent.mkdir()
    stranger.write_text("raise SystemExit('a stranger ran')\n")
    monkeypatch.chdir(tmp_path)
    assert stranger not in cli._bench.bench_candidates()  # a directory with bench/ only
    (tmp_path / "src" / "rdk").mkdir(parents=True)
    (tmp_path / "src" / "rdk" / "__init__.py").write_text("")
    assert stranger in cli._bench.bench_candidates()  # a clone's layout
    this_clone = Path(__file__).resolve().parents[2]
    assert cli._bench.bench_candidates()[0] == this_clone / "bench" / "run.py"  # first


def test_bench_delegates_to_run_py_main_with_the_arguments(tmp_path, monkeypatch, capsys):
    run_py = tmp_path / "bench" / "run.py"
    run_py.parent.mkdir()
    run_py.write_text("def main(argv):\n    print('bench got', argv)\n    return 3\n")
    monkeypatch.setattr(cli._bench, "bench_candidates", lambda: [run_py])
    path_before = list(sys.path)
    assert cli.main(["bench", "--quick", "-n", "5"]) == 3
    assert sys.path == path_before
    assert "bench got ['--quick', '-n', '5']" in capsys.readouterr().out
    assert cli.main(["bench", "--", "--help"]) == 3
    assert "bench got ['--help']" in capsys.readouterr().out


# ---- mock ------------------------------------------------------------------------------------


def test_mock_serves_a_cluster_with_topics_until_sigint():
    proc = subprocess.Popen([PY, "-m", "rdk", "mock", "--brokers", "2", "--topic", "cli-mock:3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline().decode().strip()
        assert line.startswith("RDK_BROKERS="), line
        bootstrap = line.split("=", 1)[1]
        with Admin(bootstrap) as admin:
            assert admin.partition_count("cli-mock") == 3
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---- offsets show / set ------------------------------------------------------------------------


def test_offsets_set_to_n_stores_n_minus_1_and_show_lists_it(tmp_path, capsys):
    d = tmp_path / "off"
    assert cli.main(["offsets", "set", str(d), "-t", "events", "-p", "3", "--to", "1500"]) == 0
    assert read_offset_file(offset_file_path(d, "events", 3)) == 1499
    capsys.readouterr()
    write_offset_file(d, "other", 0, 41)
    assert cli.main(["offsets", "show", str(d)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["topic", "partition", "stored"]
    assert [line.split() for line in out[1:]] == [["events", "3", "1499"], ["other", "0", "41"]]


def test_offsets_set_without_partition_changes_every_file_of_the_topic(tmp_path):
    for p in range(3):
        write_offset_file(tmp_path, "t1", p, 100 + p)
    write_offset_file(tmp_path, "t2", 0, 7)
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "t1", "--to", "10"]) == 0
    assert [read_offset_file(offset_file_path(tmp_path, "t1", p)) for p in range(3)] == [9, 9, 9]
    assert read_offset_file(offset_file_path(tmp_path, "t2", 0)) == 7


def test_offsets_set_refuses_while_a_consumer_holds_the_lock(tmp_path, capsys):
    write_offset_file(tmp_path, "events", 0, 5)
    with lock_partitions(tmp_path, "events", [0]):
        assert cli.main(["offsets", "set", str(tmp_path), "-t", "events", "-p", "0", "--to", "0"]) == 1
        err = capsys.readouterr().err
        assert "in use by another consumer" in err and err.count("\n") == 1
        assert read_offset_file(offset_file_path(tmp_path, "events", 0)) == 5
    # released: now it works, and leaves no temp files behind
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "events", "-p", "0", "--to", "0"]) == 0
    assert read_offset_file(offset_file_path(tmp_path, "events", 0)) == -1
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_offsets_set_without_files_or_partition_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "events", "--to", "3"]) == 2
    assert "no offset files" in capsys.readouterr().err


def test_offsets_show_reports_a_corrupt_file_by_name(tmp_path, capsys):
    write_offset_file(tmp_path, "good", 0, 12)
    (tmp_path / "bad-1.offset").write_text("twelve\n")
    assert cli.main(["offsets", "show", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "good" in out and "12" in out
    assert "bad-1.offset" in err and "corrupt" in err


def test_offsets_show_of_a_missing_directory_fails_clearly(tmp_path, capsys):
    assert cli.main(["offsets", "show", str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err


# ---- produce / consume against real brokers ------------------------------------------------------


def frames(values) -> bytes:
    return b"".join(cli._framing.frame(v) for v in values)


def test_binary_round_trip_through_produce_and_consume_is_byte_identical(broker, new_topic, tmp_path):
    topic = new_topic(broker, 1)
    values = [b"", b"\x00", b"\x00\xff\n\r\n\x00", bytes(range(256)) * 40, None, b"\n" * 7,
              "héllo".encode(), os.urandom(5000)]
    values += [os.urandom(i % 97) for i in range(300)]
    data = frames(values)
    (tmp_path / "in.bin").write_bytes(data)
    r = rdk_cli("produce", "-b", broker.bootstrap_servers, "-t", topic, "--binary",
                str(tmp_path / "in.bin"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().startswith(f"sent {len(values)}, failed 0, ")
    r = rdk_cli("consume", "-b", broker.bootstrap_servers, "-t", topic, "--offset-dir",
                str(tmp_path / "off"), "--format", "raw", "--count", str(len(values)))
    assert r.returncode == 0, r.stderr
    assert r.stdout == data
    assert read_offset_file(offset_file_path(tmp_path / "off", topic, 0)) == len(values) - 1


def test_produce_reads_stdin_lines_with_keys_to_one_partition(mock_cluster, tmp_path):
    mock_cluster.create_topic("keyed", 3)
    lines = b"k1:v1\nno key here\nk2:v:with:colons\n\nk3:\n"
    r = rdk_cli("produce", "-b", mock_cluster.bootstrap_servers, "-t", "keyed", "-p", "2",
                "--key-delimiter", ":", "-", input=lines)
    assert r.returncode == 0, r.stderr
    assert b"sent 5, failed 0" in r.stderr
    r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "keyed", "--offset-dir",
                str(tmp_path), "--format", "json", "--count", "5")
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [(m["partition"], m["offset"]) for m in got] == [(2, i) for i in range(5)]
    assert [(m["key"], m["value"]) for m in got] == [
        ("k1", "v1"), (None, "no key here"), ("k2", "v:with:colons"), (None, ""), ("k3", "")]
    assert all(m["topic"] == "keyed" and isinstance(m["timestamp"], int) for m in got)


def test_json_format_shows_binary_bytes_as_base64(mock_cluster, tmp_path):
    mock_cluster.create_topic("bin", 1)
    with rdk.Producer(mock_cluster.bootstrap_servers) as p:
        p.send("bin", 0, [rdk.Message(b"\xff\x00", key=b"\x80",
                                      headers=[("h", b"\xfe"), ("t", b"ok")])])
    r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "bin", "--offset-dir",
                str(tmp_path), "--format", "json", "--count", "1")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["value"] == {"base64": base64.b64encode(b"\xff\x00").decode()}
    assert m["key"] == {"base64": base64.b64encode(b"\x80").decode()}
    assert m["headers"] == [["h", {"base64": base64.b64encode(b"\xfe").decode()}], ["t", "ok"]]


def produce_numbers(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    with rdk.Producer(bootstrap) as p:
        for part in range(partitions):
            p.send(topic, part, [b"%d-%d" % (part, i) for i in range(per_partition)])
        assert p.flush(30) == 0


def stored_total(directory, topic: str, partitions: int) -> int:
    """Messages recorded as processed (stored + 1 summed over partitions)."""
    stored = (read_offset_file(offset_file_path(directory, topic, p)) for p in range(partitions))
    return sum(s + 1 for s in stored if s is not None)


def test_consume_count_records_exactly_the_messages_written(mock_cluster, tmp_path):
    mock_cluster.create_topic("counted", 3)
    produce_numbers(mock_cluster.bootstrap_servers, "counted", 3, 400)
    seen: list[bytes] = []
    for n in (250, 1, 349):
        r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "counted",
                    "--offset-dir", str(tmp_path), "--count", str(n))
        assert r.returncode == 0, r.stderr
        # the count ends the run cleanly: the summary line, no warning about a cut batch
        assert r.stderr.startswith(b"consumed ") and r.stderr.count(b"\n") == 1, r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == n
        seen += lines
        stored = {p: read_offset_file(offset_file_path(tmp_path, "counted", p)) for p in range(3)}
        written = Counter(int(v.split(b"-")[0]) for v in seen)
        assert stored_total(tmp_path, "counted", 3) == len(seen), (stored, written, r.stderr)
    assert len(set(seen)) == len(seen) == 600  # no message twice, none skipped
    for part in range(3):  # per partition, what was written is a prefix of the partition
        offs = sorted(int(v.split(b"-")[1]) for v in seen if v.startswith(b"%d-" % part))
        assert offs == list(range(len(offs)))


def test_consume_workers_share_the_count_and_record_it_exactly(mock_cluster, tmp_path):
    mock_cluster.create_topic("pooled", 4)
    produce_numbers(mock_cluster.bootstrap_servers, "pooled", 4, 300)
    r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "pooled", "--offset-dir",
                str(tmp_path), "--workers", "2", "--count", "700", timeout=120)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()
    assert len(first) == len(set(first)) == 700
    assert stored_total(tmp_path, "pooled", 4) == 700
    r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "pooled", "--offset-dir",
                str(tmp_path), "--workers", "2", "--count", "500", timeout=120)
    assert r.returncode == 0, r.stderr
    second = r.stdout.splitlines()
    assert len(second) == 500
    assert sorted(first + second) == sorted(b"%d-%d" % (p, i) for p in range(4) for i in range(300))


def test_consume_slot_of_reads_only_its_partitions(mock_cluster, tmp_path):
    mock_cluster.create_topic("slotted", 4)
    produce_numbers(mock_cluster.bootstrap_servers, "slotted", 4, 10)
    r = rdk_cli("consume", "-b", mock_cluster.bootstrap_servers, "-t", "slotted", "--offset-dir",
                str(tmp_path), "--slot", "1", "--of", "2", "--format", "json", "--count", "20")
    assert r.returncode == 0, r.stderr
    parts = Counter(json.loads(line)["partition"] for line in r.stdout.splitlines())
    assert parts == {1: 10, 3: 10}
    assert [f.partition for f in list_offset_files(tmp_path)] == [1, 3]


def test_consume_from_latest_skips_what_is_already_there(mock_cluster, tmp_path):
    mock_cluster.create_topic("late", 1)
    produce_numbers(mock_cluster.bootstrap_servers, "late", 1, 50)
    proc = subprocess.Popen([PY, "-m", "rdk", "consume", "-b", mock_cluster.bootstrap_servers,
                             "-t", "late", "--offset-dir", str(tmp_path), "--from", "latest",
                             "--count", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finish = _reading(proc)
    try:
        # produce again until the consumer (which starts at the end) has seen 3 new ones
        deadline = time.monotonic() + 60
        with rdk.Producer(mock_cluster.bootstrap_servers) as p:
            while proc.poll() is None and time.monotonic() < deadline:
                p.send("late", 0, [b"new"])
                p.flush(5)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.2)
        out, err = finish()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.splitlines() == [b"new"] * 3


def _reading(proc: subprocess.Popen) -> Callable[[], tuple[bytes, bytes]]:
    """Read proc's stdout from now on, as a pipe's reader does (rdk consume counts a batch
    as written once it left the pipe); the returned call waits for the end: (out, err)."""
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()

    def finish() -> tuple[bytes, bytes]:
        err = proc.stderr.read()
        proc.wait(60)
        reader.join(60)
        return b"".join(out), err

    return finish


def test_consume_stops_gracefully_on_sigterm_and_exits_0(mock_cluster, tmp_path):
    mock_cluster.create_topic("endless", 2)
    produce_numbers(mock_cluster.bootstrap_servers, "endless", 2, 100)
    proc = subprocess.Popen([PY, "-m", "rdk", "consume", "-b", mock_cluster.bootstrap_servers,
                             "-t", "endless", "--offset-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    finish = _reading(proc)
    try:
        # all 200 are written once both offset files say so
        wait_until(lambda: stored_total(tmp_path, "endless", 2) >= 200 or proc.poll() is not None,
                   60, "both offset files to record all 200", interval=0.05)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        out, err = finish()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert len(out.splitlines()) == 200
    assert b"consumed 200 messages" in err


def test_produce_to_an_unknown_topic_fails_with_one_line(mock_cluster, tmp_path):
    r = rdk_cli("produce", "-b", mock_cluster.bootstrap_servers, "-t", "never-created", "-",
                input=b"x\n")
    assert r.returncode == 1
    assert r.stderr.count(b"\n") == 1 and b"UNKNOWN_TOPIC_OR_PART" in r.stderr


def test_produce_rejects_a_truncated_binary_record(mock_cluster, tmp_path):
    mock_cluster.create_topic("trunc", 1)
    r = rdk_cli("produce", "-b", mock_cluster.bootstrap_servers, "-t", "trunc", "--binary", "-",
                input=frames([b"ok"]) + b"\x00\x00\x00\x09abc")
    assert r.returncode == 1
    assert b"truncated frame at byte 6: expected 9 bytes, got 3" in r.stderr


# ---- offsets and stats against a broker --------------------------------------------------------------


def test_offsets_set_earliest_and_latest_use_the_watermarks(mock_cluster, tmp_path, capsys):
    mock_cluster.create_topic("wm", 2)
    produce_numbers(mock_cluster.bootstrap_servers, "wm", 2, 30)
    b = mock_cluster.bootstrap_servers
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "wm", "--to", "latest", "-b", b]) == 0
    assert [read_offset_file(offset_file_path(tmp_path, "wm", p)) for p in (0, 1)] == [29, 29]
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "wm", "-p", "1", "--to", "earliest",
                     "-b", b]) == 0
    assert [read_offset_file(offset_file_path(tmp_path, "wm", p)) for p in (0, 1)] == [29, -1]
    capsys.readouterr()
    assert cli.main(["offsets", "show", str(tmp_path), "-b", b]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [["topic", "partition", "stored", "low", "high", "lag"],
                    ["wm", "0", "29", "0", "30", "0"],
                    ["wm", "1", "-1", "0", "30", "30"]]
    # consuming from there resumes exactly where the files say
    r = rdk_cli("consume", "-b", b, "-t", "wm", "--offset-dir", str(tmp_path), "--count", "30")
    assert sorted(r.stdout.splitlines()) == sorted(b"1-%d" % i for i in range(30))


def test_offsets_set_refuses_while_a_running_consumer_holds_the_partitions(mock_cluster, tmp_path, capsys):
    mock_cluster.create_topic("busy", 2)
    consumer = rdk.Consumer(mock_cluster.bootstrap_servers, "busy", str(tmp_path), lambda batch: None)
    consumer.start()
    try:
        assert cli.main(["offsets", "set", str(tmp_path), "-t", "busy", "-p", "1", "--to", "0"]) == 1
        assert "in use by another consumer" in capsys.readouterr().err
    finally:
        consumer.stop()
    assert cli.main(["offsets", "set", str(tmp_path), "-t", "busy", "-p", "1", "--to", "0"]) == 0


def test_stats_shows_the_lag_of_an_offset_directory(mock_cluster, tmp_path, capsys):
    mock_cluster.create_topic("lagging", 3)
    produce_numbers(mock_cluster.bootstrap_servers, "lagging", 3, 20)
    write_offset_file(tmp_path, "lagging", 0, 19)
    write_offset_file(tmp_path, "lagging", 1, 4)
    assert cli.main(["stats", "-b", mock_cluster.bootstrap_servers, "-t", "lagging",
                     "--offset-dir", str(tmp_path)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [["partition", "low", "high", "messages", "stored", "lag"],
                    ["0", "0", "20", "20", "19", "0"],
                    ["1", "0", "20", "20", "4", "15"],
                    ["2", "0", "20", "20", "-", "20"],
                    ["total", "-", "-", "60", "-", "35"]]


def test_consume_ends_quietly_when_stdout_is_closed(mock_cluster, tmp_path):
    """Like ``| head``: the reader goes away mid-stream. The first batch is offset 0 alone
    (the rest is produced only once its line arrived), so it was written whole and must be
    recorded. The writer is then stopped (SIGSTOP) and the pipe drained before it is
    closed, so the test knows every line the pipe accepted: nothing beyond the last of them
    may be recorded."""
    mock_cluster.create_topic("piped", 1)
    produce_numbers(mock_cluster.bootstrap_servers, "piped", 1, 1)
    proc = subprocess.Popen([PY, "-m", "rdk", "consume", "-b", mock_cluster.bootstrap_servers,
                             "-t", "piped", "--offset-dir", str(tmp_path),
                             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    fd = proc.stdout.fileno()
    accepted = b""
    try:
        while b"\n" not in accepted:  # (blocking reads: the first line)
            chunk = os.read(fd, 65536)
            assert chunk, proc.stderr.read()
            accepted += chunk
        assert json.loads(accepted.split(b"\n")[0])["offset"] == 0
        with rdk.Producer(mock_cluster.bootstrap_servers) as p:
            p.send("piped", 0, [b"0-%d" % i for i in range(1, 20000)])
            assert p.flush(30) == 0
        while accepted.count(b"\n") < 2:  # it is writing the rest
            chunk = os.read(fd, 65536)
            assert chunk, proc.stderr.read()
            accepted += chunk
        proc.send_signal(signal.SIGSTOP)
        assert os.WIFSTOPPED(os.waitpid(proc.pid, os.WUNTRACED)[1])  # nothing enters the pipe now...
        os.set_blocking(fd, False)
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(fd, 65536):  # ...so this reads all it accepted
                accepted += chunk
        proc.stdout.close()  # like `| head -n 1` exiting
        proc.send_signal(signal.SIGCONT)
        err = proc.stderr.read()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait()
    assert b"Traceback" not in err and b"consumed " in err
    lines = accepted.split(b"\n")[:-1]  # the complete lines the pipe accepted
    offsets = [json.loads(line)["offset"] for line in lines]
    assert offsets == list(range(len(lines)))
    assert len(lines) < 20000, "the pipe took everything: the reader never went away mid-stream"
    # what the pipe accepted (whole batches of it) is recorded; nothing after it
    stored = read_offset_file(offset_file_path(tmp_path, "piped", 0))
    assert stored is not None and 0 <= stored <= offsets[-1], (stored, offsets[-1], err)


def test_stats_watch_refreshes_until_interrupted(mock_cluster, tmp_path):
    mock_cluster.create_topic("watched", 2)
    produce_numbers(mock_cluster.bootstrap_servers, "watched", 2, 5)
    proc = subprocess.Popen([PY, "-m", "rdk", "stats", "-b", mock_cluster.bootstrap_servers,
                             "-t", "watched", "--watch", "--interval", "0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        headers = 0
        lines = []
        while headers < 2:  # two refreshes
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line.split())
            headers += line.startswith(b"# ")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [b"total", b"-", b"-", b"10"] in lines


def test_rich_table_and_progress_render_when_asked(mock_cluster, tmp_path, capsys):
    buf = io.StringIO()
    cli._ui.print_table("offsets", ["topic", "partition", "stored"], [("events", 3, 1499)],
                    rich_output=True, out=buf)
    text = buf.getvalue()
    assert "events" in text and "1499" in text and "─" in text  # a rich box, not plain text
    mock_cluster.create_topic("shown", 1)
    (tmp_path / "in.txt").write_bytes(b"a\nb\nc\n")
    assert cli.main(["produce", "-b", mock_cluster.bootstrap_servers, "-t", "shown",
                     "--progress", str(tmp_path / "in.txt")]) == 0
    err = capsys.readouterr().err
    assert "produce shown" in err  # the progress line, although stderr is not a TTY
    assert "sent 3, failed 0" in err


@pytest.fixture
def grouping_mock():
    """A mock cluster whose new groups wait 3 s for more members (a broker's default): both
    workers join the first generation, and no rebalance refuses the commits at the end."""
    with MockCluster(3, group_initial_rebalance_delay_ms=3000) as mc:
        yield mc


def test_consume_group_workers_read_everything_once_and_commit_to_the_group(grouping_mock):
    mock_cluster = grouping_mock
    mock_cluster.create_topic("grouped", 4)
    produce_numbers(mock_cluster.bootstrap_servers, "grouped", 4, 300)
    # -X: a short session, because the mock cluster holds a group in its rebalance for the
    # session timeout less 1 s after a member leaves (45 s by default), refusing commits
    args = ("consume", "-b", mock_cluster.bootstrap_servers, "-t", "grouped", "--group", "cli-g",
            "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500")
    r = rdk_cli(*args, "--workers", "2", "--count", "700", timeout=120)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()
    assert len(first) == len(set(first)) == 700
    assert b"group cli-g" in r.stderr
    assert b"not stored" not in r.stderr  # both members committed what they wrote
    r = rdk_cli(*args, "--count", "500", timeout=120)  # one process, same group: the rest
    assert r.returncode == 0, r.stderr
    second = r.stdout.splitlines()
    assert sorted(first + second) == sorted(b"%d-%d" % (p, i) for p in range(4) for i in range(300))
    store = rdk.BrokerOffsetStore("cli-g", broker=mock_cluster.bootstrap_servers, topic="grouped")
    try:
        assert store.read([0, 1, 2, 3]) == {p: 299 for p in range(4)}
    finally:
        store.close()


@pytest.mark.parametrize("command", [
    ["consume", "-b", "127.0.0.1:1", "-t", "x", "--group", "g"],
    ["produce", "-b", "127.0.0.1:1", "-t", "x"],
    ["stats", "-b", "127.0.0.1:1", "-t", "x"],
    ["offsets", "set", "DIR", "-t", "x", "--to", "earliest", "-b", "127.0.0.1:1"],
], ids=["consume", "produce", "stats", "offsets"])
def test_property_option_reaches_librdkafka(command, tmp_path):
    """-X KEY=VALUE goes to the client as a librdkafka property: librdkafka's own checks
    answer for an unknown property and a bad value, before any connection is tried."""
    command = [str(tmp_path) if a == "DIR" else a for a in command]
    r = rdk_cli(*command, "-X", "no.such.property=1")
    assert r.returncode == 1 and b'No such configuration property: "no.such.property"' in r.stderr
    r = rdk_cli(*command, "-X", "socket.timeout.ms=abc")
    assert r.returncode == 1, r.stderr
    assert b'Invalid value for configuration property "socket.timeout.ms"' in r.stderr
    r = rdk_cli(*command, "-X", "socket.timeout.ms")
    assert r.returncode == 2 and b"-X takes a librdkafka property as KEY=VALUE" in r.stderr


@pytest.mark.parametrize("extra", [["--offset-dir", "d"], ["--slot", "0", "--of", "2"]],
                         ids=["offset-dir", "slot"])
def test_consume_group_refuses_slot_options(extra, capsys):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(cli.main(["consume", "-b", "h:1", "-t", "x", "--group", "g", *extra]))
    assert exc.value.code == 2
    assert "--group" in capsys.readouterr().err
