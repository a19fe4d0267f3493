"""A key's runs start one after another on the loop, without waiting for the timer that
collects the previous one (actionjournal/flink/key_runs.py; the Flink operator's use of
it runs in tests/e2e). The journal is SQLite; the agent counts what it ran."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from actionjournal import ActionFailedError, Agent, InputEvent, OutputEvent, action
from actionjournal.flink.key_runs import KeyRuns
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.stores import SqliteStore


class Counter(Agent):
    """Outputs its input with how many runs the key had before (short-term memory)."""

    uid = "counter"

    @action(InputEvent)
    def handle(self, event, ctx):
        if event.input == "boom":
            raise RuntimeError("boom")
        runs = ctx.short_term_memory.get("runs") or 0
        ctx.short_term_memory.set("runs", runs + 1)
        ctx.send_event(OutputEvent(f"{event.input}:{runs}"))


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


def queued(engine: AgentEngine, *inputs: str) -> KeyState:
    state = KeyState()
    for value in inputs:
        state = engine.accept(state, value, "k")
    return state


def outputs(results) -> list[str]:
    return [event.attributes["output"] for result in results for event in result.outputs]


def test_queued_inputs_run_one_after_another_without_being_collected(tmp_path, loop):
    engine = AgentEngine(Counter(), SqliteStore(tmp_path / "journal.db"))
    state = queued(engine, "a", "b", "c")
    finished = threading.Semaphore(0)
    wakes: list[bool] = []
    ends: list[bool] = []

    def on_finished(wake: bool, ended: bool) -> None:
        wakes.append(wake)
        ends.append(ended)
        finished.release()

    runs = KeyRuns(engine, loop, "k", "k", state, on_finished)
    for _ in range(3):  # nobody collects meanwhile: each run started after the one before
        assert finished.acquire(timeout=10)
    runs.future.result(timeout=10)
    results = runs.collect()
    assert outputs(results) == ["a:0", "b:1", "c:2"]  # in order, memory carried along
    assert wakes == [True, False, False]  # one push: the others finished before a collect
    assert ends == [False, False, True]  # the last run leaves the key idle
    assert runs.over and runs.collect() == []
    assert not runs.offer(engine.accept(state, "d", "k").pending[-1])  # ran out: refused


def test_an_input_offered_while_running_runs_next(tmp_path, loop):
    engine = AgentEngine(Counter(), SqliteStore(tmp_path / "journal.db"))
    gate = threading.Event()
    state = queued(engine, "a")
    hold = lambda wake, ended: gate.wait(10)  # noqa: E731  holds the loop
    runs = KeyRuns(engine, loop, "k", "k", state, hold)
    later = engine.accept(state, "b", "k")
    assert runs.offer(later.pending[-1])
    gate.set()
    runs.future.result(timeout=10)
    assert outputs(runs.collect()) == ["a:0", "b:1"]
    assert runs.over


def test_a_failed_run_ends_the_runs_after_the_results_before_it(tmp_path, loop):
    engine = AgentEngine(Counter(), SqliteStore(tmp_path / "journal.db"))
    state = queued(engine, "a", "boom", "c")
    runs = KeyRuns(engine, loop, "k", "k", state, lambda wake, ended: None)
    with pytest.raises(ActionFailedError):
        runs.future.result(timeout=10)
    assert runs.has_results and not runs.over
    assert outputs(runs.collect()) == ["a:0"]  # the run before it; "c" never started
    assert runs.over  # then the timer raises the failure from the future


def test_a_run_finished_after_a_collect_is_pushed_again(tmp_path, loop):
    engine = AgentEngine(Counter(), SqliteStore(tmp_path / "journal.db"))
    wakes: list[bool] = []
    collected = threading.Event()

    def on_finished(wake: bool, ended: bool) -> None:
        wakes.append(wake)
        if len(wakes) == 1:
            collected.wait(10)  # "b" starts once the timer collected "a"

    runs = KeyRuns(engine, loop, "k", "k", queued(engine, "a", "b"), on_finished)
    while not runs.has_results:
        threading.Event().wait(0.01)
    assert outputs(runs.collect()) == ["a:0"]
    collected.set()
    runs.future.result(timeout=10)
    assert outputs(runs.collect()) == ["b:1"]
    assert wakes == [True, True]  # the push for "a" was answered: "b" needs its own
