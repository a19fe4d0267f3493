"""A durable call whose arguments do not fit its function is refused before it runs and
before anything is journaled, naming the argument and the option meant; options of public
constructors are checked when given (issue 36, items 1 and 2)."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from actionjournal import (
    Agent,
    CallArgumentsError,
    ConfigurationError,
    InputEvent,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.stores import SqliteStore

CALLS: list[tuple[Any, ...]] = []


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def charge(order: str, *, amount: int = 1, **extra: Any) -> str:
    CALLS.append((order, amount))
    return f"charged {order}"


def refund(order: str, amount: int = 1) -> str:
    CALLS.append((order, amount))
    return f"refunded {order}"


class Calls(Agent):
    """One call per input, made as ``spec`` says: ``(function, args, kwargs, async?)``."""

    uid = "calls"

    def __init__(self, fn, args: tuple, kwargs: dict, awaited: bool = False) -> None:
        self.fn, self.args, self.kwargs, self.awaited = fn, args, kwargs, awaited

    @action(InputEvent)
    async def handle(self, event, ctx):
        if self.awaited:
            value = await ctx.durable_execute_async(self.fn, *self.args, **self.kwargs)
        else:
            value = await asyncio.to_thread(ctx.durable_execute, self.fn, *self.args, **self.kwargs)
        ctx.send_event(OutputEvent(value))


def run(store, agent) -> LocalRunner:
    runner = LocalRunner(agent, store)
    asyncio.run(runner.run([("k", "o-1")]))
    return runner


@pytest.mark.parametrize("awaited", [False, True], ids=["durable_execute", "async"])
def test_a_misspelled_option_is_refused_before_the_call_and_names_the_option(tmp_path, awaited):
    store = SqliteStore(tmp_path / "j.db")
    typo = Calls(refund, ("o-1",), {"on_unknwn": "fail"}, awaited)
    with pytest.raises(Exception) as raised:
        run(store, typo)
    error = raised.value.__cause__
    assert isinstance(error, CallArgumentsError) and isinstance(error, TypeError)
    assert "Did you mean the option `on_unknown`?" in str(error)
    assert "on_unknwn" in str(error) and "nothing was journaled" in str(error)
    assert CALLS == []  # never ran
    assert [type(r).__name__ for r in store.read_key("default", "calls", _key_id(), None)] == []
    # With the typo fixed the same run goes on: no divergence, the call runs once.
    fixed = run(store, Calls(refund, ("o-1",), {"on_unknown": "fail"}, awaited))
    assert [e.output for _, e in fixed.outputs] == ["refunded o-1"]
    assert CALLS == [("o-1", 1)]


def _key_id() -> str:
    from actionjournal.durable.identity import key_id

    return key_id("k")


@pytest.mark.parametrize(
    ("fn", "args", "kwargs", "says"),
    [
        (refund, (), {}, "missing a required argument: 'order'"),
        (refund, ("o-1", 2, 3), {}, "too many positional arguments"),
        (refund, ("o-1",), {"amout": 3}, "unexpected keyword argument 'amout'"),
        (functools.partial(refund, "o-1"), ("o-2",), {"amount": 1}, "multiple values"),
        (charge, ("o-1", 5), {}, "too many positional arguments"),
    ],
)
def test_arguments_that_do_not_bind_are_refused_naming_them(tmp_path, fn, args, kwargs, says):
    store = SqliteStore(tmp_path / "j.db")
    with pytest.raises(Exception) as raised:
        run(store, Calls(fn, args, kwargs))
    assert isinstance(raised.value.__cause__, CallArgumentsError)
    assert says in str(raised.value.__cause__)
    assert CALLS == []


@pytest.mark.parametrize(
    ("fn", "args", "kwargs"),
    [
        (charge, ("o-1",), {"amount": 2, "note": "x"}),  # **extra takes any keyword
        (functools.partial(refund, "o-1"), (), {"amount": 2}),
        (len, ("abc",), {}),  # a builtin
    ],
)
def test_arguments_that_bind_run(tmp_path, fn, args, kwargs):
    runner = run(SqliteStore(tmp_path / "j.db"), Calls(fn, args, kwargs))
    assert len(runner.outputs) == 1


def test_the_flink_agents_face_refuses_a_misspelled_option_too(tmp_path):
    from actionjournal.flink_agents.api.agents.agent import Agent as FaceAgent
    from actionjournal.flink_agents.api.decorators import action as face_action
    from actionjournal.flink_agents.api.events.event import InputEvent as FaceInput
    from actionjournal.flink_agents.api.execution_environment import AgentsExecutionEnvironment

    class Refunds(FaceAgent):
        @face_action(FaceInput)
        @staticmethod
        def handle(event, ctx):
            ctx.durable_execute(refund, event.input["order"], reconcile_timout=5)

    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j.db"))
    env.from_list([{"key": "k", "value": {"order": "o-1"}}]).apply(Refunds()).to_list()
    with pytest.raises(Exception) as raised:
        env.execute()
    text = "".join(str(e) for e in (raised.value, raised.value.__cause__))
    assert "Did you mean the option `reconcile_timeout`?" in text
    assert CALLS == []


def test_local_runner_options_are_checked_when_given(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    agent = Calls(refund, ("o-1",), {})
    with pytest.raises(ConfigurationError) as raised:
        LocalRunner(agent, store, on_run_failure="dead-leter")
    assert "on_run_failure='dead-leter'" in str(raised.value)
    assert "did you mean 'dead-letter'?" in str(raised.value)
    for bad in (
        {"run_failure_restarts": 0},
        {"on_output": "print"},
        {"on_dead_letter": 3},
        {"config": {"retry": None}},
    ):
        with pytest.raises(ConfigurationError, match=next(iter(bad))):
            LocalRunner(agent, store, **bad)
    runner = LocalRunner(agent, store)
    for bad in ({"snapshot_every": -1}, {"pace": "fast"}, {"snapshot_every": 2}):
        with pytest.raises(ConfigurationError, match="snapshot_every|pace"):
            asyncio.run(runner.run([("k", "o-1")], **bad))
    assert CALLS == []
