"""The ``rdk`` command line (also ``python -m rdk``).

Subcommands: produce, consume, offsets show/set, stats, mock, version, bench. Each one's
``--help`` shows examples. Bad arguments print one line and exit with code 2; a failure
at run time prints one line and exits with code 1.

Binary framing (``rdk produce --binary`` reads it, ``rdk consume --format raw`` writes it):
each record is a 4-byte big-endian unsigned length N followed by N bytes of value;
N = 0xFFFFFFFF marks a null value (a tombstone) and no bytes follow.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import logging
import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from json.encoder import encode_basestring as _json_string
from pathlib import Path
from typing import IO, Any, NoReturn

from .validate import check_broker, check_topic_name

__all__ = ["NULL_FRAME", "build_parser", "main", "read_frames", "write_frame"]

NULL_FRAME = 0xFFFFFFFF
_HEADER = struct.Struct(">I")
SEND_CHUNK = 10000


class UsageError(Exception):
    """A bad argument found after parsing; reported like argparse's errors (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


# ---- argument types --------------------------------------------------------------------


def _type(check: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return check(text)
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = getattr(check, "__name__", "value")
    return convert


def _int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be >= {minimum}, got {value}")
        return value

    convert.__name__ = what
    return convert


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _offset_target(text: str) -> str | int:
    if text in ("earliest", "latest"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--to must be earliest, latest or an offset (an integer >= 0), got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"--to offset must be >= 0, got {value}")
    return value


def _key_delimiter(text: str) -> bytes:
    if not text:
        raise argparse.ArgumentTypeError("--key-delimiter must not be empty")
    return text.encode()


BROKERS = _type(check_broker)
TOPIC = _type(check_topic_name)


# ---- output helpers ----------------------------------------------------------------------


def _use_rich(stream: IO, forced: bool = False) -> bool:
    return forced or (hasattr(stream, "isatty") and stream.isatty())


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                rich_output: bool, out: IO | None = None) -> None:
    """A rich table on a terminal, else aligned plain text (one header line, one row per line)."""
    out = out or sys.stdout
    if rich_output:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for c in columns:
            table.add_column(c, justify="left" if c == "topic" else "right")
        for r in rows:
            table.add_row(*("" if v is None else str(v) for v in r))
        Console(file=out).print(table)
        return
    out.write(_plain_table(columns, rows))
    out.flush()


def _plain_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [list(columns)] + [["-" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "".join("  ".join(v.ljust(w) if i == 0 and columns[0] == "topic" else v.rjust(w)
                             for i, (v, w) in enumerate(zip(row, widths))).rstrip() + "\n"
                   for row in cells)


class _Progress:
    """A rich progress display on stderr, or nothing (when not on a TTY and not forced)."""

    def __init__(self, enabled: bool, description: str, total: float | None = None,
                 unit: str = "msgs") -> None:
        self._progress = None
        self._task = None
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            columns = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
            if total is not None:
                columns += [BarColumn(), MofNCompleteColumn() if unit != "bytes" else
                            TextColumn("{task.percentage:>3.0f}%")]
            columns += [TextColumn("{task.fields[msgs]} msgs"), TimeElapsedColumn()]
            self._progress = Progress(*columns, console=Console(file=sys.stderr), transient=False)
            self._task = self._progress.add_task(description, total=total, msgs=0)

    def __enter__(self) -> _Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def update(self, completed: float, msgs: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, msgs=msgs)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def _eprint(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---- binary framing ----------------------------------------------------------------------


def write_frame(out: IO[bytes], value: bytes | None) -> None:
    """Write one record in rdk's framing (4-byte big-endian length, then the bytes)."""
    if value is None:
        out.write(_HEADER.pack(NULL_FRAME))
    else:
        out.write(_HEADER.pack(len(value)) + value)


def frame(value: bytes | None) -> bytes:
    """One record in rdk's framing, as bytes."""
    return _HEADER.pack(NULL_FRAME) if value is None else _HEADER.pack(len(value)) + value


def read_frames(stream: IO[bytes]) -> Iterator[bytes | None]:
    """Records from rdk's framing; ValueError naming the byte position on a truncated record."""
    pos = 0
    while True:
        head = stream.read(4)
        if not head:
            return
        if len(head) < 4:
            raise ValueError(f"truncated frame header at byte {pos}: {len(head)} of 4 bytes")
        (n,) = _HEADER.unpack(head)
        pos += 4
        if n == NULL_FRAME:
            yield None
            continue
        body = stream.read(n)
        if len(body) < n:
            raise ValueError(f"truncated frame at byte {pos - 4}: expected {n} bytes, got {len(body)}")
        pos += n
        yield body


def _read_lines(stream: IO[bytes]) -> Iterator[bytes]:
    for line in stream:
        yield line[:-1] if line.endswith(b"\n") else line


# ---- version / mock / bench ----------------------------------------------------------------


def cmd_version(args: argparse.Namespace) -> int:
    from . import __version__
    from ._binding import built_against, features, librdkafka_version

    built = built_against()
    print(f"rdk {__version__}")
    print(f"librdkafka {librdkafka_version()} (built against "
          f"{built >> 24}.{(built >> 16) & 0xFF}.{(built >> 8) & 0xFF})")
    print(f"features: {', '.join(sorted(features()))}")
    return 0


def cmd_mock(args: argparse.Namespace) -> int:
    from . import mock

    if args.brokers < 1:
        raise UsageError(f"--brokers must be >= 1, got {args.brokers}")
    return mock.serve(args.brokers, args.topic)


def bench_candidates() -> list[Path]:
    """Where bench/run.py is looked for: rdk's source tree, then the current directory."""
    here = Path(__file__).resolve()
    return [here.parents[2] / "bench" / "run.py", Path.cwd() / "bench" / "run.py"]


def find_bench() -> Path | None:
    """bench/run.py of the source tree rdk runs from (or of the current directory), if any."""
    return next((c for c in bench_candidates() if c.is_file()), None)


def cmd_bench(args: argparse.Namespace) -> int:
    path = find_bench()
    if path is None:
        looked = " or ".join(str(c) for c in dict.fromkeys(bench_candidates()))
        _eprint(f"rdk bench: error: bench/run.py was not found (looked for {looked}). The "
                "benchmarks ship with rdk's source repository, not with the installed package: "
                "run `rdk bench` from a clone of the repository.")
        return 1
    import importlib.util

    spec = importlib.util.spec_from_file_location("rdk_bench_run", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "main"):
            _eprint(f"rdk bench: error: {path} has no main(argv) function")
            return 1
        result = module.main(list(args.bench_args))
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(path.parent))
    return int(result or 0)


# ---- parser ---------------------------------------------------------------------------------

EXAMPLES = {
    "produce": """examples:
  rdk produce -b localhost:9092 -t events < lines.txt
  rdk produce -b localhost:9092 -t events -p 0 messages.txt
  rdk produce -b localhost:9092 -t events --key-delimiter : --balancer murmur2_random keyed.txt
  rdk consume -b localhost:9092 -t src --offset-dir off --format raw | \\
      rdk produce -b localhost:9092 -t copy --binary -

input: one message per line (the trailing newline is removed), or with --binary records
framed as a 4-byte big-endian length N then N bytes (N = 0xFFFFFFFF: a null value).
With --key-delimiter SEP, a line's text before the first SEP is its key.""",
    "consume": """examples:
  rdk consume -b localhost:9092 -t events --offset-dir ./offsets
  rdk consume -b localhost:9092 -t events --offset-dir ./offsets --format json --count 100
  rdk consume -b localhost:9092 -t events --offset-dir ./offsets --workers 4
  rdk consume -b localhost:9092 -t events --offset-dir ./offsets --slot 1 --of 4 --from latest

formats: value (each value then a newline), json (one object per line; key, value and
header values are strings when valid UTF-8, else {"base64": ...}), raw (rdk's binary
framing, see rdk produce --help). Offsets are recorded in --offset-dir exactly as
rdk.Consumer records them; with --count N exactly the N messages written are recorded.""",
    "offsets": """examples:
  rdk offsets show ./offsets
  rdk offsets show ./offsets -b localhost:9092
  rdk offsets set ./offsets -t events --to earliest -b localhost:9092
  rdk offsets set ./offsets -t events -p 3 --to 1500""",
    "offsets show": """examples:
  rdk offsets show ./offsets
  rdk offsets show ./offsets -b localhost:9092     # adds low/high watermarks and lag""",
    "offsets set": """examples:
  rdk offsets set ./offsets -t events -p 3 --to 1500      # next message consumed: offset 1500
  rdk offsets set ./offsets -t events --to earliest -b localhost:9092
  rdk offsets set ./offsets -t events -p 0 --to latest -b localhost:9092

--to N makes offset N the next one consumed (the file then holds N-1, the last processed
offset). earliest/latest need -b to ask the broker for the watermarks. Without -p, every
partition of the topic (with -b) or every partition that has a file in DIR. Refused while
a consumer holds DIR's lock.""",
    "stats": """examples:
  rdk stats -b localhost:9092 -t events
  rdk stats -b localhost:9092 -t events --offset-dir ./offsets --watch""",
    "mock": """examples:
  rdk mock
  rdk mock --brokers 1 --topic events:8 --topic logs:2

prints RDK_BROKERS=host:port,... then serves until interrupted (Ctrl-C).""",
    "version": """examples:
  rdk version""",
    "bench": """examples:
  rdk bench
  rdk bench -- --help      # the benchmark's own options

runs bench/run.py from rdk's source repository; the arguments are passed on to it.""",
}


def _add_brokers_topic(p: argparse.ArgumentParser, topic_help: str) -> None:
    p.add_argument("-b", "--brokers", type=BROKERS, required=True, metavar="BROKERS",
                   help="bootstrap servers, host:port[,host:port...]")
    p.add_argument("-t", "--topic", type=TOPIC, required=True, help=topic_help)


def build_parser() -> argparse.ArgumentParser:
    """The ``rdk`` argument parser."""
    from . import mock

    parser = _Parser(
        prog="rdk",
        description="rdk: Kafka from the shell over librdkafka (produce, consume with offset "
                    "files, offsets, lag, an embedded mock cluster).",
        epilog="examples:\n  rdk mock --topic events:4\n  rdk produce -b 127.0.0.1:9092 -t events "
               "< data.txt\n  rdk consume -b 127.0.0.1:9092 -t events --offset-dir ./offsets\n\n"
               "rdk COMMAND --help shows each command's options and examples.",
        formatter_class=_formatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, help_text: str, **kw: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text,
                              epilog=EXAMPLES[name], formatter_class=_formatter, **kw)

    p = add("produce", "Send messages read from a file or stdin to a topic.")
    _add_brokers_topic(p, "topic to send to")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-p", "--partition", type=_int_at_least(0, "--partition"),
                       help="send every message to this partition")
    where.add_argument("--balancer", default="consistent_random",
                       choices=["consistent_random", "murmur2_random", "fnv1a", "round_robin",
                                "least_bytes"],
                       help="partitioner when -p is not given (default consistent_random)")
    p.add_argument("--key-delimiter", type=_key_delimiter, metavar="SEP",
                   help="split each line at the first SEP into key and value")
    p.add_argument("--binary", action="store_true",
                   help="read length-prefixed records instead of lines")
    p.add_argument("--progress", action="store_true", help="show a progress bar even without a TTY")
    p.add_argument("file", nargs="?", default="-", metavar="FILE|-",
                   help="input file (default: - for stdin)")
    p.set_defaults(run=cmd_produce)

    c = add("consume", "Write a topic's messages to stdout, recording offsets in a directory.")
    _add_brokers_topic(c, "topic to read")
    c.add_argument("--offset-dir", required=True, metavar="DIR",
                   help="offset directory (one <topic>-<partition>.offset file per partition)")
    c.add_argument("--workers", type=_int_at_least(1, "--workers"), metavar="N",
                   help="run N worker processes (worker slots 0..N-1)")
    c.add_argument("--slot", type=_int_at_least(0, "--slot"), metavar="I",
                   help="consume only worker slot I (partitions p with p %% N == I); needs --of")
    c.add_argument("--of", type=_int_at_least(1, "--of"), metavar="N",
                   help="number of worker slots for --slot")
    c.add_argument("--format", choices=["json", "raw", "value"], default="value",
                   help="output format (default value)")
    c.add_argument("--count", type=_int_at_least(1, "--count"), metavar="N",
                   help="stop after N messages (default: run until interrupted)")
    c.add_argument("--from", dest="start", choices=["earliest", "latest"], default="earliest",
                   help="where to start on partitions without an offset file (default earliest)")
    c.add_argument("--progress", action="store_true",
                   help="show progress on stderr even without a TTY")
    c.set_defaults(run=cmd_consume)

    o = add("offsets", "Show or change the offsets recorded in an offset directory.")
    osub = o.add_subparsers(dest="offsets_command", metavar="ACTION", required=True)
    show = osub.add_parser("show", help="table of topic, partition and stored offset",
                           description="Table of topic, partition and stored offset "
                                       "(with -b: low and high watermarks and lag).",
                           epilog=EXAMPLES["offsets show"], formatter_class=_formatter)
    show.add_argument("dir", metavar="DIR", help="offset directory")
    show.add_argument("-b", "--brokers", type=BROKERS, metavar="BROKERS",
                      help="also show the broker's watermarks and the lag")
    show.set_defaults(run=cmd_offsets_show)
    st = osub.add_parser("set", help="rewind or fast-forward stored offsets",
                         description="Rewind or fast-forward stored offsets (atomic writes, "
                                     "like the library).",
                         epilog=EXAMPLES["offsets set"], formatter_class=_formatter)
    st.add_argument("dir", metavar="DIR", help="offset directory")
    st.add_argument("-t", "--topic", type=TOPIC, required=True, help="topic")
    st.add_argument("-p", "--partition", type=_int_at_least(0, "--partition"),
                    help="only this partition (default: all, see below)")
    st.add_argument("--to", type=_offset_target, required=True, metavar="earliest|latest|N",
                    help="the next offset to consume")
    st.add_argument("-b", "--brokers", type=BROKERS, metavar="BROKERS",
                    help="broker to ask for earliest/latest and the partition count")
    st.set_defaults(run=cmd_offsets_set)

    s = add("stats", "Lag table of a topic: watermarks, and the stored offsets of a directory.")
    _add_brokers_topic(s, "topic")
    s.add_argument("--offset-dir", metavar="DIR", help="offset directory to compute the lag of")
    s.add_argument("--watch", action="store_true", help="refresh until interrupted")
    s.add_argument("--interval", type=_positive_float, default=2.0, metavar="SECONDS",
                   help="refresh interval of --watch (default 2)")
    s.set_defaults(run=cmd_stats)

    m = add("mock", "Serve librdkafka's mock cluster in the foreground until interrupted.",
            parents=[mock.build_parser("rdk mock")], add_help=False)
    m.set_defaults(run=cmd_mock)

    v = add("version", "Show the rdk and librdkafka versions and librdkafka's features.")
    v.set_defaults(run=cmd_version)

    b = add("bench", "Run the benchmarks (bench/run.py of the source repository).")
    b.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="arguments for bench/run.py")
    b.set_defaults(run=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rdk`` console script; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench" and argv[1:] not in (["-h"], ["--help"]):
        # everything after "bench" (and an optional "--") belongs to bench/run.py
        rest = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        args = argparse.Namespace(command="bench", bench_args=rest, run=cmd_bench)
    else:
        args = parser.parse_args(argv)
    prog = " ".join(["rdk", args.command] + ([args.offsets_command]
                                                if getattr(args, "offsets_command", None) else []))
    try:
        return args.run(args)
    except UsageError as e:
        _eprint(f"{prog}: error: {e} (see {prog} --help)")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # stdout's reader went away (e.g. `| head`): not an error of ours
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, ValueError, RuntimeError) as e:
        _eprint(f"{prog}: error: {e}")
        return 1
    except Exception as e:  # rdk.KafkaError and friends: one line, not a traceback
        from .errors import RdkError

        if not isinstance(e, RdkError):
            raise
        _eprint(f"{prog}: error: {e}")
        return 1


# ---- produce -----------------------------------------------------------------------------


class _Accounting:
    """Delivered messages, summed from every send()'s on_delivery (event thread)."""

    def __init__(self) -> None:
        self.delivered = 0
        self.failures: list[Any] = []

    def __call__(self, delivered: int, failures: list) -> None:
        self.delivered += delivered
        if failures and len(self.failures) < 5:
            self.failures += failures[: 5 - len(self.failures)]


def _input_records(args: argparse.Namespace, stream: IO[bytes]) -> Iterator[Any]:
    if args.binary:  # a null frame is a tombstone: (no key, null value)
        return (v if v is not None else (None, None) for v in read_frames(stream))
    lines = _read_lines(stream)
    if args.key_delimiter is None:
        return lines
    sep = args.key_delimiter
    return ((line[:i], line[i + len(sep):]) if (i := line.find(sep)) >= 0 else (None, line)
            for line in lines)


def _total_size(stream: IO[bytes]) -> int | None:
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    import stat

    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _position(stream: IO[bytes]) -> int:
    try:
        return stream.tell()
    except (OSError, ValueError):
        return 0


def cmd_produce(args: argparse.Namespace) -> int:
    from itertools import islice

    from .producer import Producer

    if args.binary and args.key_delimiter is not None:
        raise UsageError("--key-delimiter applies to line input; --binary records carry values only")
    stream = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    accounting = _Accounting()
    read = 0
    started = time.monotonic()
    try:
        producer = Producer(args.brokers, balancer=args.balancer, on_queue_full="block",
                            statistics_interval_ms=0)
        try:
            count = producer.partition_count(args.topic)  # unknown topic: a clear error now
            if args.partition is not None and args.partition >= count:
                raise UsageError(f"-p {args.partition}: topic {args.topic!r} has {count} "
                                 f"partition(s), 0..{count - 1}")
            records = _input_records(args, stream)
            total = _total_size(stream)
            with _Progress(_use_rich(sys.stderr, args.progress), f"produce {args.topic}",
                           total=total, unit="bytes") as progress:
                while chunk := list(islice(records, SEND_CHUNK)):
                    producer.send(args.topic, args.partition, chunk, on_delivery=accounting)
                    read += len(chunk)
                    progress.update(_position(stream), read)
                left = producer.stop(timeout=60.0)
                progress.update(_position(stream), read)
        finally:
            producer.stop(timeout=5.0)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    elapsed = max(time.monotonic() - started, 1e-9)
    failed = read - accounting.delivered
    _eprint(f"sent {accounting.delivered}, failed {failed}, "
            f"{accounting.delivered / elapsed:,.0f} msgs/s ({elapsed:.2f} s)"
            + (f"; {left} undelivered at stop" if left else ""))
    for message, error in accounting.failures:
        _eprint(f"  failed: {error} ({message!r})")
    return 0 if failed == 0 else 1


# ---- consume -------------------------------------------------------------------------------


def _json_bytes(data: bytes | None) -> str:
    """A JSON string of UTF-8 bytes, {"base64": ...} for other bytes, null for None."""
    if data is None:
        return "null"
    try:
        return _json_string(data.decode("utf-8"))
    except UnicodeDecodeError:
        return '{"base64": "' + base64.b64encode(data).decode("ascii") + '"}'


def _json_line(m: Any) -> str:
    # formatted by hand (json.dumps of a dict per message is several times slower)
    value, key, headers, timestamp, topic, partition, offset = m
    hs = "null" if headers is None else "[" + ", ".join(
        f"[{_json_string(name)}, {_json_bytes(v)}]" for name, v in headers) + "]"
    return (f'{{"topic": {_json_string(topic)}, "partition": {partition}, "offset": {offset}, '
            f'"timestamp": {"null" if timestamp is None else timestamp}, '
            f'"key": {_json_bytes(key)}, "value": {_json_bytes(value)}, "headers": {hs}}}\n')


def encode_messages(messages: Sequence[Any], fmt: str) -> bytes:
    """Messages as ``rdk consume --format`` writes them (value, json or raw)."""
    if fmt == "value":
        return b"".join((m[0] or b"") + b"\n" for m in messages)
    if fmt == "raw":
        return b"".join(map(frame, (m[0] for m in messages)))
    return "".join(map(_json_line, messages)).encode()


class _Unrecorded(Exception):
    """Raised from the CLI's callback so the consumer does not record a batch it did not write."""


class _QuietFinish(logging.Filter):
    """Hides the consumer's reports about batches the CLI declined on purpose (after --count)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (_Unrecorded, BrokenPipeError)):
            return False
        return not (record.levelno == logging.WARNING and "commit_on_error=False" in record.msg)


def _cli_logger() -> logging.Logger:
    logger = logging.getLogger("rdk.cli")
    if not any(isinstance(f, _QuietFinish) for f in logger.filters):
        logger.addFilter(_QuietFinish())
    return logger


class _Tally:
    """Messages written and the --count budget, shared by every writer (processes too).

    The lock also serialises writes to stdout, so workers never interleave output.
    """

    def __init__(self, limit: int | None, ctx: Any = None) -> None:
        self.limit = limit
        if ctx is not None:
            self._value = ctx.Value("q", 0)
            self.lock = self._value.get_lock()
        else:
            self._value = argparse.Namespace(value=0)
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
    """What ``rdk consume`` runs in each process: builds a consumer for a worker slot.

    Picklable, so it is the ``consumer_factory`` of ``rdk.workers`` with ``--workers N``.
    """

    def __init__(self, args: argparse.Namespace, tally: _Tally) -> None:
        self.brokers, self.topic, self.offset_dir = args.brokers, args.topic, args.offset_dir
        self.format, self.start = args.format, args.start
        self.tally = tally

    def __call__(self, worker_slot: int = 0, num_workers: int = 1) -> _CliConsumer:
        return _CliConsumer(self, worker_slot, num_workers)


class _CliConsumer:
    """An rdk.Consumer that writes batches to stdout and records exactly what it wrote.

    With --count, the batch that crosses the count is written only in part; the consumer
    is told it failed (commit_on_error=False), so it records nothing of it, and after the
    consumer stopped the written part's offsets are stored through rdk.offsets.
    """

    def __init__(self, job: ConsumeJob, worker_slot: int, num_workers: int) -> None:
        from .consumer import Consumer

        self.job = job
        self.done = threading.Event()
        self.partial: dict[int, int] = {}
        self.consumer = Consumer(job.brokers, job.topic, job.offset_dir, self._on_batch,
                                 worker_slot=worker_slot, num_workers=num_workers,
                                 start_offset=job.start, commit_on_error=False,
                                 logger=_cli_logger(), statistics_interval_ms=0)

    @property
    def error(self) -> Any:
        return self.consumer.error

    def start(self) -> list[int]:
        return self.consumer.start()

    def stop(self, timeout: float = 30.0) -> None:
        self.consumer.stop(timeout)
        self._record_partial()

    def _on_batch(self, batch: Any) -> None:
        messages = batch.messages
        tally = self.job.tally
        out = sys.stdout.buffer
        with tally.lock:
            if self.done.is_set():
                k = 0
            else:
                k = tally.take(len(messages))
                if k:
                    try:
                        out.write(encode_messages(messages if k == len(messages) else messages[:k],
                                                  self.job.format))
                        out.flush()
                    except (BrokenPipeError, ValueError):  # the reader is gone: stop
                        tally.take(-k)  # not written after all
                        self._finish()
                        raise _Unrecorded("stdout is closed") from None
            exhausted = tally.exhausted
        if k == len(messages):
            if exhausted:
                self._finish()
            return
        for m in messages[:k]:
            self.partial[m[5]] = max(self.partial.get(m[5], -1), m[6])
        self._finish()
        raise _Unrecorded(f"--count reached: {k} of {len(messages)} messages written")

    def _finish(self) -> None:
        if self.done.is_set():
            return
        self.done.set()
        from . import workers

        if workers.current_slot() is not None:
            workers.request_stop()

    def _record_partial(self) -> None:
        """Store the offsets of a batch's written part (the consumer has released its locks)."""
        if not self.partial:
            return
        from .offsets import lock_partitions, offset_file_path, read_offset_file, write_offset_files

        d, topic = self.job.offset_dir, self.job.topic
        with lock_partitions(d, topic, self.partial):
            stored = {p: read_offset_file(offset_file_path(d, topic, p)) for p in self.partial}
            newer = {p: o for p, o in self.partial.items() if stored[p] is None or stored[p] < o}
            write_offset_files(d, topic, newer)
        self.partial = {}


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


def _precheck_topic(args: argparse.Namespace, num_workers: int) -> int:
    from .admin import Admin

    with Admin(args.brokers) as admin:
        count = admin.partition_count(args.topic)
    if count < num_workers:
        raise UsageError(f"topic {args.topic!r} has {count} partition(s), fewer than the "
                         f"{num_workers} worker slots")
    return count


def _check_consume_args(args: argparse.Namespace) -> tuple[int, int]:
    """(worker_slot, num_workers) of a single-process run; UsageError for bad combinations."""
    if args.workers is not None and (args.slot is not None or args.of is not None):
        raise UsageError("--workers N and --slot I --of N exclude each other")
    if (args.slot is None) != (args.of is None):
        raise UsageError("--slot I and --of N go together")
    if args.slot is not None and args.slot >= args.of:
        raise UsageError(f"--slot must be in 0..{args.of - 1} for --of {args.of}, got {args.slot}")
    return (args.slot or 0, args.of or 1)


def cmd_consume(args: argparse.Namespace) -> int:
    slot, of = _check_consume_args(args)
    started = time.monotonic()
    progress_on = _use_rich(sys.stderr, args.progress)
    if args.workers is not None:
        return _consume_workers(args, progress_on, started)
    tally = _Tally(args.count)
    worker = ConsumeJob(args, tally)(slot, of)
    stop = threading.Event()
    with _stop_on_signals(stop.set):
        partitions = worker.start()
        try:
            with _Progress(progress_on, f"consume {args.topic}", total=args.count) as progress:
                while not (stop.is_set() or worker.done.is_set() or worker.consumer.closed):
                    stop.wait(0.2)  # a progress refresh period; the loop ends on events
                    progress.update(tally.written, tally.written)
                progress.update(tally.written, tally.written)
        finally:
            worker.stop()
    _summary(tally.written, f"partitions {partitions}", started)
    if worker.error is not None:
        _eprint(f"rdk consume: error: {worker.error}")
        return 1
    return 0


def _consume_workers(args: argparse.Namespace, progress_on: bool, started: float) -> int:
    import multiprocessing

    from .workers import WorkerPool

    _precheck_topic(args, args.workers)
    tally = _Tally(args.count, multiprocessing.get_context("spawn"))
    pool = WorkerPool(args.workers, ConsumeJob(args, tally))
    with pool.stop_on_signals():
        pool.start()
        with _Progress(progress_on, f"consume {args.topic}", total=args.count) as progress:
            while not pool.wait(0.2):  # a progress refresh period; the loop ends on an event
                progress.update(tally.written, tally.written)
            progress.update(tally.written, tally.written)
    _summary(tally.written, f"{args.workers} workers", started)
    if pool.error is not None:
        _eprint(f"rdk consume: error: {pool.error}")
        return 1
    return 0


def _summary(written: int, where: str, started: float) -> None:
    elapsed = max(time.monotonic() - started, 1e-9)
    _eprint(f"consumed {written} messages ({where}) in {elapsed:.2f} s, "
            f"{written / elapsed:,.0f} msgs/s")


# ---- offsets / stats -------------------------------------------------------------------------


def _stored_offsets(directory: str, topic: str | None = None) -> tuple[list[tuple[str, int, int | None]], list[str]]:
    """(topic, partition, stored) of every offset file, and the errors of unreadable ones."""
    from .errors import OffsetFileError
    from .offsets import list_offset_files, read_offset_file

    rows, problems = [], []
    for f in list_offset_files(directory, topic):
        try:
            rows.append((f.topic, f.partition, read_offset_file(f.path)))
        except OffsetFileError as e:
            rows.append((f.topic, f.partition, None))
            problems.append(str(e))
    return rows, problems


def _existing_directory(directory: str) -> None:
    if not os.path.isdir(directory):
        raise OSError(f"offset directory {directory} does not exist")


def _lag(stored: int | None, high: int | None) -> int | None:
    if stored is None or high is None:
        return None
    return max(0, high - (stored + 1))


def cmd_offsets_show(args: argparse.Namespace) -> int:
    from .errors import RdkError

    _existing_directory(args.dir)
    rows, problems = _stored_offsets(args.dir)
    columns = ["topic", "partition", "stored"]
    table: list[list[Any]] = [list(r) for r in rows]
    if args.brokers:
        from .admin import Admin

        columns += ["low", "high", "lag"]
        with Admin(args.brokers) as admin:
            for row in table:
                topic, partition, stored = row
                try:
                    low, high = admin.watermarks(topic, partition)
                except RdkError as e:  # one bad topic must not hide the others
                    problems.append(f"watermarks of {topic}[{partition}]: {e}")
                    row += [None, None, None]
                    continue
                row += [low, high, _lag(stored, high)]
    print_table(f"offsets in {args.dir}", columns, table, rich_output=_use_rich(sys.stdout))
    if not rows:
        _eprint(f"no offset files in {args.dir}")
    for p in problems:
        _eprint(f"rdk offsets show: error: {p}")
    return 1 if problems else 0


def _resolve_partitions(args: argparse.Namespace, admin: Any) -> list[int]:
    from .offsets import list_offset_files

    if args.partition is not None:
        return [args.partition]
    if admin is not None:
        return list(range(admin.partition_count(args.topic)))
    found = [f.partition for f in list_offset_files(args.dir, args.topic)]
    if not found:
        raise UsageError(f"no offset files of topic {args.topic!r} in {args.dir}; "
                         "name the partition with -p P or give -b BROKERS")
    return found


def cmd_offsets_set(args: argparse.Namespace) -> int:
    from .offsets import (
        ensure_directory,
        lock_partitions,
        offset_file_path,
        read_offset_file,
        write_offset_files,
    )

    if isinstance(args.to, str) and not args.brokers:
        raise UsageError(f"--to {args.to} needs -b BROKERS to look up the watermarks")
    ensure_directory(args.dir)
    admin = None
    if args.brokers:
        from .admin import Admin

        admin = Admin(args.brokers)
    try:
        partitions = _resolve_partitions(args, admin)
        targets: dict[int, int] = {}
        for p in partitions:
            if admin is None:
                targets[p] = args.to - 1
                continue
            low, high = admin.watermarks(args.topic, p)
            nxt = {"earliest": low, "latest": high}.get(args.to, args.to)
            if not low <= nxt <= high:
                _eprint(f"rdk offsets set: warning: offset {nxt} is outside {args.topic}[{p}]'s "
                        f"range {low}..{high}; the consumer's on_offset_out_of_range applies")
            targets[p] = nxt - 1
    finally:
        if admin is not None:
            admin.close()
    # Holding the partitions' locks while writing: refused if a consumer runs, and no
    # consumer can start in between.
    with lock_partitions(args.dir, args.topic, partitions):
        before = {p: read_offset_file(offset_file_path(args.dir, args.topic, p)) for p in partitions}
        write_offset_files(args.dir, args.topic, targets)
    rows = [(args.topic, p, before[p], targets[p], targets[p] + 1) for p in partitions]
    print_table(f"offsets set in {args.dir}", ["topic", "partition", "before", "stored", "next"],
                rows, rich_output=_use_rich(sys.stdout))
    return 0


def _lag_rows(admin: Any, topic: str, directory: str | None) -> tuple[list[str], list[list[Any]]]:
    from .offsets import offset_file_path, read_offset_file

    columns = ["partition", "low", "high", "messages"]
    if directory is not None:
        columns += ["stored", "lag"]
    rows: list[list[Any]] = []
    totals = [0, 0]
    for p in range(admin.partition_count(topic)):
        low, high = admin.watermarks(topic, p)
        row: list[Any] = [p, low, high, high - low]
        totals[0] += high - low
        if directory is not None:
            stored = read_offset_file(offset_file_path(directory, topic, p))
            # no file yet: everything still retained is waiting
            lag = _lag(stored, high) if stored is not None else high - low
            totals[1] += lag
            row += [stored, lag]
        rows.append(row)
    total: list[Any] = ["total", None, None, totals[0]]
    if directory is not None:
        total += [None, totals[1]]
    rows.append(total)
    return columns, rows


def cmd_stats(args: argparse.Namespace) -> int:
    from .admin import Admin

    if args.offset_dir is not None:
        _existing_directory(args.offset_dir)
    rich_output = _use_rich(sys.stdout)
    title = f"{args.topic} on {args.brokers}" + (f", offsets in {args.offset_dir}" if args.offset_dir else "")
    with Admin(args.brokers) as admin, contextlib.suppress(KeyboardInterrupt):
        if not args.watch:
            columns, rows = _lag_rows(admin, args.topic, args.offset_dir)
            print_table(title, columns, rows, rich_output=rich_output)
            return 0
        if rich_output:
            from rich.live import Live
            from rich.table import Table

            def render() -> Table:
                columns, rows = _lag_rows(admin, args.topic, args.offset_dir)
                table = Table(title=f"{title} ({time.strftime('%H:%M:%S')})")
                for c in columns:
                    table.add_column(c, justify="right")
                for r in rows:
                    table.add_row(*("-" if v is None else str(v) for v in r))
                return table

            with Live(render(), auto_refresh=False) as live:
                while True:
                    time.sleep(args.interval)  # the refresh period itself, not a synchronisation
                    live.update(render(), refresh=True)
        while True:
            columns, rows = _lag_rows(admin, args.topic, args.offset_dir)
            print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {title}")
            print_table(title, columns, rows, rich_output=False)
            print(flush=True)
            time.sleep(args.interval)
    return 0  # --watch ends with Ctrl-C

