"""A durable call's options are checked when the call is made, and a blocking call is refused
on the event loop (issue 14 items 13 and 15)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from actionjournal import Agent, InputEvent, LocalRunner, action
from actionjournal.durable.errors import ActionFailedError, ConfigurationError
from actionjournal.reconcilers import reconciled_by
from actionjournal.stores import MemoryStore

EXECUTED: list[str] = []


@pytest.fixture(autouse=True)
def _reset():
    EXECUTED.clear()


def pay(order: str) -> str:
    EXECUTED.append(order)
    return f"paid {order}"


class Pays(Agent):
    def __init__(self, **options: Any) -> None:
        self.options = options

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(pay, event.input, **self.options)


def first_run_error(agent: Agent, store: MemoryStore) -> BaseException:
    with pytest.raises(ActionFailedError) as info:
        asyncio.run(LocalRunner(agent, store).run([("k", "o-1")]))
    assert info.value.__cause__ is not None
    return info.value.__cause__


def two_args(a, b):
    return None


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"reconciler": 42}, "reconciler=42"),
        ({"reconciler": two_args}, "takes (a, b)"),
        ({"reconciler": "payments"}, "reconciler='payments'"),
        ({"on_unknown": "reconcil"}, "on_unknown='reconcil'"),
        ({"reconcile_timeout": 0}, "reconcile_timeout=0"),
        ({"reconcile_timeout": -5.0}, "reconcile_timeout=-5.0"),
        ({"reconcile_timeout": "300"}, "reconcile_timeout='300'"),
        ({"record_failures": "no"}, "record_failures='no'"),
        ({"durable_id": ""}, "durable_id=''"),
        ({"on_unknown": "reconcile"}, "no reconciler"),
    ],
)
def test_a_bad_option_fails_the_call_when_it_is_made(options, named):
    """Item 13: not after a crash. Nothing ran and nothing was journaled."""
    store = MemoryStore()
    cause = first_run_error(Pays(**options), store)
    assert isinstance(cause, ConfigurationError), cause
    assert named in str(cause) and "test_call_options:pay" in str(cause)
    assert EXECUTED == [] and store.entries == []


def test_the_error_lists_what_an_option_may_be():
    cause = first_run_error(Pays(on_unknown="reconcil"), MemoryStore())
    assert "'rerun', 'reconcile', 'fail'" in str(cause)
    cause = first_run_error(Pays(reconciler=two_args), MemoryStore())
    assert "one argument, the CallInfo" in str(cause) and "Flink Agents' form" in str(cause)


def test_a_function_given_a_bad_reconciler_fails_where_it_is_defined():
    with pytest.raises(ConfigurationError, match="@reconciled_by"):
        reconciled_by(lambda a, b: None)


class Blocks(Agent):
    @action(InputEvent)
    async def handle(self, event, ctx):
        ctx.durable_execute(pay, event.input)


def test_a_blocking_durable_call_is_refused_in_an_async_action():
    """Item 15: it would stall every key on the loop; the message names the async form."""
    cause = first_run_error(Blocks(), MemoryStore())
    assert isinstance(cause, TypeError)
    assert "`await ctx.durable_execute_async(...)`" in str(cause)
    assert "test_call_options:pay" in str(cause)
    assert EXECUTED == []
