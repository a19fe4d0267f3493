"""Timer and signal events: actionjournal's extension of the Flink Agents API (upstream has
no timers or signals; see docs/timers.md and docs/porting.md)."""

from __future__ import annotations

from typing import Any, ClassVar

from actionjournal.durable.waits import SignalReceived, SignalTimedOut
from actionjournal.flink_agents.api.events.event import Event


class SignalReceivedEvent(Event):
    """The answer to a signal the agent expected (``ctx.expect_signal``) arrived first."""

    EVENT_TYPE: ClassVar[str] = SignalReceived.TYPE

    @property
    def name(self) -> str:
        name: str = self.attributes["name"]
        return name

    @property
    def signal_id(self) -> str:
        signal_id: str = self.attributes["signal_id"]
        return signal_id

    @property
    def value(self) -> Any:
        return self.attributes["value"]


class SignalTimedOutEvent(Event):
    """A signal's deadline passed before an answer arrived."""

    EVENT_TYPE: ClassVar[str] = SignalTimedOut.TYPE

    @property
    def name(self) -> str:
        name: str = self.attributes["name"]
        return name

    @property
    def signal_id(self) -> str:
        signal_id: str = self.attributes["signal_id"]
        return signal_id
