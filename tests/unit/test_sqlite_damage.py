"""A damaged SQLite journal reaches the runner as a StoreError naming the file and what to
do, never as a raw sqlite3.DatabaseError (issue 30, item 4)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from actionjournal import (
    ActionJournalError,
    Agent,
    InputEvent,
    LocalRunner,
    OutputEvent,
    StoreError,
    action,
)
from actionjournal.stores import SqliteStore

CALLS: list[str] = []


def pay(order: str) -> str:
    CALLS.append(order)
    return f"paid {order} " + "x" * 2000  # big rows: the journal spans many pages


class Payer(Agent):
    uid = "payer"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(pay, event.input)))


def damage(path) -> None:
    """Overwrite pages of the journal's rows (the second half of the file, so the file
    still opens) with garbage, as a bad disk would."""
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(path.read_bytes())
    for offset in range(len(data) // 2 // page * page, len(data) - page, page):
        data[offset : offset + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


def test_a_damaged_page_is_a_store_error_naming_the_journal(tmp_path):
    path = tmp_path / "journal.db"
    store = SqliteStore(path)
    asyncio.run(LocalRunner(Payer(), store).run([(f"k{i}", f"o{i}") for i in range(40)]))
    store.close()
    damage(path)
    CALLS.clear()
    with pytest.raises(ActionJournalError) as raised:
        damaged = SqliteStore(path)
        asyncio.run(LocalRunner(Payer(), damaged).run([("k1", "o1")]))
    error = raised.value
    if not isinstance(error, StoreError):  # the runner wraps a run's failure; find its cause
        error = error.__cause__
    assert isinstance(error, StoreError), repr(raised.value)
    assert str(path) in str(error) and "integrity_check" in str(error)
    assert isinstance(error.__cause__, sqlite3.DatabaseError)
    assert CALLS == []  # nothing ran against a journal that could not be read
