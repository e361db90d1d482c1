"""A program that leaves rdk objects open exits as Python would (rdk._exit).

Each case runs in a subprocess (a crash shows only at exit) against the session's brokers
(every kind the ``broker`` fixture serves), and asserts the exit status, the traceback where
there is one, and what was recorded afterwards: offset files (or the group's commits) hold
exactly the settled progress, and messages a producer had in flight were delivered.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import produce, read_log, stored, values

from rdk.offsets import BrokerOffsetStore

# Every case starts with these names: B (bootstrap), T (topic), D (offset directory),
# N (messages in the topic), P (its partitions); `consume_all` starts a callback consumer
# and returns once every message was handed to the callback.
PRELUDE = """
import os, signal, sys, threading, time
import rdk
B, T, D = os.environ["B"], os.environ["T"], os.environ["D"]
N, P = int(os.environ["N"]), int(os.environ["P"])

def consume_all(**options):
    seen = []
    done = threading.Event()
    def receive(batch):
        seen.extend(batch.messages)
        if len(seen) >= N:
            done.set()
    c = rdk.Consumer(B, T, D if "group_id" not in options else None, receive,
                     max_messages_per_callback=7, **options)
    c.start()
    assert done.wait(60), f"consumed {len(seen)} of {N}"
    return c
"""

EXIT_BUDGET = 60  # seconds a case may take, start to exit (a deadline, not a speed target)


def run_case(body: str, env: dict[str, str], timeout: float = EXIT_BUDGET):
    script = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def topic_with_data(broker, new_topic, tmp_path):
    """A fresh topic of 3 partitions holding 10 messages each, and the env of a case."""

    def make(partitions: int = 3, per_partition: int = 10) -> dict[str, str]:
        topic = new_topic(broker, partitions, prefix="exit")
        for p in range(partitions):
            produce(broker, topic, p, values(per_partition, prefix=b"p%d-" % p))
        return {"B": broker.bootstrap_servers, "T": topic, "D": str(tmp_path),
                "N": str(partitions * per_partition), "P": str(partitions)}

    return make


def assert_all_recorded(env: dict[str, str], per_partition: int = 10) -> None:
    directory = __import__("pathlib").Path(env["D"])
    got = {p: stored(directory, env["T"], p) for p in range(int(env["P"]))}
    assert got == {p: per_partition - 1 for p in range(int(env["P"]))}


def assert_clean_exit(proc, code: int = 0) -> None:
    assert proc.returncode == code, (
        f"exit status {proc.returncode}, expected {code}\nstdout:\n{proc.stdout}\n"
        f"stderr:\n{proc.stderr[-4000:]}")
    assert "Fatal Python error" not in proc.stderr
    assert "Segmentation fault" not in proc.stderr


def test_consumer_left_running_exits_0_and_records_settled_batches(topic_with_data):
    env = topic_with_data()
    proc = run_case("""
        consume_all()
        print("main ends with the consumer running", flush=True)
    """, env)
    assert_clean_exit(proc)
    assert "main ends" in proc.stdout
    assert_all_recorded(env)


def test_uncaught_exception_with_consumer_running_exits_1_with_its_traceback(topic_with_data):
    env = topic_with_data()
    proc = run_case("""
        consume_all()
        raise RuntimeError("the user's bug, shown at exit")
    """, env)
    assert_clean_exit(proc, 1)
    assert "Traceback (most recent call last)" in proc.stderr
    assert "RuntimeError: the user's bug, shown at exit" in proc.stderr
    assert_all_recorded(env)


def test_keyboard_interrupt_with_consumer_running_exits_as_sigint(topic_with_data):
    env = topic_with_data()
    proc = run_case("""
        consume_all()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(60)  # the KeyboardInterrupt arrives here
    """, env)
    # CPython ends an uncaught KeyboardInterrupt by re-raising SIGINT: a shell shows 130
    assert_clean_exit(proc, -signal.SIGINT)
    assert "KeyboardInterrupt" in proc.stderr
    assert_all_recorded(env)


def test_batches_iterator_left_with_break_records_only_committed_batches(topic_with_data):
    env = topic_with_data(partitions=1, per_partition=50)
    proc = run_case("""
        c = rdk.Consumer(B, T, D, max_messages_per_callback=10)
        first = None
        for batch in c.batches(timeout=30):
            if first is None:
                first = batch   # committed when the next batch is asked for
                continue
            print("first", first.offsets[0][1], "second", batch.offsets[0][1], flush=True)
            break               # the second batch is never committed
    """, env)
    assert_clean_exit(proc)
    words = proc.stdout.split()
    first_last, second_last = int(words[1]), int(words[3])
    assert first_last < second_last
    assert stored(__import__("pathlib").Path(env["D"]), env["T"], 0) == first_last


def test_group_consumer_left_running_exits_0_and_commits_settled_batches(topic_with_data):
    env = topic_with_data()
    group = f"exit-{env['T']}"
    proc = run_case(f"""
        consume_all(group_id={group!r},
                    driver_options={{"session.timeout.ms": 6000}})
    """, env)
    assert_clean_exit(proc)
    store = BrokerOffsetStore(group, broker=env["B"], topic=env["T"])
    try:
        assert store.read(list(range(3))) == {0: 9, 1: 9, 2: 9}
    finally:
        store.close()


def test_callback_that_never_returns_is_given_up_after_the_exit_timeout(topic_with_data):
    env = topic_with_data(partitions=1, per_partition=30)
    env["RDK_EXIT_TIMEOUT"] = "1"
    proc = run_case("""
        calls = []
        reached = threading.Event()
        def receive(batch):
            calls.append(batch.offsets[0][1])
            if len(calls) == 2:
                reached.set()
                threading.Event().wait()   # never returns
        c = rdk.Consumer(B, T, D, receive, max_messages_per_callback=10)
        c.start()
        assert reached.wait(60)
        print("first", calls[0], flush=True)
    """, env)
    assert_clean_exit(proc)
    assert "has not returned" in proc.stderr
    first_last = int(proc.stdout.split()[1])
    assert stored(__import__("pathlib").Path(env["D"]), env["T"], 0) == first_last


def test_producer_left_open_delivers_its_queue_at_exit(broker, new_topic):
    topic = new_topic(broker, 2, prefix="exit-p")
    proc = run_case("""
        p = rdk.Producer(B, queue_buffering_max_ms=2000)   # still lingering when main ends
        r = p.send(T, 1, [b"v%d" % i for i in range(N)])
        assert r.enqueued == N
        print("sent", flush=True)
    """, {"B": broker.bootstrap_servers, "T": topic, "D": "", "N": "500", "P": "2"})
    assert_clean_exit(proc)
    log = read_log(broker.bootstrap_servers, topic, [1])
    assert [v for _o, _k, v in log[1]] == [b"v%d" % i for i in range(500)]


def test_forked_child_exit_leaves_the_parents_consumer_alone(topic_with_data):
    env = topic_with_data()
    proc = run_case("""
        c = consume_all()
        pid = os.fork()
        if pid == 0:
            sys.exit(0)     # runs the atexit handlers inherited from the parent
        _, status = os.waitpid(pid, 0)
        print("child status", status, "parent still running:", not c.closed, flush=True)
    """, env)
    assert_clean_exit(proc)
    assert "child status 0 parent still running: True" in proc.stdout
    assert_all_recorded(env)


# The workers' receive callback (spawned workers import it by name): it logs each batch's last
# offsets, and holds the batch ending a partition until the worker is asked to stop (SIGTERM
# sets the worker's stop event), so that batch settles only in a graceful stop.
EXIT_PROBE = """
import os
from pathlib import Path

from rdk.workers._child import _child

def receive(batch):
    with open(Path(os.environ["PROBE"]) / "processed.log", "a") as f:
        f.writelines(f"{p} {last}\\n" for p, (_, last) in batch.offsets.items())
    if any(last == int(os.environ["LAST"]) for _, last in batch.offsets.values()):
        _child["stop"].wait(60)
"""


def test_worker_pool_left_running_is_stopped_gracefully_at_exit(topic_with_data, tmp_path_factory):
    """Gracefully: each worker's last batch, still in its callback when the interpreter exits,
    is finished and recorded (offset files hold every processed batch, no temp file is left)
    and the workers are gone. Workers killed instead leave that batch unrecorded."""
    env = topic_with_data(partitions=2)
    probe = tmp_path_factory.mktemp("probe")  # (not in D, the offset directory)
    (probe / "exit_probe.py").write_text(EXIT_PROBE)
    env = {**env, "PROBE": str(probe), "LAST": "9",
           "PYTHONPATH": os.pathsep.join([str(probe), os.environ.get("PYTHONPATH", "")])}
    proc = run_case("""
        import functools
        from pathlib import Path
        import exit_probe
        from rdk.workers import WorkerPool
        pool = WorkerPool(2, functools.partial(rdk.Consumer, B, T, D, exit_probe.receive,
                                               max_messages_per_callback=7))
        pool.start()
        assert pool.wait_started(60)
        print("pids", *pool.pids.values(), flush=True)
        log, deadline = Path(os.environ["PROBE"]) / "processed.log", time.monotonic() + 60
        while not (log.exists() and {"0 9", "1 9"} <= set(log.read_text().split("\\n"))):
            assert time.monotonic() < deadline, "the workers did not reach the last messages"
            time.sleep(0.05)
        # exits with each worker holding its last batch in the callback
    """, env)
    assert_clean_exit(proc)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("pids "))
    pids = [int(w) for w in line.split()[1:]]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    processed = (probe / "processed.log").read_text().split()
    assert sorted(processed[1::2]) == ["6", "6", "9", "9"]  # batches 0-6 and 7-9 of each
    assert_all_recorded(env)
    topic = env["T"]  # the offset files and the topic's lock file; no temp file, no probe
    assert sorted(f.name for f in Path(env["D"]).iterdir()) == [
        f".{topic}.lock", f"{topic}-0.offset", f"{topic}-1.offset"]


@pytest.mark.parametrize("broker", ["mock"], indirect=True)
def test_fifty_exits_with_a_running_consumer_never_crash(topic_with_data):
    env = topic_with_data(partitions=2, per_partition=5)
    body = """
        c = consume_all()
    """

    def one(i: int):
        directory = f"{env['D']}/run-{i}"
        os.makedirs(directory)
        return run_case(body, {**env, "D": directory})

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, range(50)))
    failed = [(i, r.returncode, r.stderr[-600:]) for i, r in enumerate(results) if r.returncode]
    assert not failed, f"{len(failed)} of 50 exits failed; first: {failed[0]}"


def test_set_exit_timeout_refuses_what_is_not_a_finite_non_negative_number():
    import rdk

    before = rdk.exit_timeout()
    for bad, error in ((-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
                       ("5", TypeError), (True, TypeError)):
        with pytest.raises(error, match="seconds"):
            rdk.set_exit_timeout(bad)
    assert rdk.exit_timeout() == before
    rdk.set_exit_timeout(3)
    try:
        assert rdk.exit_timeout() == 3.0
    finally:
        rdk.set_exit_timeout(before)
