"""Continuous cleanup: plan from the oldest restorable state retained now, apply, repeat.

Each round is ``cleanup plan`` then ``cleanup apply`` in one go, with every rule of theirs
(:mod:`~actionjournal.tools.cleanup.plan`, :mod:`~actionjournal.tools.cleanup.apply`): it
reads the state again (the snapshot file the job keeps rewriting, or the checkpoints and
savepoints retained at that moment), plans for it, re-checks each boundary, journals the
boundaries and only then deletes. A round that fails logs one line and the next round
tries again, unless no later round can pass (a snapshot of another journal or job, a
missing option): then the loop stops with that error. Stopping it at any point is safe
for the same reason an interrupted ``apply`` is: nothing is deleted below a boundary that
is not journaled yet.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Literal

import pydantic

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import ActionJournalError, ConfigurationError
from actionjournal.durable.options import checked
from actionjournal.tools.cleanup.apply import apply_plan
from actionjournal.tools.cleanup.document import CleanupPlan
from actionjournal.tools.cleanup.metrics import CleanupMetrics
from actionjournal.tools.cleanup.plan import make_plan
from actionjournal.tools.cleanup.state import (
    DEFAULT_MARGIN_S,
    CheckpointState,
    NoCheckpointYet,
    RestorableState,
    SnapshotState,
    WrongJobError,
    load_checkpoint,
    load_snapshot,
)
from actionjournal.tools.store_options import (
    ToolStoreConfig,
    cleanable,
    describe,
    opened,
    refuse_cleanup,
)
from actionjournal.tools.toolkit import ToolError, UsageError, fmt_bytes, fmt_time

log = logging.getLogger(__name__)

DEFAULT_EVERY_S = 300.0


class _Options(pydantic.BaseModel):
    """The options of :class:`CleanupLoop`, checked when it is made."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    snapshot: Path | None = None
    """A LocalRunner snapshot file the job keeps rewriting (``snapshot_path``)."""
    checkpoints: tuple[Path | str, ...] = ()
    """Where a Flink job keeps restorable state: its checkpoint directory, savepoint
    directories, single checkpoints; each round plans for the oldest retained in any."""
    namespace: str = pydantic.Field("default", min_length=1)
    """``journal.namespace`` of the job."""
    operator_uid: str | None = None
    """The agent operator's uid; may be left out when the namespace has one (or with a
    snapshot, which names it)."""
    signing_key: pydantic.SecretStr | None = None
    """``journal.signing_key`` of the job, if it signs its journal (boundaries are signed)."""
    every_s: float = pydantic.Field(DEFAULT_EVERY_S, gt=0, allow_inf_nan=False)
    """Seconds from the end of one round to the start of the next."""
    safety_margin_s: float = pydantic.Field(DEFAULT_MARGIN_S, ge=0, allow_inf_nan=False)
    """With checkpoints: runs must have completed this long before a checkpoint was
    written to count as contained in it."""

    @pydantic.model_validator(mode="after")
    def _one_kind_of_state(self) -> _Options:
        if (self.snapshot is None) == (not self.checkpoints):
            raise ValueError(
                "say which state may be restored: snapshot=FILE (a LocalRunner job) or "
                "checkpoints=[DIR, ...] (a Flink job), not both"
            )
        return self


@dataclass(frozen=True)
class RoundResult:
    """What one round did; ``message`` is its log line."""

    round: int
    result: Literal["deleted", "nothing", "failed"]
    started_at: float
    ended_at: float
    message: str
    state: str = ""
    """The restorable state the round planned for, as the log names it."""
    records_deleted: int = 0
    bytes_deleted: int = 0
    runs_deleted: int = 0
    records_kept: int = 0
    bytes_kept: int = 0
    error: str | None = None
    final: bool = False
    """The round failed for a reason no later round can change: the loop stopped."""

    @property
    def seconds(self) -> float:
        return self.ended_at - self.started_at


class RoundAbandoned(BaseException):
    """A stop signal arrived during a round: the round was left where it was (safe: every
    boundary is journaled before anything below it is deleted)."""


class CleanupLoop:
    """Keeps a journal bounded: every ``every_s`` seconds, a round of plan and apply against
    the oldest restorable state retained at that moment.

    ``store`` is the job's store config (SQLite or Kafka; Fluss journals cannot be cleaned
    up). Exactly one of ``snapshot`` (a LocalRunner job's snapshot file) or ``checkpoints``
    (a Flink job's checkpoint and savepoint directories) says which state may be restored.
    :meth:`run_round` does one round; :meth:`run` repeats them until :meth:`stop`; the
    metrics are in :attr:`metrics` (:meth:`serve_metrics` serves them), one line per round
    goes to the logger ``actionjournal.tools.cleanup.loop``.
    """

    def __init__(
        self,
        store: ToolStoreConfig,
        *,
        snapshot: str | Path | None = None,
        checkpoints: Sequence[str | Path] = (),
        namespace: str = "default",
        operator_uid: str | None = None,
        signing_key: str | None = None,
        every_s: float = DEFAULT_EVERY_S,
        safety_margin_s: float = DEFAULT_MARGIN_S,
        metrics: CleanupMetrics | None = None,
    ) -> None:
        owner = "CleanupLoop"
        if not isinstance(store, ToolStoreConfig):
            raise ConfigurationError(
                f"{owner}: store={store!r} is not a store config: pass the job's "
                "SqliteStoreConfig(path=...) or KafkaStoreConfig(...)"
            )
        try:
            refuse_cleanup(store)
        except ToolError as exc:
            raise ConfigurationError(f"{owner}: {exc}") from None
        self.options = checked(
            owner,
            _Options,
            snapshot=snapshot,
            checkpoints=tuple(checkpoints) if not isinstance(checkpoints, str) else checkpoints,
            namespace=namespace,
            operator_uid=operator_uid,
            signing_key=signing_key,
            every_s=every_s,
            safety_margin_s=safety_margin_s,
        )
        self.store = store
        key = self.options.signing_key
        self.codec = RecordCodec(key.get_secret_value().encode() if key else None)
        self.metrics = metrics if metrics is not None else CleanupMetrics()
        self.rounds = 0
        self.stopped_by: str | None = None
        self._stop = threading.Event()
        self._in_round = False
        self._final: ToolError | None = None

    # -- running -------------------------------------------------------------------------

    def run(self, max_rounds: int | None = None) -> RoundResult | None:
        """Rounds until :meth:`stop` (or a stop signal, see :meth:`stop_on_signals`) or
        ``max_rounds``; returns the last finished round. Raises the error of a round that no
        later round can pass, after logging it."""
        last: RoundResult | None = None
        done = 0
        while not self._stop.is_set():
            try:
                last = self.run_round()
            except RoundAbandoned:
                log.warning(
                    "round %d abandoned at %s: boundaries are journaled before anything below "
                    "them is deleted, so the journal is consistent; the next round finishes "
                    "what this one started",
                    self.rounds,
                    self.stopped_by,
                )
                break
            if last.final:
                assert self._final is not None
                raise self._final
            done += 1
            if max_rounds is not None and done >= max_rounds:
                break
            self._stop.wait(self.options.every_s)
        if self.stopped_by is not None:
            log.info("stopped by %s after %d rounds", self.stopped_by, self.rounds)
        return last

    def stop(self, reason: str = "stop()") -> None:
        """End :meth:`run` before its next round (from another thread or a signal handler)."""
        self.stopped_by = self.stopped_by or reason
        self._stop.set()

    @contextlib.contextmanager
    def stop_on_signals(
        self, signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGINT)
    ) -> Iterator[None]:
        """While inside, these signals stop :meth:`run`: between rounds at once, during a
        round by abandoning it (:class:`RoundAbandoned`, which :meth:`run` logs). Call it
        from the main thread."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            self.stop(signal.Signals(signum).name)
            if self._in_round:
                raise RoundAbandoned(self.stopped_by)

        previous = {s: signal.signal(s, handler) for s in signals}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)

    def serve_metrics(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve the metrics at ``http://addr:port/metrics`` (0: a free port); returns the port."""
        return self.metrics.serve(port, addr)

    # -- one round ------------------------------------------------------------------------

    def run_round(self) -> RoundResult:
        """Plan from the oldest restorable state retained now and apply; never raises for a
        failed round (its result says why), only :class:`RoundAbandoned` at a stop signal."""
        self.rounds += 1
        n = self.rounds
        started = time.time()
        self._final = None
        self._in_round = True
        try:
            result = self._round(n, started)
        except (ToolError, ActionJournalError, OSError) as exc:
            final = isinstance(exc, (WrongJobError, UsageError))
            if final:
                assert isinstance(exc, ToolError)
                self._final = exc
            result = self._failed(n, started, _one_line(exc), final)
        except Exception as exc:
            if os.environ.get("ACTIONJOURNAL_DEBUG"):
                log.exception("round %d: unexpected error", n)
            text = f"unexpected {type(exc).__name__}: {exc} (a bug in actionjournal: report it)"
            result = self._failed(n, started, text, final=False)
        finally:
            self._in_round = False
        self.metrics.record(result)
        if result.result == "failed":
            log.warning("%s", result.message)
        else:
            log.info("%s", result.message)
        return result

    def _round(self, n: int, started: float) -> RoundResult:
        options = self.options
        state: RestorableState | None = None
        none_yet: NoCheckpointYet | None = None
        if options.checkpoints:  # before opening the journal: a typo fails fast
            try:
                state = load_checkpoint(
                    options.checkpoints, options.safety_margin_s, skip_empty=True
                )
            except NoCheckpointYet as exc:
                none_yet = exc
        with opened(self.store, self.codec, write=True) as opened_store:
            store = cleanable(opened_store, self.store)
            if none_yet is not None:  # the journal is there; nothing restorable says what goes
                message = f"round {n}: nothing to delete: {none_yet}"
                return RoundResult(n, "nothing", started, time.time(), message)
            operator_uid = options.operator_uid
            if options.snapshot is not None:
                state = load_snapshot(options.snapshot, store, options.namespace, operator_uid)
                assert isinstance(state.info, SnapshotState)
                operator_uid = state.info.operator_uid
            assert state is not None
            plan = make_plan(store, self.store, options.namespace, operator_uid, state, False)
            what = _describe_state(plan)
            if not plan.totals.records_deleted:
                return self._nothing(n, started, plan, what, _why_nothing(plan))
            applied = apply_plan(plan, store, False, state)
        went = [e for e in plan.partitions if e.partition in applied.applied]
        if not went:
            why = "what the plan deletes is gone already (applied before)"
            return self._nothing(n, started, plan, what, why)
        records = sum(e.records_deleted for e in went)
        size = sum(e.bytes_deleted for e in went)
        runs = sum(e.runs_deleted for e in went)
        kept, kept_bytes = _kept(plan)
        message = (
            f"round {n}: deleted {records} records ({fmt_bytes(size)}, {runs} runs) of "
            f"{describe(self.store)}, planned for {what}; {kept} records "
            f"({fmt_bytes(kept_bytes)}) stay"
        )
        return RoundResult(
            n,
            "deleted",
            started,
            time.time(),
            message,
            state=what,
            records_deleted=records,
            bytes_deleted=size,
            runs_deleted=runs,
            records_kept=kept,
            bytes_kept=kept_bytes,
        )

    def _nothing(
        self, n: int, started: float, plan: CleanupPlan, what: str, why: str
    ) -> RoundResult:
        kept, kept_bytes = _kept(plan)
        message = f"round {n}: nothing to delete for {what}: {why}; {kept} records stay"
        return RoundResult(
            n,
            "nothing",
            started,
            time.time(),
            message,
            state=what,
            records_kept=kept,
            bytes_kept=kept_bytes,
        )

    def _failed(self, n: int, started: float, error: str, final: bool) -> RoundResult:
        then = (
            "stopping: no later round can pass"
            if final
            else f"the next round in {self.options.every_s:g} s tries again"
        )
        message = f"round {n} failed: {error}; {then}"
        return RoundResult(n, "failed", started, time.time(), message, error=error, final=final)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f" ({exc.filename})" if exc.filename else "")
    return " ".join(str(exc).split())


def _describe_state(plan: CleanupPlan) -> str:
    state = plan.state
    if isinstance(state, SnapshotState):
        return f"snapshot {state.path}"
    assert isinstance(state, CheckpointState)
    return f"checkpoint {state.metadata} (runs completed before {fmt_time(state.cutoff)})"


def _why_nothing(plan: CleanupPlan) -> str:
    """The reason of the partition that holds the most of what stays."""
    entries = [e for e in plan.partitions if e.records_kept]
    if not entries:
        return "the namespace holds no records of the operator"
    return max(entries, key=lambda e: e.records_kept).reason


def _kept(plan: CleanupPlan) -> tuple[int, int]:
    return plan.totals.records_kept, sum(e.bytes_kept for e in plan.partitions)
