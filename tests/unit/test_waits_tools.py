"""``actionjournal timers list`` and ``signals list`` read what agents wait for from the
journal: pending, fired, cancelled, replaced timers; pending, answered, timed out signals
with their late answers."""

from __future__ import annotations

import asyncio
import json

import pytest

from actionjournal import LocalRunner, SignalInput
from actionjournal.stores import SqliteStore
from actionjournal.testing import ManualClock
from actionjournal.tools.cli import main as cli
from tests.timer_agents import Waiter


@pytest.fixture(scope="module")
def journal(tmp_path_factory):
    """One journal where every status happened."""
    path = tmp_path_factory.mktemp("waits") / "journal.db"
    clock = ManualClock()
    store = SqliteStore(path)
    runner = LocalRunner(Waiter(), store, clock=clock)

    async def story() -> dict[str, str]:
        def submit(key, value):
            runner.submit(key, value)

        submit("fired", {"op": "schedule", "n": 1, "delay": 10})
        submit("cancelled", {"op": "schedule", "n": 2, "delay": 10, "id": "c"})
        submit("replaced", {"op": "schedule", "n": 3, "delay": 10, "id": "r"})
        submit("pending", {"op": "schedule", "n": 4, "delay": 3600})
        for key in ("answered", "timed-out", "waiting"):
            submit(key, {"op": "expect", "timeout": 60 if key != "waiting" else 3600})
        await runner.drain()
        submit("cancelled", {"op": "cancel", "id": "c"})
        submit("replaced", {"op": "schedule", "n": 5, "delay": 5000, "id": "r"})
        ids = {k: s[0].id for k, s in runner.signals.items()}
        submit("answered", SignalInput(ids["answered"], {"ok": True}))
        await runner.drain()
        clock.advance(61)
        await runner.drain()
        submit("answered", SignalInput(ids["answered"], "twice"))
        submit("timed-out", SignalInput(ids["timed-out"], "too late"))
        submit("waiting", SignalInput("no-such-signal", 1))
        await runner.drain()
        return ids

    ids = asyncio.run(story())
    store.close()
    return path, ids, runner.timers


def listing(capsys, path, what: str, *options: str) -> list[dict]:
    capsys.readouterr()
    assert cli([what, "list", "--store", "sqlite", "--path", str(path), "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


def test_timers_list_shows_each_timer_with_what_became_of_it(journal, capsys):
    path, _, dues = journal
    timers = listing(capsys, path, "timers")
    by_status = sorted((t["status"], t["id"]) for t in timers if t["id"] in ("c", "r"))
    assert by_status == [("cancelled", "c"), ("pending", "r"), ("replaced", "r")]
    statuses = sorted(t["status"] for t in timers)
    assert statuses == ["cancelled", "fired", "pending", "pending", "replaced"]
    (fired,) = [t for t in timers if t["status"] == "fired"]
    assert fired["event_type"] == "ping" and fired["fired_seq"] == 1
    pending = listing(capsys, path, "timers", "--status", "pending")
    assert sorted(t["due"] for t in pending) == sorted(t.due for ts in dues.values() for t in ts)
    assert cli(["timers", "list", "--store", "sqlite", "--path", str(path)]) == 0
    text = capsys.readouterr().out
    assert "fired at" in text and "cancelled at" in text and "due " in text


def test_signals_list_shows_answers_timeouts_and_late_answers(journal, capsys):
    path, ids, _ = journal
    signals = {s["id"]: s for s in listing(capsys, path, "signals")}
    answered = signals[ids["answered"]]
    assert (answered["status"], answered["answer"]) == ("answered", "{'ok': True}")
    assert [a["value"] for a in answered["late_answers"]] == ["'twice'"]
    timed_out = signals[ids["timed-out"]]
    assert timed_out["status"] == "timed_out"
    assert [a["value"] for a in timed_out["late_answers"]] == ["'too late'"]
    assert signals[ids["waiting"]]["status"] == "pending"
    assert signals["no-such-signal"]["status"] == "unknown"
    late = {s["id"] for s in listing(capsys, path, "signals", "--status", "late")}
    assert late == {ids["answered"], ids["timed-out"], "no-such-signal"}
    assert (
        cli(["signals", "list", "--store", "sqlite", "--path", str(path), "--key", "waiting"]) == 0
    )
    text = capsys.readouterr().out
    assert ids["waiting"] in text and ids["answered"] not in text and "'approval'" in text


def test_an_empty_journal_says_so(tmp_path, capsys):
    path = tmp_path / "empty.db"
    SqliteStore(path).close()
    for what in ("timers", "signals"):
        assert cli([what, "list", "--store", "sqlite", "--path", str(path)]) == 0
        assert f"no {what} in namespace 'default'" in capsys.readouterr().out
