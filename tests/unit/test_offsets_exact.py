"""rdk.offsets pinned exactly: BrokerOffsetStore against librdkafka's mock cluster (one per
module, fast), the committer's thread (failures, retries, close), and the file layer's
messages, modes, sync calls and symlink refusals."""

from __future__ import annotations

import ctypes
import errno
import itertools
import logging
import os
import threading
import time
from types import SimpleNamespace

import pytest

from rdk import offsets
from rdk._binding import ERROR_CODES
from rdk._binding import lib as real_lib
from rdk._binding import partitions as partitions_mod
from rdk.errors import KafkaError, LockedError, OffsetFileError
from rdk.offsets import (
    MAX_FILE_BYTES,
    MAX_OFFSET,
    SYNCFS_MIN_FILES,
    BrokerOffsetStore,
    OffsetCommitter,
    _committer,
    _files,
    _locks,
    _stores,
    ensure_directory,
    is_locked,
    lock_partitions,
    offset_file_path,
    read_offset_file,
    remove_temp_files,
    write_offset_files,
)
from rdk.testing import MockCluster


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Clock:
    """_stores.time for BrokerOffsetStore.read: sleep() moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 50.0
        self.sleeps: list = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


@pytest.fixture(scope="module")
def cluster():
    mc = MockCluster(1)
    mc.create_topic("t", 3)
    yield mc
    mc.close()


_groups = itertools.count()


@pytest.fixture
def store(cluster):
    # a fresh group per test: the cluster is shared by the module
    s = BrokerOffsetStore(f"group-{next(_groups)}", broker=cluster.bootstrap_servers, topic="t", timeout=3.0)
    yield s
    s.close()
    cluster.clear_request_errors("OffsetFetch")
    cluster.clear_request_errors("OffsetCommit")


# -- BrokerOffsetStore ---------------------------------------------------------------------
def test_broker_store_defaults_and_argument_messages():
    s = BrokerOffsetStore("g")
    assert (s.group_id, s.timeout, s.topic, s._client) == ("g", 10.0, None, None)
    assert repr(s) == "BrokerOffsetStore('g')"
    assert BrokerOffsetStore("g", timeout=float("inf")).timeout == 2_000_000
    assert BrokerOffsetStore("g", timeout=0).timeout == 0
    with pytest.raises(TypeError) as ei:
        BrokerOffsetStore(7)
    assert str(ei.value) == "group_id must be str, got int"
    with pytest.raises(ValueError) as ei:
        BrokerOffsetStore("")
    assert str(ei.value) == "group_id must not be empty"
    for kw in ({"broker": "h:1"}, {"topic": "t"}):
        with pytest.raises(TypeError) as ei:
            BrokerOffsetStore("g", **kw)
        assert str(ei.value) == "BrokerOffsetStore: give both broker and topic, or neither"
    with pytest.raises(TypeError) as ei:
        BrokerOffsetStore("g", driver_options=["x"])
    assert str(ei.value) == "driver_options must be a dict of librdkafka properties, got list"


def test_unbound_store_names_what_is_missing():
    s = BrokerOffsetStore("g")
    for call in (lambda: s.read([0]), lambda: s.commit({0: 1}), lambda: s.commit({})):
        with pytest.raises(RuntimeError) as ei:
            call()
        assert str(ei.value) == "BrokerOffsetStore is not bound to a broker and topic"
    s._client = object()  # a client but no topic is not bound either
    with pytest.raises(RuntimeError):
        s._bound()


def test_bind_makes_one_consumer_client_that_never_commits_by_itself(monkeypatch):
    made: list = []

    class FakeClient:
        def __init__(self, kind, props, logger=None):
            made.append((kind, props, logger))
            self.closed = 0

        def close(self):
            self.closed += 1

    monkeypatch.setattr(_stores._binding, "Client", FakeClient)
    log = logging.getLogger("x")
    s = BrokerOffsetStore("grp")
    s.bind(topic="t", broker="h:1,h2:2", driver_options={"group.id": "other", "a.b": "1"}, logger=log)
    assert made == [("consumer", {"a.b": "1", "group.id": "grp", "bootstrap.servers": "h:1,h2:2",
                                  "enable.auto.commit": False, "enable.auto.offset.store": False}, log)]
    assert s.topic == "t" and s._bound() == (s._client, "t")
    s.bind(topic="t", broker="h:1")  # the same topic: already bound, nothing new
    assert len(made) == 1
    with pytest.raises(ValueError) as ei:
        s.bind(topic="u", broker="h:1")
    assert str(ei.value) == "this BrokerOffsetStore is bound to topic 't', not 'u'"
    with pytest.raises(ValueError):
        s.bind(topic="t", broker="nohostport")
    with pytest.raises(ValueError):
        s.bind(topic="../t", broker="h:1")
    client = s._client
    s.close()
    s.close()
    assert client.closed == 1 and s._client is None
    s.bind(topic="t", broker="h:1")
    assert len(made) == 2 and made[1][2] is None
    both = BrokerOffsetStore("g2", broker="h:3", topic="v", driver_options={"k": "v"})
    assert made[2][1]["k"] == "v" and made[2][1]["bootstrap.servers"] == "h:3" and both.topic == "v"


def test_commit_stores_next_offsets_and_read_gives_last_processed(store, cluster):
    assert store.read([0, 1, 2]) == {}
    store.commit({})
    store.commit({0: 41, 1: -1})
    assert store.read([0, 1, 2]) == {0: 41, 1: -1}
    assert store.read([1]) == {1: -1}
    assert store.read([]) == {}
    # a second store of the same group sees the same progress
    other = BrokerOffsetStore(store.group_id, broker=cluster.bootstrap_servers, topic="t")
    try:
        assert other.read([0]) == {0: 41}
    finally:
        other.close()
    store.commit({2: MAX_OFFSET - 1})
    assert store.read([2]) == {2: MAX_OFFSET - 1}


def test_commit_checks_every_value_first(store):
    with pytest.raises(ValueError) as ei:
        store.commit({0: 5, 1: -2})
    assert str(ei.value) == "offset of topic 't' partition 1 must be >= -1, got -2"
    with pytest.raises(ValueError) as ei:
        store.commit({0: MAX_OFFSET + 1})
    assert str(ei.value) == f"offset of topic 't' partition 0 must be <= {MAX_OFFSET}, got {MAX_OFFSET + 1}"
    with pytest.raises(TypeError) as ei:
        store.commit({"0": 5})
    assert str(ei.value) == "partition must be int, got str"
    with pytest.raises(ValueError):
        store.commit({-1: 5})
    assert store.read([0, 1]) == {}  # nothing was committed
    store.commit({0: MAX_OFFSET - 1, 1: -1})


def test_read_checks_partitions(store):
    with pytest.raises(TypeError) as ei:
        store.read([0, "1"])
    assert str(ei.value) == "partition must be int, got str"
    with pytest.raises(ValueError) as ei:
        store.read([-1])
    assert str(ei.value) == "partition must be >= 0, got -1"
    with pytest.raises(ValueError):
        store.read([2**31])


def test_broker_errors_name_the_group(store, cluster):
    cluster.push_request_errors("OffsetCommit", ["GROUP_AUTHORIZATION_FAILED"])
    with pytest.raises(KafkaError) as ei:
        store.commit({0: 1})
    assert ei.value.name == "GROUP_AUTHORIZATION_FAILED"
    assert ei.value.context == f"commit offsets for group {store.group_id!r}"
    cluster.push_request_errors("OffsetFetch", ["GROUP_AUTHORIZATION_FAILED"])
    with pytest.raises(KafkaError) as ei:
        store.read([0])
    assert ei.value.name == "GROUP_AUTHORIZATION_FAILED"
    assert ei.value.context == f"committed offsets of group {store.group_id!r}"
    with pytest.raises(KafkaError) as ei:
        store.read([7])
    assert ei.value.name == "UNKNOWN_TOPIC_OR_PART"
    assert ei.value.context == f"committed offsets of group {store.group_id!r} t[7]"


@pytest.mark.parametrize("name", ["NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"])
def test_read_asks_a_coordinator_not_ready_again(store, cluster, monkeypatch, name):
    clock = Clock()
    monkeypatch.setattr(_stores, "time", clock)
    store.commit({0: 3})
    cluster.push_request_errors("OffsetFetch", [name])
    assert store.read([0]) == {0: 3}
    assert clock.sleeps == [0.05]


def test_read_backs_off_doubling_up_to_a_second_then_gives_up_at_the_timeout(store, cluster, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(_stores, "time", clock)
    cluster.push_request_errors("OffsetFetch", ["NOT_COORDINATOR"] * 100)
    with pytest.raises(KafkaError) as ei:
        store.read([0])
    assert ei.value.name == "NOT_COORDINATOR"
    # 3 s: 0.05 + 0.1 + 0.2 + 0.4 + 0.8 + 1.0 = 2.55 s slept; one more second would pass it
    assert clock.sleeps == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    cluster.clear_request_errors("OffsetFetch")
    clock.sleeps.clear()
    quick = BrokerOffsetStore(store.group_id, broker=cluster.bootstrap_servers, topic="t", timeout=0.15)
    try:
        cluster.push_request_errors("OffsetFetch", ["NOT_COORDINATOR"] * 100)
        with pytest.raises(KafkaError):
            quick.read([0])
        assert clock.sleeps == [0.05]  # 0.05 + 0.1 reaches the deadline: no second sleep
    finally:
        quick.close()


# -- OffsetCommitter -----------------------------------------------------------------------
class Log:
    """A logger that records its calls and signals each one."""

    def __init__(self) -> None:
        self.calls: list = []
        self.event = threading.Event()

    def _add(self, level, msg, *args):
        self.calls.append((level, msg, args))
        self.event.set()

    def info(self, msg, *args):
        self._add("info", msg, *args)

    def error(self, msg, *args):
        self._add("error", msg, *args)


class Store:
    """commit() fails with the queued exceptions first, then stores."""

    def __init__(self, *failures) -> None:
        self.failures = list(failures)
        self.commits: list = []

    def commit(self, batch):
        if self.failures:
            raise self.failures.pop(0)
        self.commits.append(dict(batch))


def test_committer_defaults():
    c = OffsetCommitter(Store(), Log())
    try:
        assert (c.min_interval, c.max_cpu_share, c.committed, c.last_error, c.pending) == (
            0.0, None, {}, None, {})
        assert c._thread.daemon is True and c._thread.name == "rdk-offsets"
        assert c.flush(5) is True  # nothing pending, nothing being written
    finally:
        assert c.close(5) is True
    named = OffsetCommitter(Store(), Log(), name="n", min_interval=2)
    assert named._thread.name == "n" and named.min_interval == 2.0 and type(named.min_interval) is float
    named.close(5)


def test_next_gap_is_the_cpu_cost_over_the_share_within_bounds():
    c = OffsetCommitter(Store(), Log(), min_interval=0.5, max_cpu_share=0.25)
    try:
        assert c._next_gap(1.0) == 4.0
        assert c._next_gap(0.01) == 0.5
        assert c._next_gap(100.0) == OffsetCommitter.MAX_INTERVAL == 10.0
    finally:
        c.close(5)
    plain = OffsetCommitter(Store(), Log(), min_interval=0.3)
    assert plain._next_gap(50.0) == 0.3
    plain.close(5)


def test_the_gap_after_a_commit_comes_from_its_thread_cpu_time(monkeypatch):
    ticks = iter([100.0, 100.5])
    monkeypatch.setattr(_committer, "time", SimpleNamespace(
        monotonic=time.monotonic, thread_time=lambda: next(ticks)))
    c = OffsetCommitter(Store(), Log(), max_cpu_share=0.25)
    c.record({0: 1})
    assert c.flush(5) is True
    assert c._gap == 2.0  # 0.5 s of CPU at a quarter of a core
    c._gap = 0.0
    c.close(5)


def test_a_failed_commit_is_logged_kept_and_retried():
    err = OSError("disk full")
    store, log = Store(err), Log()
    c = OffsetCommitter(store, log)
    c.RETRY_SECONDS = 0.01
    c.record({1: 10, 2: 20})
    assert log.event.wait(5)
    assert c.last_error is err
    assert log.calls == [("error", "could not store offsets %s: %s (will retry)", ({1: 10, 2: 20}, err))]
    assert c.flush(5) is True
    assert store.commits == [{1: 10, 2: 20}] and c.committed == {1: 10, 2: 20} and c.last_error is None
    c.close(5)


def test_a_newer_value_recorded_during_a_failed_commit_wins():
    gate, entered = threading.Event(), threading.Event()

    class Blocking(Store):
        def commit(self, batch):
            if not self.commits and not getattr(self, "failed", False):
                entered.set()
                assert gate.wait(5)
                self.failed = True
                raise OSError("once")
            super().commit(batch)

    store = Blocking()
    c = OffsetCommitter(store, Log())
    c.RETRY_SECONDS = 0.01
    c.record({1: 10, 2: 20})
    assert entered.wait(5)
    c.record({1: 11})
    gate.set()
    assert c.flush(5) is True
    assert store.commits == [{1: 11, 2: 20}]
    c.close(5)


def test_a_commit_refused_mid_rebalance_is_logged_at_info():
    err = KafkaError(ERROR_CODES["REBALANCE_IN_PROGRESS"])
    log = Log()
    c = OffsetCommitter(Store(err), log)
    c.RETRY_SECONDS = 0.01
    c.record({0: 5})
    assert log.event.wait(5)
    assert log.calls == [("info", "offsets %s not committed during a rebalance: %s (will retry)",
                          ({0: 5}, err))]
    assert c.close(5) is True


def test_close_retries_a_failing_commit_until_it_succeeds():
    store = Store(OSError("once"))
    c = OffsetCommitter(store, Log())
    c.RETRY_SECONDS = 0.01
    with c._cond:  # record and close together: the first attempt happens while closing
        c._closing = True
        c.record({3: 30})
        assert c.pending == {3: 30}  # still taken while close() flushes
    assert c.close(5) is True
    assert store.commits == [{3: 30}] and c.committed == {3: 30}
    c.record({4: 40})  # closed: ignored
    assert c.pending == {}


def test_close_gives_up_on_a_store_that_keeps_failing_and_ends_the_thread():
    store = Store(*[OSError("no")] * 10_000)
    c = OffsetCommitter(store, Log())
    c.RETRY_SECONDS = 60.0  # between attempts the thread waits for a wake-up
    joins: list = []
    real_join = c._thread.join
    c._thread.join = lambda t=None: (joins.append(t), real_join(t))[1]
    c.record({0: 1})
    # (a second of flushing: the failing attempts all happen early in it, so the thread waits
    # for the wake-up that follows, not in the middle of a commit)
    assert c.close(1.0) is False
    assert joins == [0]  # not done: close does not wait for the thread
    real_join(5)
    assert not c._thread.is_alive()
    assert c.pending == {0: 1}


def test_close_joins_the_thread_with_its_timeout_when_done():
    c = OffsetCommitter(Store(), Log())
    joins: list = []
    real_join = c._thread.join
    c._thread.join = lambda t=None: (joins.append(t), real_join(t))[1]
    c.record({0: 1})
    assert c.close(4.5) is True
    assert joins == [4.5] and not c._thread.is_alive()


# -- files -------------------------------------------------------------------------------
def test_ensure_directory_messages(tmp_path):
    with pytest.raises(TypeError) as ei:
        ensure_directory(5)
    assert str(ei.value) == "offset_directory must be a str or path, got int"
    with pytest.raises(ValueError) as ei:
        ensure_directory("")
    assert str(ei.value) == "offset_directory must not be empty"
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(OffsetFileError) as ei:
        ensure_directory(f)
    assert str(ei.value) == f"offset_directory {f} is not a directory: it is a file, not a directory"
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OffsetFileError) as ei:
        ensure_directory(link)
    assert str(ei.value) == (f"offset_directory {link} is not a directory: it is a symbolic link to "
                             f"{str(tmp_path / 'nowhere')!r}, which does not exist")
    filelink = tmp_path / "filelink"
    filelink.symlink_to(f)
    with pytest.raises(OffsetFileError) as ei:
        ensure_directory(filelink)
    assert str(ei.value).endswith("it is a file, not a directory")
    d = tmp_path / "a" / "b"
    assert ensure_directory(d) == d and d.is_dir() and os.listdir(d) == []


def test_an_unreadable_path_names_the_os_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("1")
    bad = f / "t-0.offset"  # a path through a file
    with pytest.raises(OffsetFileError) as ei:
        read_offset_file(bad)
    assert str(ei.value) == (f"offset file {bad} cannot be read: [Errno {errno.ENOTDIR}] Not a directory: "
                             f"'{bad}'")
    d = tmp_path / "t-1.offset"
    d.mkdir()
    with pytest.raises(OffsetFileError) as ei:
        read_offset_file(d)
    assert str(ei.value).startswith(f"offset file {d} cannot be read: [Errno {errno.EISDIR}] Is a directory")


def test_read_stops_one_byte_past_the_size_limit(tmp_path):
    p = tmp_path / "t-0.offset"
    p.write_bytes(b"5" + b" " * (MAX_FILE_BYTES - 2) + b"\n")  # exactly the limit: fine
    assert read_offset_file(p) == 5
    p.write_bytes(b"5" + b" " * (MAX_FILE_BYTES - 1) + b"\n")
    with pytest.raises(OffsetFileError) as ei:
        read_offset_file(p)
    assert "is larger than 4096 bytes" in str(ei.value)


class _ShortReads:
    """``os`` for rdk.offsets._format with reads of at most 1024 bytes (POSIX allows any
    short read): counts the bytes each read returned."""

    def __init__(self) -> None:
        self.got: list[int] = []

    def __getattr__(self, name):
        return getattr(os, name)

    def read(self, fd: int, n: int) -> bytes:
        data = os.read(fd, min(n, 1024))
        self.got.append(len(data))
        return data


def test_short_reads_are_joined_and_never_go_past_one_byte_over_the_limit(tmp_path, monkeypatch):
    from rdk.offsets import _format

    p = tmp_path / "t-0.offset"
    for body, want in ((b"5" + b" " * (MAX_FILE_BYTES - 2) + b"\n", 5), (b"77\n", 77)):
        reads = _ShortReads()
        monkeypatch.setattr(_format, "os", reads)
        p.write_bytes(body)
        assert read_offset_file(p) == want
        assert sum(reads.got) == len(body) and reads.got[-1] == 0
    for size in (MAX_FILE_BYTES + 1, 10 * MAX_FILE_BYTES):  # (4096 is a multiple of 1024)
        reads = _ShortReads()
        monkeypatch.setattr(_format, "os", reads)
        p.write_bytes(b"5" + b" " * (size - 2) + b"\n")
        with pytest.raises(OffsetFileError, match="is larger than 4096 bytes"):
            read_offset_file(p)
        assert reads.got == [1024, 1024, 1024, 1024, 1]  # one byte past the limit, no more


def test_store_read_refuses_a_partition_whose_file_name_is_too_long(tmp_path):
    store = offsets.FileOffsetStore(tmp_path, "c" * 246)
    (tmp_path / ("c" * 246 + "-9.offset")).write_bytes(b"3\n")
    assert store.read([9]) == {9: 3}  # 255 bytes: the longest name
    with pytest.raises(ValueError) as ei:
        store.read([9, 10])
    assert str(ei.value) == (
        f"offset file name of topic {'c' * 246!r} (246 characters) partition 10 is 256 bytes, more "
        "than the file system's limit of 255: this partition cannot have an offset file; use "
        "offset_store= for this topic")


def test_a_file_that_is_not_text_is_corrupt_not_a_decoding_crash(tmp_path):
    p = tmp_path / "t-0.offset"
    p.write_bytes(b"\xff\xfe7\n")
    with pytest.raises(OffsetFileError) as ei:
        read_offset_file(p)
    assert str(ei.value) == (f"offset file {p} is corrupt: " + repr("\\xff\\xfe7")
                             + " is not an offset (a decimal integer >= -1)")


def test_offset_files_are_written_with_mode_644_and_values_checked(tmp_path):
    assert write_offset_files(tmp_path, "t", {}) == 0
    write_offset_files(tmp_path, "t", {0: -1, 1: MAX_OFFSET})
    assert os.stat(tmp_path / "t-0.offset").st_mode & 0o777 == 0o644 & ~_umask()
    assert read_offset_file(tmp_path / "t-1.offset") == MAX_OFFSET
    with pytest.raises(ValueError) as ei:
        write_offset_files(tmp_path, "t", {0: 3, 2: -2})
    assert str(ei.value) == (f"offset of topic 't' partition 2 ({tmp_path / 't-2.offset'}) must be >= -1, "
                             "got -2")
    with pytest.raises(ValueError) as ei:
        write_offset_files(tmp_path, "t", {0: MAX_OFFSET + 1})
    assert str(ei.value).endswith(f"must be <= {MAX_OFFSET}, got {MAX_OFFSET + 1}")
    assert read_offset_file(tmp_path / "t-0.offset") == -1  # all or nothing


def test_writing_over_a_symlink_is_refused_naming_it(tmp_path):
    real = tmp_path / "elsewhere"
    real.write_text("1\n")
    link = offset_file_path(tmp_path, "t", 3)
    link.symlink_to(real)
    with pytest.raises(OffsetFileError) as ei:
        write_offset_files(tmp_path, "t", {3: 9})
    assert str(ei.value).startswith(f"offset file {link} is a symbolic link (to {str(real)!r})")
    assert real.read_text() == "1\n"


def test_sync_calls_one_per_file_up_to_the_threshold_then_one_syncfs(tmp_path, monkeypatch):
    n = SYNCFS_MIN_FILES
    assert write_offset_files(tmp_path, "t", dict.fromkeys(range(n), 1)) == n + 1
    calls: list = []

    def syncfs(fd):
        calls.append(os.path.samestat(os.fstat(fd), os.stat(tmp_path)))
        return 0

    monkeypatch.setattr(_files, "_syncfs", syncfs)
    assert write_offset_files(tmp_path, "t", dict.fromkeys(range(n + 1), 2)) == 2
    assert calls == [True]
    assert write_offset_files(tmp_path, "t", {0: 3, 1: 3}) == 3 and calls == [True]
    monkeypatch.setattr(_files, "_syncfs", None)
    assert write_offset_files(tmp_path, "t", dict.fromkeys(range(n + 1), 4)) == n + 2


def test_sync_filesystem_reports_errno(tmp_path, monkeypatch):
    def failing(fd):
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(_files, "_syncfs", failing)
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as ei:
            _files._sync_filesystem(fd)
        assert (ei.value.errno, ei.value.strerror) == (errno.EIO, f"syncfs: {os.strerror(errno.EIO)}")
        monkeypatch.setattr(_files, "_syncfs", lambda fd: 0)
        assert _files._sync_filesystem(fd) is True
        monkeypatch.setattr(_files, "_syncfs", None)
        assert _files._sync_filesystem(fd) is False
    finally:
        os.close(fd)


def test_libc_functions_keep_errno():
    func = _files._libc_function("syncfs", ctypes.c_int)
    if func is None:
        pytest.skip("no syncfs in this libc")
    assert func.argtypes == [ctypes.c_int] and func.restype is ctypes.c_int
    ctypes.set_errno(0)
    assert func(-1) == -1
    assert ctypes.get_errno() == errno.EBADF
    assert _files._libc_function("no_such_function_in_libc") is None
    if _files._renameat2 is not None:  # swapping names that do not exist: ENOENT, kept
        assert _files._exchange(-100, "/nonexistent/a", "/nonexistent/b") == errno.ENOENT


def test_remove_temp_files_counts_what_it_removed(tmp_path):
    assert remove_temp_files(tmp_path / "missing", "t", [0]) == 0
    name = "t-0.offset"
    prefix = _files._temp_prefix(name)
    for f in (f"{prefix}1-1.tmp", f"{prefix}1-2.tmp", f".{name}.9.tmp", f"{prefix}keep", "other.tmp"):
        (tmp_path / f).write_text("1")
    assert remove_temp_files(tmp_path, "t", [0]) == 3
    assert sorted(os.listdir(tmp_path)) == sorted([f"{prefix}keep", "other.tmp"])


def test_holder_pid_only_shows_digits(tmp_path):
    p = tmp_path / "lock"
    p.write_bytes(b"        123\n" + b"\xff\xfeabcdefghi\n" + b"   abc     \n")
    fd = os.open(p, os.O_RDONLY)
    try:
        assert _locks._holder_pid(fd, 0) == " (pid 123)"
        assert _locks._holder_pid(fd, 1) == ""
        assert _locks._holder_pid(fd, 2) == ""
    finally:
        os.close(fd)
    assert _locks._holder_pid(fd, 0) == ""  # a closed descriptor: nothing to show


def test_partition_locks_exact(tmp_path):
    empty = lock_partitions(tmp_path, "t", [])
    assert empty.held and empty.partitions == [] and empty.topic == "t"
    empty.release()
    assert not os.path.exists(tmp_path / ".t.lock")
    with lock_partitions(tmp_path, "t", [2, 0, 2]) as lock:
        assert lock.topic == "t" and lock.partitions == [0, 2] and lock.held
        assert os.stat(tmp_path / ".t.lock").st_mode & 0o777 == 0o644 & ~_umask()
        assert is_locked(tmp_path, "t", 2) and not is_locked(tmp_path, "t", 1)
        with pytest.raises(LockedError) as ei:
            lock_partitions(tmp_path, "t", [1, 2])
        assert str(ei.value) == (f"partition 2 of topic 't' in offset directory {tmp_path} is in use by "
                                 f"another consumer (pid {os.getpid()}); two consumers must not own "
                                 "the same partitions")
        assert not is_locked(tmp_path, "t", 1)  # nothing stays locked after a refusal
    assert not lock.held and not is_locked(tmp_path, "t", 2)
    assert not is_locked(tmp_path, "other", 0)  # no lock file at all
    missing = tmp_path / "missing"
    with pytest.raises(OffsetFileError) as ei:
        lock_partitions(missing, "t", [0])
    assert str(ei.value) == (f"cannot open lock file {missing / '.t.lock'}: [Errno {errno.ENOENT}] "
                             f"No such file or directory: '{missing / '.t.lock'}'")


# -- second pass: what the first mutation run left ------------------------------------------
class RecordingLib:
    """The binding's lib (rdk._binding.partitions, where the stores' commit and committed
    calls are) with rd_kafka_committed / rd_kafka_commit recorded (and optionally bent)."""

    def __init__(self, commit_err=0) -> None:
        self.committed_ms: list = []
        self.commit_err = commit_err

    def __getattr__(self, name):  # every other function and constant: the real one
        return getattr(real_lib, name)

    def rd_kafka_committed(self, rk, tpl, ms):
        self.committed_ms.append(ms)
        return real_lib.rd_kafka_committed(rk, tpl, ms)

    def rd_kafka_commit(self, rk, tpl, is_async):
        assert is_async == 0  # a synchronous commit
        if self.commit_err:  # the broker refused one partition: the call itself succeeds
            tpl.elems[0].err = self.commit_err
            return 0
        return real_lib.rd_kafka_commit(rk, tpl, is_async)


def test_read_gives_librdkafka_the_time_left_in_ms(store, cluster, monkeypatch):
    clock = Clock()
    rec = RecordingLib()
    monkeypatch.setattr(_stores, "time", clock)
    monkeypatch.setattr(partitions_mod, "lib", rec)
    cluster.push_request_errors("OffsetFetch", ["NOT_COORDINATOR"])
    assert store.read([0]) == {}
    assert rec.committed_ms == [3000, 2950]
    rec.committed_ms.clear()
    store.timeout = 0.0
    try:
        assert store.read([0]) == {}
    except KafkaError as e:  # 1 ms can be too little for the broker's answer on a busy machine
        assert e.name == "_TIMED_OUT", e
    assert rec.committed_ms == [1]  # never 0 (librdkafka's "do not wait")


def test_a_partition_refused_by_the_commit_is_named(store, monkeypatch):
    refusing = RecordingLib(commit_err=ERROR_CODES["OFFSET_METADATA_TOO_LARGE"])
    monkeypatch.setattr(partitions_mod, "lib", refusing)
    with pytest.raises(KafkaError) as ei:
        store.commit({1: 5})
    assert ei.value.name == "OFFSET_METADATA_TOO_LARGE"
    assert ei.value.context == f"commit offsets for group {store.group_id!r} t[1]"


def test_broker_store_option_messages_name_the_option(monkeypatch):
    with pytest.raises(ValueError) as ei:
        BrokerOffsetStore("g", timeout=-1)
    assert str(ei.value) == "timeout must be >= 0 seconds, got -1"
    s = BrokerOffsetStore("g")
    with pytest.raises(TypeError) as ei:
        s.bind(topic="t", broker="h:1", driver_options=("a", "b"))
    assert str(ei.value) == "driver_options must be a dict of librdkafka properties, got tuple"
    assert s._client is None


def test_name_limits_are_exact():
    offsets.check_topic_fits("a" * 246)  # "<246>-0.offset" is 255 bytes
    with pytest.raises(ValueError) as ei:
        offsets.check_topic_fits("b" * 247)
    assert str(ei.value) == (
        f"topic {'b' * 247!r} (247 characters) is too long for offset files: "
        "'<topic>-<partition>.offset' must fit in 255 bytes, so at most 246 characters; use "
        "offset_store= (e.g. BrokerOffsetStore) for this topic")
    assert offsets.offset_file_name("c" * 246, 9) == "c" * 246 + "-9.offset"
    with pytest.raises(ValueError) as ei:
        offsets.offset_file_name("c" * 246, 10)
    assert str(ei.value) == (
        f"offset file name of topic {'c' * 246!r} (246 characters) partition 10 is 256 bytes, more "
        "than the file system's limit of 255: this partition cannot have an offset file; use "
        "offset_store= for this topic")
    assert offsets.offset_file_name("t", 2**31 - 1) == f"t-{2**31 - 1}.offset"
    with pytest.raises(ValueError) as ei:
        offsets.offset_file_name("t", 2**31)
    assert str(ei.value) == f"partition must be <= {2**31 - 1}, got {2**31}"


def test_parse_offset_text_messages():
    assert offsets.parse_offset_text("12\n") == 12
    assert offsets.parse_offset_text(bytearray(b" -1 ")) == -1
    with pytest.raises(OffsetFileError) as ei:
        offsets.parse_offset_text(b"  \n")
    assert str(ei.value) == ("offset file <offset file> is empty; expected the last processed offset as "
                             "decimal text")
    with pytest.raises(OffsetFileError) as ei:
        offsets.parse_offset_text(b"x" * 50, "p")
    assert str(ei.value) == (f"offset file p is corrupt: {'x' * 40!r} is not an offset (a decimal "
                             "integer >= -1)")
    with pytest.raises(OffsetFileError) as ei:
        offsets.parse_offset_text(b"%d\n" % (MAX_OFFSET + 1), "q")
    assert str(ei.value) == (f"offset file q holds {MAX_OFFSET + 1}, beyond the largest Kafka offset "
                             f"({MAX_OFFSET}, a signed 64-bit integer)")


def test_symlink_refusal_says_what_to_do(tmp_path):
    real = tmp_path / "r"
    real.write_text("1\n")
    link = offset_file_path(tmp_path, "t", 0)
    link.symlink_to(real)
    with pytest.raises(OffsetFileError) as ei:
        read_offset_file(link)
    assert str(ei.value) == (
        f"offset file {link} is a symbolic link (to {str(real)!r}); rdk replaces offset files "
        "atomically by rename, which would replace the link, not its target: point "
        "offset_directory at the real directory instead")


def test_listed_offset_files_carry_their_path_and_the_store_its_repr(tmp_path):
    write_offset_files(tmp_path, "t", {10: 1, 2: 1})
    (tmp_path / "t-x.offset").write_text("1")
    found = offsets.list_offset_files(tmp_path, "t")
    assert [(f.topic, f.partition, f.path) for f in found] == [
        ("t", 2, tmp_path / "t-2.offset"), ("t", 10, tmp_path / "t-10.offset")]
    store = offsets.FileOffsetStore(tmp_path, "t")
    assert repr(store) == f"FileOffsetStore({str(tmp_path)!r}, 't')"


def test_temp_files_are_named_by_a_20_hex_digit_hash(tmp_path):
    import hashlib

    digest = hashlib.sha1(b"t-0.offset").hexdigest()[:20]
    assert _files._temp_prefix("t-0.offset") == f".tmp-{digest}."
    # a temp file a killed writer (of this or an earlier release) left is found by that name
    (tmp_path / f".tmp-{digest}.77-3.tmp").write_text("5")
    assert remove_temp_files(tmp_path, "t", [0]) == 1


def test_a_lock_that_fails_for_another_reason_is_an_offset_file_error(tmp_path, monkeypatch):
    def no_locks(fd, partition, command, kind):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(_locks, "_range_lock", no_locks)
    with pytest.raises(OffsetFileError) as ei:
        lock_partitions(tmp_path, "t", [4])
    assert str(ei.value) == (f"cannot lock partition 4 in {tmp_path / '.t.lock'}: [Errno {errno.ENOLCK}] "
                             f"{os.strerror(errno.ENOLCK)}")


def test_is_locked_names_a_lock_file_that_cannot_be_opened(tmp_path):
    from rdk.offsets._locks import _lock_file_path

    not_a_directory = tmp_path / "plain-file"
    not_a_directory.write_bytes(b"")
    path = _lock_file_path(not_a_directory, "t")
    with pytest.raises(OffsetFileError) as ei:
        offsets.is_locked(not_a_directory, "t", 0)
    assert str(ei.value) == (f"lock file {os.fspath(path)} cannot be opened: "
                             f"[Errno {errno.ENOTDIR}] Not a directory: {os.fspath(path)!r}")
