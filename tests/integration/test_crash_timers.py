"""SIGKILL a local runner around a timer's life and a signal's answer, restore, count.

The counts come from the called HTTP service, outside the killed process: the timer's
event runs its call once whichever window the kill hits (before the due time, after it
but before its run did anything, during its run, after its run completed but before a
snapshot held that), and an answer that won before the kill still wins after the
restore, although the deadline passed while the process was down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actionjournal.testing.service import CountingService

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def child(state: Path, url: str, scenario: str, phase: str, *extra: str):
    return subprocess.run(
        [sys.executable, "-m", "tests.timers_child", str(state), url, scenario, phase, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


WINDOWS = {
    "before the due time": "before-due",
    "after the due time, before its run did anything": "call:fired-1",
    "during its run": "after:CallFinished:1",
    "after its run completed": "after:RunCompleted:2",
}


@pytest.mark.parametrize("window", list(WINDOWS))
def test_a_timer_fires_once_across_a_kill(tmp_path, window):
    with CountingService() as service:
        killed = child(tmp_path, service.url, "timer", "first", "--crash", WINDOWS[window])
        assert killed.returncode == -9, killed.stderr[-2000:]
        restored = child(tmp_path, service.url, "timer", "restore")
        assert restored.returncode == 0, restored.stderr[-2000:]
        calls = service.calls_by_name()
    outputs = json.loads(restored.stdout.splitlines()[-1])
    assert [o["fired"] for o in outputs if "fired" in o] == [1]
    assert calls == {"fired-1": 1}


def test_an_answer_that_won_before_a_kill_wins_after_the_restore(tmp_path):
    with CountingService() as service:
        killed = child(tmp_path, service.url, "signal", "first", "--crash", "after:CallFinished:1")
        assert killed.returncode == -9, killed.stderr[-2000:]
        restored = child(tmp_path, service.url, "signal", "restore")
        assert restored.returncode == 0, restored.stderr[-2000:]
        calls = service.calls_by_name()
    outputs = json.loads(restored.stdout.splitlines()[-1])
    assert [o for o in outputs if "timed_out" in o] == []
    assert [o["answered"] for o in outputs if "answered" in o] == ["approved"]
    assert [name.split("-")[0] for name in calls] == ["answered"] and set(calls.values()) == {1}
