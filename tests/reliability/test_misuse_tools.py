"""Misuse of the tools around the clients (issue 14): offset files, worker pools, the mock
cluster, Admin and the command line. Anything that may hang or abort the interpreter runs
in a subprocess with a timeout.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from functools import partial

import pytest
from helpers import wait_until

import rdk
import rdk.cli
from rdk import OffsetFileError, workers
from rdk._binding import RepeatLimiter
from rdk.mock import MockCluster, free_port
from rdk.offsets import (
    FileOffsetStore,
    lock_partitions,
    offset_file_path,
    read_offset_file,
    remove_temp_files,
    write_offset_file,
)


def run_python(code: str, timeout: float = 60.0, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, timeout=timeout)


def cli(*argv: str, stdin: bytes | None = None) -> tuple[int, list[str]]:
    """rdk ARGV in this process: (exit code, non-empty stderr lines)."""
    err = io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = rdk.cli.main(list(argv))
            except SystemExit as e:
                code = e.code
    finally:
        sys.stdin = old_stdin
    return code, [line for line in err.getvalue().splitlines() if line.strip()]


# ---- item 6: a MockCluster never closed ---------------------------------------------------------


@pytest.mark.parametrize("with_producer", [False, True])
def test_mock_cluster_never_closed_exits_cleanly(with_producer):
    code = f"""
        from rdk import Producer
        from rdk.mock import MockCluster
        mc = MockCluster(1)
        mc.create_topic("t", 1)
        if {with_producer}:
            p = Producer(mc.bootstrap_servers)
            p.send("t", 0, [b"x"])
            assert p.stop(10) == 0
        print("done", flush=True)
    """
    r = run_python(code, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "done" in r.stdout and "mock clusters must be destroyed" not in r.stderr


def test_mock_cluster_collected_unclosed_and_closed_twice_is_safe():
    r = run_python("""
        import gc
        from rdk.mock import MockCluster
        for _ in range(3):
            mc = MockCluster(1)
            del mc
            gc.collect()
        mc = MockCluster(1)
        mc.close(); mc.close()
        print("done", flush=True)
    """)
    assert r.returncode == 0 and "done" in r.stdout, r.stderr[-2000:]


# ---- workers: a hopeless error at start is not restarted, and its cause is reported -----------


class NotAConsumer:
    def __init__(self, **kw) -> None:
        pass


class StatsEmitter:
    """A stand-in consumer that reports stats every 50 ms (the pool forwards them)."""

    def __init__(self, worker_slot: int, num_workers: int, stats_callback=None) -> None:
        self.cb = stats_callback
        self.stop_event = threading.Event()

    def start(self):
        def emit():
            while not self.stop_event.wait(0.05):
                self.cb({"waiting_kafka": 1, "waiting_local": 0, "kafka_log_size": 1, "partitions": {}})
        threading.Thread(target=emit, daemon=True).start()
        return [0]

    def stop(self, timeout=None) -> None:
        self.stop_event.set()


def _run_pool_expecting_permanent_failure(factory, num_workers: int, cause: str):
    pool = workers.WorkerPool(num_workers, factory, restart_backoff=1.0)
    pool.start()
    try:
        assert pool.wait(20), "the pool kept restarting a worker whose error no restart can fix"
    finally:
        pool.stop(15)
    err = pool.error
    assert isinstance(err, workers.WorkerError)
    assert err.permanent and err.cause is not None and cause in err.cause, (err, err.cause)
    assert cause in str(err)
    assert sum(pool.restarts.values()) == 0


def test_worker_unknown_topic_is_not_restarted_and_names_the_cause(mock_cluster, tmp_path):
    factory = partial(rdk.Consumer, mock_cluster.bootstrap_servers, "no-such-topic-here",
                      str(tmp_path), print)
    _run_pool_expecting_permanent_failure(factory, 1, "UNKNOWN_TOPIC")


def test_more_workers_than_partitions_is_not_restarted_and_names_the_cause(mock_cluster, tmp_path):
    mock_cluster.create_topic("two", 2)
    factory = partial(rdk.Consumer, mock_cluster.bootstrap_servers, "two", str(tmp_path), print)
    _run_pool_expecting_permanent_failure(factory, 3, "fewer than num_workers=3")


def test_factory_returning_a_non_consumer_is_not_restarted(tmp_path):
    _run_pool_expecting_permanent_failure(NotAConsumer, 1, "TypeError: consumer_factory returned "
                                                           "NotAConsumer")


def test_pool_stats_callback_raising_systemexit_is_logged_and_the_pool_goes_on(caplog):
    calls = []

    def stats_callback(info):
        calls.append(info)
        if len(calls) == 1:
            raise SystemExit(3)

    caplog.set_level(logging.ERROR, logger="rdk.workers")
    pool = workers.WorkerPool(1, StatsEmitter, stats_callback=stats_callback)
    pool.start()
    try:
        wait_until(lambda: len(calls) >= 3, 30, "stats after the callback raised SystemExit")
        assert pool.running and pool.error is None
    finally:
        pool.stop(15)
    assert "SystemExit" in caplog.text


# ---- offset files ------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [234, 240, 246])
def test_long_legal_topic_names_write_offset_files_with_short_temp_names(tmp_path, length):
    topic = "t" * length
    write_offset_file(tmp_path, topic, 7, 41)
    assert read_offset_file(offset_file_path(tmp_path, topic, 7)) == 41
    assert sorted(os.listdir(tmp_path)) == [f"{topic}-7.offset"]  # the kafka-native name, as is
    with lock_partitions(tmp_path, topic, [7]):
        pass


def test_topics_whose_offset_file_name_cannot_fit_are_refused_naming_the_limit(tmp_path):
    with pytest.raises(ValueError, match=r"too long for offset files.*255"):
        FileOffsetStore(tmp_path, "t" * 247)
    with pytest.raises(ValueError, match=r"'t{249}'.*255"):
        rdk.Consumer("127.0.0.1:9", "t" * 249, str(tmp_path), print)
    with pytest.raises(ValueError, match=r"partition 1000000000 .*255"):
        lock_partitions(tmp_path, "t" * 240, [1_000_000_000])


def test_stale_temp_files_are_removed_short_and_old_style(tmp_path):
    topic = "t" * 240
    write_offset_file(tmp_path, topic, 0, 5)
    from rdk.offsets import _files

    name = f"{topic}-0.offset"
    (tmp_path / f"{_files._temp_prefix(name)}999-1.tmp").write_text("6\n")
    (tmp_path / f".{'u'}-0.offset.999-2.tmp").write_text("1\n")
    (tmp_path / ".u-0.offset.999-3.tmp").write_text("1\n")
    assert remove_temp_files(tmp_path, topic, [0]) == 1
    assert remove_temp_files(tmp_path, "u", [0]) == 2
    assert sorted(os.listdir(tmp_path)) == [name]


def test_consumer_with_a_240_character_topic_records_its_offsets(tmp_path):
    topic = "c" * 240
    with MockCluster(1) as mc:
        mc.create_topic(topic, 1)
        with rdk.Producer(mc.bootstrap_servers) as p:
            p.send(topic, 0, [b"a", b"b", b"c"])
            assert p.flush(10) == 0
        got = []
        c = rdk.Consumer(mc.bootstrap_servers, topic, str(tmp_path), lambda b: got.extend(b.messages))
        c.start()
        try:
            wait_until(lambda: len(got) == 3, 20, "three messages")
            wait_until(lambda: read_offset_file(offset_file_path(tmp_path, topic, 0)) == 2, 20,
                       "the offset file")
        finally:
            c.stop(10)


def test_symlinked_offset_file_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("5\n")
    d = tmp_path / "d"
    d.mkdir()
    link = offset_file_path(d, "t", 0)
    link.symlink_to(target)
    with pytest.raises(OffsetFileError, match=r"t-0\.offset is a symbolic link"):
        read_offset_file(link)
    with pytest.raises(OffsetFileError, match=r"t-0\.offset is a symbolic link"):
        write_offset_file(d, "t", 0, 9)
    assert link.is_symlink() and target.read_text() == "5\n"
    assert [n for n in os.listdir(d) if n.endswith(".tmp")] == []


def test_oversized_offset_file_is_refused_not_read_as_empty(tmp_path):
    path = offset_file_path(tmp_path, "t", 0)
    path.write_bytes(b" " * 5000 + b"12\n")
    with pytest.raises(OffsetFileError, match=r"t-0\.offset is larger than 4096 bytes"):
        read_offset_file(path)


def test_offsets_beyond_int64_name_the_file(tmp_path):
    with pytest.raises(ValueError, match=r"partition 0 \(.*t-0\.offset\) must be <="):
        write_offset_file(tmp_path, "t", 0, 2**63)
    path = offset_file_path(tmp_path, "t", 0)
    path.write_text(f"{2**63}\n")
    with pytest.raises(OffsetFileError, match=r"t-0\.offset holds 9223372036854775808"):
        read_offset_file(path)


@pytest.mark.parametrize("kind", ["file", "dangling symlink"])
def test_offset_directory_that_is_not_a_directory_says_so(tmp_path, kind):
    path = tmp_path / "offsets"
    if kind == "file":
        path.write_text("x")
    else:
        path.symlink_to(tmp_path / "missing")
    with pytest.raises(OffsetFileError, match=r"offsets is not a directory"):
        rdk.Consumer("127.0.0.1:9", "t", str(path), print)


# ---- Admin: numbers beyond C -----------------------------------------------------------------


def test_admin_numbers_beyond_c_name_the_argument(mock_cluster):
    mock_cluster.create_topic("t", 1)
    with rdk.Admin(mock_cluster.bootstrap_servers) as a:
        for value in (float("nan"), -1):
            with pytest.raises(ValueError, match="timeout"):
                a.list_topics(timeout=value)
            with pytest.raises(ValueError, match="timeout"):
                a.watermarks("t", 0, timeout=value)
        for value in (float("inf"), 1e20):  # no practical limit, as everywhere in rdk
            assert a.watermarks("t", 0, timeout=value) == (0, 0)
        with pytest.raises(ValueError, match="partition"):
            a.watermarks("t", 2**31)
        with pytest.raises(ValueError, match="timestamp of partition 0"):
            a.offsets_for_times("t", {0: 2**63})
        with pytest.raises(ValueError, match="partition"):
            a.offsets_for_times("t", {2**31: 0})


# ---- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "option"), [
    (("offsets", "set", "{dir}", "-t", "t", "-p", "0", "--to", str(10**23)), "--to"),
    (("offsets", "set", "{dir}", "-t", "t", "-p", str(2**31), "--to", "5"), "--partition"),
    (("stats", "-b", "127.0.0.1:9", "-t", "t", "--interval", "inf"), "--interval"),
    (("stats", "-b", "127.0.0.1:9", "-t", "t", "--interval", "1e20"), "--interval"),
    (("mock", "--topic", "bad topic:2"), "--topic"),
    (("mock", "--topic", f"t:{2**31}"), "--topic"),
    (("mock", "--brokers", str(10**23)), "--brokers"),
])
def test_cli_numbers_and_names_beyond_range_exit_2_in_one_line(tmp_path, argv, option):
    code, lines = cli(*(a.replace("{dir}", str(tmp_path)) for a in argv))
    assert code == 2 and len(lines) == 1 and option in lines[0], lines


def test_python_m_rdk_mock_refuses_an_illegal_topic_name():
    r = subprocess.run([sys.executable, "-m", "rdk.mock", "--topic", "bad topic:2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "'bad topic'" in r.stderr and "Traceback" not in r.stderr


def test_produce_binary_sends_every_complete_frame_before_a_truncated_tail(tmp_path):
    from rdk.cli._framing import frame

    with MockCluster(1) as mc:
        mc.create_topic("f", 1)
        data = tmp_path / "frames.bin"
        data.write_bytes(b"".join(frame(b"v%d" % i) for i in range(15_000)) + b"\x00\x00\x00\x09abc")
        code, lines = cli("produce", "-b", mc.bootstrap_servers, "-t", "f", "-p", "0", "--binary",
                          str(data))
        assert code == 1 and len(lines) == 1, lines
        assert "truncated frame" in lines[0] and "sent 15000" in lines[0], lines
        with rdk.Admin(mc.bootstrap_servers) as a:
            assert a.watermarks("f", 0)[1] == 15_000


def test_produce_strips_crlf_line_endings(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic("l", 1)
        data = tmp_path / "lines.txt"
        data.write_bytes(b"one\r\ntwo\r\nthree\n")
        code, lines = cli("produce", "-b", mc.bootstrap_servers, "-t", "l", "-p", "0", str(data))
        assert code == 0, lines
        got = []
        c = rdk.Consumer(mc.bootstrap_servers, "l", str(tmp_path / "o"), lambda b: got.extend(b.messages))
        c.start()
        try:
            wait_until(lambda: len(got) == 3, 20, "three lines")
        finally:
            c.stop(10)
        assert [m.value for m in got] == [b"one", b"two", b"three"]


# ---- rate-limited librdkafka warnings ----------------------------------------------------------


def test_repeat_limiter_shows_once_per_interval_and_counts_what_it_held(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("rdk._binding.time.monotonic", lambda: now[0])
    limiter = RepeatLimiter(10.0)
    assert limiter.allow("k") == (True, 0)
    assert [limiter.allow("k") for _ in range(3)] == [(False, 1), (False, 2), (False, 3)]
    assert limiter.allow("other") == (True, 0)
    now[0] += 10.0
    assert limiter.allow("k") == (True, 3)
    assert limiter.allow("k") == (False, 1)
    for i in range(5000):  # bounded memory
        limiter.allow(("key", i))
    assert len(limiter._seen) <= 1025


def test_admin_against_a_closed_port_logs_a_bounded_number_of_lines(caplog):
    # a logger of its own: clients of earlier tests that are still closing log to "rdk" too
    own = logging.getLogger("rdk.test.closed-port")
    caplog.set_level(logging.DEBUG, logger=own.name)
    port = free_port()  # nothing listens there
    started = time.monotonic()
    options = {"reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50}
    with rdk.Admin(f"127.0.0.1:{port}", driver_options=options, logger=own) as a, \
            pytest.raises(rdk.KafkaError):
        a.list_topics(timeout=4)
    assert time.monotonic() - started < 30
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == own.name]
    assert loud, "librdkafka's connection failures reached the Admin's logger"
    assert len(loud) <= 6, [r.getMessage() for r in loud]
