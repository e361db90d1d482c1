"""``rdk produce``: send lines (optionally keyed) or binary frames from a file or stdin.

Input is read in chunks of ``SEND_CHUNK`` records, each sent with one ``Producer.send``
call; delivery reports are summed, and the summary line goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Iterator
from itertools import islice
from typing import IO, Any

from ..producer import FlushResult
from ._framing import read_frames, read_lines
from ._ui import ProgressDisplay, UsageError, driver_options, eprint, use_rich

SEND_CHUNK = 10000


class _Accounting:
    """Delivered messages, summed from every send()'s on_delivery (event thread), and the
    input's own error (a truncated last frame) once every complete record before it was sent."""

    def __init__(self) -> None:
        self.delivered = 0
        self.failures: list[Any] = []
        self.input_error: ValueError | None = None

    def __call__(self, delivered: int, failures: list) -> None:
        self.delivered += delivered
        if failures and len(self.failures) < 5:
            self.failures += failures[: 5 - len(self.failures)]


def _complete_frames(stream: IO[bytes], accounting: _Accounting) -> Iterator[Any]:
    """Every complete frame (a null frame is a tombstone: no key, null value); a truncated
    tail ends the input and is kept in ``accounting.input_error``, so what came before it is
    still sent."""
    try:
        for v in read_frames(stream):
            yield v if v is not None else (None, None)
    except ValueError as e:
        accounting.input_error = e


def _input_records(args: argparse.Namespace, stream: IO[bytes], accounting: _Accounting) -> Iterator[Any]:
    if args.binary:
        return _complete_frames(stream, accounting)
    lines = read_lines(stream)
    if args.key_delimiter is None:
        return lines
    sep = args.key_delimiter
    return ((line[:i], line[i + len(sep):]) if (i := line.find(sep)) >= 0 else (None, line)
            for line in lines)


def _total_size(stream: IO[bytes]) -> int | None:
    """The input's size when it is a regular file (for the progress bar), else None."""
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _position(stream: IO[bytes]) -> int:
    try:
        return stream.tell()
    except (OSError, ValueError):
        return 0


def cmd_produce(args: argparse.Namespace) -> int:
    """Send every input record; 0 when all were delivered, else 1."""
    if args.binary and args.key_delimiter is not None:
        raise UsageError("--key-delimiter applies to line input; --binary records carry values only")
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    accounting = _Accounting()
    started = time.monotonic()
    try:
        read, left = _send_all(args, stream, accounting)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    failed = read - accounting.delivered
    summary = (f"sent {accounting.delivered}, failed {failed}, "
               f"{accounting.delivered / elapsed:,.0f} msgs/s ({elapsed:.2f} s)"
               # failures are already counted above: only what was still queued at stop
               + (f"; {left.queued} still queued at stop" if left.queued else ""))
    if accounting.input_error is not None:  # one line: what was wrong, and what was sent
        eprint(f"rdk produce: error: input ends with a {accounting.input_error}; every complete "
               f"record before it was sent: {summary}")
    else:
        eprint(summary)
    for message, error in accounting.failures:
        eprint(f"  failed: {error} ({message!r})")
    return 0 if failed == 0 and accounting.input_error is None else 1


def _send_all(args: argparse.Namespace, stream: IO[bytes],
              accounting: _Accounting) -> tuple[int, FlushResult]:
    """(records read, what stop() reported: ``.queued`` still queued, ``.failed`` failed)."""
    from ..producer import Producer

    read = 0
    producer = Producer(args.brokers, balancer=args.balancer, on_queue_full="block",
                        statistics_interval_ms=0, driver_options=driver_options(args))
    try:
        count = producer.partition_count(args.topic)  # unknown topic: a clear error now
        if args.partition is not None and args.partition >= count:
            raise UsageError(f"-p {args.partition}: topic {args.topic!r} has {count} "
                             f"partition(s), 0..{count - 1}")
        records = _input_records(args, stream, accounting)
        with ProgressDisplay(use_rich(sys.stderr, args.progress), f"produce {args.topic}",
                             total=_total_size(stream), unit="bytes") as progress:
            while chunk := list(islice(records, SEND_CHUNK)):
                producer.send(args.topic, args.partition, chunk, on_delivery=accounting)
                read += len(chunk)
                progress.update(_position(stream), read)
            left = producer.stop(timeout=60.0)
            progress.update(_position(stream), read)
    finally:
        producer.stop(timeout=5.0)
    return read, left
