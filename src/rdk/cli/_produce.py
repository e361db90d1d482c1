"""``rdk produce``: send lines (optionally keyed) or binary frames from a file or stdin.

Input is read in chunks of ``SEND_CHUNK`` records, each sent with one ``Producer.send``
call; delivery reports are summed, and the summary line goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from ..producer import FlushResult
from ._framing import read_frames, read_lines
from ._registry import json_values, value_serializer
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


INTERRUPTED_FLUSH = 5.0  # s: what was sent before SIGINT/SIGTERM gets this long to be delivered
_FLUSH_STEP = 0.5  # s: the final flush waits in steps of this, so that a signal cuts it short
_EXIT_CODES: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + its number


class _Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while ``rdk produce`` was reading its input."""


class _Interruption:
    """SIGINT and SIGTERM during ``rdk produce``: reading stops (a read in progress is broken
    off), a send blocked for room returns (the producer stops, with a bounded flush, on
    another thread), and the command ends with a summary and exit code 130 / 143."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.reading = False
        self.input_done = False  # the input was read to its end
        self.producer: Any = None
        self._stopper: threading.Thread | None = None
        self._stopped: Any = None

    def handle(self, signum: int, frame: Any) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if self.reading:
            raise _Interrupted
        if first and self.producer is not None:  # inside send() (it may wait for room)
            self._stopper = threading.Thread(target=self._stop, name="rdk-produce-stop",
                                             daemon=True)
            self._stopper.start()

    def _stop(self) -> None:
        self._stopped = self.producer.stop(timeout=INTERRUPTED_FLUSH)

    def stop(self, producer: Any, timeout: float) -> FlushResult:
        """``producer.stop(timeout)``, or the result of the stop a signal already began; a
        signal during the flush cuts it to INTERRUPTED_FLUSH."""
        if self._stopper is not None:
            self._stopper.join()
            return self._stopped if self._stopped is not None else FlushResult()
        deadline = time.monotonic() + timeout
        while self.signum is None and (left := deadline - time.monotonic()) > 0:
            if producer.flush(min(_FLUSH_STEP, left)).queued == 0:
                break
        if self.signum is not None:
            return producer.stop(timeout=INTERRUPTED_FLUSH)
        return producer.stop(timeout=max(0.0, deadline - time.monotonic()))

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else _EXIT_CODES.get(self.signum, 128 + self.signum)

    @property
    def name(self) -> str:
        return "" if self.signum is None else signal.Signals(self.signum).name


@contextlib.contextmanager
def _signals_handled(interruption: _Interruption) -> Iterator[None]:
    previous = {sig: signal.signal(sig, interruption.handle) for sig in _EXIT_CODES}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def cmd_produce(args: argparse.Namespace) -> int:
    """Send every input record; 0 when all were delivered, else 1; interrupted by SIGINT or
    SIGTERM: what was read is sent, flushed for up to 5 s, summarised, and the exit code is
    130 (SIGINT) or 143 (SIGTERM)."""
    if args.binary and args.key_delimiter is not None:
        raise UsageError("--key-delimiter applies to line input; --binary records carry values only")
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    accounting = _Accounting()
    interruption = _Interruption()
    started = time.monotonic()
    try:
        with _signals_handled(interruption):
            read, unsent, left = _send_all(args, stream, accounting, interruption)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    failed = read - unsent - accounting.delivered
    summary = (f"sent {accounting.delivered}, failed {failed}, "
               f"{accounting.delivered / elapsed:,.0f} msgs/s ({elapsed:.2f} s)"
               # failures are already counted above: only what was still queued at stop
               + (f"; {left.queued} still queued at stop" if left.queued else "")
               + (f"; {unsent} read but not sent" if unsent else ""))
    if interruption.signum is not None:
        when = ("the input was read to its end" if interruption.input_done
                else "input not read to the end")
        eprint(f"rdk produce: interrupted by {interruption.name} ({when}); {summary}")
    elif accounting.input_error is not None:  # one line: what was wrong, and what was sent
        eprint(f"rdk produce: error: input ends with a {accounting.input_error}; every complete "
               f"record before it was sent: {summary}")
    else:
        eprint(summary)
    for message, error in accounting.failures:
        eprint(f"  failed: {error} ({message!r})")
    if interruption.exit_code is not None:
        return interruption.exit_code
    return 0 if failed == 0 and accounting.input_error is None else 1


def _read_chunk(records: Iterator[Any], chunk: list, interruption: _Interruption) -> None:
    """Append up to SEND_CHUNK records to ``chunk``; a signal breaks off the read (what was
    read before it stays in ``chunk``)."""
    interruption.reading = True
    try:
        if interruption.signum is not None:
            return
        for record in records:
            chunk.append(record)
            if len(chunk) >= SEND_CHUNK:
                return
    except _Interrupted:
        pass
    finally:
        interruption.reading = False


METADATA_WAIT = 10.0  # s: how long the topic's partition count is asked for
_METADATA_STEP = 0.5  # s: one C call's wait, so that a signal is seen within it


def _partition_count(producer: Any, topic: str, interruption: _Interruption) -> int:
    """``producer.partition_count(topic)``, asked for up to METADATA_WAIT seconds in short
    calls while no broker answers, so that a signal ends the wait within half a second
    (_Interrupted)."""
    from ..errors import KafkaError

    deadline = time.monotonic() + METADATA_WAIT
    while True:
        if interruption.signum is not None:  # it came before the wait began
            raise _Interrupted
        left = deadline - time.monotonic()
        try:
            return int(producer.partition_count(topic, max(0.05, min(_METADATA_STEP, left))))
        except KafkaError as e:
            if e.name not in ("_TRANSPORT", "_TIMED_OUT") or deadline - time.monotonic() <= 0:
                raise


def _send_all(args: argparse.Namespace, stream: IO[bytes], accounting: _Accounting,
              interruption: _Interruption) -> tuple[int, int, FlushResult]:
    """(records read, records read but not sent, what stop() reported: ``.queued`` still
    queued, ``.failed`` failed)."""
    from ..errors import ClosedError
    from ..producer import Producer

    read = unsent = 0
    serializer = value_serializer(args)
    producer = Producer(args.brokers, balancer=args.balancer, on_queue_full="block",
                        statistics_interval_ms=0, driver_options=driver_options(args),
                        value_serializer=serializer)
    left = FlushResult()
    try:
        interruption.reading = True  # a signal during the lookup ends the command at once
        try:
            # an unknown topic: a clear error now
            count = _partition_count(producer, args.topic, interruption)
        except _Interrupted:
            interruption.reading = False  # a second signal must not break off the stop
            return read, unsent, producer.stop(timeout=INTERRUPTED_FLUSH)
        finally:
            interruption.reading = False
        if args.partition is not None and args.partition >= count:
            raise UsageError(f"-p {args.partition}: topic {args.topic!r} has {count} "
                             f"partition(s), 0..{count - 1}")
        records = _input_records(args, stream, accounting)
        if serializer is not None:
            records = json_values(records)
        with ProgressDisplay(use_rich(sys.stderr, args.progress), f"produce {args.topic}",
                             total=_total_size(stream), unit="bytes") as progress:
            while True:
                chunk: list = []
                _read_chunk(records, chunk, interruption)
                if not chunk:
                    interruption.input_done = interruption.signum is None
                    break
                read += len(chunk)
                interruption.producer = producer  # a signal now stops it (send may wait)
                try:
                    producer.send(args.topic, args.partition, chunk, on_delivery=accounting)
                except ClosedError:
                    if interruption.signum is None:
                        raise
                    unsent += len(chunk)  # the signal's stop() came first
                finally:
                    interruption.producer = None
                progress.update(_position(stream), read)
                if interruption.signum is not None:
                    break
            left = interruption.stop(producer, 60.0)
            progress.update(_position(stream), read)
    finally:
        producer.stop(timeout=5.0)  # no-op after the stop above (idempotent)
    return read, unsent, left
