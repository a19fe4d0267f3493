"""`make demo` is the first thing a user runs: its report must hold what it claims."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

LAST_LINE = re.compile(r"^demo: inputs=12 executed=36 replayed=\d+ reconciled=\d+ duplicated=0$")


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--local"]], ids=["pyflink", "local"])
def test_demo_recovers_without_duplicates(mode, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.demo", "--dir", str(tmp_path / "d"), *mode],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert LAST_LINE.match(lines[-1]), lines[-1]
    assert any("SIGKILL" in line for line in lines)
    # It says what it is doing before each long step.
    assert any(line.startswith("demo: running the") for line in lines[:3]), lines
