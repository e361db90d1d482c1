"""``rdk stats``: a topic's watermarks per partition, and the lag of an offset directory.

``--watch`` refreshes every ``--interval`` seconds until Ctrl-C: a rich live table on a
terminal, else a timestamped plain table per refresh.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TYPE_CHECKING, Any

from ._offsets import existing_directory, lag
from ._ui import driver_options, print_table, use_rich

if TYPE_CHECKING:
    from rich.table import Table


def _lag_rows(admin: Any, topic: str, directory: str | None) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows of the table: one row per partition, then the totals."""
    from ..offsets import offset_file_path, read_offset_file

    columns = ["partition", "low", "high", "messages"]
    if directory is not None:
        columns += ["stored", "lag"]
    rows: list[list[Any]] = []
    messages = waiting = 0
    for p in range(admin.partition_count(topic)):
        low, high = admin.watermarks(topic, p)
        row: list[Any] = [p, low, high, high - low]
        messages += high - low
        if directory is not None:
            stored = read_offset_file(offset_file_path(directory, topic, p))
            # no file yet: everything still retained is waiting
            behind = high - low if stored is None else lag(stored, high)
            waiting += behind
            row += [stored, behind]
        rows.append(row)
    total: list[Any] = ["total", None, None, messages]
    if directory is not None:
        total += [None, waiting]
    rows.append(total)
    return columns, rows


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the lag table once, or refresh it with --watch until interrupted."""
    from ..admin import Admin

    if args.offset_dir is not None:
        existing_directory(args.offset_dir)
    rich_output = use_rich(sys.stdout)
    title = f"{args.topic} on {args.brokers}" + (f", offsets in {args.offset_dir}" if args.offset_dir else "")
    with Admin(args.brokers, driver_options(args)) as admin, contextlib.suppress(KeyboardInterrupt):
        if not args.watch:
            columns, rows = _lag_rows(admin, args.topic, args.offset_dir)
            print_table(title, columns, rows, rich_output=rich_output)
        elif rich_output:
            _watch_live(admin, args, title)
        else:
            _watch_plain(admin, args, title)
    return 0  # --watch ends with Ctrl-C


def _watch_live(admin: Any, args: argparse.Namespace, title: str) -> None:
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


def _watch_plain(admin: Any, args: argparse.Namespace, title: str) -> None:
    while True:
        columns, rows = _lag_rows(admin, args.topic, args.offset_dir)
        print(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {title}")
        print_table(title, columns, rows, rich_output=False)
        print(flush=True)
        time.sleep(args.interval)  # the refresh period itself, not a synchronisation
