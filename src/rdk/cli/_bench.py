"""``rdk bench``: run bench/run.py of rdk's source repository with the given arguments.

The benchmarks ship with the repository, not with the installed package. The script is
run from its file (``runpy.run_path``, no change to ``sys.path``) and its ``main(argv)``
is called; its return value is the exit code.
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

from ._ui import eprint


def bench_candidates() -> list[Path]:
    """Where bench/run.py is looked for: rdk's source tree, then the current directory."""
    source_root = Path(__file__).resolve().parents[3]  # <root>/src/rdk/cli/_bench.py
    return [source_root / "bench" / "run.py", Path.cwd() / "bench" / "run.py"]


def find_bench() -> Path | None:
    """bench/run.py of the source tree rdk runs from (or of the current directory), if any."""
    return next((c for c in bench_candidates() if c.is_file()), None)


def cmd_bench(args: argparse.Namespace) -> int:
    """Call bench/run.py's ``main(args.bench_args)``; 1 if the script is missing."""
    path = find_bench()
    if path is None:
        looked = " or ".join(str(c) for c in dict.fromkeys(bench_candidates()))
        eprint(f"rdk bench: error: bench/run.py was not found (looked for {looked}). The "
               "benchmarks ship with rdk's source repository, not with the installed package: "
               "run `rdk bench` from a clone of the repository.")
        return 1
    script = runpy.run_path(str(path), run_name="rdk_bench_run")
    main = script.get("main")
    if not callable(main):
        eprint(f"rdk bench: error: {path} has no main(argv) function")
        return 1
    return int(main(list(args.bench_args)) or 0)
