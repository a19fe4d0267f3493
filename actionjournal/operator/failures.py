"""The run failure policy: what happens to a run that cannot complete.

``fail``: the error fails the task (a ``LocalRunner`` stops); Flink restores it and the
run runs again. ``dead-letter``: a final ``RunFailed`` record is journaled, the run's
input goes out as a :class:`~actionjournal.operator.dead_letters.DeadLetter`, and the key
moves on. ``retry-then-dead-letter``: fail the task up to ``restarts`` times (each try
journaled as a ``RunFailed`` that is not final, since keyed state rolls back with the
restore and cannot count them), then dead-letter.

Only failures of the run itself take this path: an action or a durable call that raised,
divergence, a value or a run too large for the journal. A journal that cannot be written
or read (the store is down, the marker points elsewhere, a record is corrupt) fails the
task under every policy: the input is not at fault, and a dead letter could not be
journaled anyway.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from actionjournal.durable.error_records import capture_error
from actionjournal.durable.errors import (
    ActionJournalError,
    RecordError,
    RecordTooLargeError,
    RecoveryError,
    RedriveError,
    StoreError,
)
from actionjournal.durable.identity import input_digest
from actionjournal.durable.records import ErrorInfo, RunFailed
from actionjournal.durable.replay import KeyJournal, RecordedRun
from actionjournal.durable.values import type_name
from actionjournal.durable.writer import RunWriter
from actionjournal.operator.config import RunFailurePolicy
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.run import RunEnv, RunExecution, RunResult

log = logging.getLogger(__name__)


def is_run_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the run's own failure (the policy applies), not the journal's."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RecordTooLargeError):  # the same record fails every time
            return True
        if isinstance(current, (StoreError, RecoveryError, RecordError)):
            return False
        current = current.__cause__ or current.__context__
    return True


def redrive_check(letter: DeadLetter, key_id: str | None, next_seq: int) -> None:
    """Refuse a dead letter that is not of this key's runs, before it is queued."""
    if key_id is not None and letter.key_id != key_id:
        raise RedriveError(
            f"dead letter of key {letter.key!r} (key id {letter.key_id}, seq {letter.seq}) was "
            f"given to key id {key_id}: a re-drive must reach the key it was dead-lettered "
            "from; key the re-driven stream by DeadLetter.key"
        )
    if letter.seq >= next_seq:
        raise RedriveError(
            f"dead letter of key {letter.key!r} seq {letter.seq}: the key's state has no run "
            f"with that seq (its next seq is {next_seq}); it comes from another job or an "
            "older state. Send its input as a new input instead"
        )


class RunFailures:
    def __init__(self, env: RunEnv, policy: RunFailurePolicy, restarts: int) -> None:
        self.env = env
        self.policy = policy
        self.restarts = restarts

    def consequence(self, recorded: RecordedRun) -> str:
        """What happens when this run fails now, for its error message."""
        again = (
            "when it runs again, its finished durable calls return their journaled outcomes "
            "(a journaled failure fails it again, the call is not re-run)"
        )
        if self.policy == "dead-letter":
            return (
                "The run is dead-lettered (on_run_failure='dead-letter'): its input goes to the "
                "dead letters and the key moves on; re-drive it after a fix (docs/guarantees.md)"
            )
        if self.policy == "retry-then-dead-letter" and recorded.tries < self.restarts:
            return (
                f"Failed try {recorded.tries + 1} of {self.restarts + 1} "
                "(on_run_failure='retry-then-dead-letter'): the task fails and the run runs "
                f"again after the restore; {again}. After {self.restarts} restarts it is "
                "dead-lettered"
            )
        if self.policy == "retry-then-dead-letter":
            return (
                f"Failed try {recorded.tries + 1}, the last "
                "(on_run_failure='retry-then-dead-letter'): the run is dead-lettered"
            )
        return (
            "The task fails (a LocalRunner stops) and the run runs again after the restore; "
            f"{again}. To set inputs like this aside instead, set "
            "on_run_failure='dead-letter'"
        )

    async def failed(self, run: RunExecution, recorded: RecordedRun, exc: Exception) -> RunResult:
        """Apply the policy to ``run``'s failure: raise it, or dead-letter the run."""
        metrics = self.env.metrics
        if not is_run_failure(exc) or self.policy == "fail":
            metrics.run("failed")
            raise exc
        final = self.policy == "dead-letter" or recorded.tries >= self.restarts
        marker = await self.env.health.run(self._journal, run, exc, final)
        if not final:
            metrics.run("failed")
            raise exc
        metrics.run("dead_lettered")
        letter = DeadLetter(
            key=run.key,
            seq=run.seq,
            input=self.env.values.decode(run.input_data),
            error=str(exc),
            error_type=type_name(type(_root(exc))),
            error_message=_message(_root(exc)),
            action=getattr(exc, "action", None),
            call_id=getattr(exc, "call_id", None),
            when=time.time(),
            key_id=run.writer.key_id,
            partition=marker.partition,
            position=marker.position,
            number=recorded.dead_letters + 1,
        )
        log.warning(
            "dead-lettered run of key %r (key id %s), seq %d: %s",
            run.key,
            letter.key_id,
            run.seq,
            letter.error,
        )
        return RunResult([], run.short_term, marker, letter)

    def _journal(self, run: RunExecution, exc: Exception, final: bool) -> Any:
        # Not through the run's length budget: a run that failed for its length must
        # still say so in the journal.
        writer: RunWriter = dataclasses.replace(run.writer, budget=None)
        values = self.env.values
        try:
            key: bytes | None = values.encode(run.key, "key")
        except ActionJournalError:
            key = None
        record = writer.build(
            RunFailed,
            error=capture_error(values, exc),
            at=time.time(),
            input_digest=input_digest(run.input_data),
            final=final,
            input=run.input_data,
            key=key,
        )
        return writer.write(
            record,
            f"the run of key id {writer.key_id} seq {writer.seq} failed ({exc}), and its "
            "RunFailed record was not journaled, so the task fails instead",
        )

    def replayed(
        self, key: Any, key_id: str, input_data: bytes, recorded: RecordedRun
    ) -> RunResult:
        """The dead letter of a run that was dead-lettered before a restart, handed out again
        (the run does not run again)."""
        failed = recorded.failed
        assert failed is not None
        letter = DeadLetter(
            key=key,
            seq=recorded.seq,
            input=self.env.values.decode(input_data),
            error=failed.error.message,
            error_type=_root_info(failed.error).type,
            error_message=_root_info(failed.error).message,
            **self._where(failed.error),
            when=failed.at,
            key_id=key_id,
            number=recorded.dead_letters,
        )
        return RunResult([], {}, None, letter)

    def _where(self, error: ErrorInfo) -> dict[str, Any]:
        """The action and call id a journaled run failure recorded as its attributes."""
        try:
            state = self.env.values.decode(error.state) if error.state else {}
        except ActionJournalError:
            return {}
        if not isinstance(state, dict):
            return {}
        return {name: state.get(name) for name in ("action", "call_id")}

    def refused(
        self, key: Any, key_id: str, seq: int, input_data: bytes, exc: RedriveError
    ) -> RunResult:
        """A re-drive that cannot run: it fails the task under ``fail``; else it is handed
        back as a dead letter again (journaling nothing: the same happens after a restore)."""
        if self.policy == "fail":
            raise exc
        self.env.metrics.run("dead_lettered")
        letter = DeadLetter(
            key=key,
            seq=seq,
            input=self.env.values.decode(input_data),
            error=str(exc),
            error_type=type_name(RedriveError),
            error_message=str(exc),
            when=time.time(),
            key_id=key_id,
        )
        return RunResult([], {}, None, letter)

    def redriven_run(self, key_id: str, seq: int, number: int) -> RecordedRun:
        """The journal of run ``seq`` of the key, re-driven for its dead letter ``number``.

        The run's records precede the key's marker, so they are read from the key's
        earliest retained record (a re-drive is rare; the read is a full one).
        """
        env = self.env
        records = env.store.read_key(env.config.namespace, env.agent.operator_uid, key_id, None)
        run = KeyJournal.build(records, env.config.epoch, seq).runs.get(seq)
        if run is None or run.dead_letters < number:
            raise RedriveError(
                f"cannot re-drive run seq {seq} of key id {key_id}: the journal "
                f"({env.store.identity.backend} {env.store.identity.name}, namespace "
                f"{env.config.namespace}, epoch {env.config.epoch}) does not hold its dead "
                f"letter #{number}: its records were cleaned up, or the dead letter comes from "
                "another journal. Send its input as a new input instead (it then runs as a new "
                "run: its calls run again)"
            )
        return run


def _root(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return repr(exc)


def _root_info(info: ErrorInfo) -> ErrorInfo:
    while info.cause is not None:
        info = info.cause
    return info
