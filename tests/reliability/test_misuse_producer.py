"""The Producer under misuse (issue 14): flush/stop keep their promise (callbacks ran, failures
counted), re-entry from a callback never deadlocks, fork never hangs, exiting callbacks are
logged. Whatever may hang or abort runs in a subprocess with a timeout."""

from __future__ import annotations

import logging
import math
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rdk import Producer
from rdk.mock import MockCluster
from rdk.producer import FlushResult

QUIET = {"log_level": 3}


@pytest.fixture
def cluster():
    mc = MockCluster(1)
    mc.create_topic("t8", 8)
    yield mc
    mc.close()


def _run(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter; a hang fails the test instead of the session."""
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, check=False)


# ---- 1. flush()/stop() return only once the reports reached user code ----------------------
def test_flush_returns_only_after_on_delivery_of_the_flushed_messages_ran(cluster):
    done = []

    def slow_on_delivery(delivered, failures):
        time.sleep(0.3)  # a slow callback, not synchronisation: flush must wait for it
        done.append(delivered)

    with Producer(cluster.bootstrap_servers, driver_options=QUIET) as p:
        for _ in range(3):
            p.send("t8", 0, [b"a", b"b"], on_delivery=slow_on_delivery)
            assert p.flush(10) == 0
            assert done and done[-1] == 2, "flush() returned before on_delivery ran"
            done.clear()


def test_flush_and_stop_wait_for_delivery_report_callback(cluster):
    seen = []

    def slow_report(info):
        time.sleep(0.3)
        seen.append(len(info.errors))

    p = Producer(cluster.bootstrap_servers, delivery_report_callback=slow_report, driver_options=QUIET)
    p.send("t8", 99, [b"x"])
    r = p.flush(10)
    assert seen == [1], "flush() returned before delivery_report_callback ran"
    assert r == 1 and r.failed == 1 and r.queued == 0
    p.send("t8", 98, [b"y"])
    assert p.stop(10) == 1
    assert seen == [1, 1], "stop() returned before delivery_report_callback ran"


# ---- 2. send(on_queue_full="block") from the event thread ---------------------------------
def test_blocking_send_from_on_delivery_raises_instead_of_deadlocking():
    proc = _run("""
        from rdk import Producer, QueueFullError
        from rdk.mock import MockCluster
        mc = MockCluster(1); mc.create_topic("t", 1)
        p = Producer(mc.bootstrap_servers, on_queue_full="block", queue_buffering_max_messages=5,
                     driver_options={"log_level": 3})
        got = []
        def on_delivery(delivered, failures):
            try:
                p.send("t", 0, [b"m"] * 20)  # cannot fit: the thread that makes room is this one
                got.append("returned")
            except QueueFullError as e:
                got.append(str(e))
        p.send("t", 0, [b"first"], on_delivery=on_delivery)
        assert p.flush(20) == 0
        assert len(got) == 1 and "callback" in got[0] and "block" in got[0], got
        assert p.stop(10) == 0
        mc.close()
        print("OK")
    """, timeout=60)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]


def test_blocking_send_from_stats_callback_raises_instead_of_deadlocking():
    proc = _run("""
        import threading
        from rdk import Producer, QueueFullError
        from rdk.mock import MockCluster
        mc = MockCluster(1); mc.create_topic("t", 1)
        mc.broker_set_down(1)  # nothing is delivered: the queue stays full
        got = []; done = threading.Event()
        def stats(info):
            if done.is_set():
                return
            try:
                p.send("t", 0, [b"m"] * 20)
                got.append("returned")
            except QueueFullError as e:
                got.append(str(e))
            done.set()
        p = Producer(mc.bootstrap_servers, on_queue_full="block", queue_buffering_max_messages=5,
                     stats_callback=stats, statistics_interval_ms=100, driver_options={"log_level": 0})
        assert done.wait(20), "stats_callback never finished"
        assert "callback" in got[0], got
        p.stop(2)
        mc.close()
        print("OK")
    """, timeout=60)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]


# ---- 3. fork -----------------------------------------------------------------------------
def test_producer_in_a_forked_child_refuses_at_once_and_stops_at_once():
    proc = _run("""
        import os, time
        from rdk import Producer, ClosedError
        from rdk.mock import MockCluster
        mc = MockCluster(1); mc.create_topic("t", 1)
        p = Producer(mc.bootstrap_servers, driver_options={"log_level": 3})
        p.send("t", 0, [b"before fork"])
        assert p.flush(10) == 0
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                p.send("t", 0, [b"in child"])
                code = 10
            except ClosedError as e:
                code = 0 if "fork" in str(e) else 11
            try:
                p.flush(5)
                code = code or 12
            except ClosedError:
                pass
            t0 = time.monotonic()
            left = p.stop(5)
            p.close()
            if time.monotonic() - t0 > 1.0:
                code = code or 13
            if left != 0:
                code = code or 14
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, os.waitstatus_to_exitcode(status)
        # the parent's producer is untouched
        assert p.send("t", 0, [b"after fork"]).enqueued == 1
        assert p.stop(10) == 0
        mc.close()
        print("OK")
    """, timeout=60)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]


# ---- 4. callbacks raising SystemExit ------------------------------------------------------
def test_system_exit_in_delivery_report_callback_is_logged_and_on_delivery_still_runs(cluster, caplog):
    calls = []

    def exiting_report(info):
        raise SystemExit(3)

    def on_delivery(delivered, failures):
        calls.append((delivered, len(failures)))
        raise SystemExit(4)

    with caplog.at_level(logging.ERROR, logger="rdk"), \
            Producer(cluster.bootstrap_servers, delivery_report_callback=exiting_report,
                     driver_options=QUIET) as p:
        for i in range(3):
            p.send("t8", 99, [b"x"], on_delivery=on_delivery)
            r = p.flush(10)
            assert calls == [(0, 1)] * (i + 1), "on_delivery lost after a SystemExit"
            assert r.failed == 1 and r.queued == 0
        assert p.send("t8", 0, [b"ok"]).enqueued == 1 and p.flush(10) == 0
    assert any("SystemExit" in r.getMessage() for r in caplog.records)


# ---- 7/8. failures count in what flush()/stop() return ------------------------------------
def test_flush_and_stop_count_messages_that_failed_with_the_broker_down(cluster):
    p = Producer(cluster.bootstrap_servers,
                 driver_options={"message.timeout.ms": 300, "log_level": 0})
    cluster.broker_set_down(1)
    p.send("t8", 0, [b"x"] * 50)
    r = p.flush(10)
    assert isinstance(r, FlushResult) and isinstance(r, int)
    assert r == 50 and r.failed == 50 and r.queued == 0
    assert p.flush(1) == 0  # counted once: since the last flush
    p.send("t8", 0, [b"y"] * 7)
    r = p.stop(10)
    assert r == 7 and r.failed == 7


def test_message_to_a_missing_partition_is_reported_failed_by_flush(cluster):
    with Producer(cluster.bootstrap_servers, driver_options=QUIET) as p:
        p.send("t8", 99, [b"x"])
        r = p.flush(10)
        assert r != 0 and r.failed == 1, "a message to partition 99 of 8 counted as delivered"


def test_explicit_partition_beyond_a_known_partition_count_raises(cluster):
    with Producer(cluster.bootstrap_servers, balancer="round_robin", driver_options=QUIET) as p:
        p.send("t8", None, [b"x"])  # the balancer now knows t8 has 8 partitions
        with pytest.raises(ValueError, match=r"partition 99 .*'t8'.* 8 partition"):
            p.send("t8", 99, [b"x"])
        assert p.flush(10) == 0


# ---- numbers beyond C ----------------------------------------------------------------------
@pytest.mark.parametrize("timeout", [math.inf, 1e20, 2**70])
def test_huge_and_infinite_timeouts_mean_no_practical_limit(cluster, timeout):
    p = Producer(cluster.bootstrap_servers, balancer="round_robin", driver_options=QUIET)
    assert p.partition_count("t8", timeout) == 8
    assert p.send("t8", None, [b"x"], timeout=timeout).enqueued == 1
    assert p.flush(timeout) == 0
    result: list = []
    t = threading.Thread(target=lambda: result.append(p.stop(timeout)))
    t.start()
    t.join(30)
    assert result == [0]


def test_timestamp_beyond_int64_raises_value_error_naming_the_payload(cluster):
    from rdk import Message

    with Producer(cluster.bootstrap_servers, driver_options=QUIET) as p:
        with pytest.raises(ValueError, match=r"payloads\[1\]: timestamp"):
            p.send("t8", 0, [Message(b"a", timestamp=1), Message(b"b", timestamp=2**63)])
        assert p.send_queue_length == 0
