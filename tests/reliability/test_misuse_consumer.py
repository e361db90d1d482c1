"""The Consumer under misuse that could hang or stall silently (issue 14): each scenario runs in
a subprocess with a timeout, so a hang fails the test instead of the session.

Each script prints one JSON line (its findings) as its last line of output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)

PRELUDE = textwrap.dedent("""
    import asyncio, concurrent.futures, json, logging, os, sys, tempfile, threading, time
    import rdk
    from rdk import offsets
    from rdk.mock import MockCluster

    logging.basicConfig(level=logging.CRITICAL)
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage() + (
                repr(record.exc_info[1]) if record.exc_info else ""))

    logging.getLogger("rdk").addHandler(Keep())
    logging.getLogger("rdk").setLevel(logging.INFO)
    mc = MockCluster(1)
    B = mc.bootstrap_servers

    def produce(topic, partition, n, start=0):
        p = rdk.Producer(B, queue_buffering_max_ms=5)
        p.send(topic, partition, [b"m%d" % i for i in range(start, start + n)])
        assert p.stop(30) == 0

    def wait(cond, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def stored(d, topic, p):
        return offsets.read_offset_file(offsets.offset_file_path(d, topic, p))

    def done(**found):
        print(json.dumps(found), flush=True)
        os._exit(0)
""")


def run_script(body: str, timeout: float = 90.0) -> dict:
    """Run PRELUDE + ``body`` in a fresh interpreter; its JSON findings."""
    try:
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", PRELUDE + textwrap.dedent(body)],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the scenario hung for {timeout} s:\n{(e.stderr or b'')[-3000:]!r}")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"exit {proc.returncode}:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1])


# ---- item 3: fork ------------------------------------------------------------------------------
def test_a_forked_child_cannot_use_or_free_the_parents_consumer():
    found = run_script("""
        mc.create_topic("fk", 1)
        produce("fk", 0, 10)
        d = tempfile.mkdtemp()
        got, batches = [], []
        def on_batch(b):
            got.extend(m.value for m in b)
            batches.append(b)
        c = rdk.Consumer(B, "fk", d, on_batch, driver_options={"log_level": 3})
        c.start()
        assert wait(lambda: len(got) == 10)
        assert wait(lambda: stored(d, "fk", 0) == 9)
        pid = os.fork()
        if pid == 0:  # the child: every call refused at once, stop/close return at once
            code = 0
            for i, call in enumerate([c.start, c.pause, c.resume, lambda: next(iter(c.batches(1))),
                                      batches[0].commit, c.run]):
                t = time.monotonic()
                try:
                    call()
                    code |= 1 << i
                except rdk.ClosedError as e:
                    if "fork" not in str(e) or time.monotonic() - t > 1:
                        code |= 1 << i
                except BaseException:
                    code |= 1 << i
            t = time.monotonic()
            c.stop(5)
            c.close()
            with c:
                pass
            if time.monotonic() - t > 1:
                code |= 64
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        child = os.waitstatus_to_exitcode(status)
        # the parent's consumer goes on: its lock is still held, it receives and records
        try:
            offsets.lock_partitions(d, "fk", [0]).release()
            lock_held = False
        except rdk.LockedError:
            lock_held = True
        produce("fk", 0, 5, start=10)
        more = wait(lambda: len(got) == 15)
        c.pause(); c.resume()
        recorded = wait(lambda: stored(d, "fk", 0) == 14)
        c.stop(10)
        done(child=child, lock_held=lock_held, more=more, recorded=recorded, error=str(c.error))
    """)
    assert found == {"child": 0, "lock_held": True, "more": True, "recorded": True, "error": "None"}


# ---- item 4: BaseException from the callback, its Future, its awaitable ------------------------
@pytest.mark.parametrize("how", ["raise", "future", "coroutine"])
def test_systemexit_from_receive_callback_stops_the_consumer_and_says_so(how):
    found = run_script(f"""
        how = {how!r}
        mc.create_topic("se", 1)
        produce("se", 0, 5)
        d = tempfile.mkdtemp()
        def on_batch(b):
            if how == "raise":
                raise SystemExit(3)
            if how == "future":
                f = concurrent.futures.Future()
                f.set_exception(SystemExit(3))
                return f
            async def work():
                raise SystemExit(3)
            return work()
        c = rdk.Consumer(B, "se", d, on_batch, commit_on_error=True,
                         driver_options={{"log_level": 3}})
        t = time.monotonic()
        try:
            c.run()
            raised = None
        except BaseException as e:
            raised = e
        took = time.monotonic() - t
        done(took=took, raised=type(raised).__name__, text=str(raised), error=str(c.error),
             cause=type(getattr(raised, "__cause__", None)).__name__, closed=c.closed,
             stored=stored(d, "se", 0), logged=any("SystemExit" in r for r in records))
    """)
    assert found["took"] < 15, found
    assert found["raised"] == "KafkaError", found
    assert "_FAIL" in found["text"] and "SystemExit" in found["text"], found
    assert found["error"] == found["text"] and found["closed"], found
    assert found["stored"] is None, "a batch whose handler exited must not be recorded"
    assert found["logged"], found
    if how != "coroutine":
        assert found["cause"] == "SystemExit", found


def test_systemexit_from_stats_callback_is_logged_and_the_consumer_goes_on():
    found = run_script("""
        mc.create_topic("st", 1)
        produce("st", 0, 3)
        d = tempfile.mkdtemp()
        got = []
        calls = []
        def on_stats(s):
            calls.append(1)
            raise SystemExit(4)
        c = rdk.Consumer(B, "st", d, lambda b: got.extend(b), stats_callback=on_stats,
                         statistics_interval_ms=100, driver_options={"log_level": 3})
        c.start()
        assert wait(lambda: len(got) == 3)
        twice = wait(lambda: len(calls) >= 2)
        produce("st", 0, 3, start=3)
        more = wait(lambda: len(got) == 6)
        c.stop(10)
        done(twice=twice, more=more, error=str(c.error),
             logged=any("stats_callback" in r and "SystemExit" in r for r in records))
    """)
    assert found == {"twice": True, "more": True, "error": "None", "logged": True}


# ---- item 5: an event loop that is not running, or closed ------------------------------------
def test_a_closed_loop_is_refused_at_construction_and_at_start():
    found = run_script("""
        mc.create_topic("cl", 1)
        loop = asyncio.new_event_loop()
        loop.close()
        out = []
        try:
            rdk.Consumer(B, "cl", tempfile.mkdtemp(), lambda b: None, loop=loop)
        except ValueError as e:
            out.append(str(e))
        loop2 = asyncio.new_event_loop()
        c = rdk.Consumer(B, "cl", tempfile.mkdtemp(), lambda b: None, loop=loop2)
        loop2.close()
        try:
            c.start()
        except ValueError as e:
            out.append(str(e))
        c.stop(5)
        done(out=out)
    """)
    assert len(found["out"]) == 2 and all("loop" in t and "closed" in t for t in found["out"]), found


@pytest.mark.parametrize("state", ["never running", "closed after start"])
def test_awaitables_on_a_dead_loop_fail_the_consumer_and_record_nothing(state):
    found = run_script(f"""
        state = {state!r}
        mc.create_topic("dl", 1)
        produce("dl", 0, 5)
        d = tempfile.mkdtemp()
        loop = asyncio.new_event_loop()
        ran = []
        async def work(b):
            ran.append(len(b))
        c = rdk.Consumer(B, "dl", d, lambda b: work(b), commit_on_error=True, loop=loop,
                         driver_options={{"log_level": 3}})
        c.start()
        if state == "closed after start":
            loop.close()
        failed = wait(lambda: c.error is not None, timeout=20)
        stopped = wait(lambda: c.closed, timeout=15)
        done(failed=failed, stopped=stopped, ran=ran, error=str(c.error), stored=stored(d, "dl", 0))
    """)
    assert found["failed"] and found["stopped"], found
    assert found["ran"] == [], found
    assert "loop" in found["error"] and "_FAIL" in found["error"], found
    assert found["stored"] is None, "offsets must not advance for work that never ran"


# ---- issue 24: a stopped consumer says so -----------------------------------------------------
def test_a_stopped_consumer_refuses_commit_start_run_and_group_metadata_with_closed_error():
    found = run_script("""
        mc.create_topic("st", 1)
        produce("st", 0, 30)
        d = tempfile.mkdtemp()
        c = rdk.Consumer(B, "st", d, max_messages_per_callback=10)
        it = c.batches(timeout=20)
        first = next(it)
        second = next(it)          # asking for it committed the first
        c.stop(10)
        outcomes = {}
        for name, call in [("commit", second.commit), ("start", c.start), ("run", c.run)]:
            try:
                call()
                outcomes[name] = "returned"
            except rdk.ClosedError as e:
                outcomes[name] = "ClosedError: " + str(e)
            except BaseException as e:
                outcomes[name] = type(e).__name__ + ": " + str(e)
        first.commit()             # settled already: harmless, nothing raised
        g = rdk.Consumer(B, "st", None, lambda b: None, group_id="st-group")
        g.stop()
        try:
            g.group_metadata()
            outcomes["group_metadata"] = "returned"
        except rdk.ClosedError as e:
            outcomes["group_metadata"] = "ClosedError: " + str(e)
        except BaseException as e:
            outcomes["group_metadata"] = type(e).__name__ + ": " + str(e)
        done(outcomes=outcomes, stored=stored(d, "st", 0), first_last=first.offsets[0][1])
    """)
    outcomes = found["outcomes"]
    assert outcomes["commit"].startswith("ClosedError"), outcomes
    assert "not recorded" in outcomes["commit"] and "delivered again" in outcomes["commit"]
    for name in ("start", "run", "group_metadata"):
        assert outcomes[name].startswith("ClosedError") and "stopped" in outcomes[name], outcomes
    # only what was committed before the stop is recorded: the second batch is read again
    assert found["stored"] == found["first_last"] == 9
