"""``CallContext``: what code below the operator uses of an action's context.

Chat calls and reconciling jobs make durable calls through the context their action was
given and read the agent it belongs to; they type against this protocol, so they import
nothing above durable/. The operator's :class:`~actionjournal.RunnerContext` implements it
(and the Flink Agents face's context, which subclasses it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from actionjournal.durable.agent import Agent
from actionjournal.durable.events import Event


class CallContext(Protocol):
    """An action's context as chat and reconcilers see it."""

    @property
    def agent(self) -> Agent:
        """The agent whose action holds this context (its models, its uid)."""
        ...

    def durable_execute(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as a durable call; keyword options as the context takes."""
        ...

    def durable_execute_async(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Coroutine[Any, Any, Any]:
        """The awaitable form, its journal position taken when called."""
        ...

    def send_event(self, event: Event) -> str:
        """Send an event, delivered when the action returns; its id."""
        ...
