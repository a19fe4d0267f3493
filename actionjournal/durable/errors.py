"""Errors a user can hit. Each says what happened, where, and what to do.

Every error actionjournal raises is an :class:`ActionJournalError`. This module holds the
core's; the chat models' (:mod:`actionjournal.chat.errors`) and the remote agent jobs'
(:mod:`actionjournal.reconcilers.errors`) hold their layers'; all are exported from the
top package (``from actionjournal import DivergenceError``)::

    ActionJournalError                 key_id, seq, action, call_id: where, when known
    ├── ConfigurationError             a setting or a call's option is invalid
    │   └── CallArgumentsError         (also a TypeError) arguments do not fit the function
    ├── RecordError                    a journal record could not be read (``where``)
    │   ├── CorruptRecordError
    │   ├── UnsupportedFormatError
    │   ├── SignatureError
    │   └── PickleDisabledError
    ├── EncodingError                  a value cannot be journaled
    │   └── PayloadTooLargeError
    ├── RunJournalTooLongError         over journal.max_run_records
    ├── StoreError                     the store failed; nothing was acknowledged
    │   └── JournalWriteError          an append was not acknowledged
    │       ├── JournalUnavailableError    not started: a write was refused before
    │       └── RecordTooLargeError        (also a PayloadTooLargeError)
    ├── RecoveryError                  restored state cannot be used with the journal
    │   ├── MarkerMismatchError
    │   ├── StoreRecreatedError
    │   ├── DataLossError
    │   └── CleanupBoundaryError
    ├── DivergenceError                the code made another call than the journal holds
    ├── UnknownOutcomeError            a call started, no outcome, on_unknown='fail'
    ├── ReconcileError                 a reconciler raised or never settled
    ├── RedriveError                   a dead letter cannot re-drive its run here
    ├── ActionFailedError              an action raised; the run stops
    ├── ContextClosedError             a context used after its action finished
    ├── RecordedCallError              a journaled failure whose type cannot be rebuilt
    ├── ChatError (chat)               ChatTimeoutError, ChatUnreachableError,
    │                                  ChatResponseError, StructuredOutputError
    └── RemoteJobFailed, RemoteAgentError (reconcilers)
"""

from __future__ import annotations


class ActionJournalError(Exception):
    """Base class of every error raised by actionjournal.

    Errors about one run say where as attributes too, not only in their text: ``key_id``,
    ``seq``, ``action`` and ``call_id`` (``None`` when not known or not about one).
    """

    key_id: str | None = None
    seq: int | None = None
    action: str | None = None
    call_id: str | None = None

    def __init__(
        self,
        *args: object,
        key_id: str | None = None,
        seq: int | None = None,
        action: str | None = None,
        call_id: str | None = None,
    ) -> None:
        super().__init__(*args)
        # Only those given become instance attributes: a journaled error is rebuilt from its
        # args and attributes, and one journaled before these existed must rebuild equal.
        for name, value in (("key_id", key_id), ("seq", seq), ("action", action)):
            if value is not None:
                setattr(self, name, value)
        if call_id is not None:
            self.call_id = call_id


class ConfigurationError(ActionJournalError):
    """A setting or a call's option is invalid; raised at start or when the call is made,
    naming it and what it may be."""


class CallArgumentsError(ConfigurationError, TypeError):
    """A durable call's arguments do not fit its function's signature (a misspelled option
    becomes an unexpected keyword): refused before the call ran, nothing journaled."""


class RecordError(ActionJournalError):
    """A journal record could not be read. ``where`` names topic/partition/offset or file/row."""

    def __init__(self, message: str, where: str = "") -> None:
        self.where = where
        self.message = message
        super().__init__(f"{message} (at {where})" if where else message)


class CorruptRecordError(RecordError):
    """Bytes that are not a journal record, or a record that does not decode."""


class UnsupportedFormatError(RecordError):
    """A record written by a newer format version than this code understands."""


class SignatureError(RecordError):
    """A record whose HMAC is missing or wrong: tampered, or signed with another key."""


class PickleDisabledError(RecordError):
    """A record holds pickled data but pickle was not enabled."""


class EncodingError(ActionJournalError):
    """A value cannot be journaled (unsupported type, or over the payload limit)."""


class PayloadTooLargeError(EncodingError):
    """An encoded value is larger than the journal accepts: ``journal.max_payload_bytes``,
    or less when the store's records are limited (Kafka ``max.message.bytes``)."""


class RunJournalTooLongError(ActionJournalError):
    """A run would journal more records than ``journal.max_run_records``."""


class StoreError(ActionJournalError):
    """The action state store failed; nothing was acknowledged."""


class JournalWriteError(StoreError):
    """An append was not acknowledged. The journal does not hold the record."""


class JournalUnavailableError(JournalWriteError):
    """A durable call or run was not started: the journal refused a write earlier in this
    process, so its outcome could not be journaled either; the task fails."""


class RecordTooLargeError(JournalWriteError, PayloadTooLargeError):
    """A record is larger than the store accepts; it is not kept, and never will be."""


class RecoveryError(ActionJournalError):
    """A recovery marker cannot be used with the configured store."""


class MarkerMismatchError(RecoveryError):
    """The marker was written for another store, topic or table."""


class StoreRecreatedError(RecoveryError):
    """The store has the marker's name but another identity: it was deleted and recreated."""


class DataLossError(RecoveryError):
    """Records a pending run needs are no longer retained by the store."""


class CleanupBoundaryError(RecoveryError):
    """The restored state is older than a cleanup: records it needs were deleted on purpose."""


class DivergenceError(ActionJournalError):
    """The code made a different durable call than the journal recorded at that position."""


class UnknownOutcomeError(ActionJournalError):
    """A call started before a crash, has no recorded outcome, and its policy is ``fail``."""


class ReconcileError(ActionJournalError):
    """A reconciler raised, or did not settle a call before its deadline."""


class RedriveError(ActionJournalError):
    """A dead letter cannot re-drive its run here (another key, journal or state)."""


class ActionFailedError(ActionJournalError):
    """An action raised; the run stops and the journal keeps what it had recorded."""


class ContextClosedError(ActionJournalError):
    """An action's context (durable calls, events, memory) was used after the action finished."""


class RecordedCallError(ActionJournalError):
    """Replays a recorded failure whose exception type cannot be rebuilt here.

    ``original_type`` is the dotted name of the exception the call raised.
    """

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        self.original_message = message
        super().__init__(f"{original_type}: {message}")
