"""Offset files (kafka-native's format), atomic writes, locks and the coalescing committer."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdk import offsets
from rdk.errors import LockedError, OffsetFileError
from rdk.offsets import (
    FileOffsetStore,
    OffsetCommitter,
    _committer,
    is_locked,
    list_offset_files,
    lock_partitions,
    offset_file_path,
    parse_offset_text,
    read_offset_file,
    write_offset_file,
    write_offset_files,
)


def test_file_name_is_topic_dash_partition_dot_offset(tmp_path):
    assert offset_file_path(tmp_path, "orders.v2", 7) == tmp_path / "orders.v2-7.offset"


def test_write_stores_decimal_text_and_newline_exactly(tmp_path):
    write_offset_file(tmp_path, "t", 0, 12345)
    assert (tmp_path / "t-0.offset").read_bytes() == b"12345\n"
    assert read_offset_file(tmp_path / "t-0.offset") == 12345


@pytest.mark.parametrize("content,expected", [(b"41\n", 41), (b"41", 41), (b" 7 \r\n", 7), (b"-1\n", -1),
                                              (b"9223372036854775806\n", 9223372036854775806)])
def test_kafka_native_files_parse_with_or_without_newline(tmp_path, content, expected):
    (tmp_path / "t-3.offset").write_bytes(content)
    assert read_offset_file(tmp_path / "t-3.offset") == expected


def test_missing_file_reads_as_none_not_zero(tmp_path):
    assert read_offset_file(tmp_path / "t-0.offset") is None


@pytest.mark.parametrize("content", [b"", b"\n", b"   "])
def test_empty_file_is_an_error_naming_the_file_never_offset_zero(tmp_path, content):
    path = tmp_path / "t-1.offset"
    path.write_bytes(content)
    with pytest.raises(OffsetFileError, match="empty") as ei:
        read_offset_file(path)
    assert str(path) in str(ei.value)


@pytest.mark.parametrize("content", [b"abc", b"12x\n", b"-2\n", b"1.5\n", b"0x10", b"1 2", b"\x00\x00"])
def test_corrupt_file_is_an_error_naming_the_file(tmp_path, content):
    path = tmp_path / "t-1.offset"
    path.write_bytes(content)
    with pytest.raises(OffsetFileError, match="corrupt") as ei:
        read_offset_file(path)
    assert str(path) in str(ei.value)


@settings(deadline=None)
@given(st.binary(max_size=64))
def test_parser_returns_an_offset_or_raises_offset_file_error(data):
    try:
        value = parse_offset_text(data, "f")
    except OffsetFileError:
        return
    assert isinstance(value, int) and value >= -1


@settings(deadline=None)
@given(st.integers(min_value=-1, max_value=2**63 - 1))
def test_every_offset_round_trips(value):
    assert parse_offset_text(b"%d\n" % value) == value


@pytest.mark.parametrize("topic", ["../escape", "a/b", "..", ".", "", "x" * 250, "bad name", "t\x00"])
def test_topic_names_that_could_escape_the_directory_are_rejected(tmp_path, topic):
    with pytest.raises(ValueError):
        offset_file_path(tmp_path, topic, 0)
    with pytest.raises(ValueError):
        write_offset_file(tmp_path, topic, 0, 1)
    with pytest.raises(ValueError):
        FileOffsetStore(tmp_path, topic)
    assert list(tmp_path.iterdir()) == []


def test_negative_partition_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="partition"):
        offset_file_path(tmp_path, "t", -1)


def test_list_offset_files_splits_at_the_last_dash_and_skips_other_files(tmp_path):
    write_offset_files(tmp_path, "my-topic-2", {7: 1, 10: 2})
    write_offset_file(tmp_path, "other", 0, 5)
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".my-topic-2-7.lock").write_text("")
    (tmp_path / ".my-topic-2-7.offset.99-1.tmp").write_text("")
    found = [(f.topic, f.partition) for f in list_offset_files(tmp_path)]
    assert found == [("my-topic-2", 7), ("my-topic-2", 10), ("other", 0)]
    assert [(f.topic, f.partition) for f in list_offset_files(tmp_path, "other")] == [("other", 0)]
    assert list_offset_files(tmp_path / "missing") == []


def test_directory_is_created_when_missing(tmp_path):
    d = tmp_path / "a" / "b"
    store = FileOffsetStore(d, "t")
    assert d.is_dir() and store.read([0, 1]) == {}


def test_unwritable_directory_raises_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OffsetFileError, match="not writable") as ei:
        FileOffsetStore(blocker / "offsets", "t")
    assert str(blocker / "offsets") in str(ei.value)


READ_ONLY_CHECK = """
import sys
from rdk.errors import OffsetFileError
from rdk.offsets import FileOffsetStore
try:
    FileOffsetStore(sys.argv[1], "t")
except OffsetFileError as e:
    print("OffsetFileError:", e)
else:
    print("no error")
"""


def test_read_only_directory_raises(tmp_path):
    """Root writes into read-only directories, and CI runs as root: there the check runs in a
    subprocess that stays root but has lost the capabilities that override file permissions
    (setpriv drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER from its bounding set),
    so it reads the checkout wherever it lives (a 0700 folder too) yet cannot write into the
    0555 directory."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    cmd = [sys.executable, "-c", READ_ONLY_CHECK, str(d)]
    if os.geteuid() == 0:
        assert shutil.which("setpriv"), "setpriv (util-linux) is needed to drop root's DAC capabilities"
        cmd = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
               "--bounding-set=-dac_override,-dac_read_search,-fowner", "--", *cmd]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    finally:
        d.chmod(0o755)  # (so tmp_path can be cleaned)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("OffsetFileError:") and "not writable" in run.stdout, run.stdout
    assert str(d) in run.stdout
    assert list(d.iterdir()) == []


def test_a_failed_write_leaves_no_temp_file_and_keeps_the_old_value(tmp_path):
    """Every value is staged before the first rename; the renames go in the mapping's order,
    so a rename that fails leaves each file not yet renamed with exactly its old value."""
    write_offset_file(tmp_path, "t", 0, 5)
    (tmp_path / "t-1.offset").mkdir()  # rename onto a directory fails
    with pytest.raises(OffsetFileError, match="cannot write"):
        write_offset_files(tmp_path, "t", {1: 7, 0: 6})  # fails at the first rename
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t-0.offset", "t-1.offset"]
    assert read_offset_file(tmp_path / "t-0.offset") == 5


def test_a_failed_write_keeps_the_new_value_of_files_renamed_before_the_failure(tmp_path):
    write_offset_file(tmp_path, "t", 0, 5)
    (tmp_path / "t-1.offset").mkdir()
    with pytest.raises(OffsetFileError, match="cannot write"):
        write_offset_files(tmp_path, "t", {0: 6, 1: 7})  # t-0 is renamed, then t-1 fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t-0.offset", "t-1.offset"]
    assert read_offset_file(tmp_path / "t-0.offset") == 6  # whole: its new value


def test_store_reads_and_commits_last_processed_offsets(tmp_path):
    store = FileOffsetStore(tmp_path, "t")
    store.commit({0: 10, 2: 20})
    assert store.read([0, 1, 2]) == {0: 10, 2: 20}
    assert isinstance(store, offsets.OffsetStore)


# ---- locks ---------------------------------------------------------------------------


def test_second_lock_on_the_same_partition_raises_locked_error_naming_it(tmp_path):
    with lock_partitions(tmp_path, "t", [0, 2]):
        with pytest.raises(LockedError, match="partition 2 of topic 't'") as ei:
            lock_partitions(tmp_path, "t", [1, 2])
        assert f"pid {os.getpid()}" in str(ei.value)
        # the failed attempt released what it had taken
        assert not is_locked(tmp_path, "t", 1)
        with lock_partitions(tmp_path, "t", [1, 3]):  # other partitions are fine
            assert is_locked(tmp_path, "t", 1)
    assert not any(is_locked(tmp_path, "t", p) for p in range(4))


def test_is_locked_sees_a_lock_held_by_another_process(tmp_path):
    code = ("import sys; from rdk.offsets import lock_partitions\n"
            f"l = lock_partitions({str(tmp_path)!r}, 't', [5])\n"
            "print('locked', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        assert is_locked(tmp_path, "t", 5)
        assert not is_locked(tmp_path, "t", 4)
        with pytest.raises(LockedError, match=f"pid {proc.pid}"):
            lock_partitions(tmp_path, "t", [5])
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
    assert not is_locked(tmp_path, "t", 5)  # the lock ends with its process


def test_remove_temp_files_touches_only_the_given_partitions(tmp_path):
    for name in (".t-0.offset.1-1.tmp", ".t-1.offset.1-2.tmp", ".u-0.offset.1-3.tmp", "t-0.offset"):
        (tmp_path / name).write_text("1\n")
    assert offsets.remove_temp_files(tmp_path, "t", [0]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".t-1.offset.1-2.tmp", ".u-0.offset.1-3.tmp", "t-0.offset"]


# ---- committer ---------------------------------------------------------------------


class GatedStore:
    """A store whose commit waits for a gate, recording every call."""

    def __init__(self):
        self.calls = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail = 0

    def read(self, partitions):
        return {}

    def commit(self, values):
        self.entered.set()
        self.gate.wait(10)
        if self.fail:
            self.fail -= 1
            raise OSError("disk full")
        self.calls.append(dict(values))


def test_committer_keeps_one_commit_in_flight_and_coalesces_newer_values():
    store = GatedStore()
    c = OffsetCommitter(store, logging.getLogger("test"))
    try:
        c.record({0: 1})
        assert store.entered.wait(5)  # the first commit is in flight, blocked
        c.record({0: 2, 1: 5})
        c.record({0: 3})
        store.gate.set()
        assert c.flush(5)
        assert store.calls == [{0: 1}, {0: 3, 1: 5}]
        assert c.committed == {0: 3, 1: 5}
    finally:
        c.close(5)


def test_committer_retries_a_failed_commit_and_reports_it(caplog):
    store = GatedStore()
    store.fail = 1
    store.gate.set()
    c = OffsetCommitter(store, logging.getLogger("test"))
    c.RETRY_SECONDS = 0.01
    try:
        c.record({0: 4})
        assert c.flush(5)
        assert store.calls == [{0: 4}]
        assert "disk full" in caplog.text
    finally:
        c.close(5)


def test_committer_logs_a_group_commit_refused_mid_rebalance_at_info(caplog):
    """ILLEGAL_GENERATION / REBALANCE_IN_PROGRESS are a rebalance's expected refusals: retried,
    logged at INFO, not ERROR; any other failure stays an ERROR."""
    from rdk._binding import ERROR_CODES
    from rdk.errors import KafkaError

    class RebalancingStore(GatedStore):
        def commit(self, values):
            if self.fail:
                self.fail -= 1
                raise KafkaError(ERROR_CODES["REBALANCE_IN_PROGRESS"], "the group is rebalancing")
            self.calls.append(dict(values))

    store = RebalancingStore()
    store.fail = 1
    c = OffsetCommitter(store, logging.getLogger("test"))
    c.RETRY_SECONDS = 0.01
    caplog.set_level("INFO")
    try:
        c.record({0: 4})
        assert c.flush(5)
        assert store.calls == [{0: 4}]
        records = [r for r in caplog.records if "REBALANCE_IN_PROGRESS" in r.getMessage()]
        assert [r.levelname for r in records] == ["INFO"]
    finally:
        c.close(5)


def test_committer_close_gives_up_on_time_when_the_store_hangs():
    store = GatedStore()
    c = OffsetCommitter(store, logging.getLogger("test"))
    c.record({0: 1})
    assert store.entered.wait(5)
    assert c.close(0.2) is False
    store.gate.set()


class CommitterClock:
    """offsets' ``time`` for one test: ``monotonic()`` is set by the test; the committer
    thread's reads are counted, so the test can wait until it has looked at a new time."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.reads: list[float] = []
        self.cond = threading.Condition()

    def __getattr__(self, name):
        return getattr(time, name)

    def monotonic(self) -> float:
        with self.cond:
            if threading.current_thread().name == "rdk-offsets":
                self.reads.append(self.now)
                self.cond.notify_all()
            return self.now

    def set_and_wait_read(self, now: float, committer: OffsetCommitter) -> None:
        """Move the clock to ``now``, wake the committer and wait until it has read it."""
        with self.cond:
            self.now = now
            seen = len(self.reads)
        committer.record(committer.pending)  # wakes its thread (same values: no change)
        with self.cond:
            assert self.cond.wait_for(lambda: now in self.reads[seen:], 10), (
                f"the committer never read the clock at {now}")


def test_committer_spaces_commits_by_min_interval_and_flush_overrides_it(monkeypatch):
    clock = CommitterClock(1000.0)
    monkeypatch.setattr(_committer, "time", clock)
    store = GatedStore()
    store.gate.set()
    c = OffsetCommitter(store, logging.getLogger("test"), min_interval=30.0)
    try:
        c.record({0: 1})
        assert c.flush(5) and store.calls == [{0: 1}]  # started at 1000.0
        store.entered.clear()
        c.record({0: 2})
        c.record({0: 3})
        clock.set_and_wait_read(1029.999, c)  # it has seen the time: 1 ms of the interval left
        assert not store.entered.is_set() and c.pending == {0: 3}
        clock.set_and_wait_read(1030.0, c)  # the interval has passed: the commit starts
        assert store.entered.wait(10)
        assert c.flush(5) and store.calls == [{0: 1}, {0: 3}]
        store.entered.clear()
        c.record({0: 4})
        clock.set_and_wait_read(1030.5, c)
        assert not store.entered.is_set() and c.pending == {0: 4}
        assert c.flush(5)  # flush commits at once, without waiting out the interval
        assert store.calls == [{0: 1}, {0: 3}, {0: 4}]
    finally:
        c.close(5)


@pytest.mark.parametrize("kwargs,exc,pattern", [
    ({"group_id": 5}, TypeError, "group_id must be str"),
    ({"group_id": b"g"}, TypeError, "group_id must be str"),
    ({"group_id": ""}, ValueError, "group_id must not be empty"),
    ({"group_id": "g", "timeout": "10"}, TypeError, "timeout"),
    ({"group_id": "g", "timeout": -1}, ValueError, "timeout"),
    ({"group_id": "g", "driver_options": ["a", "b"]}, TypeError, "driver_options"),
    ({"group_id": "g", "broker": "127.0.0.1:9"}, TypeError, "both broker and topic"),
    ({"group_id": "g", "broker": 9092, "topic": "t"}, TypeError, "broker"),
    ({"group_id": "g", "broker": "127.0.0.1:9", "topic": "../t"}, ValueError, "'../t'"),
])
def test_broker_offset_store_checks_its_arguments(kwargs, exc, pattern):
    kwargs = dict(kwargs)  # (never change the shared parameter: a second run would lack group_id)
    group_id = kwargs.pop("group_id")
    with pytest.raises(exc, match=pattern):
        offsets.BrokerOffsetStore(group_id, **kwargs)


def test_unbound_broker_offset_store_refuses_to_read_or_commit():
    store = offsets.BrokerOffsetStore("g")
    with pytest.raises(RuntimeError, match="not bound"):
        store.read([0])
    with pytest.raises(RuntimeError, match="not bound"):
        store.commit({0: 1})


@pytest.mark.parametrize("directory,exc", [(5, TypeError), ("", ValueError)])
def test_file_offset_store_checks_the_directory(directory, exc):
    with pytest.raises(exc, match="offset_directory"):
        FileOffsetStore(directory, "t")


def test_file_offset_store_topic_of_wrong_type_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="topic"):
        FileOffsetStore(tmp_path, 5)


def test_one_flush_of_many_partitions_syncs_twice_and_few_sync_each_file(tmp_path):
    """Above SYNCFS_MIN_FILES changed files, one flush makes one syncfs and one directory
    fsync however many partitions it writes; below, one fsync per file plus the directory."""
    from rdk.offsets import SYNCFS_MIN_FILES, FileOffsetStore
    from rdk.offsets._files import _renameat2, _syncfs

    store = FileOffsetStore(tmp_path, "many")
    many = {p: 1000 + p for p in range(2048)}
    store.commit(many)
    expected_many = 2 if _syncfs is not None else len(many) + 1
    assert store.sync_calls == expected_many
    assert store.read(list(many)) == many
    store.commit({5: 7, 6: 8})
    assert store.sync_calls == expected_many + 3
    assert store.files_written == len(many) + 2 and store.flushes == 2
    assert store.read([5, 6, 7]) == {5: 7, 6: 8, 7: 1007}
    assert SYNCFS_MIN_FILES < 2048
    kept = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(kept) == (2 if _renameat2 is not None else 0), kept  # one per partition swapped
    store.close()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_committer_spaces_commits_by_their_cpu_cost_when_given_a_cpu_share():
    """A commit that costs c seconds of CPU is followed by a pause of c / max_cpu_share
    (between min_interval and MAX_INTERVAL); flush() still commits at once."""
    import logging
    import time as _time

    from helpers import wait_until

    class BusyStore:
        def __init__(self):
            self.starts, self.costs, self.values = [], [], []

        def read(self, partitions):
            return {}

        def commit(self, offsets):
            self.starts.append(_time.monotonic())
            cpu = _time.thread_time()
            while _time.thread_time() - cpu < 0.02:  # burn 20 ms of this thread's CPU
                pass
            self.costs.append(_time.thread_time() - cpu)
            self.values.append(dict(offsets))

    store = BusyStore()
    committer = OffsetCommitter(store, logging.getLogger("t"), max_cpu_share=0.1)
    try:
        committer.record({0: 1})
        assert wait_until(lambda: len(store.starts) == 1)
        committer.record({0: 2})
        committer.record({1: 5})
        assert wait_until(lambda: len(store.values) == 2, timeout=10)
        assert store.starts[1] - store.starts[0] >= store.costs[0] / 0.1
        assert store.values[1] == {0: 2, 1: 5}  # what was recorded meanwhile coalesced
        committer.record({0: 3})
        assert committer.flush(10)  # urgent: no CPU-share pause
        assert store.values[-1] == {0: 3}
    finally:
        committer.close(10)
    assert committer._next_gap(1000.0) == OffsetCommitter.MAX_INTERVAL
    plain = OffsetCommitter(store, logging.getLogger("t"), min_interval=0.3)
    try:
        assert plain._next_gap(5.0) == 0.3  # no CPU share given: min_interval only
    finally:
        plain.close(10)


# ---- OffsetFileWriter: a consumer's commits swap a kept temp file with the offset file ----

def _inode(path):
    return os.stat(path, follow_symlinks=False).st_ino


def _kept(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp"))


needs_exchange = pytest.mark.skipif(
    __import__("rdk.offsets._files", fromlist=["_renameat2"])._renameat2 is None,
    reason="no renameat2 in this libc")


@needs_exchange
def test_steady_commits_swap_two_files_and_create_none(tmp_path, monkeypatch):
    """Once a partition's kept temp file exists, a commit rewrites it and swaps names with the
    offset file: the same two inodes take turns, and no other file appears."""
    from rdk.offsets import FileOffsetStore, _files, read_offset_file

    monkeypatch.setattr(_files, "SHADOW_SETTLE_SECONDS", 0.0)
    store = FileOffsetStore(tmp_path, "t")
    final = tmp_path / "t-3.offset"
    store.commit({3: 10})  # no offset file yet: the kept file is renamed into place
    assert _kept(tmp_path) == []
    store.commit({3: 123456})  # the first swap: the kept file now holds 10
    (kept,) = _kept(tmp_path)
    pair = {_inode(final), _inode(tmp_path / kept)}
    assert (tmp_path / kept).read_bytes() == b"10\n"
    for value in (7, 99999999, 8, 5):  # 5 goes into the file holding 99999999: no old bytes stay
        before = _inode(final)
        store.commit({3: value})
        assert read_offset_file(final) == value
        assert _inode(tmp_path / kept) == before  # swapped, not replaced
        assert {_inode(final), _inode(tmp_path / kept)} == pair
        assert _kept(tmp_path) == [kept]
    store.close()
    assert _kept(tmp_path) == [] and read_offset_file(final) == 5
    store.commit({3: 9})  # usable after close
    assert read_offset_file(final) == 9


@needs_exchange
def test_a_kept_file_is_not_rewritten_within_the_settle_time(tmp_path):
    """A reader that opened the offset file just before a swap holds the kept file's inode:
    for SHADOW_SETTLE_SECONDS it is left alone (commits meanwhile rename fresh temp files)."""
    from rdk.offsets import FileOffsetStore, read_offset_file

    store = FileOffsetStore(tmp_path, "t")
    final = tmp_path / "t-0.offset"
    store.commit({0: 1})
    with open(final, "rb") as reader:  # a reader opens the offset file holding 1
        store.commit({0: 2})  # swap: its inode is now the kept file
        for value in range(3, 8):  # all within the settle time
            store.commit({0: value})
            assert read_offset_file(final) == value
        assert reader.read() == b"1\n"
    assert len(_kept(tmp_path)) == 1
    store.close()


def test_commits_work_where_names_cannot_be_swapped(tmp_path, monkeypatch):
    """A file system (or libc) without RENAME_EXCHANGE: the writer falls back to a fresh temp
    file renamed over the offset file, and keeps no temp file."""
    import errno

    from rdk.offsets import FileOffsetStore, _files, read_offset_file

    monkeypatch.setattr(_files, "SHADOW_SETTLE_SECONDS", 0.0)
    calls = []

    def refuse(dir_fd, a, b):
        calls.append((a, b))
        return errno.EINVAL
    monkeypatch.setattr(_files, "_exchange", refuse)
    store = FileOffsetStore(tmp_path, "t")
    for value in range(5):
        store.commit({0: value, 1: value * 1000})
        assert read_offset_file(tmp_path / "t-0.offset") == value
        assert read_offset_file(tmp_path / "t-1.offset") == value * 1000
    assert len(calls) == 1  # tried once, then never again
    assert _kept(tmp_path) == []
    monkeypatch.setattr(_files, "_renameat2", None)
    other = FileOffsetStore(tmp_path, "u")
    other.commit({0: 1})
    other.commit({0: 2})
    assert _kept(tmp_path) == [] and read_offset_file(tmp_path / "u-0.offset") == 2


@needs_exchange
def test_a_failed_swap_leaves_no_new_value_behind_and_the_next_commit_recovers(tmp_path, monkeypatch):
    """A swap that fails (EIO) raises OffsetFileError naming the topic; the offset file keeps
    its old value, the kept file is removed, and the next commit writes normally."""
    import errno

    from rdk.errors import OffsetFileError
    from rdk.offsets import FileOffsetStore, _files, read_offset_file

    monkeypatch.setattr(_files, "SHADOW_SETTLE_SECONDS", 0.0)
    store = FileOffsetStore(tmp_path, "t")
    store.commit({0: 1})
    store.commit({0: 2})
    real = _files._exchange
    monkeypatch.setattr(_files, "_exchange", lambda dir_fd, a, b: errno.EIO)
    with pytest.raises(OffsetFileError, match=r"topic 't'.*Input/output error"):
        store.commit({0: 3})
    assert read_offset_file(tmp_path / "t-0.offset") == 2
    assert _kept(tmp_path) == []
    monkeypatch.setattr(_files, "_exchange", real)
    store.commit({0: 4})
    store.commit({0: 5})
    assert read_offset_file(tmp_path / "t-0.offset") == 5 and len(_kept(tmp_path)) == 1


@needs_exchange
def test_a_read_that_spans_a_swap_reads_again(tmp_path, monkeypatch):
    """read_offset_file opened the offset file, then a commit swapped it away before the
    read: the value read is the new one, not the one of the inode it had opened."""
    from rdk.offsets import FileOffsetStore, _format, read_offset_file

    store = FileOffsetStore(tmp_path, "t")
    store.commit({0: 1})
    real_read = os.read
    swapped = []

    def read_after_a_commit(fd, n):
        if not swapped:
            swapped.append(True)
            store.commit({0: 2})
        return real_read(fd, n)
    monkeypatch.setattr(_format.os, "read", read_after_a_commit)
    assert read_offset_file(tmp_path / "t-0.offset") == 2
    assert swapped


@needs_exchange
def test_a_store_never_closed_removes_its_kept_files_when_dropped_or_at_exit(tmp_path):
    """An application's store wrapping a FileOffsetStore may never call its close(): the kept
    temp files still go when the store is garbage collected, or when the interpreter exits."""
    import gc

    from rdk.offsets import FileOffsetStore

    store = FileOffsetStore(tmp_path, "t")
    store.commit({0: 1, 1: 1})
    store.commit({0: 2, 1: 2})
    assert len(_kept(tmp_path)) == 2
    del store
    gc.collect()
    assert _kept(tmp_path) == []
    code = ("import sys; from rdk.offsets import FileOffsetStore\n"
            "s = FileOffsetStore(sys.argv[1], 'u'); s.commit({0: 1}); s.commit({0: 2})\n"
            "import os; print(sum(n.endswith('.tmp') for n in os.listdir(sys.argv[1])))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "1"  # kept while the interpreter ran...
    assert _kept(tmp_path) == []  # ...and removed when it exited
