"""Durable execution and recovery for streaming AI agents in Apache Flink.

The names an agent's code needs, and every public error (all defined in
:mod:`actionjournal.durable.errors`, all subclasses of :class:`ActionJournalError`).
"""

from actionjournal.durable.agent import Agent, action
from actionjournal.durable.calls import current_call
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    ActionFailedError,
    ActionJournalError,
    CleanupBoundaryError,
    ConfigurationError,
    ContextClosedError,
    CorruptRecordError,
    DataLossError,
    DivergenceError,
    EncodingError,
    JournalWriteError,
    MarkerMismatchError,
    PayloadTooLargeError,
    PickleDisabledError,
    ReconcileError,
    RecordedCallError,
    RecordError,
    RecordTooLargeError,
    RecoveryError,
    RedriveError,
    RunJournalTooLongError,
    SignatureError,
    StoreError,
    StoreRecreatedError,
    UnknownOutcomeError,
    UnsupportedFormatError,
)
from actionjournal.durable.events import Event, InputEvent, OutputEvent
from actionjournal.durable.lazy import lazy_attributes
from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Recovered, StillRunning
from actionjournal.durable.retry import RetryPolicy
from actionjournal.operator.context import RunnerContext
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.local import LocalRunner

__all__ = [
    "ActionFailedError",
    "ActionJournalError",
    "Agent",
    "CallInfo",
    "CleanupBoundaryError",
    "ConfigurationError",
    "ContextClosedError",
    "CorruptRecordError",
    "DataLossError",
    "DeadLetter",
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
    "PayloadTooLargeError",
    "PickleDisabledError",
    "ReconcileError",
    "RecordError",
    "RecordTooLargeError",
    "RecordedCallError",
    "Recovered",
    "RecoveryError",
    "RedriveError",
    "RetryPolicy",
    "RunJournalTooLongError",
    "RunnerContext",
    "SignatureError",
    "StillRunning",
    "StoreError",
    "StoreRecreatedError",
    "UnknownOutcomeError",
    "UnsupportedFormatError",
    "action",
    "current_call",
]

# Where a worker unpickling the agent's PyFlink functions starts: this package, imported
# before any module below it (see actionjournal.operator.flink._revive).
__getattr__ = lazy_attributes(__name__, {"_revive": "actionjournal.operator.flink"})
