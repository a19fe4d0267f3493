"""Durable execution and recovery for streaming AI agents in Apache Flink.

The names an agent's code needs, and every public error (all defined in
:mod:`actionjournal.durable.errors`, all subclasses of :class:`ActionJournalError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.durable.agent import Agent, action
    from actionjournal.durable.calls import current_call
    from actionjournal.durable.config import JournalConfig
    from actionjournal.durable.errors import (
        ActionFailedError,
        ActionJournalError,
        CallArgumentsError,
        CleanupBoundaryError,
        ConfigurationError,
        ContextClosedError,
        CorruptRecordError,
        DataLossError,
        DivergenceError,
        EncodingError,
        JournalUnavailableError,
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
    from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Recovered, StillRunning
    from actionjournal.durable.retry import RetryPolicy
    from actionjournal.operator.context import RunnerContext
    from actionjournal.operator.dead_letters import DeadLetter
    from actionjournal.operator.local import LocalRunner

__all__ = [
    "ActionFailedError",
    "ActionJournalError",
    "Agent",
    "CallArgumentsError",
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
    "JournalUnavailableError",
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

_LAZY = {
    "actionjournal.durable.agent": ("Agent", "action"),
    "actionjournal.durable.calls": ("current_call",),
    "actionjournal.durable.config": ("JournalConfig",),
    "actionjournal.durable.errors": (
        "ActionFailedError",
        "ActionJournalError",
        "CallArgumentsError",
        "CleanupBoundaryError",
        "ConfigurationError",
        "ContextClosedError",
        "CorruptRecordError",
        "DataLossError",
        "DivergenceError",
        "EncodingError",
        "JournalUnavailableError",
        "JournalWriteError",
        "MarkerMismatchError",
        "PayloadTooLargeError",
        "PickleDisabledError",
        "ReconcileError",
        "RecordedCallError",
        "RecordError",
        "RecordTooLargeError",
        "RecoveryError",
        "RedriveError",
        "RunJournalTooLongError",
        "SignatureError",
        "StoreError",
        "StoreRecreatedError",
        "UnknownOutcomeError",
        "UnsupportedFormatError",
    ),
    "actionjournal.durable.events": ("Event", "InputEvent", "OutputEvent"),
    "actionjournal.durable.outcomes": (
        "CallInfo",
        "Failed",
        "NotStarted",
        "Recovered",
        "StillRunning",
    ),
    "actionjournal.durable.retry": ("RetryPolicy",),
    "actionjournal.operator.context": ("RunnerContext",),
    "actionjournal.operator.dead_letters": ("DeadLetter",),
    "actionjournal.operator.local": ("LocalRunner",),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
