"""Crash safety of offset files: a writer SIGKILLed at random moments never leaves a file
that does not parse, never moves an offset backwards, and leaves no temp file behind once
the next owner of the partitions starts. The writer commits back to back, so it both swaps
its kept temp files and, within their settle time, renames fresh ones."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from rdk.offsets import (
    SYNCFS_MIN_FILES,
    list_offset_files,
    lock_partitions,
    read_offset_file,
    remove_temp_files,
)

KILLS = 20

# Takes the partitions' locks (cleaning up a killed predecessor's temp files, as a
# Consumer does), then records ever larger offsets through the committer as fast as it can.
WRITER = """
import itertools, logging, sys
from rdk.offsets import FileOffsetStore, OffsetCommitter, lock_partitions, read_offset_file, \
    remove_temp_files, offset_file_path
d, topic, parts = sys.argv[1], sys.argv[2], [int(p) for p in sys.argv[3].split(",")]
if len(sys.argv) > 4:
    from rdk.offsets import _files
    _files.SHADOW_SETTLE_SECONDS = float(sys.argv[4])
lock = lock_partitions(d, topic, parts)
remove_temp_files(d, topic, parts)
store = FileOffsetStore(d, topic)
start = max([read_offset_file(offset_file_path(d, topic, p)) or 0 for p in parts])
committer = OffsetCommitter(store, logging.getLogger("writer"))
print("ready", flush=True)
for n in itertools.count(start + 1):
    committer.record({p: n for p in parts})
    if n % 50 == 0:
        committer.flush()
"""


# few files per flush: one fsync each; many: one syncfs for all of them. "rewrites": kept temp
# files settle after 5 ms, so the killed writers also rewrite and swap them (in a consumer,
# commits of many files are seconds apart and the settle time a second)
@pytest.mark.parametrize(("partitions", "settle"), [
    ([0, 1, 2], None), (list(range(5 * SYNCFS_MIN_FILES)), None), ([0, 1, 2], 0.005),
    (list(range(5 * SYNCFS_MIN_FILES)), 0.005)],
    ids=["fsync-each", "syncfs", "fsync-each-rewrites", "syncfs-rewrites"])
def test_sigkilled_writer_leaves_parseable_monotonic_files_and_no_temp_files(tmp_path, partitions,
                                                                             settle, rdk_seed):
    rng = random.Random(rdk_seed)
    topic = "crash.topic"
    seen = {p: -1 for p in partitions}
    reads = 0
    stop_reader = threading.Event()
    reader_errors: list[BaseException] = []

    def reader():  # reads files while they are being replaced: every read must parse
        nonlocal reads
        while not stop_reader.is_set():
            for f in list_offset_files(tmp_path, topic):
                try:
                    assert read_offset_file(f.path) is not None
                    reads += 1
                except BaseException as e:
                    reader_errors.append(e)
                    return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        for _ in range(KILLS):
            proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), topic,
                                     ",".join(map(str, partitions))] + ([str(settle)] if settle else []),
                                    stdout=subprocess.PIPE, text=True)
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.05))  # a random moment, not a synchronisation
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            proc.stdout.close()
            for p in partitions:
                value = read_offset_file(tmp_path / f"{topic}-{p}.offset")
                if value is None:  # killed before its first write
                    assert seen[p] == -1
                    continue
                assert value >= seen[p], f"partition {p} went back from {seen[p]} to {value}"
                seen[p] = value
            temps = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
            # at most the killed writer's own: per partition its kept file (a former value,
            # swapped out) and a fresh one being written within the settle time
            assert len(temps) <= 2 * len(partitions), temps
    finally:
        stop_reader.set()
        t.join(10)
    assert not reader_errors, reader_errors[0]
    assert reads > 0
    assert max(seen.values()) > 0, "the writer never stored anything"
    # The next owner of the partitions cleans up what the last killed writer left.
    with lock_partitions(tmp_path, topic, partitions):
        remove_temp_files(tmp_path, topic, partitions)
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []
