"""The consumer that runs in each worker process of the crash-safety test.

Every batch is checked (payload ``b"<partition>:<offset>"``), then "processed" at a fixed
pace, then recorded in the process's own file with one ``os.write`` *before* the callback
returns (so before its offsets can be stored). A SIGKILL therefore never loses a record of
work whose offsets were stored; a torn last record is recognisable by its length.

The offsets go to the usual offset files through rdk's FileOffsetStore, with a marker
record written into the same file when each commit starts and when it has completed. A
restarted process resumes at what the last *completed* commit stored, so what it may repeat
is exactly what its predecessor recorded after that commit started: the in-flight window.

Record layout (little endian): magic u32, count u32, field u32, then for a batch (``MAGIC``,
field = payload mismatches) count int32 partitions and count int64 offsets; for a commit
marker (``COMMIT_START`` / ``COMMIT_END``, count 0) field is the commit's sequence number,
and an end marker is followed by a u32 duration in microseconds.
"""

from __future__ import annotations

import itertools
import os
import struct
import time
from array import array
from functools import partial

import rdk
from rdk.offsets import FileOffsetStore

MAGIC = 0x52444B31
COMMIT_START = 0x52444B32
COMMIT_END = 0x52444B33
HEADER = struct.Struct("<III")
DURATION = struct.Struct("<I")


def _on_batch(fd: int, pace: float, batch) -> None:
    parts = array("i")
    offs = array("q")
    bad = 0
    for m in batch.messages:
        parts.append(m.partition)
        offs.append(m.offset)
        if m.value != b"%d:%d" % (m.partition, m.offset):
            bad += 1
    if pace:
        time.sleep(len(offs) * pace)  # the "work", so kills land mid-stream
    os.write(fd, HEADER.pack(MAGIC, len(offs), bad) + parts.tobytes() + offs.tobytes())


class MarkedStore:
    """rdk's FileOffsetStore, with start/end markers of each commit in the record file."""

    def __init__(self, directory: str, topic: str, fd: int) -> None:
        self.inner = FileOffsetStore(directory, topic)
        self.fd = fd
        self.seq = itertools.count(1)

    def read(self, partitions):
        return self.inner.read(partitions)

    def commit(self, offsets) -> None:
        n = next(self.seq)
        os.write(self.fd, HEADER.pack(COMMIT_START, 0, n))
        t0 = time.monotonic()
        self.inner.commit(offsets)
        took = min(int((time.monotonic() - t0) * 1e6), 2**32 - 1)
        os.write(self.fd, HEADER.pack(COMMIT_END, 0, n) + DURATION.pack(took))


def make_consumer(broker: str, topic: str, offset_dir: str, records_dir: str, pace: float,
                  batch: int, *, worker_slot: int, num_workers: int, **kw) -> rdk.Consumer:
    """Factory for rdk.workers: a Consumer of one slot that records what it processes."""
    name = f"rec-{worker_slot}-{time.time_ns()}-{os.getpid()}.bin"
    fd = os.open(os.path.join(records_dir, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return rdk.Consumer(broker, topic, offset_dir, partial(_on_batch, fd, pace),
                        max_messages_per_callback=batch, worker_slot=worker_slot,
                        num_workers=num_workers, driver_options={"log_level": 3},
                        offset_store=MarkedStore(offset_dir, topic, fd), **kw)


class Records:
    """One worker process's record file, parsed."""

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            data = f.read()
        self.batches: list[list[tuple[int, int]]] = []
        self.mismatches = 0
        self.slowest_commit = 0.0
        starts: dict[int, int] = {}  # commit seq -> number of batches recorded before it started
        last_done: int | None = None  # batches recorded before the last completed commit began
        pos = 0
        while pos + HEADER.size <= len(data):
            magic, n, field = HEADER.unpack_from(data, pos)
            body = pos + HEADER.size
            if magic == COMMIT_START:
                starts[field] = len(self.batches)
                pos = body
            elif magic == COMMIT_END and body + DURATION.size <= len(data):
                last_done = starts[field]
                self.slowest_commit = max(self.slowest_commit,
                                          DURATION.unpack_from(data, body)[0] / 1e6)
                pos = body + DURATION.size
            elif magic == MAGIC and body + 12 * n <= len(data):
                parts = array("i", data[body:body + 4 * n])
                offs = array("q", data[body + 4 * n:body + 12 * n])
                self.batches.append(list(zip(parts, offs, strict=True)))
                self.mismatches += field
                pos = body + 12 * n
            else:
                break  # a torn last record (killed mid-write)
        self.torn = pos != len(data)
        self.last_done = last_done  # batches recorded before the last completed commit began

    def unstored(self, before: dict[int, set]) -> dict[int, set]:
        """Per partition, what this process may have processed without storing it, given
        ``before`` (the same for the offsets stored when it started).

        A completed commit stores every batch settled when it began: all but, at most, the
        batch recorded just before its start marker (whose settling may have raced it). A
        partition that no completed commit covers keeps what was unstored before."""
        out = {p: set(ms) for p, ms in before.items()}
        covered: set[int] = set()
        if self.last_done is not None:
            covered = {p for b in self.batches[:max(0, self.last_done - 1)] for p, _ in b}
            for p in covered:
                out[p] = set()
        start = max(0, (self.last_done or 0) - 1)
        for i, b in enumerate(self.batches):
            for p, o in b:
                if p not in covered or i >= start:
                    out.setdefault(p, set()).add((p, o))
        return out

    @property
    def messages(self) -> set[tuple[int, int]]:
        return {m for b in self.batches for m in b}
