"""``rdk offsets show`` and ``rdk offsets set``: read and change an offset directory.

Files are read and written only through rdk.offsets (atomic writes, partition locks): a
directory held by a running consumer is refused.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._ui import UsageError, driver_options, eprint, print_table, use_rich


def existing_directory(directory: str) -> None:
    """OSError (exit code 1) when the offset directory does not exist."""
    if not os.path.isdir(directory):
        raise OSError(f"offset directory {directory} does not exist")


def lag(stored: int, high: int) -> int:
    """Messages after the stored (last processed) offset, up to the high watermark."""
    return max(0, high - (stored + 1))


def _stored_offsets(directory: str) -> tuple[list[tuple[str, int, int | None]], list[str]]:
    """(topic, partition, stored) of every offset file, and the errors of unreadable ones."""
    from ..errors import OffsetFileError
    from ..offsets import list_offset_files, read_offset_file

    rows: list[tuple[str, int, int | None]] = []
    problems: list[str] = []
    for f in list_offset_files(directory):
        try:
            rows.append((f.topic, f.partition, read_offset_file(f.path)))
        except OffsetFileError as e:
            rows.append((f.topic, f.partition, None))
            problems.append(str(e))
    return rows, problems


def cmd_offsets_show(args: argparse.Namespace) -> int:
    """Table of stored offsets (with -b: watermarks and lag); 1 if a file was unreadable."""
    existing_directory(args.dir)
    rows, problems = _stored_offsets(args.dir)
    columns = ["topic", "partition", "stored"]
    table: list[list[Any]] = [list(r) for r in rows]
    if args.brokers:
        columns += ["low", "high", "lag"]
        problems += _add_watermarks(args.brokers, driver_options(args), table)
    print_table(f"offsets in {args.dir}", columns, table, rich_output=use_rich(sys.stdout))
    if not rows:
        eprint(f"no offset files in {args.dir}")
    for p in problems:
        eprint(f"rdk offsets show: error: {p}")
    return 1 if problems else 0


def _add_watermarks(brokers: str, options: dict[str, str],
                    table: list[list[Any]]) -> list[str]:
    """Append low, high and lag to each (topic, partition, stored) row; the errors met."""
    from ..admin import Admin
    from ..errors import RdkError

    problems = []
    with Admin(brokers, options) as admin:
        for row in table:
            topic, partition, stored = row
            try:
                low, high = admin.watermarks(topic, partition)
            except RdkError as e:  # one bad topic must not hide the others
                problems.append(f"watermarks of {topic}[{partition}]: {e}")
                row += [None, None, None]
                continue
            row += [low, high, None if stored is None else lag(stored, high)]
    return problems


def _resolve_partitions(args: argparse.Namespace, admin: Any) -> list[int]:
    from ..offsets import list_offset_files

    if args.partition is not None:
        return [args.partition]
    if admin is not None:
        return list(range(admin.partition_count(args.topic)))
    found = [f.partition for f in list_offset_files(args.dir, args.topic)]
    if not found:
        raise UsageError(f"no offset files of topic {args.topic!r} in {args.dir}; "
                         "name the partition with -p P or give -b BROKERS")
    return found


def _targets(args: argparse.Namespace) -> tuple[list[int], dict[int, int]]:
    """The partitions to change and the offset to store in each (--to minus one)."""
    if not args.brokers:
        partitions = _resolve_partitions(args, None)
        return partitions, {p: args.to - 1 for p in partitions}
    from ..admin import Admin

    targets: dict[int, int] = {}
    with Admin(args.brokers, driver_options(args)) as admin:
        partitions = _resolve_partitions(args, admin)
        for p in partitions:
            low, high = admin.watermarks(args.topic, p)
            nxt = {"earliest": low, "latest": high}.get(args.to, args.to)
            if not low <= nxt <= high:
                eprint(f"rdk offsets set: warning: offset {nxt} is outside {args.topic}[{p}]'s "
                       f"range {low}..{high}; the consumer's on_offset_out_of_range applies")
            targets[p] = nxt - 1
    return partitions, targets


def cmd_offsets_set(args: argparse.Namespace) -> int:
    """Store --to minus one (the last processed offset) for the chosen partitions."""
    from ..offsets import (
        ensure_directory,
        lock_partitions,
        offset_file_path,
        read_offset_file,
        write_offset_files,
    )

    if isinstance(args.to, str) and not args.brokers:
        raise UsageError(f"--to {args.to} needs -b BROKERS to look up the watermarks")
    ensure_directory(args.dir)
    partitions, targets = _targets(args)
    # Holding the partitions' locks while writing: refused if a consumer runs, and no
    # consumer can start in between.
    with lock_partitions(args.dir, args.topic, partitions):
        before = {p: read_offset_file(offset_file_path(args.dir, args.topic, p)) for p in partitions}
        write_offset_files(args.dir, args.topic, targets)
    rows = [(args.topic, p, before[p], targets[p], targets[p] + 1) for p in partitions]
    print_table(f"offsets set in {args.dir}", ["topic", "partition", "before", "stored", "next"],
                rows, rich_output=use_rich(sys.stdout))
    return 0
