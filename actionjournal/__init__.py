"""Durable execution and recovery for streaming AI agents in Apache Flink.

The names an agent's code needs, and every public error (all defined in
:mod:`actionjournal.durable.errors`, all subclasses of :class:`ActionJournalError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.chat.errors import (
        ChatError as ChatError,
    )
    from actionjournal.chat.errors import (
        ChatResponseError as ChatResponseError,
    )
    from actionjournal.chat.errors import (
        ChatTimeoutError as ChatTimeoutError,
    )
    from actionjournal.chat.errors import (
        ChatUnreachableError as ChatUnreachableError,
    )
    from actionjournal.chat.errors import (
        StructuredOutputError as StructuredOutputError,
    )
    from actionjournal.durable.agent import (
        Agent as Agent,
    )
    from actionjournal.durable.agent import (
        action as action,
    )
    from actionjournal.durable.config import (
        JournalConfig as JournalConfig,
    )
    from actionjournal.durable.effects import (
        current_call as current_call,
    )
    from actionjournal.durable.errors import (
        ActionFailedError as ActionFailedError,
    )
    from actionjournal.durable.errors import (
        ActionJournalError as ActionJournalError,
    )
    from actionjournal.durable.errors import (
        CallArgumentsError as CallArgumentsError,
    )
    from actionjournal.durable.errors import (
        CleanupBoundaryError as CleanupBoundaryError,
    )
    from actionjournal.durable.errors import (
        ConfigurationError as ConfigurationError,
    )
    from actionjournal.durable.errors import (
        ContextClosedError as ContextClosedError,
    )
    from actionjournal.durable.errors import (
        CorruptRecordError as CorruptRecordError,
    )
    from actionjournal.durable.errors import (
        DataLossError as DataLossError,
    )
    from actionjournal.durable.errors import (
        DivergenceError as DivergenceError,
    )
    from actionjournal.durable.errors import (
        EncodingError as EncodingError,
    )
    from actionjournal.durable.errors import (
        JournalUnavailableError as JournalUnavailableError,
    )
    from actionjournal.durable.errors import (
        JournalWriteError as JournalWriteError,
    )
    from actionjournal.durable.errors import (
        MarkerMismatchError as MarkerMismatchError,
    )
    from actionjournal.durable.errors import (
        PayloadTooLargeError as PayloadTooLargeError,
    )
    from actionjournal.durable.errors import (
        PickleDisabledError as PickleDisabledError,
    )
    from actionjournal.durable.errors import (
        ReconcileError as ReconcileError,
    )
    from actionjournal.durable.errors import (
        RecordedCallError as RecordedCallError,
    )
    from actionjournal.durable.errors import (
        RecordError as RecordError,
    )
    from actionjournal.durable.errors import (
        RecordTooLargeError as RecordTooLargeError,
    )
    from actionjournal.durable.errors import (
        RecoveryError as RecoveryError,
    )
    from actionjournal.durable.errors import (
        RedriveError as RedriveError,
    )
    from actionjournal.durable.errors import (
        RunJournalTooLongError as RunJournalTooLongError,
    )
    from actionjournal.durable.errors import (
        SignatureError as SignatureError,
    )
    from actionjournal.durable.errors import (
        StoreError as StoreError,
    )
    from actionjournal.durable.errors import (
        StoreRecreatedError as StoreRecreatedError,
    )
    from actionjournal.durable.errors import (
        UnknownOutcomeError as UnknownOutcomeError,
    )
    from actionjournal.durable.errors import (
        UnsupportedFormatError as UnsupportedFormatError,
    )
    from actionjournal.durable.events import (
        Event as Event,
    )
    from actionjournal.durable.events import (
        InputEvent as InputEvent,
    )
    from actionjournal.durable.events import (
        OutputEvent as OutputEvent,
    )
    from actionjournal.durable.outcomes import (
        CallInfo as CallInfo,
    )
    from actionjournal.durable.outcomes import (
        Failed as Failed,
    )
    from actionjournal.durable.outcomes import (
        NotStarted as NotStarted,
    )
    from actionjournal.durable.outcomes import (
        Recovered as Recovered,
    )
    from actionjournal.durable.outcomes import (
        StillRunning as StillRunning,
    )
    from actionjournal.durable.retry import (
        RetryPolicy as RetryPolicy,
    )
    from actionjournal.durable.waits import (
        Signal as Signal,
    )
    from actionjournal.durable.waits import (
        SignalInput as SignalInput,
    )
    from actionjournal.durable.waits import (
        SignalReceived as SignalReceived,
    )
    from actionjournal.durable.waits import (
        SignalTimedOut as SignalTimedOut,
    )
    from actionjournal.operator.context import (
        RunnerContext as RunnerContext,
    )
    from actionjournal.operator.dead_letters import (
        DeadLetter as DeadLetter,
    )
    from actionjournal.operator.local import (
        LocalRunner as LocalRunner,
    )
    from actionjournal.reconcilers.errors import (
        RemoteAgentError as RemoteAgentError,
    )
    from actionjournal.reconcilers.errors import (
        RemoteJobFailed as RemoteJobFailed,
    )

_LAZY = {
    "actionjournal.durable.agent": ("Agent", "action"),
    "actionjournal.durable.effects": ("current_call",),
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
    "actionjournal.chat.errors": (
        "ChatError",
        "ChatResponseError",
        "ChatTimeoutError",
        "ChatUnreachableError",
        "StructuredOutputError",
    ),
    "actionjournal.reconcilers.errors": ("RemoteAgentError", "RemoteJobFailed"),
    "actionjournal.durable.events": ("Event", "InputEvent", "OutputEvent"),
    "actionjournal.durable.outcomes": (
        "CallInfo",
        "Failed",
        "NotStarted",
        "Recovered",
        "StillRunning",
    ),
    "actionjournal.durable.retry": ("RetryPolicy",),
    "actionjournal.durable.waits": ("Signal", "SignalInput", "SignalReceived", "SignalTimedOut"),
    "actionjournal.operator.context": ("RunnerContext",),
    "actionjournal.operator.dead_letters": ("DeadLetter",),
    "actionjournal.operator.local": ("LocalRunner",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
