"""Once the journal refuses a write, no new durable call and no new run starts in that
process, and the runner stops promptly (issue 32: with two of three brokers down the runner
went on starting calls for minutes, and 42 ran twice). Appends run on the journal's own
threads, apart from user calls."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from actionjournal import (
    ActionFailedError,
    Agent,
    InputEvent,
    JournalUnavailableError,
    JournalWriteError,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.durable.records import CallFinished, JournalRecord, Marker
from actionjournal.stores import MemoryStore

STARTED: list[float] = []  # when each call started
THREADS: set[str] = set()  # where appends ran


def work(order: str, step: int) -> str:
    STARTED.append(time.monotonic())
    time.sleep(0.05)
    return f"{order}/{step}"


class BrokenJournal:
    """A store that stops taking writes: after ``good`` call outcomes, each append of the key
    that hit the limit fails after ``stall`` seconds (a delivery timeout); other keys' appends
    still go through for ``grace`` seconds after that first refusal (their partitions' leaders
    had not noticed yet), then fail too: a Kafka journal losing two brokers of three."""

    def __init__(self, good: int, stall: float, grace: float = 0.0) -> None:
        self._store = MemoryStore()
        self.good, self.stall, self.grace = good, stall, grace
        self.refused_at: float | None = None
        self.broken_key: str | None = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append(self, record: JournalRecord) -> Marker:
        THREADS.add(threading.current_thread().name)
        with self._lock:
            if isinstance(record, CallFinished):
                self.good -= 1
            if self.good < 0 and self.broken_key is None:
                self.broken_key = record.key_id
            refused_at = self.refused_at
            broken = record.key_id == self.broken_key or (
                refused_at is not None and time.monotonic() > refused_at + self.grace
            )
        if broken:
            time.sleep(self.stall)
            with self._lock:
                self.refused_at = self.refused_at or time.monotonic()
            raise JournalWriteError("topic journal partition 3: message timed out (test)")
        return self._store.append(record)


class Steps(Agent):
    uid = "steps"

    @action(InputEvent)
    async def handle(self, event, ctx):
        for step in range(30):
            await ctx.durable_execute_async(work, event.input, step)
        ctx.send_event(OutputEvent(event.input))


def test_no_call_starts_after_the_journal_refused_a_write_and_the_runner_stops():
    STARTED.clear()
    store = BrokenJournal(good=30, stall=1.0, grace=2.0)
    runner = LocalRunner(Steps(), store)
    began = time.monotonic()
    with pytest.raises(Exception) as raised:
        asyncio.run(runner.run([(f"k{i}", f"o{i}") for i in range(20)]))
    ended = time.monotonic()
    assert isinstance(raised.value.__cause__ or raised.value, JournalWriteError)
    assert store.refused_at is not None
    late = [t for t in STARTED if t > store.refused_at]
    assert late == [], f"{len(late)} calls started after the first refused write"
    # Promptly: the calls already running finish their appends (one stall), nothing more.
    assert ended - store.refused_at < 3 * store.stall, (ended - began, ended - store.refused_at)
    with pytest.raises(Exception, match="stopped after a failure"):
        asyncio.run(runner.run([("k0", "again")]))


def test_a_new_run_is_refused_with_a_clear_error_once_a_write_was_refused():
    store = BrokenJournal(good=0, stall=0.0)
    runner = LocalRunner(Steps(), store, on_run_failure="dead-letter")
    with pytest.raises(ActionFailedError, match="journal write"):
        asyncio.run(runner.run([("k0", "o0")]))
    health = runner.engine.env.health
    assert health.failure is not None
    with pytest.raises(JournalUnavailableError, match="refused a write earlier"):
        health.check("run seq 1 of key id x")


def test_appends_of_async_actions_run_on_the_journals_own_threads():
    THREADS.clear()
    store = BrokenJournal(good=10_000, stall=0.0)
    runner = LocalRunner(Steps(), store)
    asyncio.run(runner.run([(f"k{i}", f"o{i}") for i in range(5)]))
    assert len(runner.outputs) == 5
    assert THREADS and all(name.startswith("actionjournal-journal") for name in THREADS), THREADS
