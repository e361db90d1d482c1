"""``rdk consume``: write a topic's messages to stdout, recording offsets in a directory.

Each worker slot runs one rdk.Consumer, read through its ``batches()`` iterator by a writer
thread: a batch written whole is committed at once (``batch.commit()``). With ``--count N``
the writer takes from a batch only what the count still allows. When that is part of a
batch, the batch is not committed and no further batch is asked for (asking would commit
it), so stopping the consumer records nothing of it; the offsets of its written part are
then stored through rdk.offsets. Exactly the N messages written are recorded.

``--workers N`` runs the slots in N processes (rdk.workers) that share the count and
take turns writing to stdout. ``--group G`` makes the consumer (or the N processes) a Kafka
consumer group member instead: the group coordinator assigns the partitions and offsets
are committed to the group (no offset directory). ``--share G`` makes it a member of share
group G (rdk.ShareConsumer): each record written is accepted, one that cannot be written is
released (or rejected, ``--reject-on-error``), and ``--workers N`` may exceed the partitions.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..validate import check_group_id
from ._formats import encode_messages
from ._output import PipeOutput
from ._registry import encode_decoded, value_deserializer
from ._ui import ProgressDisplay, UsageError, driver_options, eprint, use_rich

if TYPE_CHECKING:
    from ..consumer import Batch
    from ..share import ShareBatch

log = logging.getLogger("rdk.cli")

_BATCH_WAIT = 0.2       # the writer waits this long for a batch before looking at `done` again
_REFRESH = 0.2          # progress refresh period of the main loop


class _Tally:
    """Messages written and the --count budget, shared by every writer (processes too).

    The lock also serialises writes to stdout, so workers never interleave output.
    """

    def __init__(self, limit: int | None, ctx: Any = None) -> None:
        self.limit = limit
        if ctx is not None:  # a multiprocessing context: the count lives in shared memory
            self._value: Any = ctx.Value("q", 0)
            self.lock = self._value.get_lock()
        else:
            self._value = SimpleNamespace(value=0)
            self.lock = threading.Lock()

    @property
    def written(self) -> int:
        return int(self._value.value)

    def take(self, n: int) -> int:
        """Reserve up to n of the budget (call with ``lock`` held); returns how many.

        A negative n gives back what was reserved but could not be written.
        """
        if n < 0:
            self._value.value += n
            return n
        k = n if self.limit is None else max(0, min(n, self.limit - self._value.value))
        self._value.value += k
        return k

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self._value.value >= self.limit


class ConsumeJob:
    """What ``rdk consume`` runs in each process: builds the writer of one worker slot.

    Picklable, so it is the ``consumer_factory`` of ``rdk.workers`` with ``--workers N``.
    """

    def __init__(self, args: argparse.Namespace, tally: _Tally) -> None:
        self.brokers, self.topic, self.offset_dir = args.brokers, args.topic, args.offset_dir
        self.format, self.start = args.format, args.start
        self.group: str | None = getattr(args, "group", None)
        self.share: str | None = getattr(args, "share", None)
        self.reject_on_error = bool(getattr(args, "reject_on_error", False))
        self.driver_options = driver_options(args)
        self.tally = tally
        # --schema-registry: the deserializer is made in each process (it holds connections)
        self.registry = SimpleNamespace(schema_registry=getattr(args, "schema_registry", None),
                                        registry_auth=getattr(args, "registry_auth", None),
                                        format=args.format)
        self.deserializer: Any = None
        value_deserializer(self.registry)  # bad options are usage errors now
        if self.share is not None and self.registry.schema_registry:
            raise UsageError("--schema-registry does not apply to --share yet")

    def __call__(self, worker_slot: int = 0, num_workers: int = 1,
                 group_id: str | None = None) -> _SlotWriter | _ShareWriter:
        if self.deserializer is None:
            self.deserializer = value_deserializer(self.registry)
        if self.share is not None:
            return _ShareWriter(self, group_id or self.share)
        return _SlotWriter(self, worker_slot, num_workers, group_id)


class _SlotWriter:
    """One worker slot's consumer and the thread that writes its batches to stdout.

    ``start()``/``stop(timeout)``/``error``: what rdk.workers expects of a consumer.
    """

    def __init__(self, job: ConsumeJob, worker_slot: int, num_workers: int,
                 group_id: str | None = None) -> None:
        from ..consumer import Consumer

        self.job = job
        self.done = threading.Event()
        where: dict[str, Any] = ({"group_id": group_id} if group_id is not None
                                 else {"worker_slot": worker_slot, "num_workers": num_workers})
        self.consumer = Consumer(job.brokers, job.topic, job.offset_dir,
                                 start_offset=job.start or "earliest",
                                 logger=log, statistics_interval_ms=0,
                                 driver_options=job.driver_options,
                                 value_deserializer=job.deserializer, **where)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._output = PipeOutput.of_stdout()  # a pipe: a batch counts once its reader took it

    @property
    def error(self) -> BaseException | None:
        """What ended the writing early (the consumer's KafkaError, usually), if anything."""
        return self._error if self._error is not None else self.consumer.error

    def start(self) -> list[int]:
        """Start the consumer (errors raise here) and the writer thread; the owned partitions."""
        self.consumer.batches()  # starts the consumer: partition locks, stored offsets, fetching
        self._thread = threading.Thread(target=self._write_loop, daemon=True,
                                        name=f"rdk-cli-write-{self.job.topic}")
        self._thread.start()
        if self._output is not None:
            self._output.watch(self._reader_left, self.done)
        return list(self.consumer.partitions)

    def _reader_left(self) -> None:
        """stdout's reader closed the pipe: writing is over, even with nothing to write."""
        self._end_pool()
        self.done.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop writing, then stop the consumer (it stores the written batches' offsets)."""
        deadline = time.monotonic() + timeout
        self.done.set()
        if self._thread is not None:
            self._thread.join(timeout * 0.8)  # keep time for the consumer's offset writes
            if self._thread.is_alive():
                log.warning("rdk consume: stdout did not take the last batch within "
                            "stop(timeout=%s); its offsets are not recorded", timeout)
        self.consumer.stop(max(deadline - time.monotonic(), timeout * 0.2))

    def _write_loop(self) -> None:
        from ..errors import KafkaError

        try:
            while not self.done.is_set():
                # a new iterator after each quiet period, so that `done` is seen
                for batch in self.consumer.batches(timeout=_BATCH_WAIT):
                    # never ask for another batch after a cut one: asking commits it
                    if not self._write(batch) or self.done.is_set():
                        return
        except KafkaError as e:  # what stopped the consumer (batches() raises it)
            self._error = e
        except Exception as e:  # a bug: reported, and the run fails (exit code 1)
            log.exception("rdk consume: writing batches failed")
            self._error = e
        finally:
            self.done.set()

    def _write(self, batch: Batch) -> bool:
        """Write what the count still allows of ``batch``; False when writing is over."""
        messages = batch.messages
        tally = self.job.tally
        with tally.lock:
            k = 0 if self.done.is_set() else tally.take(len(messages))
            if k:
                try:
                    encode = encode_messages if self.job.deserializer is None else encode_decoded
                    data = encode(messages if k == len(messages) else messages[:k], self.job.format)
                    taken = sys.stdout.buffer.write(data)
                    sys.stdout.buffer.flush()
                    if taken is not None and taken < len(data):
                        # a reader gone mid-batch: BufferedWriter returns the part the pipe
                        # took and drops the EPIPE; none of this batch counts as written
                        raise BrokenPipeError(f"stdout took {taken} of {len(data)} bytes")
                    if self._output is not None and not self._output.drained(self.done):
                        # in the pipe, not read: the reader left (or we stop) before taking it
                        raise BrokenPipeError("stdout's reader did not take the last batch")
                except (BrokenPipeError, ValueError):  # the reader is gone: stop
                    tally.take(-k)  # not written after all
                    self._end_pool()
                    return False
            exhausted = tally.exhausted
        if k < len(messages):
            # the written part is recorded now, while this member still owns the partitions
            # (in group mode a rebalance may revoke them before stop())
            written: dict[int, int] = {}
            for m in messages[:k]:
                written[m.partition] = max(written.get(m.partition, -1), m.offset)
            batch.commit_through(written)
            self._end_pool()
            return False
        batch.commit()
        if exhausted:
            self._end_pool()
        return not exhausted

    def _end_pool(self) -> None:
        """Writing is over (not asked by stop()): in a worker process, stop every worker."""
        from .. import workers

        if not self.done.is_set() and workers.current_slot() is not None:
            workers.request_stop()


class _ShareWriter:
    """A share group member (rdk.ShareConsumer) whose callback writes each batch to stdout.

    A record written is accepted; one the --count no longer allows is released; one that
    cannot be encoded or written is released, or rejected with --reject-on-error. An output
    error other than a closed pipe also ends the run (exit 1). ``start()``/``stop(timeout)``/
    ``error``: what rdk.workers expects of a consumer.
    """

    def __init__(self, job: ConsumeJob, group_id: str) -> None:
        from ..share import ShareConsumer

        self.job = job
        self.group_id = group_id
        self.done = threading.Event()
        self._error: BaseException | None = None
        self.consumer = ShareConsumer(job.brokers, job.topic, self._handle, group_id=group_id,
                                      start_offset=job.start, logger=log,
                                      driver_options=job.driver_options)
        self._output = PipeOutput.of_stdout()  # a pipe: a record is accepted once read

    @property
    def error(self) -> BaseException | None:
        """What ended the writing early (an output error, the consumer's KafkaError)."""
        return self._error if self._error is not None else self.consumer.error

    def start(self) -> list[int]:
        """Join the share group (errors raise here); ``[]``: the broker shares out records,
        not partitions."""
        self.consumer.start()
        if self._output is not None:
            self._output.watch(self._end, self.done)
        return []

    def stop(self, timeout: float = 30.0) -> None:
        """Stop: the batch being written is finished and acknowledged, then committed."""
        self.done.set()
        self.consumer.stop(timeout)

    def summary(self) -> str:
        s = self.consumer.stats()
        return f"accepted {s.accepted}, released {s.released}, rejected {s.rejected}"

    def _handle(self, info: ShareBatch) -> None:
        """Write what the count allows of the batch; settle what was not written."""
        messages = info.messages
        tally = self.job.tally
        failed: list[Any] = []
        with tally.lock:
            k = 0 if self.done.is_set() else tally.take(len(messages))
            if k:
                data, failed = _encode_share(messages[:k], self.job.format)
                try:
                    sys.stdout.buffer.write(data)
                    sys.stdout.buffer.flush()
                    if self._output is not None and not self._output.drained(self.done):
                        raise BrokenPipeError("stdout's reader did not take the last batch")
                except (BrokenPipeError, ValueError):  # the reader is gone: release, stop
                    tally.take(-k)
                    k, failed = 0, []
                    self._end()
                except OSError as e:  # stdout takes no output: these records failed
                    log.error("rdk consume: writing to stdout failed: %s", e)
                    self._error = e
                    failed = messages[:k]
                if failed:
                    tally.take(-len(failed))  # not written after all
            exhausted = tally.exhausted
        settle = info.reject if self.job.reject_on_error else info.release
        for m in failed:
            settle(m)
        for m in messages[k:]:  # not written (beyond the count, or stopping): given back
            info.release(m)
        if exhausted or self._error is not None:
            self._end()

    def _end(self) -> None:
        """Writing is over: stop this member (and in a worker process, the whole pool)."""
        from .. import workers

        if not self.done.is_set():
            self.done.set()
            # stop fetching now (from the callback this only asks; the share thread ends once
            # the callback returned): a member that went on fetching until the main thread
            # stopped it would release the same records again and again, and each release
            # counts towards the broker's delivery limit, past which a record is archived
            self.consumer.stop()
            if workers.current_slot() is not None:
                workers.request_stop()


_FORMAT_ERRORS = (ValueError, TypeError, OverflowError)  # what encoding a record may raise


def _encode_share(messages: list[Any], fmt: str) -> tuple[bytes, list[Any]]:
    """The output of ``messages`` (ShareMessages: their first 7 fields are a Message's), and
    the messages that could not be encoded (left out of the output)."""
    rows = [m[:7] for m in messages]
    try:
        return encode_messages(rows, fmt), []
    except _FORMAT_ERRORS:  # find the record(s) at fault: encode one by one
        parts, failed = [], []
        for m, row in zip(messages, rows, strict=True):
            try:
                parts.append(encode_messages([row], fmt))
            except _FORMAT_ERRORS as e:
                log.warning("rdk consume: cannot write %s[%d]@%d as %s: %r", m.topic,
                            m.partition, m.offset, fmt, e)
                failed.append(m)
        return b"".join(parts), failed


@contextlib.contextmanager
def _stop_on_signals(request_stop: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM call ``request_stop`` instead of interrupting."""
    previous = {sig: signal.signal(sig, lambda *_: request_stop())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _check_consume_args(args: argparse.Namespace) -> tuple[int, int]:
    """(worker_slot, num_workers) of a single-process run; UsageError for bad combinations."""
    if args.workers is not None and (args.slot is not None or args.of is not None):
        raise UsageError("--workers N and --slot I --of N exclude each other")
    group = getattr(args, "group", None)
    for flag, value in (("--group", group), ("--share", getattr(args, "share", None))):
        if value is not None:
            try:
                check_group_id(value, flag)
            except ValueError as e:
                raise UsageError(str(e)) from None
    if getattr(args, "share", None) is not None:
        if group is not None or args.offset_dir is not None:
            raise UsageError("--share G excludes --group and --offset-dir (the share group "
                             "keeps the progress)")
        if args.slot is not None or args.of is not None:
            raise UsageError("--share G and --slot I --of N exclude each other (every member "
                             "of a share group reads every partition)")
        return (0, 1)
    if getattr(args, "reject_on_error", False):
        raise UsageError("--reject-on-error needs --share G")
    if group is not None:
        if args.slot is not None or args.of is not None:
            raise UsageError("--group G and --slot I --of N exclude each other (the group "
                             "coordinator assigns the partitions)")
        if args.offset_dir is not None:
            raise UsageError("--group G commits offsets to the group: leave out --offset-dir")
    elif args.offset_dir is None:
        raise UsageError("--offset-dir DIR is required (or --group G)")
    if (args.slot is None) != (args.of is None):
        raise UsageError("--slot I and --of N go together")
    if args.slot is not None and args.slot >= args.of:
        raise UsageError(f"--slot must be in 0..{args.of - 1} for --of {args.of}, got {args.slot}")
    return (args.slot or 0, args.of or 1)


def cmd_consume(args: argparse.Namespace) -> int:
    """Write messages until interrupted or --count is reached; 1 if the consumer failed."""
    slot, of = _check_consume_args(args)
    started = time.monotonic()
    progress_on = use_rich(sys.stderr, args.progress)
    if args.workers is not None:
        return _consume_workers(args, progress_on, started)
    tally = _Tally(args.count)
    writer = ConsumeJob(args, tally)(slot, of, getattr(args, "group", None))
    share = getattr(args, "share", None)
    stop = threading.Event()
    with _stop_on_signals(stop.set):
        partitions = writer.start()
        try:
            with ProgressDisplay(progress_on, f"consume {args.topic}", total=args.count) as progress:
                while not (stop.is_set() or writer.done.is_set()):
                    stop.wait(_REFRESH)  # a progress refresh period; the loop ends on events
                    progress.update(tally.written, tally.written)
                progress.update(tally.written, tally.written)
        finally:
            writer.stop()
    where = (f"group {args.group}" if getattr(args, "group", None) is not None
             else f"partitions {partitions}")
    if isinstance(writer, _ShareWriter):
        where = f"share group {share}; {writer.summary()}"
    _summary(tally.written, where, started)
    if writer.error is not None:
        eprint(f"rdk consume: error: {writer.error}")
        return 1
    return 0


def _precheck_topic(args: argparse.Namespace, num_workers: int) -> int:
    from ..admin import Admin

    with Admin(args.brokers, driver_options(args)) as admin:
        count = admin.partition_count(args.topic)
    if count < num_workers:
        raise UsageError(f"topic {args.topic!r} has {count} partition(s), fewer than the "
                         f"{num_workers} worker slots")
    return count


def _consume_workers(args: argparse.Namespace, progress_on: bool, started: float) -> int:
    import multiprocessing

    from ..workers import WorkerPool

    share = getattr(args, "share", None)
    group = getattr(args, "group", None) or share  # a share group: one member per process
    _precheck_topic(args, args.workers if group is None else 1)
    tally = _Tally(args.count, multiprocessing.get_context("spawn"))
    pool = WorkerPool(args.workers, ConsumeJob(args, tally), group_id=group)
    with pool.stop_on_signals():
        pool.start()
        with ProgressDisplay(progress_on, f"consume {args.topic}", total=args.count) as progress:
            while not pool.wait(_REFRESH):  # a progress refresh period; the loop ends on an event
                progress.update(tally.written, tally.written)
            progress.update(tally.written, tally.written)
    kind = "share group" if share is not None else "group"
    _summary(tally.written, f"{args.workers} workers" + (f", {kind} {group}" if group else ""),
             started)
    if pool.error is not None:
        eprint(f"rdk consume: error: {pool.error}")
        return 1
    return 0


def _summary(written: int, where: str, started: float) -> None:
    elapsed = max(time.monotonic() - started, 1e-9)
    eprint(f"consumed {written} messages ({where}) in {elapsed:.2f} s, "
           f"{written / elapsed:,.0f} msgs/s")
