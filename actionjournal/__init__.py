"""Durable execution and recovery for streaming AI agents in Apache Flink."""

from actionjournal.durable.calls import current_call
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    ActionFailedError,
    ActionJournalError,
    ConfigurationError,
    ContextClosedError,
    DataLossError,
    DivergenceError,
    EncodingError,
    JournalWriteError,
    MarkerMismatchError,
    ReconcileError,
    RecordedCallError,
    StoreRecreatedError,
    UnknownOutcomeError,
)
from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Recovered, StillRunning
from actionjournal.operator.agent import Agent, action
from actionjournal.operator.context import RunnerContext
from actionjournal.operator.events import Event, InputEvent, OutputEvent
from actionjournal.operator.local import LocalRunner

__all__ = [
    "ActionFailedError",
    "ActionJournalError",
    "Agent",
    "CallInfo",
    "ConfigurationError",
    "ContextClosedError",
    "DataLossError",
    "DivergenceError",
    "EncodingError",
    "Event",
    "Failed",
    "InputEvent",
    "JournalConfig",
    "JournalWriteError",
    "LocalRunner",
    "MarkerMismatchError",
    "NotStarted",
    "OutputEvent",
    "ReconcileError",
    "RecordedCallError",
    "Recovered",
    "RunnerContext",
    "StillRunning",
    "StoreRecreatedError",
    "UnknownOutcomeError",
    "action",
    "current_call",
]
