"""What a key costs the agent's Flink function once it is idle (nothing pending): no Flink
timer, no memory in this process, and keyed state that holds only what replay needs.

The function runs in this process with PyFlink's state and timers faked
(tests/unit/fake_flink.py), over thousands of keys; docs/scale.md has the figures of real
jobs.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentFunction
from actionjournal.operator.engine import AgentEngine
from actionjournal.stores import MemoryStore
from actionjournal.stores.config import SqliteStoreConfig
from tests.sizes import reachable_bytes
from tests.unit.fake_flink import Subtask


def echo(value: str) -> str:
    return value


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(echo, event.input)))


@pytest.fixture
def subtask(tmp_path):
    store = SqliteStoreConfig(path=str(tmp_path / "journal.db"))
    subtask = Subtask(AgentFunction(Echo(), AgentsConfig(store=store)))
    yield subtask
    subtask.close()


def run_keys(subtask: Subtask, keys: range) -> None:
    for key in keys:
        subtask.element(key, f"input of {key}")
        assert subtask.settle(key) == [f"input of {key}"]


def test_an_idle_key_keeps_no_timer(subtask):
    run_keys(subtask, range(50))
    left = {key: t for key, t in subtask.timers.items() if t.event or t.processing}
    # One timer per key ever seen grows Flink's state, and at the end of a bounded input
    # they all fire (measured: 72 s of drain for 100,000 keys).
    assert left == {}, f"idle keys keep timers: {len(left)} of 50"


def test_an_idle_keys_state_is_small_and_does_not_name_the_journal(tmp_path):
    sizes = []
    for name in ("j.db", f"{'a-much-longer-journal-path-' * 4}.db"):
        store = SqliteStoreConfig(path=str(tmp_path / name))
        subtask = Subtask(AgentFunction(Echo(), AgentsConfig(store=store)))
        try:
            run_keys(subtask, range(20))
        finally:
            subtask.close()
        sizes.append(sorted({len(data) for data in subtask.state.values()}))
    # The journal's identity is kept once, by the agent operator, not in every key's state.
    assert sizes[0] == sizes[1], f"state bytes of an idle key by journal path: {sizes}"
    assert max(sizes[0]) <= 24, f"state bytes of an idle key: {sizes[0]}"


def test_idle_keys_leave_nothing_behind_in_this_process(subtask):
    run_keys(subtask, range(200))  # warm: caches, the journal's first pages
    before = reachable_bytes(subtask.function, besides=subtask)
    run_keys(subtask, range(200, 2200))
    grown = reachable_bytes(subtask.function, besides=subtask) - before
    # A set of key ids keeps over 100 bytes a key; caches of a fixed size move a little.
    assert grown / 2000 < 10, f"{grown / 2000:.0f} bytes kept in this process per idle key"


class CountingReads(MemoryStore):
    """A journal that counts recovery reads, by key id."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def read_key(self, namespace, operator_uid, key_id, after):
        self.reads[key_id] += 1
        return super().read_key(namespace, operator_uid, key_id, after)


def test_a_keys_journal_is_read_once_per_start_however_often_it_goes_idle(tmp_path):
    store, key_id = CountingReads(), AgentEngine.key_id("a")
    runner = LocalRunner(Echo(), store)
    for n in range(6):  # each input runs alone: the key is idle in between
        asyncio.run(runner.run([("a", n)]))
        if n == 2:
            runner.snapshot(tmp_path / "snapshot")
    assert store.reads[key_id] == 1
    # After a restore, runs 3-5 replay from the journal, one at a time, then 6 and 7 run.
    store.reads.clear()
    restored = LocalRunner.restore(tmp_path / "snapshot", Echo(), store)
    for n in range(3, 8):
        asyncio.run(restored.run([("a", n)]))
    assert store.reads[key_id] == 1
    assert (restored.counts["actions_replayed"], restored.counts["executed"]) == (3, 2)
