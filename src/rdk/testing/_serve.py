"""``python -m rdk.mock`` and ``rdk mock``: serve a broker of any kind in the foreground,
printing ``RDK_BROKERS=...``, until interrupted. Light to import (the CLI builds its parser
from here): the broker classes are imported when one starts."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from ._kinds import KINDS, open_broker

__all__ = ["build_parser", "main", "serve"]

MAX_BROKERS = max(k.max_brokers for k in KINDS.values())


def _parse_topic(spec: str) -> tuple[str, int]:
    from ..validate import check_topic_name

    name, _, parts = spec.partition(":")
    try:
        count = int(parts) if parts else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"--topic {spec!r}: expected NAME or NAME:PARTITIONS") from None
    if not name or not 1 <= count <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"--topic {spec!r}: expected NAME or NAME:PARTITIONS "
                                         "with 1 <= PARTITIONS <= 2147483647")
    try:
        check_topic_name(name, f"--topic {spec!r}: topic")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, count


def _brokers_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--brokers must be an integer, got {text!r}") from None
    if not 1 <= value <= MAX_BROKERS:
        raise argparse.ArgumentTypeError(f"--brokers must be in 1..{MAX_BROKERS}, got {value}")
    return value


def serve(num_brokers: int | None, topics: list[tuple[str, int]], out: Any = sys.stdout,
          kind: str = "mock", schema_registry: bool = False) -> int:
    """Run a broker of ``kind`` (``rdk.testing.KINDS``; a mock cluster by default) from this
    process until SIGINT/SIGTERM; prints RDK_BROKERS=... once it answers.

    Installs SIGINT/SIGTERM handlers, so call it from the main thread.

    Args:
        num_brokers: Nodes; None: the kind's default.
        topics: ``[(name, partitions)]`` to create.
        out: Where the ``RDK_BROKERS=...`` line is printed.
        kind: A key of ``rdk.testing.KINDS``.
        schema_registry: Also serve a [SchemaRegistry][rdk.testing.SchemaRegistry] and print
            ``RDK_SCHEMA_REGISTRY=<its Confluent API URL>`` after the ``RDK_BROKERS`` line.

    Returns:
        0, the exit status, once interrupted.

    Raises:
        TypeError: ``kind`` is not a str, ``num_brokers`` not an int.
        ValueError: An unknown kind, ``num_brokers`` out of the kind's range.
    """
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with contextlib.ExitStack() as stack:
        registry = None
        if schema_registry:
            from .schema_registry import SchemaRegistry

            registry = stack.enter_context(SchemaRegistry())
        broker = stack.enter_context(open_broker(kind, num_brokers))
        for name, parts in topics:
            broker.create_topic(name, parts)
        print(f"RDK_BROKERS={broker.bootstrap_servers}", file=out, flush=True)
        if registry is not None:
            print(f"RDK_SCHEMA_REGISTRY={registry.url}", file=out, flush=True)
        while not stop.wait(0.5):
            pass
    return 0


def build_parser(prog: str = "python -m rdk.mock") -> argparse.ArgumentParser:
    """The command line of ``python -m rdk.mock`` (also ``rdk mock``).

    Args:
        prog: The program name shown in usage and help.

    Returns:
        The parser: ``--kind``, ``--brokers``, ``--topic NAME:PARTITIONS`` (repeatable),
        ``--list-kinds``, ``--schema-registry``.
    """
    kinds = "\n".join(f"  {k.name:<14} {k.summary} (default {k.default_brokers}, at most "
                      f"{k.max_brokers} node{'s' if k.max_brokers > 1 else ''})" for k in KINDS.values())
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve an embedded broker (librdkafka's mock cluster by default) in the "
                    "foreground until interrupted; prints RDK_BROKERS=host:port,... once it answers.",
        epilog=f"kinds:\n{kinds}\n\nexample: %(prog)s --brokers 3 --topic events:8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--kind", choices=list(KINDS), default="mock",
                   help="the broker kind (default mock; --list-kinds names them)")
    p.add_argument("--brokers", type=_brokers_count, default=None,
                   help="number of brokers (default: the kind's, 3 for mock)")
    p.add_argument("--topic", action="append", type=_parse_topic, default=[],
                   metavar="NAME:PARTITIONS", help="create a topic (repeatable)")
    p.add_argument("--list-kinds", action="store_true", help="print the kinds' names and exit")
    p.add_argument("--schema-registry", action="store_true",
                   help="also serve a schema registry (Apicurio, Confluent's API; needs Java 21+) and "
                        "print RDK_SCHEMA_REGISTRY=URL")
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m rdk.mock``: parse ``argv`` and `serve` a broker.

    Args:
        argv: The arguments. None: ``sys.argv[1:]``.

    Returns:
        The exit status.

    Raises:
        SystemExit: Bad arguments (argparse's usage error), or ``--help``.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_kinds:
        print(" ".join(KINDS))
        return 0
    try:
        KINDS[args.kind].check_brokers(args.brokers)
    except ValueError as e:
        parser.error(f"--brokers: {e}")
    return serve(args.brokers, args.topic, kind=args.kind, schema_registry=args.schema_registry)
