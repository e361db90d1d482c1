"""``rdk bench``: run bench/run.py of rdk's source repository with the given arguments.

The benchmarks ship with the repository, not with the installed package: ``rdk bench``
works in a clone (an editable install, or run from the clone's root) and says so clearly
anywhere else; it never runs a ``bench/run.py`` of a directory that is not rdk's clone. The
script is run from its file (``runpy.run_path``, no change to ``sys.path``) and its ``main(argv)``
is called; its return value is the exit code.
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

from ._ui import eprint


def _is_clone(root: Path) -> bool:
    """``root`` holds rdk's sources as its repository lays them out."""
    return (root / "src" / "rdk" / "__init__.py").is_file()


def bench_candidates() -> list[Path]:
    """Where bench/run.py is looked for: the clone this rdk runs from (an editable install:
    ``<root>/src/rdk/cli/_bench.py``), then the current directory if it is a clone of rdk.
    An installed wheel is in no clone: then only the current directory can be one."""
    here = Path(__file__).resolve()
    roots = [here.parents[3]] if here.parents[2].name == "src" else []
    roots.append(Path.cwd())
    return [root / "bench" / "run.py" for root in dict.fromkeys(roots) if _is_clone(root)]


def find_bench() -> Path | None:
    """bench/run.py of the source tree rdk runs from (or of the current directory), if any."""
    return next((c for c in bench_candidates() if c.is_file()), None)


def cmd_bench(args: argparse.Namespace) -> int:
    """Call bench/run.py's ``main(args.bench_args)``; 1 if the script is missing."""
    path = find_bench()
    if path is None:
        looked = " or ".join(str(c) for c in bench_candidates()) or (
            "no clone: rdk is not installed from one and the current directory is not one")
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
