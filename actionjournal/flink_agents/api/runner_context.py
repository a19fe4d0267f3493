"""What a Flink Agents action sees, over the engine's context of the running action.

Events sent, memory updates and durable calls are the engine's: journaled with the
action and replayed after a failure. ``durable_execute(func, *args, reconciler=None,
**kwargs)`` is upstream's call; ``reconciler`` may be upstream's zero-argument form
(returns the value, raises to record a failure) or actionjournal's ``CallInfo`` form.
The keyword arguments ``durable_id``, ``on_unknown``, ``record_failures`` and
``reconcile_timeout`` are actionjournal's per-call options (docs/reconcilers.md), not
passed to ``func``. ``schedule_event``, ``cancel_timer`` and ``expect_signal`` are
actionjournal's extension (upstream has no timers or signals; docs/timers.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from actionjournal.durable.effects import call_for_blocked_loop
from actionjournal.durable.waits import Signal
from actionjournal.flink_agents.api.events.event import Event
from actionjournal.flink_agents.api.memory_object import MemoryObject, MemoryType
from actionjournal.flink_agents.api.resource import Resource, ResourceType

if TYPE_CHECKING:
    from actionjournal.flink_agents.runtime.configuration import AgentConfiguration
    from actionjournal.flink_agents.runtime.plan import EngineAgent
    from actionjournal.operator import context as engine


class RunnerContext:
    """The context of one action execution; valid while the action runs."""

    def __init__(self, engine_ctx: engine.RunnerContext, agent: EngineAgent, action: str) -> None:
        self._ctx = engine_ctx
        self._agent = agent
        self._action = action
        self._sensory = MemoryObject(engine_ctx.sensory_memory, "", MemoryType.SENSORY)
        self._short_term = MemoryObject(engine_ctx.short_term_memory, "", MemoryType.SHORT_TERM)

    @property
    def key(self) -> Any:
        """The key of the run (the Flink key, or the ``key`` of a ``from_list`` input)."""
        return self._ctx.key

    def send_event(self, event: Event) -> None:
        """Send an event; it is delivered when the action returns. Sets ``event.id``."""
        from actionjournal.flink_agents.runtime import events

        sent = events.to_engine(self._checked(event, "send_event"))
        event.id = events.event_id(self._ctx.send_event(sent))

    def schedule_event(
        self,
        event: Event,
        *,
        delay: float | timedelta | None = None,
        at: datetime | None = None,
        timer_id: str | None = None,
    ) -> str:
        """actionjournal's extension: deliver ``event`` to this key as a new run after
        ``delay`` or at ``at``; returns the timer's id (see the engine's
        ``RunnerContext.schedule_event`` and docs/timers.md)."""
        from actionjournal.flink_agents.runtime import events

        engine_event = events.to_engine(self._checked(event, "schedule_event"))
        return self._ctx.schedule_event(engine_event, delay=delay, at=at, timer_id=timer_id)

    def cancel_timer(self, timer_id: str) -> bool:
        """actionjournal's extension: cancel a pending timer; True if it was pending."""
        return self._ctx.cancel_timer(timer_id)

    def expect_signal(
        self, name: str, *, timeout: float | timedelta, timeout_event: Event | None = None
    ) -> Signal:
        """actionjournal's extension: wait for an answer from outside without keeping the
        action running; a ``SignalReceivedEvent`` or, after ``timeout``, a
        ``SignalTimedOutEvent`` (or ``timeout_event``) starts a run of this key."""
        from actionjournal.flink_agents.runtime import events

        timeout_engine = (
            events.to_engine(self._checked(timeout_event, "expect_signal's timeout_event"))
            if timeout_event is not None
            else None
        )
        return self._ctx.expect_signal(name, timeout=timeout, timeout_event=timeout_engine)

    @staticmethod
    def _checked(event: Any, what: str) -> Event:
        if not isinstance(event, Event):
            raise TypeError(
                f"{what} takes an actionjournal.flink_agents Event, got {type(event).__name__}"
            )
        return event

    def get_resource(self, name: str, type: ResourceType, metric_group: Any = None) -> Resource:
        """The agent's resource ``name`` of ``type`` (built on first use); KeyError if none."""
        return self._agent.resource_cache().get_resource(name, type)

    @property
    def action_config(self) -> dict[str, Any]:
        """The config given to ``add_action`` for this action (``{}`` if none)."""
        return dict(self._agent.action_config(self._action))

    def get_action_config_value(self, key: str) -> Any:
        return self._agent.action_config(self._action).get(key)

    @property
    def sensory_memory(self) -> MemoryObject:
        """Memory of this run only: cleared when the run ends."""
        return self._sensory

    @property
    def short_term_memory(self) -> MemoryObject:
        """Memory of the key, kept across its runs."""
        return self._short_term

    @property
    def long_term_memory(self) -> Any:
        raise NotImplementedError(
            "long-term memory is not supported by actionjournal's Flink Agents face; see "
            "docs/porting.md"
        )

    @property
    def agent_metric_group(self) -> None:
        """None: actionjournal's metrics are its own (docs/operations.md)."""
        return None

    @property
    def action_metric_group(self) -> None:
        """None: actionjournal's metrics are its own (docs/operations.md)."""
        return None

    @property
    def config(self) -> AgentConfiguration:
        return self._agent.config

    def durable_execute(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run ``func(*args, **kwargs)`` once; after a failure, what it recorded.

        Blocking. In an ``async def`` action it runs as upstream runs it, blocking the
        action's event loop (every run on it waits) until it returns, with one warning per
        action: await :meth:`durable_execute_async` there instead.
        """
        if asyncio._get_running_loop() is None:
            return self._ctx.durable_execute(func, *args, reconciler=reconciler, **kwargs)
        self._agent.warn_blocking_call(self._action)
        return call_for_blocked_loop(
            self._ctx.durable_execute, func, *args, reconciler=reconciler, **kwargs
        )

    def durable_execute_async(
        self,
        func: Callable[..., Any],
        *args: Any,
        reconciler: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Awaitable form; its place among the action's calls is taken now, so several
        may be awaited together (``asyncio.gather``) and still replay."""
        return self._ctx.durable_execute_async(func, *args, reconciler=reconciler, **kwargs)

    def close(self) -> None:
        """Nothing to release: the engine closes the context when the action ends."""
