"""What the CLI shows besides the data: tables, progress on stderr, one-line messages.

Rich output only on a terminal (or when forced); otherwise plain text that scripts can
parse. ``UsageError`` is a bad argument found after parsing: ``main`` reports it like
argparse's own errors (one line, exit code 2).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID


class UsageError(Exception):
    """A bad argument found after parsing; reported like argparse's errors (exit 2)."""


def eprint(text: str) -> None:
    """One line on stderr, flushed at once (after the count lines of the repeated log
    messages that came before it, so that a summary or an error line comes last)."""
    if _folding is not None:
        _folding.report_repeats()
    print(text, file=sys.stderr, flush=True)


def driver_options(args: Any) -> dict[str, str]:
    """The ``-X KEY=VALUE`` librdkafka properties of a command (a later KEY wins)."""
    return dict(getattr(args, "properties", None) or ())


# ---- log lines: each distinct one once, its repeats counted ---------------------------------

# what differs between repeats of one message: numbers outside host:port, and the counts
# librdkafka and rdk append of the repeats they held back themselves
_ADDRESS_OR_NUMBER = re.compile(r"([A-Za-z0-9_.\-\[\]]+:\d+)|\d+")
_HELD_BACK = re.compile(r", (\d+) identical error\(s\) suppressed|"
                        r" \(and (\d+) more like it in the last [\d.]+ s\)")
REPEAT_REPORT_INTERVAL = 60.0  # s: a message that keeps coming is counted at most this often


def _repeat_key(text: str) -> tuple[str, int]:
    """(the key under which repeats of ``text`` are counted, how many it stands for)."""
    held = sum(int(a or b) for a, b in _HELD_BACK.findall(text))
    key = _ADDRESS_OR_NUMBER.sub(lambda m: m.group(1) or "#", _HELD_BACK.sub("", text))
    return key, 1 + held


class RepeatFoldingHandler(logging.Handler):
    """stderr lines of rdk's loggers for the CLI: each distinct message (numbers aside) once,
    when it first happens; its repeats are counted and shown as one line ``... (repeated N
    more times)`` at the end of the command (and once a minute while they keep coming),
    never one line each."""

    def __init__(self, stream: IO[str] | None = None, interval: float = REPEAT_REPORT_INTERVAL):
        super().__init__(logging.WARNING)
        self.stream = stream
        self.interval = interval
        self._seen: dict[str, list] = {}  # key -> [first text, repeats not yet shown, shown at]
        self.setFormatter(logging.Formatter("%(message)s"))

    def _write(self, text: str) -> None:
        stream = self.stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            key, count = _repeat_key(text.splitlines()[0] if text else text)
            now = time.monotonic()
            with self.lock or contextlib.nullcontext():
                entry = self._seen.get(key)
                if entry is None:
                    self._seen[key] = [text, count - 1, now]
                    self._write(text)
                    return
                entry[1] += count
                if now - entry[2] >= self.interval:
                    self._write(f"{entry[0]} (repeated {entry[1]} more times)")
                    entry[1], entry[2] = 0, now
        except Exception:  # noqa: BLE001 - logging's own policy for a failing handler
            self.handleError(record)

    def report_repeats(self) -> None:
        """One line ``first text (repeated N more times)`` per message repeated since it was last shown."""
        with self.lock or contextlib.nullcontext():
            for entry in self._seen.values():
                if entry[1]:
                    self._write(f"{entry[0]} (repeated {entry[1]} more times)")
                    entry[1] = 0

    def seen(self) -> list[str]:
        """The first text of every distinct message handled."""
        with self.lock or contextlib.nullcontext():
            return [entry[0] for entry in self._seen.values()]


@contextlib.contextmanager
def folded_log_lines() -> Iterator[RepeatFoldingHandler]:
    """Show rdk's warnings and errors (logger ``rdk`` and below) through a
    RepeatFoldingHandler for the duration of a command, then report the repeats."""
    global _folding
    logger = logging.getLogger("rdk")
    handler = RepeatFoldingHandler()
    logger.addHandler(handler)
    previous, _folding = _folding, handler
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        _folding = previous
        handler.report_repeats()


_folding: RepeatFoldingHandler | None = None  # the handler of the running command


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
