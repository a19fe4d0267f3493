"""Cleanup never deletes the records of a run whose timer or signal is still pending in the
state that may be restored (issue 34): with a snapshot (exact) and with a time."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from actionjournal import LocalRunner
from actionjournal.durable.identity import key_id
from actionjournal.stores import SqliteStore
from actionjournal.testing import ManualClock
from actionjournal.tools.cli import main as cli
from tests.timer_agents import CALLS, Waiter

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def first_position(path, key: str, seq: int) -> int:
    store = SqliteStore(path)
    try:
        for item in store.scan(0, "default"):
            if item.record.key_id == key_id(key) and item.record.seq == seq:
                return item.position
    finally:
        store.close()
    raise AssertionError(f"no record of {key} seq {seq}")


def plan(tmp_path, path, *state: str) -> dict:
    out = tmp_path / "plan.json"
    argv = ["cleanup", "plan", "--store", "sqlite", "--path", str(path), *state]
    assert cli([*argv, "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture
def waiting(tmp_path):
    """Key w asked for a timer and a signal in runs 0 and 1, then ran on; key busy ran a lot."""
    CALLS.clear()
    path = tmp_path / "j.db"
    clock = ManualClock()
    runner = LocalRunner(Waiter(), SqliteStore(path), clock=clock)
    inputs = [
        ("w", {"op": "schedule", "n": 1, "delay": 3600}),
        ("w", {"op": "expect", "timeout": 7200}),
        *[("busy", {"op": "note", "n": i}) for i in range(5)],
        *[("w", {"op": "note", "n": 10 + i}) for i in range(3)],
    ]
    asyncio.run(runner.run(inputs))
    runner.snapshot(tmp_path / "snap")
    return path, runner, clock


def test_a_snapshot_plan_keeps_the_run_that_asked_for_a_pending_timer(tmp_path, waiting, capsys):
    path, _, clock = waiting
    (entry,) = plan(tmp_path, path, "--snapshot", str(tmp_path / "snap"))["partitions"]
    assert entry["blocker"]["kind"] == "pending_wait"
    assert (entry["blocker"]["key_id"], entry["blocker"]["seq"]) == (key_id("w"), 0)
    assert entry["keep_from"] == first_position(path, "w", 0)
    assert cli(["cleanup", "apply", "--plan", str(tmp_path / "plan.json")]) == 0
    # The restored state's timer fires once; the tools still tell its story.
    restored = LocalRunner.restore(tmp_path / "snap", Waiter(), SqliteStore(path), clock=clock)
    clock.advance(3601)
    asyncio.run(restored.drain())
    assert CALLS["fired-1"] == 1
    capsys.readouterr()
    assert cli(["timers", "list", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    assert [t["status"] for t in json.loads(capsys.readouterr().out)] == ["fired"]


def test_once_nothing_waits_the_plan_goes_past_those_runs(tmp_path, waiting):
    path, runner, clock = waiting
    clock.advance(7201)
    asyncio.run(runner.drain())  # the timer fired, the signal timed out
    assert runner.timers == {} and runner.signals == {}
    runner.snapshot(tmp_path / "snap")
    (entry,) = plan(tmp_path, path, "--snapshot", str(tmp_path / "snap"))["partitions"]
    assert entry["blocker"]["kind"] == "marker"
    assert entry["keep_from"] > first_position(path, "w", 1)


def test_a_time_based_plan_keeps_what_the_journal_shows_pending(tmp_path, waiting):
    path, _, _ = waiting
    state = ("--before", str(time.time() + 60), "--safety-margin", "0")
    (entry,) = plan(tmp_path, path, *state)["partitions"]
    assert entry["blocker"]["kind"] == "pending_wait"
    assert entry["keep_from"] == first_position(path, "w", 0)
