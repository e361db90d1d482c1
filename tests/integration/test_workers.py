"""rdk.workers: real consumers in spawned processes, one worker slot each.

Workers record every message they process as a line ``slot pid partition offset`` in a
file of their own, written before the batch settles, so "processed at least once" and
"duplicates" are read from those files after the fact.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from helpers import wait_until

import rdk
from rdk import workers
from rdk.offsets import offset_file_path, read_offset_file
from rdk.testing import MockCluster

BATCH = 100  # max_messages_per_callback: "one batch" of duplicates


def record_batch(outdir: str, delay: float, batch) -> None:
    """receive_callback of the workers: log what was processed, then act slow."""
    slot, _ = workers.current_slot()
    lines = "".join(f"{slot} {os.getpid()} {m.partition} {m.offset}\n" for m in batch.messages)
    fd = os.open(os.path.join(outdir, f"processed-{os.getpid()}.txt"),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, lines.encode())
    finally:
        os.close(fd)
    if delay:
        time.sleep(delay)  # a slow processor, so the test can act mid-stream


def consumer_factory(broker: str, topic: str, offset_dir: str, outdir: str, delay: float, **kw):
    return partial(rdk.Consumer, broker, topic, offset_dir,
                   partial(record_batch, outdir, delay), max_messages_per_callback=BATCH, **kw)


def factory_without_stats_keyword(worker_slot: int, num_workers: int):
    raise AssertionError("never called: the pool refuses it up front")


def processed(outdir: Path) -> list[tuple[int, int, int, int]]:
    """Every (slot, pid, partition, offset) line the workers wrote (a torn last line is skipped)."""
    rows = []
    for f in outdir.glob("processed-*.txt"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 4:
                rows.append(tuple(map(int, parts)))
    return rows


def produce(broker, topic: str, partitions: int, per_partition: int) -> None:
    with rdk.Producer(broker.bootstrap_servers) as p:
        for part in range(partitions):
            p.send(topic, part, [b"m%d" % i for i in range(per_partition)])
        assert p.flush(30) == 0


@pytest.fixture
def mock_broker():
    """A fresh mock cluster whose new groups wait 3 s for more members (a broker's default
    group.initial.rebalance.delay.ms): a pool's members join one generation together, where
    at 0 the first to join would take every partition and finish alone."""
    with MockCluster(3, group_initial_rebalance_delay_ms=3000) as mc:
        yield mc


def test_sigkilled_worker_restarts_in_same_slot_and_topic_is_fully_consumed(
        mock_broker, new_topic, tmp_path, caplog):
    topic = new_topic(mock_broker, 4)
    per_partition = 1500
    produce(mock_broker, topic, 4, per_partition)
    outdir, offdir = tmp_path / "out", tmp_path / "off"
    outdir.mkdir()
    factory = consumer_factory(mock_broker.bootstrap_servers, topic, str(offdir), str(outdir), 0.02)
    caplog.set_level(logging.INFO, logger="rdk.workers")
    pool = workers.WorkerPool(2, factory, restart_backoff=0.1, max_restarts=3)
    with pool:
        assert pool.wait_started(60), "workers did not start"
        assert pool.partitions == {0: [0, 2], 1: [1, 3]}
        victim = pool.pids[1]
        wait_until(lambda: any(r[1] == victim for r in processed(outdir)), 30, "slot 1 to process",
                   interval=0.05)
        os.kill(victim, signal.SIGKILL)
        done_by_victim = sum(1 for r in processed(outdir) if r[1] == victim)
        assert done_by_victim < 2 * per_partition, "the kill came too late to be mid-stream"
        wait_until(lambda: pool.restarts[1] == 1 and pool.pids.get(1) not in (None, victim), 30,
                   "slot 1 to be restarted", interval=0.05)
        assert pool.wait_started(60)
        assert pool.partitions[1] == [1, 3]
        everything = {(p, o) for p in range(4) for o in range(per_partition)}
        wait_until(lambda: everything <= {(r[2], r[3]) for r in processed(outdir)}, 60,
                   "every message to be processed", interval=0.05)
    rows = processed(outdir)
    assert {(r[2], r[3]) for r in rows} == everything  # at least once, nothing else
    assert pool.restarts == {0: 0, 1: 1}
    successor = {r[1] for r in rows if r[0] == 1} - {victim}
    assert len(successor) == 1
    assert {r[2] for r in rows if r[1] in successor} <= {1, 3}  # same slot, same partitions
    assert all(r[0] == 0 for r in rows if r[2] in (0, 2))
    for p in range(4):
        assert read_offset_file(offset_file_path(offdir, topic, p)) == per_partition - 1
    logged = caplog.text
    assert "was killed by SIGKILL; restarting it" in logged


POOL_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from functools import partial
    import rdk
    from rdk import workers

    def record(outdir, batch):
        slot, _ = workers.current_slot()
        lines = "".join(f"{slot} {os.getpid()} {m.partition} {m.offset}\\n" for m in batch.messages)
        with open(os.path.join(outdir, f"processed-{os.getpid()}.txt"), "a") as f:
            f.write(lines)
        time.sleep(0.03)

    if __name__ == "__main__":
        broker, topic, offdir, outdir = sys.argv[1:5]
        factory = partial(rdk.Consumer, broker, topic, offdir, partial(record, outdir),
                          max_messages_per_callback=BATCH)
        workers.run(2, factory, restart_backoff=0.1)
        print("parent returned", flush=True)
""").replace("BATCH)", f"{BATCH})")


def test_graceful_sigterm_loses_nothing_and_restart_repeats_at_most_one_batch(
        mock_broker, new_topic, tmp_path):
    topic = new_topic(mock_broker, 4)
    per_partition = 2000
    produce(mock_broker, topic, 4, per_partition)
    outdir, offdir = tmp_path / "out", tmp_path / "off"
    outdir.mkdir()
    script = tmp_path / "pool.py"
    script.write_text(POOL_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), mock_broker.bootstrap_servers, topic,
                             str(offdir), str(outdir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_until(lambda: len({r[2] for r in processed(outdir)}) == 4 or proc.poll() is not None,
                   60, "every partition to be in processing", interval=0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    assert b"parent returned" in out
    first = processed(outdir)
    assert len(first) < 4 * per_partition, "the stop came too late to be mid-stream"
    # nothing lost: every offset up to the stored one was processed
    stored = {p: read_offset_file(offset_file_path(offdir, topic, p)) for p in range(4)}
    done = {(r[2], r[3]) for r in first}
    for p, last in stored.items():
        assert last is not None, f"partition {p}: processed but nothing recorded"
        assert {(p, o) for o in range(last + 1)} <= done
    # a second pool finishes the topic; duplicates per partition are at most one batch
    factory = consumer_factory(mock_broker.bootstrap_servers, topic, str(offdir), str(outdir), 0)
    with workers.WorkerPool(2, factory, restart_backoff=0.1) as pool:
        everything = {(p, o) for p in range(4) for o in range(per_partition)}
        wait_until(lambda: everything <= {(r[2], r[3]) for r in processed(outdir)}, 60,
                   "the rest to be processed", interval=0.05)
    assert pool.restarts == {0: 0, 1: 0}
    counts = Counter((r[2], r[3]) for r in processed(outdir))
    assert set(counts) == everything
    for p in range(4):
        duplicates = sum(c - 1 for (q, _), c in counts.items() if q == p)
        assert duplicates <= BATCH, f"partition {p}: {duplicates} duplicates"
        assert read_offset_file(offset_file_path(offdir, topic, p)) == per_partition - 1


def test_parent_stats_callback_gets_per_slot_figures_and_their_sums(
        mock_broker, new_topic, tmp_path):
    topic = new_topic(mock_broker, 4)
    produce(mock_broker, topic, 4, 100)
    outdir = tmp_path / "out"
    outdir.mkdir()
    factory = consumer_factory(mock_broker.bootstrap_servers, topic, str(tmp_path / "off"),
                               str(outdir), 0, statistics_interval_ms=100)
    seen: list[workers.PoolStats] = []
    complete = threading.Event()

    def on_stats(info: workers.PoolStats) -> None:
        seen.append(info)
        if len(info.slots) == 2 and info.kafka_log_size == 400 and info.waiting_kafka == 0:
            complete.set()

    with workers.WorkerPool(2, factory, stats_callback=on_stats):
        assert complete.wait(60), seen[-3:]
    info = next(i for i in seen if len(i.slots) == 2 and i.kafka_log_size == 400)
    assert {s: sorted(st.partitions) for s, st in info.slots.items()} == {0: [0, 2], 1: [1, 3]}
    assert info.kafka_log_size == sum(st.kafka_log_size for st in info.slots.values())
    assert info.waiting_local == sum(st.waiting_local for st in info.slots.values())
    assert all(st.kafka_log_size == 200 for st in info.slots.values())
    assert sorted(info.partitions) == [0, 1, 2, 3]
    assert all(f["kafka_log_size"] == 100 for f in info.partitions.values())


class FailsToStart:
    """A consumer whose start() fails the way a broker that is not up yet makes it fail."""

    def __init__(self, **kw) -> None:
        pass

    def start(self):
        raise rdk.KafkaError(-195, context="broker not reachable yet")  # _TRANSPORT: transient

    def stop(self, timeout=None) -> None:
        pass


def test_a_slot_that_keeps_dying_stops_the_pool_at_the_restart_limit(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="rdk.workers")
    started = time.monotonic()
    with pytest.raises(workers.WorkerError) as exc:
        workers.run(1, FailsToStart, max_restarts=2, restart_backoff=0.05)
    assert exc.value.slot == 0 and exc.value.exitcode == 1
    assert "max_restarts=2" in str(exc.value)
    assert exc.value.cause is not None and "KafkaError" in exc.value.cause
    assert not exc.value.permanent
    assert caplog.text.count("restarting it in") == 2
    assert "restart limit" in caplog.text
    assert time.monotonic() - started < 60


def test_bad_pool_arguments_raise_naming_the_argument(tmp_path):
    good = partial(rdk.Consumer, "127.0.0.1:9", "t", str(tmp_path), print)
    with pytest.raises(ValueError, match="num_workers"):
        workers.WorkerPool(0, good)
    with pytest.raises(TypeError, match="picklable"):
        workers.WorkerPool(1, lambda **kw: None)
    with pytest.raises(TypeError, match="stats_callback"):
        workers.WorkerPool(1, factory_without_stats_keyword, stats_callback=print)
    with pytest.raises(ValueError, match="max_restarts"):
        workers.WorkerPool(1, good, max_restarts=-1)
    with pytest.raises(ValueError, match="restart_backoff"):
        workers.WorkerPool(1, good, restart_backoff=-1)
    with pytest.raises(RuntimeError, match="inside a worker"):
        workers.request_stop()
    assert workers.current_slot() is None


def test_run_takes_exactly_the_pool_arguments():
    import inspect

    pool = inspect.signature(workers.WorkerPool)
    assert inspect.signature(workers.run).parameters == pool.parameters
    with pytest.raises(ValueError, match="num_workers"):
        workers.run(0, print)
    with pytest.raises(TypeError, match="bogus"):
        workers.run(1, print, bogus=1)


GROUP_OPTIONS = {"session.timeout.ms": 6000, "max.poll.interval.ms": 10000,
                 "heartbeat.interval.ms": 500}


def test_group_of_three_with_one_sigkilled_processes_everything_and_repeats_only_its_batches(
        mock_broker, new_topic, tmp_path):
    """Three processes in one consumer group; one is SIGKILLed mid-stream. Every message is
    processed at least once, and only what the killed member had processed without its
    offsets committed yet comes again (cooperative rebalancing moves nothing else)."""
    topic = new_topic(mock_broker, 6)
    per_partition = 1000
    produce(mock_broker, topic, 6, per_partition)
    outdir = tmp_path / "out"
    outdir.mkdir()
    factory = consumer_factory(mock_broker.bootstrap_servers, topic, None, str(outdir), 0.02,
                               driver_options=GROUP_OPTIONS)
    pool = workers.WorkerPool(3, factory, restart_backoff=0.1, max_restarts=3,
                              group_id=f"workers-{topic}")
    everything = {(p, o) for p in range(6) for o in range(per_partition)}
    with pool:
        assert pool.wait_started(60), "workers did not start"
        assert pool.partitions == {0: [], 1: [], 2: []}  # the coordinator assigns them later
        wait_until(lambda: len({r[1] for r in processed(outdir)}) == 3, 60,
                   "all three members to process", interval=0.05)
        victim = pool.pids[1]
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: pool.restarts[1] == 1, 30, "the killed member's restart", interval=0.05)
        wait_until(lambda: everything <= {(r[2], r[3]) for r in processed(outdir)}, 120,
                   "every message to be processed", interval=0.1)
    rows = processed(outdir)
    assert {(r[2], r[3]) for r in rows} == everything  # at least once, nothing else
    by_victim = [(r[2], r[3]) for r in rows if r[1] == victim]
    assert 0 < len(by_victim) < len(everything), "the kill was not mid-stream"
    counts = Counter((r[2], r[3]) for r in rows)
    again = {k for k, n in counts.items() if n > 1}
    assert again <= set(by_victim), "a member that was not killed had a message delivered twice"
    assert all(n == 2 for k, n in counts.items() if k in again)
    # the killed member commits at most every 0.1 s and a batch takes >= 20 ms: what comes
    # again is its last few batches, not its partitions' history
    assert len(again) <= 8 * BATCH, f"{len(again)} messages processed twice"


def test_group_pool_refuses_a_factory_without_group_id():
    with pytest.raises(TypeError, match="group_id keyword"):
        workers.WorkerPool(2, factory_without_stats_keyword, group_id="g")
    with pytest.raises(ValueError, match="group_id must not be empty"):
        workers.WorkerPool(2, factory_without_stats_keyword, group_id="")
