"""The rdk command line: arguments, version, mock, offsets show/set, stats, bench."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import rdk
from rdk import Admin, cli
from rdk.offsets import lock_partitions, offset_file_path, read_offset_file, write_offset_file

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
    assert "2.12" in out
    for feature in rdk.features():
        assert feature in out


def test_bench_says_clearly_when_bench_run_py_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "bench_candidates", lambda: [tmp_path / "bench" / "run.py"])
    assert cli.main(["bench"]) == 1
    err = capsys.readouterr().err
    assert "bench/run.py was not found" in err and "source repository" in err


def test_bench_delegates_to_run_py_main_with_the_arguments(tmp_path, monkeypatch, capsys):
    run_py = tmp_path / "bench" / "run.py"
    run_py.parent.mkdir()
    run_py.write_text("def main(argv):\n    print('bench got', argv)\n    return 3\n")
    monkeypatch.setattr(cli, "bench_candidates", lambda: [run_py])
    assert cli.main(["bench", "--quick", "-n", "5"]) == 3
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
