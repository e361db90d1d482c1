"""Consumer crash safety: worker processes (rdk.workers) consume a topic and are SIGKILLed
at random moments, again and again, and restarted in the same slot each time.

At the end every offset of every partition was processed at least once; each restart
repeated only its in-flight window — what the killed process recorded after the start of
its last completed offset write (crash_worker.py marks each write in the same record file),
never anything stored before; and every offset file parsed every time a reader polling
them read it (never backwards, never a temp file left behind).

CI variant: 200 k messages, 20 kills, about 35 s. ``RDK_SOAK=1`` adds the soak variant
(1 M messages, 100 kills).
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import threading
import time
from collections import Counter
from functools import partial

import crash_worker
import pytest
from helpers import test_seed, wait_until

from rdk import Admin, Producer
from rdk.mock import MockCluster
from rdk.offsets import list_offset_files, offset_file_path, read_offset_file
from rdk.workers import WorkerPool

PER_PARTITION = 50_000  # the mock cluster keeps ~5 MiB per partition: stay well below
WORKERS = 2
BATCH = 500  # max_messages_per_callback
PACE = 1 / 5000  # seconds of "work" per message in the workers


class OffsetFileReader(threading.Thread):
    """Reads every offset file over and over while the workers run and get killed."""

    def __init__(self, directory: str, topic: str) -> None:
        super().__init__(name="offset-file-reader", daemon=True)
        self.directory, self.topic = directory, topic
        self.reads = 0
        self.errors: list[str] = []
        self.last: dict[int, int] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.002):
            for f in list_offset_files(self.directory, self.topic):
                try:
                    value = read_offset_file(f.path)
                except Exception as e:  # any failure to parse is a finding
                    self.errors.append(f"{f.path.name}: {type(e).__name__}: {e}")
                    continue
                if value is None:  # never removed once written
                    self.errors.append(f"{f.path.name} vanished")
                    continue
                self.reads += 1
                if value < self.last.get(f.partition, -1):
                    self.errors.append(f"{f.path.name} went back from {self.last[f.partition]} to {value}")
                self.last[f.partition] = value


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    with Producer(bootstrap, queue_buffering_max_messages=2_000_000) as p:
        for part in range(partitions):
            for start in range(0, per_partition, 50_000):
                stop = min(per_partition, start + 50_000)
                res = p.send(topic, part, [b"%d:%d" % (part, i) for i in range(start, stop)])
                assert res.enqueued == stop - start
        assert p.flush(60) == 0
    with Admin(bootstrap) as admin:
        for part in range(partitions):
            assert admin.watermarks(topic, part) == (0, per_partition)


def processed_so_far(records_dir: str) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(records_dir, "*.bin"))) // 12


def crash_run(tmp_path, total: int, kills: int, pace: float, seed: int) -> dict:
    partitions = total // PER_PARTITION
    per_partition = PER_PARTITION
    offset_dir, records_dir = str(tmp_path / "offsets"), str(tmp_path / "records")
    os.makedirs(records_dir)
    topic = "crash"
    rng = random.Random(seed)
    with MockCluster(1) as mc:
        mc.create_topic(topic, partitions)
        produce(mc.bootstrap_servers, topic, partitions, per_partition)
        os.makedirs(offset_dir)
        reader = OffsetFileReader(offset_dir, topic)
        reader.start()
        factory = partial(crash_worker.make_consumer, mc.bootstrap_servers, topic, offset_dir,
                          records_dir, pace, BATCH)
        pool = WorkerPool(WORKERS, factory, max_restarts=None, restart_backoff=0.0,
                          stop_timeout=20.0, healthy_after=0.5)
        pool.start()
        killed_pids: set[int] = set()
        pending_at_kill = []
        started_kills = 0
        try:
            assert pool.wait_started(60), "workers did not start"
            slot = 0
            for k in range(kills):
                if k % 4:
                    # a running consumer, at a point spread along the stream
                    target = total * (k + 1) // (kills + 2)
                    wait_until(lambda t=target: processed_so_far(records_dir) >= t, 120,
                               interval=0.05, what=f"{target} messages processed")
                    slot = rng.randrange(WORKERS)
                # else: the slot killed last, whose new process is still starting up
                # (importing, taking locks, reading offsets)
                pid = wait_until(lambda s=slot: (pool.pids.get(s) not in killed_pids | {None})
                                 and pool.pids.get(s), 60, what=f"a live worker in slot {slot}")
                if k % 4:
                    wait_until(lambda s=slot, p=pid: s in pool.partitions or pool.pids.get(s) != p,
                               60, what=f"worker {pid} to start its consumer")
                time.sleep(rng.uniform(0.0, 0.3))  # the random moment (fault schedule)
                started_kills += pool.pids.get(slot) == pid and slot in pool.partitions
                pending_at_kill.append(total - processed_so_far(records_dir))
                os.kill(pid, signal.SIGKILL)
                killed_pids.add(pid)

            def finished() -> bool:
                return all(read_offset_file(offset_file_path(offset_dir, topic, p)) == per_partition - 1
                           for p in range(partitions))

            wait_until(finished, 120, interval=0.1, what="every partition's offset file at its end")
        finally:
            pool.stop(60)
            reader.halt.set()
            reader.join(10)
        restarts = sum(pool.restarts.values())
        assert pool.error is None

    # ---- what the workers recorded -------------------------------------------------------
    files = sorted(glob.glob(os.path.join(records_dir, "*.bin")),
                   key=lambda f: int(os.path.basename(f).split("-")[2]))
    seen: set[tuple[int, int]] = set()
    # per partition: what may have been processed without being stored (the in-flight window)
    unstored: dict[int, set] = {}
    counts: Counter = Counter()
    beyond_window = []
    worst = window_max = 0
    slowest_commit = 0.0
    mismatches = 0
    for f in files:
        rec = crash_worker.Records(f)
        mismatches += rec.mismatches
        slowest_commit = max(slowest_commit, rec.slowest_commit)
        mine = rec.messages
        repeated = mine & seen
        allowed = set().union(*unstored.values())
        worst = max(worst, len(repeated))
        window_max = max(window_max, max(map(len, unstored.values()), default=0))
        if not repeated <= allowed:
            beyond_window.append((os.path.basename(f), len(repeated - allowed)))
        seen |= mine
        unstored = rec.unstored(unstored)
        counts.update(m for b in rec.batches for m in b)
    everything = {(p, o) for p in range(partitions) for o in range(per_partition)}
    lost = everything - set(counts)
    duplicates = sum(c - 1 for c in counts.values())
    return {
        "seed": seed, "messages": total, "kills": kills, "restarts": restarts, "processes": len(files),
        "lost": len(lost), "unexpected": len(set(counts) - everything),
        "duplicates": duplicates, "max_duplicates_per_restart": worst,
        "largest_in_flight_window": window_max, "repeats_beyond_the_window": beyond_window,
        "slowest_offset_write_ms": round(1000 * slowest_commit, 1),
        "mismatched_payloads": mismatches, "offset_file_reads": reader.reads,
        "kills_of_running_consumers": started_kills, "reader_errors": reader.errors[:5],
        "kills_with_work_pending": sum(1 for n in pending_at_kill if n > 0),
        "pending_at_last_kill": pending_at_kill[-1],
        "temp_files_left": [n for n in os.listdir(offset_dir) if n.endswith(".tmp")],
        "final_offsets": {p: read_offset_file(offset_file_path(offset_dir, topic, p))
                          for p in range(partitions)},
    }


def seeded_run(tmp_path, total: int, kills: int, record_property=None) -> dict:
    """crash_run + check; any failure, in the run or in the checks, names the seed (and
    ``record_property`` gets it first, then every figure of the report)."""
    seed = test_seed()
    print(f"crash-safety seed {seed} (replay: RDK_TEST_SEED={seed})")
    if record_property is not None:
        record_property("seed", seed)
    try:
        report = crash_run(tmp_path, total, kills, pace=PACE, seed=seed)
        for k, v in report.items() if record_property is not None else ():
            record_property(k, v)
        check(report, total, kills)
    except BaseException as e:
        e.add_note(f"crash-safety seed {seed}: replay with RDK_TEST_SEED={seed}")
        raise
    return report


def check(report: dict, total: int, kills: int) -> None:
    print("\ncrash-safety report:", json.dumps(report, sort_keys=True))
    seed = f"[seed {report['seed']}: replay with RDK_TEST_SEED={report['seed']}]"
    assert report["lost"] == 0, seed
    assert report["unexpected"] == 0, seed
    assert report["mismatched_payloads"] == 0, seed
    assert report["reader_errors"] == [], seed
    assert report["offset_file_reads"] > 1000, seed
    assert report["temp_files_left"] == [], seed
    assert report["kills"] == kills and report["restarts"] == kills, seed
    assert report["kills_with_work_pending"] == kills, f"some kills came after the work was done {seed}"
    assert report["kills_of_running_consumers"] >= kills // 2, seed
    # a restart repeats only what its predecessor processed after the start of its last
    # completed offset write (one in-flight window), never anything stored before that
    assert report["repeats_beyond_the_window"] == [], seed
    assert report["final_offsets"] == {p: PER_PARTITION - 1 for p in range(total // PER_PARTITION)}, seed


@pytest.mark.timeout(240)
def test_sigkilled_workers_lose_nothing_and_repeat_at_most_one_window(tmp_path, record_property):
    total, kills = 200_000, 20
    seeded_run(tmp_path, total, kills, record_property)


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_soak_sigkilled_workers_lose_nothing(tmp_path):
    total, kills = 1_000_000, 100
    seeded_run(tmp_path, total, kills)
