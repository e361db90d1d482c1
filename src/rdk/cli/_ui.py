"""What the CLI shows besides the data: tables, progress on stderr, one-line messages.

Rich output only on a terminal (or when forced); otherwise plain text that scripts can
parse. ``UsageError`` is a bad argument found after parsing: ``main`` reports it like
argparse's own errors (one line, exit code 2).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID


class UsageError(Exception):
    """A bad argument found after parsing; reported like argparse's errors (exit 2)."""


def eprint(text: str) -> None:
    """One line on stderr, flushed at once."""
    print(text, file=sys.stderr, flush=True)


def driver_options(args: Any) -> dict[str, str]:
    """The ``-X KEY=VALUE`` librdkafka properties of a command (a later KEY wins)."""
    return dict(getattr(args, "properties", None) or ())


def use_rich(stream: IO, forced: bool = False) -> bool:
    """Rich output when forced or when ``stream`` is a terminal."""
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
    out.write(plain_table(columns, rows))
    out.flush()


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns right-aligned (a leading ``topic`` column left-aligned); None shows as ``-``."""
    cells = [list(columns)] + [["-" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    left_first = columns[0] == "topic"
    return "".join(
        "  ".join(v.ljust(w) if i == 0 and left_first else v.rjust(w)
                  for i, (v, w) in enumerate(zip(row, widths, strict=True))).rstrip() + "\n"
        for row in cells)


class ProgressDisplay:
    """A rich progress display on stderr, or nothing (when not on a TTY and not forced)."""

    def __init__(self, enabled: bool, description: str, total: float | None = None,
                 unit: str = "msgs") -> None:
        self._shown: tuple[RichProgress, TaskID] | None = None
        if enabled:
            self._shown = _rich_progress(description, total, unit)

    def __enter__(self) -> ProgressDisplay:
        if self._shown is not None:
            self._shown[0].start()
        return self

    def update(self, completed: float, msgs: int) -> None:
        if self._shown is not None:
            progress, task = self._shown
            progress.update(task, completed=completed, msgs=msgs)

    def __exit__(self, *exc: object) -> None:
        if self._shown is not None:
            self._shown[0].stop()


def _rich_progress(description: str, total: float | None, unit: str) -> tuple[RichProgress, TaskID]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn() if unit != "bytes" else
                    TextColumn("{task.percentage:>3.0f}%")]
    columns += [TextColumn("{task.fields[msgs]} msgs"), TimeElapsedColumn()]
    progress = Progress(*columns, console=Console(file=sys.stderr), transient=False)
    return progress, progress.add_task(description, total=total, msgs=0)
