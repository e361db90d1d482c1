"""Worker supervision (rdk.workers._supervision) without a broker: the supervising thread
runs real child processes (forked, so a test's plain function can be the worker: each one
reports over the real pipe what a worker reports, then exits, waits for SIGTERM or ignores
it) and the pool's two hooks record what they are told. Exact log lines, exit
descriptions, restart counts and backoffs, the restart limit, a permanent start failure,
a graceful stop, a kill of the stuck."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
import types as pytypes

import pytest

from rdk.workers import _supervision as sup
from rdk.workers._supervision import MAX_BACKOFF, Slot, Supervision, describe_exit

LOG = "rdk.workers"


def _worker(index, num_workers, factory, writer, want_stats, stop_timeout, ppid, group_id):
    """What the forked child runs in place of worker_main: ``factory`` is the script (one
    marked ``wants_args`` also gets worker_main's other arguments)."""
    if getattr(factory, "wants_args", False):
        factory(index, writer, (num_workers, want_stats, stop_timeout, ppid, group_id))
    else:
        factory(index, writer)


def _serve_until_term(index, writer, code=0):
    got = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: got.set())
    writer.send(("started", os.getpid(), [index, index + 10]))
    writer.send(("stats", {"slot": index}))
    parent = os.getppid()
    while not got.wait(0.05) and os.getppid() == parent:
        pass
    os._exit(code)


class Pool(Supervision):
    """The supervising half with recording hooks; workers are forked test functions."""

    def __init__(self, script, num_workers=1, *, max_restarts=None, restart_backoff=0.01,
                 stop_timeout=10.0, healthy_after=600.0, group_id="g") -> None:
        self.num_workers = num_workers
        self.group_id = group_id
        self.consumer_factory = script
        self.stats_callback = None
        self.max_restarts = max_restarts
        self.restart_backoff = restart_backoff
        self.stop_timeout = stop_timeout
        self.healthy_after = healthy_after
        self._init_supervision(num_workers)
        self._ctx = multiprocessing.get_context("fork")
        self.stats: list[tuple[int, dict]] = []
        self.failures: list[tuple] = []
        self.two_stats = threading.Event()

    def _on_stats(self, slot, payload):
        self.stats.append((slot.index, payload))
        if len(self.stats) == 2:
            self.two_stats.set()

    def _fail(self, message, slot, exitcode, cause, permanent=False):
        self.failures.append((message, slot, exitcode, cause, permanent))
        self._request_stop()

    def run(self) -> threading.Thread:
        t = threading.Thread(target=self._supervise, daemon=True)
        t.start()
        return t

    def wait(self, predicate, timeout=60.0) -> None:
        with self._changed:
            assert self._changed.wait_for(predicate, timeout), "condition not reached"


@pytest.fixture(autouse=True)
def forked_workers(monkeypatch):
    monkeypatch.setattr(sup, "worker_main", _worker)


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG, LOG)
    return lambda: [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOG]


def _pid_free(text: str) -> str:
    import re
    return re.sub(r"pid \d+", "pid N", text)


def test_describe_exit():
    assert describe_exit(None) == "is still running"
    assert describe_exit(0) == "exited with code 0"
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-9) == "was killed by SIGKILL"
    assert describe_exit(-15) == "was killed by SIGTERM"
    assert describe_exit(-1) == "was killed by SIGHUP"
    assert describe_exit(-200) == "was killed by signal 200"


def test_slot_starts_empty():
    s = Slot(3)
    assert (s.index, s.process, s.conn, s.pid, s.started_at, s.failures, s.restarts,
            s.next_start, s.partitions, s.stats, s.cause) == (3, None, None, None, 0.0, 0, 0,
                                                              None, None, None, None)


def test_workers_start_report_and_stop_gracefully(logs):
    pool = Pool(_serve_until_term, num_workers=2)
    t = pool.run()
    pool.wait(lambda: all(s.partitions is not None for s in pool._slots))
    assert [s.partitions for s in pool._slots] == [[0, 10], [1, 11]]
    assert all(s.process is not None and s.pid == s.process.pid for s in pool._slots)
    pids = [s.pid for s in pool._slots]
    assert pool.two_stats.wait(60)
    assert sorted(pool.stats) == [(0, {"slot": 0}), (1, {"slot": 1})]
    pool._request_stop()
    t.join(60)
    assert not t.is_alive() and pool._done.is_set()
    assert all(s.process is None and s.conn is None and s.pid is None and s.partitions is None
               for s in pool._slots)
    assert pool.failures == []
    lines = logs()
    for i, pid in enumerate(pids):
        assert (logging.INFO, f"worker slot {i} started (pid {pid})") in lines
        assert (logging.INFO, f"worker slot {i} (pid {pid}) owns partitions [{i}, {i + 10}]") in lines
        assert (logging.INFO, f"worker slot {i} (pid {pid}) exited with code 0 while stopping") in lines
    assert all(level == logging.INFO for level, _ in lines)


def test_a_stop_requested_before_the_start_spawns_nothing():
    pool = Pool(_serve_until_term, num_workers=2)
    pool._request_stop()
    t = pool.run()
    t.join(30)
    assert not t.is_alive() and all(s.started_at == 0.0 for s in pool._slots)


def test_a_worker_stopping_with_an_error_code_is_a_warning(logs):
    pool = Pool(lambda i, w: _serve_until_term(i, w, code=4))
    t = pool.run()
    pool.wait(lambda: pool._slots[0].partitions is not None)
    pid = pool._slots[0].pid
    pool._request_stop()
    t.join(60)
    assert (logging.WARNING, f"worker slot 0 (pid {pid}) exited with code 4 while stopping") in logs()


def _die_with(code: int, cause: tuple | None = None):
    def script(index, writer):
        if cause is not None:
            writer.send(("failed", *cause))
        writer.send(("started", os.getpid(), [index]))
        os._exit(code)
    return script


def test_a_dead_worker_is_restarted_after_a_doubling_backoff(logs):
    pool = Pool(_die_with(3), max_restarts=None, restart_backoff=0.01)
    t = pool.run()
    deadline = time.monotonic() + 60
    while pool._slots[0].restarts < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    pool._request_stop()
    t.join(60)
    restarts = [_pid_free(text) for level, text in logs()
                if "restarting" in text and level == logging.WARNING]
    assert restarts[:3] == [
        "worker slot 0 (pid N) exited with code 3; restarting it in 0.0 s (restart unlimited in a row)",
        "worker slot 0 (pid N) exited with code 3; restarting it in 0.0 s (restart unlimited in a row)",
        "worker slot 0 (pid N) exited with code 3; restarting it in 0.0 s (restart unlimited in a row)"]
    assert pool._slots[0].restarts >= 3 and pool._slots[0].failures >= 3
    assert pool.failures == []


def _only_failure(pool: Pool) -> tuple:
    """Run ``pool`` until it stops itself; its one failure, the message without pids."""
    t = pool.run()
    t.join(60)
    assert not t.is_alive()
    [(message, slot, code, cause, permanent)] = pool.failures
    return _pid_free(message), slot, code, cause, permanent


def test_the_restart_limit_stops_the_pool_with_the_cause(logs):
    pool = Pool(_die_with(5, ("ValueError: broken", False, "run")), max_restarts=2,
                restart_backoff=0.001)
    message, slot, code, cause, permanent = _only_failure(pool)
    assert (slot, code, cause, permanent) == (0, 5, "ValueError: broken", False)
    assert message == (
        "worker slot 0 (pid N) exited with code 5 (ValueError: broken); it died 3 times in a row "
        "and the restart limit (max_restarts=2) is reached: stopping the pool")
    assert pool._slots[0].restarts == 2
    restarts = [_pid_free(text) for _, text in logs() if "restarting" in text]
    assert restarts == [
        "worker slot 0 (pid N) exited with code 5 (ValueError: broken); restarting it in 0.0 s "
        "(restart 1/2 in a row)",
        "worker slot 0 (pid N) exited with code 5 (ValueError: broken); restarting it in 0.0 s "
        "(restart 2/2 in a row)"]


def test_the_restart_limit_without_a_cause(logs):
    message, slot, code, cause, permanent = _only_failure(Pool(_die_with(6), max_restarts=0))
    assert (slot, code, cause, permanent) == (0, 6, None, False)
    assert message == (
        "worker slot 0 (pid N) exited with code 6; it died 1 times in a row and the restart "
        "limit (max_restarts=0) is reached: stopping the pool")


def test_a_permanent_start_failure_stops_the_pool_at_once():
    pool = Pool(_die_with(1, ("ConfigError: bad setting", True, "start")), max_restarts=None)
    message, slot, code, cause, permanent = _only_failure(pool)
    assert (slot, code, cause, permanent) == (0, 1, "ConfigError: bad setting", True)
    assert message == (
        "worker slot 0 (pid N) exited with code 1: its consumer failed to start with "
        "ConfigError: bad setting; a restart would fail the same way, so the pool stops")
    assert pool._slots[0].restarts == 0


@pytest.mark.parametrize("cause", [("ConfigError: x", False, "start"), ("E: x", True, "run")])
def test_a_failure_that_is_not_permanent_at_start_is_restarted(cause):
    _message, _slot, _code, got, permanent = _only_failure(Pool(_die_with(1, cause), max_restarts=0))
    assert got == cause[0] and permanent is False


def _reap_dead(pool: Pool, slot: Slot, code: int, uptime: float, monkeypatch) -> float:
    """Reap a dead forked process in ``slot`` (uptime as given); the time of the reap."""
    proc = pool._ctx.Process(target=os._exit, args=(code,))
    proc.start()
    proc.join(30)
    now = 1000.0
    monkeypatch.setattr(sup, "time", pytypes.SimpleNamespace(monotonic=lambda: now))
    slot.process, slot.pid, slot.started_at = proc, proc.pid, now - uptime
    pool._reap(slot, stopping=False)
    return now


def test_backoff_doubles_up_to_its_cap_and_a_healthy_run_resets_the_count(monkeypatch):
    pool = Pool(_die_with(0), restart_backoff=1.5, healthy_after=10.0)
    slot = pool._slots[0]
    now = _reap_dead(pool, slot, 0, 9.9, monkeypatch)
    assert (slot.failures, slot.restarts, slot.next_start) == (1, 1, now + 1.5)
    now = _reap_dead(pool, slot, 0, 9.9, monkeypatch)
    assert (slot.failures, slot.restarts, slot.next_start) == (2, 2, now + 3.0)
    now = _reap_dead(pool, slot, 0, 0.0, monkeypatch)
    assert (slot.failures, slot.next_start) == (3, now + 6.0)
    slot.failures = 10
    now = _reap_dead(pool, slot, 0, 1.0, monkeypatch)
    assert (slot.failures, slot.next_start) == (11, now + MAX_BACKOFF)
    now = _reap_dead(pool, slot, 0, 10.0, monkeypatch)  # ran healthy_after: the first again
    assert (slot.failures, slot.restarts, slot.next_start) == (1, 5, now + 1.5)
    assert slot.process is None and slot.pid is None


def test_a_worker_asking_to_stop_stops_the_pool(logs):
    def script(index, writer):
        writer.send(("stop",))
        _serve_until_term(index, writer)

    pool = Pool(script)
    t = pool.run()
    t.join(60)
    assert not t.is_alive() and pool._stop_requested and pool.failures == []
    assert (logging.INFO, "worker slot 0 asked to stop the pool") in logs()


def _stuck(index, writer):
    """A worker that ignores SIGTERM; it ends when its parent is gone (a broken kill must
    not leave it running)."""
    parent = os.getppid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    writer.send(("started", os.getpid(), [index]))
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(0)


def test_a_worker_that_ignores_the_stop_is_killed_after_its_grace(logs, monkeypatch):
    monkeypatch.setattr(sup, "_KILL_GRACE", 0.0)
    pool = Pool(_stuck, stop_timeout=0.2)
    t = pool.run()
    pool.wait(lambda: pool._slots[0].partitions is not None)
    pid = pool._slots[0].pid
    pool._request_stop()
    t.join(60)
    assert not t.is_alive()
    lines = logs()
    assert (logging.WARNING, f"worker slot 0 (pid {pid}) did not stop in time: killing it") in lines
    assert (logging.WARNING, f"worker slot 0 (pid {pid}) was killed by SIGKILL while stopping") in lines
    assert not [text for _, text in lines if "supervisor failed" in text]


def test_a_stop_with_kill_kills_at_once(logs):
    pool = Pool(_stuck, stop_timeout=600.0)
    t = pool.run()
    pool.wait(lambda: pool._slots[0].partitions is not None)
    pid = pool._slots[0].pid
    pool._request_stop(kill=True)
    assert pool._kill_requested
    t.join(60)
    assert not t.is_alive()
    assert (logging.WARNING, f"worker slot 0 (pid {pid}) was killed by SIGKILL while stopping") in logs()


def test_the_supervisor_failing_kills_the_workers_and_says_so(logs, monkeypatch):
    pool = Pool(_stuck, num_workers=2)

    def broken_spawn(slot, real=pool._spawn):
        if slot.index == 1:
            raise OSError("no more processes")
        real(slot)

    monkeypatch.setattr(pool, "_spawn", broken_spawn)
    with pytest.raises(OSError, match="no more processes"):
        pool._supervise()
    assert pool._done.is_set() and pool._slots[0].process is None
    lines = logs()
    assert (logging.ERROR, "the worker supervisor failed; killing the workers") in lines
    assert any(text.endswith("was killed by SIGKILL while stopping") for _, text in lines)


def test_a_closed_pipe_is_dropped_and_the_exit_still_reaped():
    def script(index, writer):
        writer.send(("started", os.getpid(), [index]))
        writer.close()
        parent = os.getppid()
        signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
        while os.getppid() == parent:
            time.sleep(0.05)
        os._exit(0)

    pool = Pool(script)
    t = pool.run()
    pool.wait(lambda: pool._slots[0].partitions is not None)
    deadline = time.monotonic() + 30
    while pool._slots[0].conn is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool._slots[0].conn is None and pool._slots[0].process is not None
    pool._request_stop()
    t.join(60)
    assert not t.is_alive()


def test_request_stop_wakes_the_supervisor_and_survives_a_full_pipe():
    pool = Pool(_serve_until_term)
    for _ in range(100_000):  # far more than the pipe holds: the writes are dropped
        pool._request_stop()
    assert pool._stop_requested and not pool._kill_requested
    assert os.read(pool._wake_r, 1) == b"x"


def test_the_supervisor_waits_until_the_next_thing_it_must_do(monkeypatch):
    """``_wait_and_handle``'s timeout: one second at most, the time left of the stop's
    grace, the next restart due; never below zero."""
    pool = Pool(_serve_until_term, num_workers=2, stop_timeout=2.0)
    given: list[float] = []

    def wait(objects, timeout):
        assert objects == [pool._wake_r]  # no live workers here
        given.append(timeout)
        return []

    monkeypatch.setattr(sup, "mpc", pytypes.SimpleNamespace(wait=wait))
    monkeypatch.setattr(sup, "_KILL_GRACE", 0.5)
    pool._wait_and_handle(100.0, None)
    pool._slots[1].next_start = 100.25
    pool._wait_and_handle(100.0, None)
    pool._slots[1].next_start = 99.0  # due already
    pool._wait_and_handle(100.0, None)
    pool._slots[1].next_start = None
    pool._wait_and_handle(100.0, 98.0)  # stopping since 98: kill due at 100.5
    pool._wait_and_handle(100.0, 99.5)  # kill due at 102: one second first
    pool._wait_and_handle(100.0, 90.0)  # kill overdue
    assert given == [1.0, 0.25, 0.0, 0.5, 1.0, 0.0]


def _slot_with_a_dead_worker(code: int) -> tuple[Pool, Slot, object]:
    """A pool whose slot 0 holds a worker that exited with ``code`` and was not reaped yet."""
    pool = Pool(_serve_until_term)
    slot = pool._slots[0]
    proc = pool._ctx.Process(target=os._exit, args=(code,))
    proc.start()
    proc.join(30)
    slot.process, slot.pid, slot.started_at = proc, proc.pid, time.monotonic()
    return pool, slot, proc


def test_kill_leaves_a_worker_that_exited_alone(logs):
    pool, slot, proc = _slot_with_a_dead_worker(0)
    pool._kill([slot])
    assert slot.process is None
    assert [text for _, text in logs()] == [
        f"worker slot 0 (pid {proc.pid}) exited with code 0 while stopping"]


def test_a_worker_is_started_with_its_settings_and_a_named_process():
    def script(index, writer, args):
        writer.send(("stats", {"args": list(args)}))
        _serve_until_term(index, writer)

    script.wants_args = True  # type: ignore[attr-defined]
    pool = Pool(script, num_workers=1, stop_timeout=7.5, group_id="grp")
    pool.stats_callback = print
    t = pool.run()
    assert pool.two_stats.wait(60)
    slot = pool._slots[0]
    assert pool.stats[0] == (0, {"args": [1, True, 7.5, os.getpid(), "grp"]})
    assert slot.process.name == "rdk-worker-0" and slot.stats is None and slot.cause is None
    pool._request_stop()
    t.join(60)
    assert slot.stats is None and slot.partitions is None


def test_init_supervision_spawns_and_closes_its_wake_pipe_with_the_pool():
    import gc

    pool = Supervision()
    pool._init_supervision(3)
    assert pool._ctx.get_start_method() == "spawn"
    assert [s.index for s in pool._slots] == [0, 1, 2] and pool._thread is None
    assert not pool._stop_requested and not pool._kill_requested and not pool._done.is_set()
    assert not os.get_blocking(pool._wake_r) and not os.get_blocking(pool._wake_w)
    with pool._changed:  # the condition is over the pool's lock
        assert not pool._lock.acquire(blocking=False)
    fds = (pool._wake_r, pool._wake_w)
    del pool
    gc.collect()
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    sup.close_fds(*fds)  # closed already: no error


def test_the_wake_byte_is_read_so_the_next_wait_sleeps():
    pool = Pool(_serve_until_term)
    pool._request_stop()
    pool._wait_and_handle(time.monotonic(), None)
    with pytest.raises(BlockingIOError):
        os.read(pool._wake_r, 1)


def test_a_worker_dying_after_a_stop_request_is_not_restarted(logs):
    pool, slot, proc = _slot_with_a_dead_worker(2)
    pool._stop_requested = True  # asked; the supervising loop has not seen it yet
    pool._wait_and_handle(time.monotonic(), None)
    assert slot.process is None and slot.restarts == 0 and slot.next_start is None
    assert [text for _, text in logs()] == [
        f"worker slot 0 (pid {proc.pid}) exited with code 2 while stopping"]


def test_a_worker_taking_its_time_to_stop_is_given_the_stop_timeout(logs, monkeypatch):
    monkeypatch.setattr(sup, "_KILL_GRACE", 5.0)

    def slow_stop(index, writer):
        got = threading.Event()
        signal.signal(signal.SIGTERM, lambda *a: got.set())
        writer.send(("started", os.getpid(), [index]))
        got.wait(60)
        time.sleep(1.5)  # a graceful stop that takes longer than one supervision wait
        os._exit(0)

    pool = Pool(slow_stop, stop_timeout=5.0)
    t = pool.run()
    pool.wait(lambda: pool._slots[0].partitions is not None)
    pid = pool._slots[0].pid
    pool._request_stop()
    t.join(60)
    assert (logging.INFO, f"worker slot 0 (pid {pid}) exited with code 0 while stopping") in logs()
