"""The agent under test, built from the test's factory and instrumented: every execution of
an action body is reported to the scenario's service (replays are not executions)."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from actionjournal.durable.agent import Agent
from actionjournal.durable.events import Event
from actionjournal.testing.harness.calls import http

AgentFactory = Callable[..., Agent]


def make_agent(factory: AgentFactory, url: str) -> Agent:
    """``factory(url)``, or ``factory()`` when it takes no argument."""
    try:
        inspect.signature(factory).bind(url)
    except TypeError:
        return factory()
    except ValueError:  # builtins without a signature
        pass
    return factory(url)


def instrument(agent: Agent, url: str) -> Agent:
    """Report every execution of an action body to the service at ``url``."""
    wrapped: dict[str, Any] = {}
    by_type = {}
    for event_type, specs in agent.actions().items():
        by_type[event_type] = [
            wrapped.setdefault(
                s.name, dataclasses.replace(s, fn=_counting(s.fn, s.name, url, s.is_async))
            )
            for s in specs
        ]
    agent.actions = lambda: by_type  # type: ignore[method-assign]  # this instance only
    return agent


def _report(url: str, name: str) -> None:
    http().post(f"{url}/actions/{name}").raise_for_status()


def _counting(fn: Callable[..., Any], name: str, url: str, is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def counted_async(event: Event, ctx: Any) -> Any:
            await asyncio.to_thread(_report, url, name)
            return await fn(event, ctx)

        return counted_async

    def counted(event: Event, ctx: Any) -> Any:
        _report(url, name)
        return fn(event, ctx)

    return counted
