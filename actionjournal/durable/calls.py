"""Durable calls of one action execution: execute once, journal, replay.

The decision is written once, as a generator that yields effects (journal a record, invoke
the function, ask the reconciler, wait); the drivers in :mod:`actionjournal.durable.effects`
perform them, blocking or on the event loop, so ``durable_execute`` and
``durable_execute_async`` cannot drift apart. A call is fixed when it is made, as one
:class:`~actionjournal.durable.call_options.Call`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any

from actionjournal.durable.binding import check_binds
from actionjournal.durable.call_options import OPTIONS, Call, CallHead, CallOptions, Named
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.effects import (
    AwaitCancel,
    Effect,
    Invoke,
    Reconcile,
    Sleep,
    Write,
    drive_async,
    drive_sync,
    is_coroutine_function,
    loop_waits,
    refuse_on_loop,
)
from actionjournal.durable.error_records import capture_error, rebuild_error
from actionjournal.durable.errors import (
    ConfigurationError,
    DivergenceError,
    EncodingError,
    JournalUnavailableError,
    ReconcileError,
    UnknownOutcomeError,
)
from actionjournal.durable.identity import (
    arguments_digest,
    bound_arguments,
    call_ids,
    function_id,
    is_legacy_digest,
)
from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Recovered, StillRunning
from actionjournal.durable.records import (
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    ErrorInfo,
)
from actionjournal.durable.replay import RecordedAction, RecordedCall
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.values import ValueCodec, type_name
from actionjournal.durable.writer import RunWriter

log = logging.getLogger(__name__)

_CANCELLED = type_name(asyncio.CancelledError)


class ActionCalls:
    """The durable calls made by one action execution, in invocation order.

    Made inside the action's task: that task and its loop are where awaited calls and
    async reconcilers run, and a cancellation of that task is the action being stopped.
    """

    def __init__(
        self,
        writer: RunWriter,
        action_id: str,
        action_name: str,
        recorded: RecordedAction,
        config: JournalConfig,
        values: ValueCodec,
        metrics: JournalMetrics,
        redrive: int = 0,
    ) -> None:
        self.writer = writer
        self.redrive = redrive  # the run re-drives its dead letter number ``redrive`` (0: no)
        # id(final failure) -> (the call that raised it, its call id)
        self._failures: dict[int, tuple[str, str]] = {}
        self.action_id = action_id
        self.action_name = action_name
        self.recorded = recorded
        self.config = config
        self.values = values
        self.metrics = metrics
        self._next_index = 0
        w = writer
        self._call_id = call_ids(w.namespace, w.operator_uid, w.epoch, w.key_id, w.seq, action_id)
        self._run_head: tuple[str, str, int, str, int, str] = (*w.run, action_id)
        try:
            self._task: asyncio.Task[Any] | None = asyncio.current_task()
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._task, self._loop = None, None

    def failure_of(self, exc: BaseException) -> tuple[str, str] | None:
        """Which durable call of this action raised ``exc`` (or an exception in its causes)
        as its final outcome: how to say so (e.g. "durable call mod:charge (call id ...)")
        and its call id; else ``None``."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if id(current) in self._failures:
                return self._failures[id(current)]
            current = current.__cause__ or current.__context__
        return None

    def execute(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        options: CallOptions,
    ) -> Any:
        if asyncio._get_running_loop() is not None:  # checked first: the message costs
            refuse_on_loop(
                f"ctx.durable_execute({function_id(fn)}, ...)",
                "`await ctx.durable_execute_async(...)`",
            )
        if is_coroutine_function(fn):
            raise TypeError(
                f"{function_id(fn)} is a coroutine function: use "
                "`await ctx.durable_execute_async(...)` for it"
            )
        gen = self._decide(fn, args, kwargs, options)  # the index is taken now, at invocation
        return drive_sync(gen, None if loop_waits() else self._loop, self._task)

    def execute_async(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        options: CallOptions,
    ) -> Coroutine[Any, Any, Any]:
        # A plain function returning a coroutine: the index is assigned when the call is
        # made, not when the coroutine first runs, so gather() and out-of-order awaits replay.
        gen = self._decide(fn, args, kwargs, options)
        return drive_async(gen)

    # -- the decision, written once -------------------------------------------

    def _decide(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        options: CallOptions,
    ) -> Generator[Effect, Any, Any]:
        """Fix the call now (its arguments bound, its position taken), then decide."""
        fid = function_id(fn)
        # Before the index: a refused call is no call.
        check_binds(fn, args, kwargs, (fid, self.action_name), OPTIONS)
        index = self._next_index
        self._next_index += 1
        digest = self._digest(fn, fid, args, kwargs)
        durable_id = options.durable_id
        identity = f"d:{durable_id}" if durable_id is not None else f"f:{fid}#{index}"
        call_id = self._call_id(identity)
        policy = options.on_unknown or (
            "reconcile" if options.reconciler else self.config.on_unknown
        )
        if policy == "reconcile" and options.reconciler is None:
            raise ConfigurationError(
                f"durable call {fid} has on_unknown='reconcile' but no reconciler; pass "
                "reconciler=... or register one for this function"
            )
        head: CallHead = (*self._run_head, index, call_id, fid, durable_id, digest)
        call = Call(fn, args, kwargs, options, index, fid, digest, call_id, policy, head)
        return self._run(call)

    def _run(self, call: Call) -> Generator[Effect, Any, Any]:
        options = call.options
        attempt, round_start, retry_at = 0, 0, None
        recorded = self.recorded.calls.get(call.index)
        if recorded is not None and not self._matches(recorded, call):
            yield from self._diverged(recorded, call)
            recorded = None
        if recorded is not None and self._redriven(recorded):
            # A re-drive is an operator's decision to try again what failed before its dead
            # letter: a new round of attempts, at once. Values still replay.
            attempt = round_start = recorded.next_attempt
        elif recorded is not None and recorded.finished is not None:
            self.metrics.call("replayed")  # never an execution, and no duration sample
            if recorded.finished.error is not None and recorded.finished.error.type == _CANCELLED:
                what = f"durable call {call.function_id} #{call.index} of {self.action_name}"
                yield AwaitCancel(what)
            return self._replay(recorded.finished, call)
        # Started, no outcome (the process or the action stopped); or no record at all in a
        # run whose quarantined record may have been the call's start (see KeyJournal).
        elif (recorded is not None and recorded.unknown) or (
            recorded is None and self.recorded.uncertain
        ):
            self.metrics.call("unknown")
            if recorded is not None:
                attempt, round_start = recorded.next_attempt, recorded.round_start
            if call.policy == "fail":
                raise self._unknown(call, started=recorded is not None)
            if call.policy == "reconcile":
                settled = yield from self._reconcile(call, attempt)
                if settled is not None:
                    return settled[0]
        elif recorded is not None and recorded.round_ended:  # record_failures=False
            attempt, round_start = recorded.next_attempt, recorded.round_start
            if options.reconciler is not None:  # the round's failures may have taken effect
                settled = yield from self._reconcile(call, attempt)
                if settled is not None:
                    return settled[0]
        elif recorded is not None:  # a failed attempt to retry: resume where the backoff was
            attempt, round_start = recorded.next_attempt, recorded.round_start
            failed = recorded.failed
            assert failed is not None
            retry_at = failed.retry_at
            limit = (options.retry or self.config.retry).max_attempts
            if attempt - round_start >= limit:  # max_attempts was lowered since: none is left
                yield from self._exhausted(call, failed, attempt - round_start, limit)

        needs_start = options.reconciler is not None or call.policy != "rerun"
        budget = self.writer.budget
        health = self.writer.health
        held = 0  # records the run's length budget holds for this attempt (start, outcome)

        def booked(write: Write) -> Write:
            """``write`` takes one of the records reserved for this attempt, if any is left."""
            nonlocal held
            if held:
                write.reserved, held = True, held - 1
            return write

        while True:
            started = time.time()
            try:
                if retry_at is not None:
                    wait = max(0.0, retry_at - time.time())
                    if wait > 0:
                        yield Sleep(wait)
                    self.metrics.retry(wait)
                if health is not None and health.failure is not None:  # no call starts
                    health.check(call.name)
                if budget is not None:  # room for the outcome before the call runs
                    held = 2 if needs_start else 1
                    budget.reserve(held, call)
                if needs_start:
                    record = CallStarted(*call.head, attempt, started, self.writer.action or "")
                    context = f"durable call {call.function_id} was not started: its "
                    yield booked(
                        Write(self.writer, record, context + "CallStarted was not journaled")
                    )
            except asyncio.CancelledError as exc:  # before it ran (in its backoff, or starting)
                if not self._action_stopping():
                    yield booked(self._finish(call, started, None, exc, attempt))
                raise
            clock = time.perf_counter()
            try:
                value = yield Invoke(call, attempt, self._info, health)
            except asyncio.CancelledError as exc:
                self.metrics.call_executed(time.perf_counter() - clock)
                if not self._action_stopping():  # the action cancelled it: journal what happened
                    yield booked(self._finish(call, started, None, exc, attempt))
                raise
            except JournalUnavailableError:  # refused before it ran: nothing to journal
                if budget is not None:
                    budget.release(held)
                raise
            except Exception as exc:
                self.metrics.call_executed(time.perf_counter() - clock)
                tries = attempt - round_start + 1
                retry = options.retry or self.config.retry
                if tries < retry.max_attempts and retry.retries(exc):
                    wait = retry.wait(tries)
                    retry_at = time.time() + wait
                    yield booked(self._attempt_failed(call, attempt, exc, retry_at))
                    self.metrics.attempt("retried")
                    log.warning(
                        "%s attempt %d of %d failed with %r; the next attempt starts %.3g s "
                        "after the failure",
                        call.name, tries, retry.max_attempts, exc, wait,
                    )  # fmt: skip
                    attempt += 1
                    continue
                self.metrics.attempt("failed")
                what = f"{call.name}, attempt {tries} of {retry.max_attempts}"
                why = "the last attempt" if retry.retries(exc) else "not retryable"
                if options.record_failures:
                    yield booked(self._finish(call, started, None, exc, attempt))
                    self._failed(exc, call, f"{what} ({why}: journaled as its final outcome)")
                else:
                    # The round's end, journaled when anything of the round is (an earlier
                    # attempt, or this one's start): the next try of the run starts a new round.
                    if attempt > round_start or needs_start:
                        yield booked(self._attempt_failed(call, attempt, exc, None))
                    elif budget is not None:
                        budget.release(held)
                    self._failed(
                        exc,
                        call,
                        f"{what} ({why}; not journaled, record_failures=False: it runs again "
                        "when the run does)",
                    )
                raise
            self.metrics.call_executed(time.perf_counter() - clock, succeeded=True)
            # Journal the result; one the journal cannot hold is the call's final failure
            # instead (journaled, so a replay raises it and never runs the call again).
            try:
                data, value = self.values.roundtrip(value, Named("result of ", call))
                yield booked(self._finish(call, started, data, None, attempt))
            except EncodingError as exc:  # too large for the journal, or a type it cannot hold
                yield booked(self._finish(call, started, None, exc, attempt))
                self._failed(
                    exc,
                    call,
                    f"{call.name} returned, but its result cannot be journaled, which is "
                    "journaled as the call's final outcome: it is not run again;",
                )
                raise
            return value

    # -- what the decision journals and raises ---------------------------------------

    def _info(self, call: Call, attempt: int) -> CallInfo:
        w = self.writer
        return CallInfo(
            call.call_id,
            call.options.durable_id,
            call.function_id,
            call.args,
            call.kwargs,
            attempt,
            w.key_id,
            w.seq,
            self.action_name,
        )

    def _finish(
        self,
        call: Call,
        started: float,
        data: bytes | None,
        exc: BaseException | None,
        attempt: int = 0,
        reconciled: bool = False,
        error: ErrorInfo | None = None,
    ) -> Write:
        """The call's outcome: ``data`` (its value), or ``exc`` (or ``error``, recorded)."""
        now = time.time()
        if exc is not None:
            error = capture_error(self.values, exc)
        # Positional: the record is made for every call, and msgspec matches keywords slowly.
        record = CallFinished(
            *call.head,
            data,  # value
            error,
            now,  # at
            now - started,  # duration
            reconciled,
            self.writer.action or "",
            attempt,
        )
        return Write(
            self.writer,
            record,
            f"{call.name} ran, but its outcome was not journaled: the action fails, and when "
            "the run runs again the call's reconciler or its on_unknown policy settles it "
            "(with the default 'rerun', it runs again)",
        )

    def _attempt_failed(
        self, call: Call, attempt: int, exc: BaseException, retry_at: float | None
    ) -> Write:
        error = capture_error(self.values, exc)
        at = time.time()
        record = CallAttemptFailed(
            *call.head, attempt, error, at, retry_at, self.writer.action or ""
        )
        return Write(
            self.writer,
            record,
            f"attempt {attempt + 1} of {call.name} failed ({exc!r}) and the failure was not "
            "journaled, so it is not retried",
        )

    def _failed(self, exc: BaseException, call: Call, how: str) -> None:
        """Remember that ``exc`` is ``call``'s final outcome, said as ``how``."""
        self._failures[id(exc)] = (how, call.call_id)

    def _where(self, call: Call) -> dict[str, Any]:
        """The structured fields of an error about ``call``."""
        w = self.writer
        return {
            "key_id": w.key_id,
            "seq": w.seq,
            "action": self.action_name,
            "call_id": call.call_id,
        }

    def _unknown(self, call: Call, started: bool) -> UnknownOutcomeError:
        why = (
            "started, but its outcome was never journaled: the process stopped, or the action "
            "was stopped, while it ran"
            if started
            else "has no record, but its run lost a record an operator quarantined "
            "(`actionjournal journal quarantine`), which may have been its start"
        )
        w = self.writer
        return UnknownOutcomeError(
            f"durable call {call.function_id} (call id {call.call_id}, key {w.key_id}, seq "
            f"{w.seq}, action {self.action_name}) {why}. Its policy is on_unknown='fail'. "
            "Check the called system, then register a reconciler or set on_unknown='rerun'",
            **self._where(call),
        )

    def _exhausted(
        self, call: Call, failed: CallAttemptFailed, tries: int, limit: int
    ) -> Generator[Effect, Any, None]:
        """A call resumed after ``tries`` journaled attempts with ``max_attempts`` lowered to
        ``limit`` since: no attempt is left, so its last failure ends the round without
        running it (journaled as its final outcome, or with ``record_failures=False`` as the
        round's end)."""
        self.metrics.attempt("failed")
        if call.options.record_failures:
            write = self._finish(call, time.time(), None, None, failed.attempt, error=failed.error)
            outcome = "journaled as its final outcome"
        else:
            record = CallAttemptFailed(
                *call.head, failed.attempt, failed.error, time.time(), None, failed.action
            )
            write = Write(self.writer, record, "")
            outcome = "not journaled as final (record_failures=False): the next try of the run "
            outcome += "starts a new round"
        write.context = f"{call.name} has no attempt left, and that was not journaled"
        yield write
        error = rebuild_error(self.values, failed.error)
        self._failed(
            error,
            call,
            f"{call.name}, not run again: {tries} attempts are journaled and max_attempts is "
            f"{limit} now; its last failure is {outcome};",
        )
        raise error

    def _redriven(self, recorded: RecordedCall) -> bool:
        """Whether this run re-drives a dead letter journaled after the call's last failure."""
        finished = recorded.finished
        # A call that returned a value (after failed attempts or not) replays it; only its
        # failure, final or of the last attempt before the dead letter, is tried again.
        failed = finished.error is not None if finished is not None else recorded.failed is not None
        return failed and not recorded.unknown and self.redrive > recorded.dead_letters

    def _digest(
        self, fn: Callable[..., Any], fid: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str:
        """Digest of every argument the function gets, those a partial binds included.

        Each is encoded canonically; one that cannot be is refused, naming it, rather
        than digested loosely: a changed call must never be answered with a recorded result.
        """
        if type(fn) is functools.partial:
            bound_args, bound_kwargs = bound_arguments(fn)
            positional, named = (*bound_args, *args), {**bound_kwargs, **kwargs}
        else:
            bound_args, positional, named = [], args, kwargs
        canonical = self.values.canonical
        try:
            parts = list(map(canonical, positional))
            if named:
                for name in sorted(named):
                    parts += (name.encode(), canonical(named[name]))
            return arguments_digest(len(positional), parts)
        except EncodingError as exc:
            refused = exc
        # Again, naming each argument (messages cost, so only now): the error says which one.
        hint = "(its digest tells a changed call from the recorded one)"
        for i, value in enumerate(positional):
            bound = " (bound by functools.partial)" if i < len(bound_args) else ""
            canonical(value, f"argument #{i}{bound} of durable call {fid} {hint}")
        for name in sorted(named):
            canonical(named[name], f"argument {name}= of durable call {fid} {hint}")
        raise refused

    def _matches(self, recorded: RecordedCall, call: Call) -> bool:
        head = recorded.head
        durable_id = call.options.durable_id
        if durable_id is not None or head.durable_id is not None:
            same_call = head.durable_id == durable_id
        else:
            same_call = head.function_id == call.function_id
        if is_legacy_digest(head.arg_digest):  # journaled by format 1: its digest of the time
            legacy = self.values.legacy_digest([list(call.args), call.kwargs])
            return same_call and head.arg_digest == legacy
        return same_call and head.arg_digest == call.arg_digest

    def _action_stopping(self) -> bool:
        """Whether the action's own task is being cancelled (its run or the job stops)."""
        return self._task is not None and self._task.cancelling() > 0

    def _diverged(self, recorded: RecordedCall, call: Call) -> Generator[Effect, Any, None]:
        self.metrics.call("diverged")
        head = recorded.head
        detail = (
            f"recorded: function={head.function_id} durable_id={head.durable_id} "
            f"args={head.arg_digest}; current: function={call.function_id} "
            f"durable_id={call.options.durable_id} args={call.arg_digest}"
        )
        index = call.index
        if self.config.on_divergence == "fail":
            raise DivergenceError(
                f"durable call #{index} of action {self.action_name} (key {self.writer.key_id}, "
                f"seq {self.writer.seq}) differs from the journal: {detail}. The agent code or "
                "its inputs changed since the journal was written; revert the change, or set "
                "journal.on_divergence='rerun' to drop the recorded calls from this one on",
                **self._where(call),
            )
        self.recorded.calls = {i: c for i, c in self.recorded.calls.items() if i < index}
        yield Write(
            self.writer,
            self.writer.build(CallsDropped, action_id=self.action_id, index=index),
            f"recorded calls of action {self.action_name} from #{index} could not be dropped",
        )

    def _reconcile(self, call: Call, attempt: int) -> Generator[Effect, Any, tuple[Any] | None]:
        """Ask the reconciler until it settles. ``(value,)`` when settled, ``None`` to run now."""
        reconciler = call.options.reconciler
        assert reconciler is not None
        info = self._info(call, attempt)
        timeout = call.options.reconcile_timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                outcome = yield Reconcile(reconciler, info)
            except Exception as exc:
                raise ReconcileError(
                    f"reconciler of {call.name} raised {exc!r}; the call's outcome is still "
                    "unknown and nothing was re-run. Fix the reconciler, or check the called "
                    "system by hand",
                    **self._where(call),
                ) from exc
            if isinstance(outcome, NotStarted):
                return None
            if isinstance(outcome, Recovered):
                self.metrics.call("reconciled")
                what = f"recovered result of {call.function_id}"
                data, value = self.values.roundtrip(outcome.value, what)
                yield self._finish(call, time.time(), data, None, attempt, reconciled=True)
                return (value,)
            if isinstance(outcome, Failed):
                self.metrics.call("reconciled")
                error = outcome.error
                yield self._finish(call, time.time(), None, error, attempt, reconciled=True)
                self._failed(
                    error,
                    call,
                    f"{call.name}, settled by its reconciler as failed (journaled as its final "
                    "outcome),",
                )
                raise error
            if not isinstance(outcome, StillRunning):
                raise ReconcileError(
                    f"reconciler of durable call {call.function_id} returned {outcome!r}; it "
                    "must return Recovered, Failed, NotStarted or StillRunning",
                    **self._where(call),
                )
            if time.monotonic() + outcome.retry_after > deadline:
                raise ReconcileError(
                    f"{call.name} was still running after {timeout:.0f} s of reconciling; "
                    "raise reconcile_timeout or check the called system",
                    **self._where(call),
                )
            yield Sleep(outcome.retry_after)

    def _replay(self, finished: CallFinished, call: Call) -> Any:
        if finished.error is not None:
            error = rebuild_error(self.values, finished.error)
            self._failed(error, call, f"{call.name}, replaying its journaled failure,")
            raise error
        assert finished.value is not None
        return self.values.decode(finished.value)
