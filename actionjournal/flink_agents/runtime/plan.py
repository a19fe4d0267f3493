"""A Flink Agents agent as an engine agent: its actions, wrapped, and its resources.

The engine runs ``EngineAgent`` like any agent; each action is wrapped so it receives
Flink Agents' event classes and context. Nothing else is added: journaling, replay,
memory and durable calls are the engine's.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from actionjournal.durable import agent as engine
from actionjournal.durable import events as engine_events
from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.decorators import LISTEN
from actionjournal.flink_agents.api.events.chat_event import ChatRequestEvent
from actionjournal.flink_agents.api.events.event import InputEvent, OutputEvent
from actionjournal.flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from actionjournal.flink_agents.api.runner_context import RunnerContext
from actionjournal.flink_agents.runtime import builtin_actions, events
from actionjournal.flink_agents.runtime.configuration import AgentConfiguration
from actionjournal.flink_agents.runtime.resources import (
    Declared,
    ResourceCache,
    declared_resources,
    members,
)
from actionjournal.operator import context as engine_context

log = logging.getLogger(__name__)

Plan = dict[str, tuple[list[str], Callable[..., Any], dict[str, Any] | None]]
BUILT_IN: Plan = {
    builtin_actions.CHAT_ACTION: (
        [ChatRequestEvent.EVENT_TYPE, ToolResponseEvent.EVENT_TYPE],
        builtin_actions.chat_model_action,
        None,
    ),
    builtin_actions.TOOL_ACTION: (
        [ToolRequestEvent.EVENT_TYPE],
        builtin_actions.tool_call_action,
        None,
    ),
}


class EngineAgent(engine.Agent):
    """``agent`` as the engine runs it; built when the agent is applied (``apply``)."""

    input_event_type = InputEvent.EVENT_TYPE
    output_event_type = OutputEvent.EVENT_TYPE

    def __init__(self, agent: Agent, config: AgentConfiguration, shared: Declared) -> None:
        self.agent = agent
        self.config = config
        self.declared = declared_resources(agent, shared)
        self._plan = _actions(agent)
        self._resources: ResourceCache | None = None
        self.tool_requests: list[ToolRequestEvent] | None = None  # the local env's record

    @property
    def operator_uid(self) -> str:
        return self.agent.uid or type(self.agent).__name__

    def actions(self) -> dict[str, list[engine.ActionSpec]]:
        cached = self.__dict__.get("_actions_by_type")
        if cached is None:
            cached = {}
            for name, (listens, fn, _) in self._plan.items():
                spec = engine.ActionSpec(name, tuple(listens), *self._wrap(name, fn))
                for event_type in listens:
                    cached.setdefault(event_type, []).append(spec)
            self.__dict__["_actions_by_type"] = cached
        return cached

    def reconcilers(self) -> dict[str, Callable[..., Any]]:
        return {}

    def action_config(self, name: str) -> dict[str, Any]:
        return self._plan[name][2] or {}

    def warn_blocking_call(self, action: str) -> None:
        """Warn once per action that its plain ``durable_execute`` blocks its event loop."""
        warned = self.__dict__.setdefault("_warned_blocking", set())
        if action in warned:
            return
        warned.add(action)
        log.warning(
            "action %s of agent %s calls the blocking ctx.durable_execute(...) in an `async "
            "def` action: it runs, but the event loop of the action waits for it, so every "
            "other async action and run on that loop stalls until the call returns. Use `await "
            "ctx.durable_execute_async(...)` to run it without blocking",
            action,
            self.operator_uid,
        )

    def resource_cache(self) -> ResourceCache:
        """The agent's resources in this process (built on first use)."""
        if self._resources is None:
            self._resources = ResourceCache(self.declared, self.config)
        return self._resources

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Flink workers: declarations travel, built resources and wrappers do not.
        state = dict(self.__dict__)
        state.pop("_actions_by_type", None)
        state.pop("_warned_blocking", None)
        state["_resources"] = None
        return state

    def _wrap(self, name: str, fn: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
        """``fn(event, ctx)`` as the engine calls actions, and whether it is async."""
        if inspect.iscoroutinefunction(fn):

            async def run_async(
                event: engine_events.Event, ctx: engine_context.RunnerContext
            ) -> None:
                await fn(self._received(name, event), RunnerContext(ctx, self, name))

            return run_async, True

        def run(event: engine_events.Event, ctx: engine_context.RunnerContext) -> Any:
            return fn(self._received(name, event), RunnerContext(ctx, self, name))

        return run, False

    def _received(self, action: str, event: engine_events.Event) -> Any:
        """``event`` as the face's class; a tool request is also kept when asked for."""
        received = events.to_face(event)
        if action == builtin_actions.TOOL_ACTION and self.tool_requests is not None:
            self.tool_requests.append(ToolRequestEvent.from_event(received))
        return received


def _actions(agent: Agent) -> Plan:
    """Decorated actions (inherited ones too), added actions, then the built-in ones."""
    plan: Plan = {}
    for name, member in members(type(agent)):
        inner = member.__func__ if isinstance(member, staticmethod | classmethod) else member
        listens = getattr(member, LISTEN, None) or getattr(inner, LISTEN, None)
        if listens is not None:
            plan[name] = (list(listens), getattr(agent, name), None)
    for added in (agent.actions, BUILT_IN):
        for name, (listens, fn, config) in added.items():
            if name in plan:
                raise ValueError(f"Duplicate action name: {name} (declared twice, or built in)")
            plan[name] = (list(listens), fn, config)
    return plan
