"""The C-helper fuzz tests under AddressSanitizer + UBSan (scripts/asan-test.sh).

Runs by default where gcc's libasan exists (about a minute: an instrumented build of the
extension plus the fuzz run); RDK_ASAN=0 turns it off.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _libasan() -> str | None:
    try:
        path = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.skipif(os.environ.get("RDK_ASAN") == "0", reason="RDK_ASAN=0 turns the ASan run off")
@pytest.mark.skipif(_libasan() is None, reason="gcc's libasan is not installed")
@pytest.mark.timeout(600)
def test_c_helpers_fuzzed_under_address_and_undefined_behaviour_sanitizers():
    env = {**os.environ, "PYTHON": sys.executable,
           "RDK_FUZZ_EXAMPLES": os.environ.get("RDK_FUZZ_EXAMPLES", "100")}
    env.pop("PYTEST_ADDOPTS", None)
    res = subprocess.run(["bash", str(ROOT / "scripts" / "asan-test.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=580, check=False)
    out = res.stdout + res.stderr
    assert "AddressSanitizer" not in out and "runtime error:" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert " passed" in out and " failed" not in out, out[-2000:]
