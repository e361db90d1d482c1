"""The ``rdk`` argument parser, its argument types, and ``main`` (parse, run, exit code).

Exit codes: 0 done, 1 a failure at run time (one line on stderr), 2 a bad argument (one
line, like argparse's own errors), 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..errors import ConfigError, KafkaError, RdkError
from ..validate import check_broker, check_topic_name
from ._bench import cmd_bench
from ._consume import cmd_consume
from ._formats import FORMATS
from ._mock import cmd_mock
from ._offsets import cmd_offsets_set, cmd_offsets_show
from ._produce import cmd_produce
from ._registry import add_options as add_registry_options
from ._stats import cmd_stats
from ._ui import UsageError, eprint, folded_log_lines
from ._version import cmd_version


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error message and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


# ---- argument types: ArgumentTypeError becomes argparse's one-line error (exit 2) ----------


def _type(check: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return check(text)
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = getattr(check, "__name__", "value")
    return convert


INT32_MAX = 2**31 - 1  # partitions, slots and workers are C ints
INT64_MAX = 2**63 - 1  # offsets and counts are int64


def _int_at_least(minimum: int, what: str, maximum: int = INT32_MAX) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be >= {minimum}, got {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"{what} must be <= {maximum}, got {value}")
        return value

    convert.__name__ = what
    return convert


MAX_SECONDS = 86400.0  # one day: the longest refresh interval that makes sense


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= MAX_SECONDS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(
            f"expected a finite number of seconds > 0 and <= {MAX_SECONDS:g}, got {text!r}")
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
    if value > INT64_MAX:
        raise argparse.ArgumentTypeError(f"--to offset must be <= {INT64_MAX} (a 64-bit offset), "
                                         f"got {value}")
    return value


def _key_delimiter(text: str) -> bytes:
    if not text:
        raise argparse.ArgumentTypeError("--key-delimiter must not be empty")
    return text.encode()


def _property(text: str) -> tuple[str, str]:
    """``-X KEY=VALUE``: one librdkafka configuration property."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"-X takes a librdkafka property as KEY=VALUE (e.g. security.protocol=ssl), got {text!r}")
    return key.strip(), value


BROKERS = _type(check_broker)
TOPIC = _type(check_topic_name)


# ---- help texts -----------------------------------------------------------------------------

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
  rdk consume -b localhost:9092 -t events --group loaders --workers 3
  rdk consume -b localhost:9092 -t events --share billing --workers 8 --reject-on-error

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
  rdk mock --kind kafka --topic events:8

prints RDK_BROKERS=host:port,... then serves until interrupted (Ctrl-C).""",
    "version": """examples:
  rdk version""",
    "bench": """examples:
  rdk bench
  rdk bench -- --help      # the benchmark's own options

runs bench/run.py from rdk's source repository; the arguments are passed on to it.""",
}


# ---- the parser -------------------------------------------------------------------------------

_Add = Callable[..., argparse.ArgumentParser]  # add(name, help_text, **kw): one subcommand


def build_parser() -> argparse.ArgumentParser:
    """The ``rdk`` argument parser."""
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

    _add_produce(add)
    _add_consume(add)
    _add_offsets(add)
    _add_stats(add)
    _add_mock(add)
    v = add("version", "Show the rdk and librdkafka versions and librdkafka's features.")
    v.set_defaults(run=cmd_version)
    b = add("bench", "Run the benchmarks (bench/run.py of the source repository).")
    b.add_argument("bench_args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="arguments for bench/run.py")
    b.set_defaults(run=cmd_bench)
    return parser


def _add_brokers_topic(p: argparse.ArgumentParser, topic_help: str) -> None:
    p.add_argument("-b", "--brokers", type=BROKERS, required=True, metavar="BROKERS",
                   help="bootstrap servers, host:port[,host:port...]")
    p.add_argument("-t", "--topic", type=TOPIC, required=True, help=topic_help)
    _add_properties(p)


def _add_properties(p: argparse.ArgumentParser) -> None:
    p.add_argument("-X", "--property", dest="properties", type=_property, action="append",
                   default=[], metavar="KEY=VALUE",
                   help="a librdkafka configuration property for the client (repeatable), "
                        "e.g. -X security.protocol=ssl -X ssl.ca.location=ca.pem")


def _add_produce(add: _Add) -> None:
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
    add_registry_options(p, produce=True)
    p.set_defaults(run=cmd_produce)


def _add_consume(add: _Add) -> None:
    c = add("consume", "Write a topic's messages to stdout, recording offsets in a directory.")
    _add_brokers_topic(c, "topic to read")
    c.add_argument("--offset-dir", metavar="DIR",
                   help="offset directory (one <topic>-<partition>.offset file per partition); "
                        "required unless --group")
    c.add_argument("--group", metavar="G",
                   help="join consumer group G: the group coordinator assigns the partitions "
                        "(with --workers N, to N processes) and offsets are committed to G")
    c.add_argument("--share", metavar="G",
                   help="join share group G (KIP-932, Kafka >= 4.2): every member reads every "
                        "partition, each record is acknowledged on its own (written: accepted; "
                        "--workers N may exceed the partitions)")
    c.add_argument("--reject-on-error", action="store_true",
                   help="with --share: a record that cannot be written (format or output "
                        "error) is rejected for good instead of released for redelivery")
    c.add_argument("--workers", type=_int_at_least(1, "--workers"), metavar="N",
                   help="run N worker processes (worker slots 0..N-1)")
    c.add_argument("--slot", type=_int_at_least(0, "--slot"), metavar="I",
                   help="consume only worker slot I (partitions p with p %% N == I); needs --of")
    c.add_argument("--of", type=_int_at_least(1, "--of"), metavar="N",
                   help="number of worker slots for --slot")
    c.add_argument("--format", choices=list(FORMATS), default="value",
                   help="output format (default value)")
    c.add_argument("--count", type=_int_at_least(1, "--count", INT64_MAX), metavar="N",
                   help="stop after N messages (default: run until interrupted)")
    c.add_argument("--from", "--start-offset", dest="start", choices=["earliest", "latest"],
                   help="where to start on partitions without an offset file (default "
                        "earliest); with --share: sets the group's share.auto.offset.reset "
                        "(default: keep the group's)")
    c.add_argument("--progress", action="store_true",
                   help="show progress on stderr even without a TTY")
    add_registry_options(c, produce=False)
    c.set_defaults(run=cmd_consume)


def _add_offsets(add: _Add) -> None:
    o = add("offsets", "Show or change the offsets recorded in an offset directory.")
    osub = o.add_subparsers(dest="offsets_command", metavar="ACTION", required=True)
    show = osub.add_parser("show", help="table of topic, partition and stored offset",
                           description="Table of topic, partition and stored offset "
                                       "(with -b: low and high watermarks and lag).",
                           epilog=EXAMPLES["offsets show"], formatter_class=_formatter)
    show.add_argument("dir", metavar="DIR", help="offset directory")
    show.add_argument("-b", "--brokers", type=BROKERS, metavar="BROKERS",
                      help="also show the broker's watermarks and the lag")
    _add_properties(show)
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
    _add_properties(st)
    st.set_defaults(run=cmd_offsets_set)


def _add_stats(add: _Add) -> None:
    s = add("stats", "Lag table of a topic: watermarks, and the stored offsets of a directory.")
    _add_brokers_topic(s, "topic")
    s.add_argument("--offset-dir", metavar="DIR", help="offset directory to compute the lag of")
    s.add_argument("--watch", action="store_true", help="refresh until interrupted")
    s.add_argument("--interval", type=_positive_float, default=2.0, metavar="SECONDS",
                   help="refresh interval of --watch (default 2)")
    s.set_defaults(run=cmd_stats)


def _add_mock(add: _Add) -> None:
    # python -m rdk.mock's parser (importable from rdk.testing, not in its __all__); light: it
    # imports no broker class
    from ..testing import build_parser as broker_parser

    m = add("mock", "Serve an embedded broker (mock cluster, Tansu, Apache Kafka) until interrupted.",
            parents=[broker_parser("rdk mock")], add_help=False)
    m.set_defaults(run=cmd_mock)


# ---- main ----------------------------------------------------------------------------------


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    if argv and argv[0] == "bench" and argv[1:] not in (["-h"], ["--help"]):
        # everything after "bench" (and an optional "--") belongs to bench/run.py
        rest = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        return argparse.Namespace(command="bench", bench_args=rest, run=cmd_bench)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rdk`` console script; returns the exit code."""
    args = _parse(build_parser(), list(sys.argv[1:] if argv is None else argv))
    prog = " ".join(["rdk", args.command] + ([args.offsets_command]
                                                if getattr(args, "offsets_command", None) else []))
    with folded_log_lines():  # rdk's warnings: each distinct one once, repeats counted
        try:
            return args.run(args)
        except UsageError as e:
            eprint(f"{prog}: error: {e} (see {prog} --help)")
            return 2
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            # stdout's reader went away (e.g. `| head`): not an error of ours
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except (OSError, ValueError, RuntimeError, RdkError) as e:  # one line, not a traceback
            eprint(f"{prog}: error: {_error_text(e, args)}")
            return 1


# errors that mean "no broker answered": the last line names the brokers given
_UNREACHABLE = frozenset({"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_TIMED_OUT"})


def _error_text(e: BaseException, args: argparse.Namespace) -> str:
    """The one-line message of a failed command, in the command line's own terms."""
    text = str(e)
    if isinstance(e, ConfigError) and text.startswith("driver_options: "):
        return "-X: " + text[len("driver_options: "):]  # librdkafka refused a -X property
    brokers = getattr(args, "brokers", None)
    if (isinstance(e, KafkaError) and e.name in _UNREACHABLE and brokers
            and brokers not in text):
        text += f" (broker {brokers}: is it running and reachable?)"
    return text
