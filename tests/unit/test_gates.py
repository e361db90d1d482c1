"""The lint and type gates, run by the README's test command so CI enforces them.

ruff's rule selection and mypy's configuration live in pyproject.toml; these tests only
run the tools and show their findings when there are any.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINTED = ["src", "tests", "bench", "examples", "scripts", "build_ffi.py", "setup.py"]


def _tool(name: str) -> str:
    found = Path(sys.executable).with_name(name)
    if found.exists():
        return str(found)
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; scripts/setup.sh installs it with the test extra")
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing_under_the_project_rule_selection() -> None:
    result = _run([_tool("ruff"), "check", "--no-cache", *LINTED])
    assert result.returncode == 0, f"ruff findings:\n{result.stdout}{result.stderr}"


def test_mypy_finds_no_type_error_in_the_library() -> None:
    result = _run([_tool("mypy"), "--no-incremental"])
    assert result.returncode == 0, f"mypy errors:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout
