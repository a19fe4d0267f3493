"""The soak (benchmarks/soak) in short: 75 s of load at 2 orders/s over 1,000 keys with one
TaskManager SIGKILL, run as ``make soak`` runs it, in a work directory of its own.

It starts three brokers and a Flink session cluster (about 3 minutes before the load, 5 in
all on a loaded 2-core machine), so ``make test`` skips it: ``make soak-smoke`` runs it
(``ACTIONJOURNAL_SOAK=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.soak,
    pytest.mark.skipif(
        os.environ.get("ACTIONJOURNAL_SOAK") != "1",
        reason="the soak's smoke test runs with `make soak-smoke` (ACTIONJOURNAL_SOAK=1), "
        "never in make test",
    ),
]


def test_a_short_soak_with_a_taskmanager_kill_loses_and_repeats_nothing(tmp_path: Path) -> None:
    workdir, results = tmp_path / "soak", tmp_path / "results"
    done = subprocess.run(
        [
            sys.executable, "-m", "benchmarks.soak", "--minutes", "1.25", "--rate", "2",
            "--keys", "1000", "--faults", "tm-kill@30", "--warmup", "30",
            "--rss-slope-limit", "0", "--workdir", str(workdir), "--results", str(results),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    output = done.stdout + done.stderr
    closing = [line for line in done.stdout.splitlines() if line.startswith("soak: inputs=")]
    assert done.returncode == 0, output[-6000:]
    assert len(closing) == 1 and " duplicated=0 lost=0 " in closing[0], output[-6000:]

    result = json.loads((results / "latest.json").read_text())
    summary = result["summary"]
    assert summary["inputs"] == summary["outputs"] >= 100  # 2/s for 75 s, every one answered
    assert summary["calls"] == 2 * summary["inputs"]  # reserve and charge, each once
    (fault,) = result["faults"]
    assert fault["kind"] == "tm-kill" and fault["running_wall"] > fault["wall"]
    (recovered,) = summary["recovery"]
    assert recovered["recovery_s"] is not None
    assert {p.name for p in results.glob("*.png")} == {
        "throughput.png", "latency.png", "rss.png", "checkpoint.png", "journal.png",
    }  # fmt: skip
    assert not _processes_of(workdir), f"left running: {_processes_of(workdir)}"


def _processes_of(workdir: Path) -> list[str]:
    """Processes whose command line or environment names the soak's work directory."""
    ours = str(workdir).encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if ours in (entry / "cmdline").read_bytes() or ours in (entry / "environ").read_bytes():
                found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:200]!r}")
        except OSError:
            continue
    return found
