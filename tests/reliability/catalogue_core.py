"""The bad-input catalogue's machinery: cases, their classes, the shared environment, the
CLI wrapper and the runner (each case on a watchdog thread, so a hang is reported as such).

The cases live in bad_input_catalogue.py and in the ``catalogue_cases_*.py`` modules
beside it, which it imports.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import pathlib
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import rdk
import rdk.cli
from rdk import ClosedError, Consumer, KafkaError, LockedError, OffsetFileError, Producer


class CliExit(Exception):
    """What a CLI command did: its exit code and stderr, as one message."""


# The classes a case can belong to (Case.kind), with what a user is owed in each.
KINDS = {
    "wrong type": "a TypeError naming the argument",
    "wrong value": "a ValueError (ConfigError) naming the argument and the value",
    "beyond C range": "a number too large or not finite for C: an error naming it, never an "
                      "OverflowError without context or a silent clamp",
    "unusable file": "an offset file or directory rdk cannot use: an error naming the path",
    "use after stop": "a ClosedError at once",
    "broker refusal": "librdkafka's or the broker's error name and text",
    "callback misbehaves": "a user callback that raises, blocks or exits: logged and reported, "
                           "never a silent stop or a hang",
    "silent loss or hang": "never: every call returns on time and says what was not done",
    "process or thread misuse": "fork, re-entry from a callback, a dead event loop: a clear "
                                "error at once, never a hang",
    "command line": "exit code 2 for bad arguments (1 at run time) and one line on stderr",
}
_KIND_BY_EXCEPTION = {  # most specific first: OffsetFileError is a ValueError
    OffsetFileError: "unusable file", LockedError: "unusable file", ClosedError: "use after stop",
    KafkaError: "broker refusal", CliExit: "command line", TypeError: "wrong type",
    ValueError: "wrong value",
}


@dataclass
class Case:
    name: str
    run: Callable[[Any], Any]
    exc: type[BaseException] | None  # None: must return normally (its own checks inside)
    pattern: str = ""
    known_bug: str = ""  # a case that fails today, with why (the test xfails it, strictly)
    kind: str = ""  # one of KINDS (default: from the expected exception)
    timeout: float = 30.0  # seconds before the runner reports the case as hung


CASES: list[Case] = []


def _kind(exc: type[BaseException] | None, kind: str | None) -> str:
    if kind is None:
        kind = next((k for e, k in _KIND_BY_EXCEPTION.items() if exc is not None
                     and issubclass(exc, e)), "callback misbehaves")
    if kind not in KINDS:
        raise ValueError(f"unknown case kind {kind!r}; one of {sorted(KINDS)}")
    return kind


def case(name: str, exc: type[BaseException] | None, pattern: str = "", known_bug: str = "",
         *, kind: str | None = None, timeout: float = 30.0) -> Callable:
    """Register the decorated ``fn(env)`` as a case."""
    def register(fn: Callable) -> Callable:
        CASES.append(Case(name, fn, exc, pattern, known_bug, _kind(exc, kind), timeout))
        return fn
    return register


def table(exc: type[BaseException], rows: list[tuple[str, Callable, str]], *,
          kind: str | None = None) -> None:
    """Register one case per (name, fn(env), pattern) row, all expecting ``exc``."""
    for name, fn, pattern in rows:
        CASES.append(Case(name, fn, exc, pattern, kind=_kind(exc, kind)))


def noop(*args: Any) -> None:
    return None


class Env:
    """What the cases share: a mock cluster with topics ``cat`` (2 partitions) and ``solo``
    (1), a scratch directory, a regular file, and a producer."""

    def __init__(self) -> None:
        from rdk.mock import MockCluster

        self.mc = MockCluster(1)
        self.b = self.mc.bootstrap_servers
        self.mc.create_topic("cat", 2)
        self.mc.create_topic("solo", 1)
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="rdk-catalogue-"))
        self.file = self.root / "a-regular-file"
        self.file.write_text("not a directory\n")
        self._n = 0
        self.producer = Producer(self.b, driver_options={"log_level": 3})

    def dir(self) -> str:
        self._n += 1
        d = self.root / f"d{self._n}"
        d.mkdir()
        return str(d)

    def consumer(self, **kw: Any) -> Consumer:
        kw.setdefault("driver_options", {"log_level": 3})
        directory = kw.pop("offset_directory") if "offset_directory" in kw else self.dir()
        return Consumer(self.b, kw.pop("topic", "cat"), directory,
                        kw.pop("receive_callback", noop), **kw)

    def close(self) -> None:
        self.producer.stop(5)
        self.mc.close()
        shutil.rmtree(self.root, ignore_errors=True)


# ---- the rdk command line ----------------------------------------------------------------------
def cli(*argv: str) -> Callable:
    """Run ``rdk ARGV``; raise CliExit("exit CODE: STDERR") for the table to check."""
    def run(e: Env) -> None:
        args = [a.replace("{b}", e.b).replace("{dir}", e.dir()).replace("{file}", str(e.file))
                for a in argv]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = rdk.cli.main(args)
            except SystemExit as ex:
                code = ex.code
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        raise CliExit(f"exit {code} ({len(lines)} line(s)): {' | '.join(lines)}")
    return run


# ---- runner ------------------------------------------------------------------------------------
class Hung(Exception):
    """The case did not return within its timeout (its thread is abandoned)."""


def _call(env: Env, c: Case) -> BaseException | None:
    """Run one case on a watchdog thread: what it raised, None, or Hung."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            c.run(env)
            outcome.append(None)
        except BaseException as e:  # the catalogue records whatever happened
            outcome.append(e)

    worker = threading.Thread(target=target, name=f"case: {c.name}", daemon=True)
    worker.start()
    worker.join(c.timeout)
    if not outcome:
        return Hung(f"did not return within {c.timeout} s")
    return outcome[0]


def run_case(env: Env, c: Case) -> dict:
    t0 = time.monotonic()
    got = _call(env, c)
    took = round(time.monotonic() - t0, 3)
    message = "" if got is None else str(got)
    if isinstance(got, Hung):
        ok = False
    elif c.exc is None:
        ok = got is None
    else:
        ok = isinstance(got, c.exc) and not isinstance(got, AssertionError) and \
            re.search(c.pattern, message, re.DOTALL) is not None
    result = {"name": c.name, "ok": ok, "known_bug": c.known_bug, "kind": c.kind,
              "expected": c.exc.__name__ if c.exc else "no exception",
              "pattern": c.pattern, "got": type(got).__name__ if got else "no exception",
              "message": message[:400], "seconds": took}
    if got is not None and not ok:
        result["traceback"] = "".join(traceback.format_exception(got))[-1500:]
    return result


def main(out: str) -> int:
    """Run every case, writing results to ``out`` after each; exit at once when done (a hung
    case's abandoned thread must not keep the process alive)."""
    logging.basicConfig(level=logging.CRITICAL)
    env = Env()
    results = []
    hung = False
    try:
        for c in CASES:
            results.append(run_case(env, c))
            hung = hung or results[-1]["got"] == "Hung"
            pathlib.Path(out).write_text(json.dumps(results))  # what ran so far survives a crash
    finally:
        if not hung:
            env.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
