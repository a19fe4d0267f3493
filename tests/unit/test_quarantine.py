"""An unreadable record of a key stops that key with the command that skips it; once
quarantined (an audited record), the key recovers and on_unknown decides what it lost."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import sqlite3

import pytest

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, action
from actionjournal.durable.errors import (
    ActionFailedError,
    CorruptRecordError,
    SignatureError,
    UnknownOutcomeError,
)
from actionjournal.durable.identity import key_id
from actionjournal.stores import SqliteStore
from actionjournal.tools.cli import main as cli

CALLS: list[str] = []
HELD: list[str] = []  # runs waiting between their calls (the first one journaled)


def work(value: str) -> str:
    CALLS.append(value)
    return value.upper()


class TwoCalls(Agent):
    uid = "worker"
    hold = False

    @action(InputEvent)
    async def handle(self, event, ctx):
        first = await ctx.durable_execute_async(work, f"{event.input}-1")
        if self.hold:
            HELD.append(event.input)
            await asyncio.Event().wait()  # in flight until the runner is abandoned
        second = await ctx.durable_execute_async(work, f"{event.input}-2")
        ctx.send_event(OutputEvent(first + second))


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    HELD.clear()


def in_flight(tmp_path, store, config=None) -> str:
    """Keys a and b each with a run whose first call is journaled, snapshotted mid-run."""

    async def go():
        agent = TwoCalls()
        agent.hold = True
        runner = LocalRunner(agent, store, config)
        runner.submit("a", "x")
        runner.submit("b", "y")
        while len(HELD) < 2:
            await asyncio.sleep(0.01)
        runner.snapshot(tmp_path / "snap")
        for task in list(runner._active.values()):
            task.cancel()

    asyncio.run(go())
    return str(tmp_path / "snap")


def restore(snap, store, config=None) -> LocalRunner:
    async def go():
        runner = LocalRunner.restore(snap, TwoCalls(), store, config)
        await runner.run([])
        return runner

    return asyncio.run(go())


def corrupt_first_call_of(path, key: str) -> int:
    db = sqlite3.connect(path)
    with db:
        (pos,) = db.execute(
            "SELECT MIN(pos) FROM journal WHERE key_id = ?", (key_id(key),)
        ).fetchone()
        db.execute("UPDATE journal SET body = X'414a0102009999' WHERE pos = ?", (pos,))
    db.close()
    return pos


def test_a_corrupt_record_stops_its_key_until_quarantined(tmp_path, capsys):
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    snap = in_flight(tmp_path, store)
    assert sorted(CALLS) == ["x-1", "y-1"]
    pos = corrupt_first_call_of(path, "a")

    with pytest.raises(CorruptRecordError) as info:
        restore(snap, store)
    message = str(info.value)
    assert f"belongs to key {key_id('a')}, which stops here" in message
    assert f"row {pos}" in message
    command = re.search(r"`(actionjournal journal quarantine [^`]*)`", message).group(1)
    assert f"--path {path.resolve()}" in command and f"--position {pos}" in command

    # The journal tools show it with its position and go on.
    assert cli(["journal", "inspect", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [(u["position"], u["kind"], u["key_id"]) for u in doc["unreadable"]] == [
        (pos, "corrupt", key_id("a"))
    ]
    assert f"position {pos}" in captured.err and "journal quarantine" in captured.err

    # The operator runs the command the error printed.
    assert cli(shlex.split(command)[1:]) == 0
    assert f"quarantined partition 0 position {pos}" in capsys.readouterr().out
    assert cli(shlex.split(command)[1:]) == 0  # again: nothing more to do
    assert "already quarantined" in capsys.readouterr().out

    CALLS.clear()
    runner = restore(snap, store)
    outputs = {key: event.output for key, event in runner.outputs}
    assert outputs == {"a": "X-1X-2", "b": "Y-1Y-2"}
    # b replayed its first call; a's first outcome was lost with the record: on_unknown
    # (rerun, the default) ran it again.
    assert sorted(CALLS) == ["x-1", "x-2", "y-2"]

    assert cli(["journal", "inspect", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [u["kind"] for u in doc["unreadable"]] == ["quarantined"]
    assert cli(["journal", "inspect", "--store", "sqlite", "--path", str(path), "--key", "a"]) == 0
    assert f"skips the unreadable record at partition 0 position {pos}" in capsys.readouterr().out


def test_on_unknown_fail_applies_to_what_the_quarantined_record_held(tmp_path, capsys):
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    snap = in_flight(tmp_path, store)
    pos = corrupt_first_call_of(path, "a")
    argv = ["journal", "quarantine", "--store", "sqlite", "--path", str(path)]
    assert cli([*argv, "--position", str(pos), "--reason", "disk bit flip"]) == 0
    CALLS.clear()
    with pytest.raises(ActionFailedError) as info:
        restore(snap, store, JournalConfig(on_unknown="fail"))
    assert isinstance(info.value.__cause__, UnknownOutcomeError)
    assert "lost a record an operator quarantined" in str(info.value.__cause__)
    assert "x-1" not in CALLS


def test_quarantine_refuses_what_it_must_not_skip(tmp_path, capsys):
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    in_flight(tmp_path, store)
    store.close()
    argv = ["journal", "quarantine", "--store", "sqlite", "--path", str(path)]
    assert cli([*argv, "--position", "1"]) == 1
    assert "reads fine (a CallFinished" in capsys.readouterr().err
    assert cli([*argv, "--position", "999"]) == 1
    assert "no record at partition 0 position 999" in capsys.readouterr().err
    assert cli([*argv, "--position", "1", "--namespace", "other"]) == 1
    assert "belongs to namespace 'default'" in capsys.readouterr().err


def test_a_signed_journal_gets_a_signed_decision(tmp_path, capsys, monkeypatch):
    path = tmp_path / "j.db"
    config = JournalConfig(signing_key="k" * 32)
    store = SqliteStore(path)
    snap = in_flight(tmp_path, store, config)
    pos = corrupt_first_call_of(path, "a")
    argv = ["journal", "quarantine", "--store", "sqlite", "--path", str(path)]
    argv += ["--position", str(pos)]
    with pytest.raises(SignatureError) as info:  # the garbage is not signed
        restore(snap, store, config)
    message = str(info.value)
    assert "--signing-key-env VAR --namespace default" in message
    assert f"--position {pos}` (VAR: an environment variable holding journal.signing_key)" in (
        message
    )
    assert cli(argv) == 1  # unsigned, the job would refuse the decision itself
    assert "records are signed: give --signing-key-env" in capsys.readouterr().err
    monkeypatch.setenv("AJ_KEY", "k" * 32)
    assert cli([*argv, "--signing-key-env", "AJ_KEY"]) == 0
    CALLS.clear()
    runner = restore(snap, store, config)
    assert sorted(event.output for _, event in runner.outputs) == ["X-1X-2", "Y-1Y-2"]
    assert sorted(CALLS) == ["x-1", "x-2", "y-2"]
