"""The consumer that runs in each worker process of the crash-safety test.

Every batch is checked (payload ``b"<partition>:<offset>"``), then "processed" at a fixed
pace, then recorded in the process's own file with one ``os.write`` *before* the callback
returns (so before its offsets can be stored). A SIGKILL therefore never loses a record of
work whose offsets were stored; a torn last record is recognisable by its length.

Record layout (little endian): magic u32, count u32, mismatches u32, then count int32
partitions and count int64 offsets.
"""

from __future__ import annotations

import os
import struct
import time
from array import array
from functools import partial

import rdk

MAGIC = 0x52444B31
HEADER = struct.Struct("<III")


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


def make_consumer(broker: str, topic: str, offset_dir: str, records_dir: str, pace: float,
                  batch: int, *, worker_slot: int, num_workers: int, **kw) -> rdk.Consumer:
    """Factory for rdk.workers: a Consumer of one slot that records what it processes."""
    name = f"rec-{worker_slot}-{time.time_ns()}-{os.getpid()}.bin"
    fd = os.open(os.path.join(records_dir, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return rdk.Consumer(broker, topic, offset_dir, partial(_on_batch, fd, pace),
                        max_messages_per_callback=batch, worker_slot=worker_slot,
                        num_workers=num_workers, driver_options={"log_level": 3}, **kw)


def read_records(path: str) -> tuple[array, array, int, bool]:
    """(partitions, offsets, mismatches, torn_tail) of one record file."""
    with open(path, "rb") as f:
        data = f.read()
    parts, offs, bad, pos = array("i"), array("q"), 0, 0
    while pos + HEADER.size <= len(data):
        magic, n, mism = HEADER.unpack_from(data, pos)
        end = pos + HEADER.size + 12 * n
        if magic != MAGIC or end > len(data):
            break
        body = pos + HEADER.size
        parts.frombytes(data[body:body + 4 * n])
        offs.frombytes(data[body + 4 * n:end])
        bad += mism
        pos = end
    return parts, offs, bad, pos != len(data)
