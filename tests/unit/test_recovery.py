"""Restoring keyed state against a journal: markers are validated, bad data fails loudly."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys

import msgspec
import pytest

from actionjournal import (
    Agent,
    DataLossError,
    InputEvent,
    JournalConfig,
    LocalRunner,
    MarkerMismatchError,
    OutputEvent,
    StoreRecreatedError,
    action,
)
from actionjournal.durable.errors import (
    ActionFailedError,
    CorruptRecordError,
    PayloadTooLargeError,
)
from actionjournal.durable.identity import call_id, function_id, key_id
from actionjournal.operator.local import Snapshot
from actionjournal.stores import SqliteStore

CALLS: list[object] = []


def work(value):
    CALLS.append(value)
    return value


class Worker(Agent):
    uid = "worker"

    @action(InputEvent)
    async def handle(self, event, ctx):
        if event.input == "block":
            await asyncio.Event().wait()  # stays in flight until the runner is abandoned
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(work, event.input)))


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def snapshot_after(tmp_path, store, inputs, pending=None):
    """Run inputs to completion, then leave ``pending`` in flight and snapshot."""

    async def go():
        runner = LocalRunner(Worker(), store)
        await runner.run(inputs)
        if pending is not None:
            runner.submit(*pending)
            await asyncio.sleep(0.05)
        runner.snapshot(tmp_path / "snap")
        for task in list(runner._active.values()):
            task.cancel()

    asyncio.run(go())
    return tmp_path / "snap"


def restore_and_run(snap, store, inputs):
    async def go():
        runner = LocalRunner.restore(snap, Worker(), store)
        await runner.run_source(inputs)
        return runner

    return asyncio.run(go())


def test_restore_replays_runs_finished_after_the_snapshot(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    snap = snapshot_after(tmp_path, store, [("k", 1)])
    asyncio.run(LocalRunner.restore(snap, Worker(), store).run_source([("k", 1), ("k", 2)]))
    assert CALLS == [1, 2]
    runner = restore_and_run(snap, store, [("k", 1), ("k", 2)])
    assert CALLS == [1, 2] and runner.counts["actions_replayed"] == 1


def test_errors_on_restore(tmp_path):
    # A marker for another journal file.
    snap = snapshot_after(tmp_path, SqliteStore(tmp_path / "a.db"), [("k", 1)])
    with pytest.raises(MarkerMismatchError, match=r"a\.db.*configured store is sqlite.*b\.db"):
        restore_and_run(snap, SqliteStore(tmp_path / "b.db"), [("k", 1), ("k", 2)])
    # The same file deleted and recreated.
    (tmp_path / "a.db").unlink()
    with pytest.raises(StoreRecreatedError, match="deleted and recreated"):
        restore_and_run(snap, SqliteStore(tmp_path / "a.db"), [("k", 1), ("k", 2)])


def test_a_snapshot_without_a_binding_warns_and_its_markers_still_refuse(tmp_path, caplog):
    """A snapshot of an older release names no journal: only its markers are checked."""
    snap = snapshot_after(tmp_path, SqliteStore(tmp_path / "a.db"), [("k", 1)])
    data = msgspec.msgpack.decode(snap.read_bytes(), type=Snapshot)
    snap.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(data, binding=None)))
    CALLS.clear()
    with pytest.raises(MarkerMismatchError, match="recovery marker of key"):
        restore_and_run(snap, SqliteStore(tmp_path / "b.db"), [("k", 1), ("new", 2), ("k", 3)])
    assert any("names no journal" in r.getMessage() for r in caplog.records)


def test_marker_of_another_epoch_is_refused(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    snap = snapshot_after(tmp_path, store, [("k", 1)])

    async def go():
        runner = LocalRunner.restore(snap, Worker(), store, JournalConfig(epoch=1))
        await runner.run_source([("k", 1), ("k", 2)])

    with pytest.raises(MarkerMismatchError, match="epoch 0"):
        asyncio.run(go())


def test_deleted_records_of_a_pending_run_are_data_loss(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    snap = snapshot_after(tmp_path, store, [("k", 1), ("other", 1)], pending=("k", "block"))
    db = sqlite3.connect(tmp_path / "j.db")
    with db:
        db.execute("DELETE FROM journal")  # retention removed everything
    with pytest.raises(DataLossError, match=r"records .* were deleted"):
        restore_and_run(snap, store, [("k", 1), ("other", 1), ("k", "x")])


def test_idle_key_with_an_old_marker_is_not_data_loss(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    snap = snapshot_after(tmp_path, store, [("k", 1)])
    db = sqlite3.connect(tmp_path / "j.db")
    with db:
        db.execute("DELETE FROM journal")
    restore_and_run(snap, store, [("k", 1), ("k", 2)])
    assert CALLS == [1, 2]


def test_corrupted_row_names_the_file_and_row(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    with pytest.raises(ActionFailedError):

        class Crashes(Worker):
            @action(InputEvent)
            def boom(self, event, ctx):
                ctx.durable_execute(work, "first")
                raise RuntimeError("crash")

        asyncio.run(LocalRunner(Crashes(), store).run([("k", 1)]))
    db = sqlite3.connect(tmp_path / "j.db")
    with db:
        db.execute("UPDATE journal SET body = X'00112233'")
    with pytest.raises(CorruptRecordError, match=r"j\.db row \d+"):
        asyncio.run(LocalRunner(Worker(), store).run([("k", 1)]))
    assert db.execute("SELECT COUNT(*) FROM journal").fetchone()[0] > 0  # nothing deleted


def test_payload_over_the_limit_is_a_clear_error(tmp_path):
    store = SqliteStore(tmp_path / "j.db")

    class BigResult(Agent):
        @action(InputEvent)
        def handle(self, event, ctx):
            ctx.durable_execute(work, "x" * event.input)

    runner = LocalRunner(BigResult(), store, JournalConfig(max_payload_bytes=64))
    with pytest.raises(ActionFailedError) as info:
        asyncio.run(runner.run([("k", 10), ("k", 100)]))
    assert isinstance(info.value.__cause__, PayloadTooLargeError)
    assert "result of durable call" in str(info.value.__cause__)
    assert "max_payload_bytes=64" in str(info.value.__cause__)


def test_bad_input_fails_at_submit_and_loses_nothing(tmp_path):
    runner = LocalRunner(Worker(), SqliteStore(tmp_path / "j.db"))
    with pytest.raises(Exception, match="cannot journal agent input"):
        runner.submit("k", object())
    assert runner.states == {} and runner.inputs_consumed == 0


def test_identities_are_the_same_in_another_process():
    code = (
        "from actionjournal.durable.identity import call_id, function_id, key_id\n"
        "import json\n"
        "print(key_id(('a', 1)), function_id(json.dumps), call_id('n', 'u', 0, 'k', 3, 'a', 'c'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    expected = [key_id(("a", 1)), function_id(json.dumps), call_id("n", "u", 0, "k", 3, "a", "c")]
    assert out == expected
