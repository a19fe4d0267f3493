"""Timer and signal events: actionjournal's extension of the Flink Agents API (upstream has
no timers or signals; see docs/timers.md and docs/porting.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from actionjournal.durable.waits import SignalFields, SignalReceived, SignalTimedOut
from actionjournal.flink_agents.api.events.event import Event


class SignalReceivedEvent(SignalFields, Event):
    """The answer to a signal the agent expected (``ctx.expect_signal``) arrived first:
    ``name``, ``signal_id`` and ``value``."""

    EVENT_TYPE: ClassVar[str] = SignalReceived.TYPE

    @property
    def value(self) -> Any:
        return self.attributes["value"]


class SignalTimedOutEvent(SignalFields, Event):
    """A signal's deadline passed before an answer arrived: ``name`` and ``signal_id``."""

    EVENT_TYPE: ClassVar[str] = SignalTimedOut.TYPE
