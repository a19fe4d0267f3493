"""Durable calls of one action execution: execute once, journal, replay.

The decision logic is written once, as a generator that yields effects
(journal a record, invoke the function, ask the reconciler, wait). A sync and
an async driver perform those effects, so ``durable_execute`` and
``durable_execute_async`` cannot drift apart.

One job, longer than 500 lines: the decision and its two drivers stay in one file so that
a change to what a call does is read and made in one place, next to how it is performed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from types import FunctionType
from typing import Any

import msgspec

from actionjournal.durable.binding import check_binds
from actionjournal.durable.config import JournalConfig, UnknownOutcomePolicy
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
    JournalRecord,
)
from actionjournal.durable.replay import RecordedAction, RecordedCall
from actionjournal.durable.retry import RetryPolicy
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.values import ValueCodec, type_name
from actionjournal.durable.writer import RunWriter

log = logging.getLogger(__name__)

Reconciler = Callable[[CallInfo], Any]  # returns an Outcome, or an awaitable of one

# A call being reconciled, or the _Invoke of one running (its CallInfo made when asked for).
_current_call: contextvars.ContextVar[CallInfo | _Invoke | None] = contextvars.ContextVar(
    "actionjournal_current_call", default=None
)


# Set in a worker thread whose caller, an action's event loop, waits on it blocked: a blocking
# call made there must not hand an async reconciler to that loop (it would wait forever).
_loop_waits: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "actionjournal_loop_waits", default=False
)


def call_for_blocked_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a worker thread while the calling thread, an event loop's,
    waits for it: how a blocking durable call made in an ``async def`` action runs where such
    calls are allowed (the Flink Agents face). Every run on that loop waits meanwhile."""

    def run() -> Any:
        _loop_waits.set(True)
        return fn(*args, **kwargs)

    with concurrent.futures.ThreadPoolExecutor(1, "actionjournal-blocking-call") as pool:
        return pool.submit(contextvars.copy_context().run, run).result()


def current_call() -> CallInfo | None:
    """The durable call running or being reconciled in this context (its ``call_id`` is the
    idempotency key)."""
    call = _current_call.get()
    return call.info() if isinstance(call, _Invoke) else call


def is_coroutine_function(fn: Any) -> bool:
    """``inspect.iscoroutinefunction`` that also sees through staticmethod, classmethod,
    bound methods, ``functools.partial`` and objects with an ``async def __call__``."""
    if type(fn) is FunctionType:  # the common case, answered directly
        return bool(fn.__code__.co_flags & inspect.CO_COROUTINE)
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, (staticmethod, classmethod)) or inspect.ismethod(fn):
            fn = fn.__func__
        else:
            break
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the method of a callable object
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def refuse_on_loop(what: str, instead: str) -> None:
    """Blocking ``what`` on a running event loop would stall every run on it: refuse it."""
    if asyncio._get_running_loop() is None:  # get_running_loop() raises, which costs more
        return
    raise TypeError(
        f"{what} blocks until it is done, which would stall every run on this event loop: in "
        f"an `async def` action use {instead}"
    )


_CANCELLED = type_name(asyncio.CancelledError)


# Effects the decision generator asks a driver to perform. Plain classes with slots: one or
# two are made per durable call, and a frozen dataclass costs several times as much to make.
class _Write:
    __slots__ = ("context", "record", "reserved", "writer")

    def __init__(self, writer: RunWriter, record: JournalRecord, context: str) -> None:
        self.writer = writer
        self.record = record
        self.context = context  # what the caller is told when the append fails
        self.reserved = False  # the run's length budget counted it before the call ran


class _Invoke:
    """Run the function. Its :class:`CallInfo` is made only when asked for (``current_call``):
    most functions never ask, and making one costs more than the rest of the effect."""

    __slots__ = ("_info", "args", "attempt", "calls", "cid", "fid", "fn", "kwargs", "opts")

    def __init__(
        self,
        calls: ActionCalls,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        opts: CallOptions,
        fid: str,
        cid: str,
        attempt: int,
    ) -> None:
        self.calls, self.fn, self.args, self.kwargs = calls, fn, args, kwargs
        self.opts, self.fid, self.cid, self.attempt = opts, fid, cid, attempt
        self._info: CallInfo | None = None

    def info(self) -> CallInfo:
        if self._info is None:
            self._info = self.calls._info(
                self.cid, self.opts, self.fid, self.args, self.kwargs, self.attempt
            )
        return self._info

    def run(self) -> Any:
        """Call the function, on the thread it runs on: checked there, since a call made just
        before the journal refused a write may have waited for a thread since."""
        health = self.calls.writer.health
        if health is not None:
            health.check(f"durable call {self.fid} (call id {self.cid})")
        return self.fn(*self.args, **self.kwargs)


class _Reconcile:
    __slots__ = ("info", "reconciler")

    def __init__(self, reconciler: Reconciler, info: CallInfo) -> None:
        self.reconciler = reconciler
        self.info = info


class _Sleep:
    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class _AwaitCancel:
    """Replay of a call its action cancelled: wait until the action cancels it again."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what  # names the call if it cannot wait (a blocking call)


_Effect = _Write | _Invoke | _Reconcile | _Sleep | _AwaitCancel


@dataclass(frozen=True)
class CallOptions:
    """A durable call's options (``ctx.durable_execute(fn, ..., durable_id=...)``)."""

    durable_id: str | None = None
    reconciler: Reconciler | None = None
    on_unknown: UnknownOutcomePolicy | None = None
    record_failures: bool = True
    reconcile_timeout: float = 300.0
    retry: RetryPolicy | None = None  # None: the job's journal.retry


OPTIONS = tuple(f.name for f in dataclasses.fields(CallOptions))
"""The option names of a durable call: a keyword close to one is named as the one meant."""


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
        self._failures: dict[int, str] = {}  # id(final failure) -> the call that raised it
        self.action_id = action_id
        self.action_name = action_name
        self.recorded = recorded
        self.config = config
        self.values = values
        self.metrics = metrics
        self._next_index = 0
        w = writer
        self._call_id = call_ids(w.namespace, w.operator_uid, w.epoch, w.key_id, w.seq, action_id)
        try:
            self._task: asyncio.Task[Any] | None = asyncio.current_task()
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._task, self._loop = None, None

    def failure_of(self, exc: BaseException) -> str | None:
        """Which durable call of this action raised ``exc`` (or an exception in its causes)
        as its final outcome, e.g. "durable call mod:charge (call id ...)"; else ``None``."""
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
        opts: CallOptions,
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
        gen = self._decide(fn, args, kwargs, opts)  # the index is taken now, at invocation
        return _drive_sync(gen, None if _loop_waits.get() else self._loop, self._task)

    def execute_async(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        opts: CallOptions,
    ) -> Coroutine[Any, Any, Any]:
        # A plain function returning a coroutine: the index is assigned when the call is
        # made, not when the coroutine first runs, so gather() and out-of-order awaits replay.
        gen = self._decide(fn, args, kwargs, opts)
        return _drive_async(gen)

    # -- the decision, written once -------------------------------------------

    def _decide(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        opts: CallOptions,
    ) -> Generator[_Effect, Any, Any]:
        fid = function_id(fn)
        self._check_binds(fn, fid, args, kwargs)  # before the index: a refused call is no call
        index = self._next_index
        self._next_index += 1
        digest = self._digest(fn, fid, args, kwargs)
        identity = f"d:{opts.durable_id}" if opts.durable_id is not None else f"f:{fid}#{index}"
        cid = self._call_id(identity)
        policy = opts.on_unknown or ("reconcile" if opts.reconciler else self.config.on_unknown)
        if policy == "reconcile" and opts.reconciler is None:
            raise ConfigurationError(
                f"durable call {fid} has on_unknown='reconcile' but no reconciler; pass "
                "reconciler=... or register one for this function"
            )
        return self._run(fn, args, kwargs, opts, index, fid, digest, cid, policy)

    def _check_binds(
        self, fn: Callable[..., Any], fid: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        check_binds(fn, args, kwargs, f"durable call {fid} of action {self.action_name}", OPTIONS)

    def _run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        opts: CallOptions,
        index: int,
        fid: str,
        digest: str,
        cid: str,
        policy: str,
    ) -> Generator[_Effect, Any, Any]:
        attempt, round_start, retry_at = 0, 0, None
        recorded = self.recorded.calls.get(index)
        if recorded is not None and not self._matches(
            recorded, fid, opts.durable_id, digest, args, kwargs
        ):
            yield from self._diverged(recorded, index, fid, opts.durable_id, digest)
            recorded = None
        if recorded is not None and self._redriven(recorded):
            # A re-drive is an operator's decision to try again what failed before its dead
            # letter: a new round of attempts, at once. Values still replay.
            attempt = round_start = recorded.next_attempt
        elif recorded is not None and recorded.finished is not None:
            self.metrics.call("replayed")  # never an execution, and no duration sample
            if recorded.finished.error is not None and recorded.finished.error.type == _CANCELLED:
                yield _AwaitCancel(f"durable call {fid} #{index} of action {self.action_name}")
            return self._replay(recorded.finished, f"durable call {fid} (call id {cid})")
        # Started, no outcome (the process or the action stopped); or no record at all in a
        # run whose quarantined record may have been the call's start (see KeyJournal).
        elif (recorded is not None and recorded.unknown) or (
            recorded is None and self.recorded.uncertain
        ):
            self.metrics.call("unknown")
            if recorded is not None:
                attempt, round_start = recorded.next_attempt, recorded.round_start
            if policy == "fail":
                why = (
                    "started, but its outcome was never journaled: the process stopped, or the "
                    "action was stopped, while it ran"
                    if recorded is not None
                    else "has no record, but its run lost a record an operator quarantined "
                    "(`actionjournal journal quarantine`), which may have been its start"
                )
                raise UnknownOutcomeError(
                    f"durable call {fid} (call id {cid}, key {self.writer.key_id}, seq "
                    f"{self.writer.seq}, action {self.action_name}) {why}. Its policy is "
                    "on_unknown='fail'. Check the called system, then register a reconciler or "
                    "set on_unknown='rerun'"
                )
            if policy == "reconcile":
                assert opts.reconciler is not None
                info = self._info(cid, opts, fid, args, kwargs, attempt)
                settled = yield from self._reconcile(opts, info, index, fid, digest, cid)
                if settled is not None:
                    return settled[0]
        elif recorded is not None and recorded.round_ended:  # record_failures=False
            attempt, round_start = recorded.next_attempt, recorded.round_start
            if opts.reconciler is not None:  # the round's failures may have taken effect: ask
                info = self._info(cid, opts, fid, args, kwargs, attempt)
                settled = yield from self._reconcile(opts, info, index, fid, digest, cid)
                if settled is not None:
                    return settled[0]
        elif recorded is not None:  # a failed attempt to retry: resume where the backoff was
            attempt, round_start = recorded.next_attempt, recorded.round_start
            failed = recorded.failed
            assert failed is not None
            retry_at = failed.retry_at
            limit = (opts.retry or self.config.retry).max_attempts
            if attempt - round_start >= limit:  # max_attempts was lowered since: none is left
                yield from self._exhausted(opts, failed, fid, cid, attempt - round_start, limit)

        needs_start = opts.reconciler is not None or policy != "rerun"
        budget = self.writer.budget
        held = 0  # records the run's length budget holds for this attempt (start, outcome)

        def booked(write: _Write) -> _Write:
            """``write`` takes one of the records reserved for this attempt, if any is left."""
            nonlocal held
            if held:
                write.reserved, held = True, held - 1
            return write

        while True:
            started = time.time()
            finish = functools.partial(self._finish, index, fid, digest, cid, opts, started)
            try:
                if retry_at is not None:
                    wait = max(0.0, retry_at - time.time())
                    if wait > 0:
                        yield _Sleep(wait)
                    self.metrics.retry(wait)
                if self.writer.health is not None:  # a journal that refused a write: stop
                    self.writer.health.check(f"durable call {fid} (call id {cid})")
                if budget is not None:  # room for the outcome before the call runs
                    held = 2 if needs_start else 1
                    budget.reserve(held, f"durable call {fid} (call id {cid})")
                if needs_start:
                    yield booked(
                        _Write(
                            self.writer,
                            self.writer.build(
                                CallStarted,
                                action_id=self.action_id,
                                index=index,
                                call_id=cid,
                                function_id=fid,
                                durable_id=opts.durable_id,
                                arg_digest=digest,
                                attempt=attempt,
                                at=started,
                            ),
                            f"durable call {fid} was not started: its CallStarted was not "
                            "journaled",
                        )
                    )
            except asyncio.CancelledError as exc:  # before it ran (in its backoff, or starting)
                if not self._action_stopping():
                    yield booked(finish(None, exc, attempt))
                raise
            clock = time.perf_counter()
            try:
                value = yield _Invoke(self, fn, args, kwargs, opts, fid, cid, attempt)
            except asyncio.CancelledError as exc:
                self.metrics.call_executed(time.perf_counter() - clock)
                if not self._action_stopping():  # the action cancelled it: journal what happened
                    yield booked(finish(None, exc, attempt))
                raise
            except JournalUnavailableError:  # refused before it ran: nothing to journal
                if budget is not None:
                    budget.release(held)
                raise
            except Exception as exc:
                self.metrics.call_executed(time.perf_counter() - clock)
                tries = attempt - round_start + 1
                retry = opts.retry or self.config.retry
                if tries < retry.max_attempts and retry.retries(exc):
                    wait = retry.wait(tries)
                    retry_at = time.time() + wait
                    yield booked(
                        self._attempt_failed(index, fid, digest, cid, opts, attempt, exc, retry_at)
                    )
                    self.metrics.attempt("retried")
                    log.warning(
                        "durable call %s (call id %s) attempt %d of %d failed with %r; the next "
                        "attempt starts %.3g s after the failure",
                        fid, cid, tries, retry.max_attempts, exc, wait,
                    )  # fmt: skip
                    attempt += 1
                    continue
                self.metrics.attempt("failed")
                what = (
                    f"durable call {fid} (call id {cid}), attempt {tries} of {retry.max_attempts}"
                )
                why = "the last attempt" if retry.retries(exc) else "not retryable"
                if opts.record_failures:
                    yield booked(finish(None, exc, attempt))
                    self._failures[id(exc)] = f"{what} ({why}: journaled as its final outcome)"
                else:
                    # The round's end, journaled when anything of the round is (an earlier
                    # attempt, or this one's start): the next try of the run starts a new round.
                    if attempt > round_start or needs_start:
                        yield booked(
                            self._attempt_failed(index, fid, digest, cid, opts, attempt, exc, None)
                        )
                    elif budget is not None:
                        budget.release(held)
                    self._failures[id(exc)] = (
                        f"{what} ({why}; not journaled, record_failures=False: it runs again "
                        "when the run does)"
                    )
                raise
            self.metrics.call_executed(time.perf_counter() - clock, succeeded=True)
            # Journal the result; one the journal cannot hold is the call's final failure
            # instead (journaled, so a replay raises it and never runs the call again).
            try:
                data, value = self.values.roundtrip(
                    value, f"result of durable call {fid} (call id {cid})"
                )
                yield booked(finish(data, None, attempt))
            except EncodingError as exc:  # too large for the journal, or a type it cannot hold
                yield booked(finish(None, exc, attempt))
                self._failures[id(exc)] = (
                    f"durable call {fid} (call id {cid}) returned, but its result cannot be "
                    "journaled, which is journaled as the call's final outcome: it is not run "
                    "again;"
                )
                raise
            return value

    def _exhausted(
        self,
        opts: CallOptions,
        failed: CallAttemptFailed,
        fid: str,
        cid: str,
        tries: int,
        limit: int,
    ) -> Generator[_Effect, Any, None]:
        """A call resumed after ``tries`` journaled attempts with ``max_attempts`` lowered to
        ``limit`` since: no attempt is left, so its last failure ends the round without
        running it (journaled as its final outcome, or with ``record_failures=False`` as the
        round's end)."""
        self.metrics.attempt("failed")
        if opts.record_failures:
            record: JournalRecord = msgspec.structs.replace(
                self._finish(
                    failed.index, fid, failed.arg_digest, cid, opts, time.time(), None, None,
                    failed.attempt,
                ).record,
                error=failed.error,
            )  # fmt: skip
            outcome = "journaled as its final outcome"
        else:
            record = msgspec.structs.replace(failed, retry_at=None, at=time.time())
            outcome = "not journaled as final (record_failures=False): the next try of the run "
            outcome += "starts a new round"
        yield _Write(
            self.writer,
            record,
            f"durable call {fid} (call id {cid}) has no attempt left, and that was not journaled",
        )
        error = rebuild_error(self.values, failed.error)
        self._failures[id(error)] = (
            f"durable call {fid} (call id {cid}), not run again: {tries} attempts are journaled "
            f"and max_attempts is {limit} now; its last failure is {outcome};"
        )
        raise error

    def _info(
        self,
        cid: str,
        opts: CallOptions,
        fid: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        attempt: int,
    ) -> CallInfo:
        w = self.writer
        return CallInfo(
            cid, opts.durable_id, fid, args, kwargs, attempt, w.key_id, w.seq, self.action_name
        )

    def _attempt_failed(
        self,
        index: int,
        fid: str,
        digest: str,
        cid: str,
        opts: CallOptions,
        attempt: int,
        exc: BaseException,
        retry_at: float | None,
    ) -> _Write:
        record = self.writer.build(
            CallAttemptFailed,
            action_id=self.action_id,
            index=index,
            call_id=cid,
            function_id=fid,
            durable_id=opts.durable_id,
            arg_digest=digest,
            attempt=attempt,
            error=capture_error(self.values, exc),
            at=time.time(),
            retry_at=retry_at,
        )
        return _Write(
            self.writer,
            record,
            f"attempt {attempt + 1} of durable call {fid} (call id {cid}) failed ({exc!r}) and "
            "the failure was not journaled, so it is not retried",
        )

    def _redriven(self, recorded: RecordedCall) -> bool:
        """Whether this run re-drives a dead letter journaled after the call's last failure."""
        failed = recorded.failed is not None or (
            recorded.finished is not None and recorded.finished.error is not None
        )
        return failed and not recorded.unknown and self.redrive > recorded.dead_letters

    def _finish(
        self,
        index: int,
        fid: str,
        digest: str,
        cid: str,
        opts: CallOptions,
        started: float,
        data: bytes | None,
        exc: BaseException | None,
        attempt: int = 0,
        reconciled: bool = False,
    ) -> _Write:
        now = time.time()
        w = self.writer
        # Positional: the record is made for every call, and msgspec matches keywords slowly.
        record = CallFinished(
            *w.run,
            self.action_id,
            index,
            cid,
            fid,
            opts.durable_id,
            digest,
            data,  # value
            capture_error(self.values, exc) if exc is not None else None,
            now,  # at
            now - started,  # duration
            reconciled,
            w.action or "",
            attempt,
        )
        return _Write(
            self.writer,
            record,
            f"durable call {fid} (call id {cid}) ran, but its outcome was not journaled: the "
            "action fails, and when the run runs again the call's reconciler or its on_unknown "
            "policy settles it (with the default 'rerun', it runs again)",
        )

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

    def _matches(
        self,
        recorded: RecordedCall,
        fid: str,
        durable_id: str | None,
        digest: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> bool:
        head = recorded.head
        if durable_id is not None or head.durable_id is not None:
            same_call = head.durable_id == durable_id
        else:
            same_call = head.function_id == fid
        if is_legacy_digest(head.arg_digest):  # journaled by format 1: its digest of the time
            return same_call and head.arg_digest == self.values.legacy_digest([list(args), kwargs])
        return same_call and head.arg_digest == digest

    def _action_stopping(self) -> bool:
        """Whether the action's own task is being cancelled (its run or the job stops)."""
        return self._task is not None and self._task.cancelling() > 0

    def _diverged(
        self, recorded: RecordedCall, index: int, fid: str, durable_id: str | None, digest: str
    ) -> Generator[_Effect, Any, None]:
        self.metrics.call("diverged")
        head = recorded.head
        detail = (
            f"recorded: function={head.function_id} durable_id={head.durable_id} "
            f"args={head.arg_digest}; current: function={fid} durable_id={durable_id} "
            f"args={digest}"
        )
        if self.config.on_divergence == "fail":
            raise DivergenceError(
                f"durable call #{index} of action {self.action_name} (key {self.writer.key_id}, "
                f"seq {self.writer.seq}) differs from the journal: {detail}. The agent code or "
                "its inputs changed since the journal was written; revert the change, or set "
                "journal.on_divergence='rerun' to drop the recorded calls from this one on"
            )
        self.recorded.calls = {i: c for i, c in self.recorded.calls.items() if i < index}
        yield _Write(
            self.writer,
            self.writer.build(CallsDropped, action_id=self.action_id, index=index),
            f"recorded calls of action {self.action_name} from #{index} could not be dropped",
        )

    def _reconcile(
        self, opts: CallOptions, info: CallInfo, index: int, fid: str, digest: str, cid: str
    ) -> Generator[_Effect, Any, tuple[Any] | None]:
        """Ask the reconciler until it settles. ``(value,)`` when settled, ``None`` to run now."""
        assert opts.reconciler is not None
        deadline = time.monotonic() + opts.reconcile_timeout
        while True:
            try:
                outcome = yield _Reconcile(opts.reconciler, info)
            except Exception as exc:
                raise ReconcileError(
                    f"reconciler of durable call {fid} (call id {cid}) raised {exc!r}; the call's "
                    "outcome is still unknown and nothing was re-run. Fix the reconciler, or check "
                    "the called system by hand"
                ) from exc
            if isinstance(outcome, NotStarted):
                return None
            if isinstance(outcome, Recovered):
                self.metrics.call("reconciled")
                data, value = self.values.roundtrip(outcome.value, f"recovered result of {fid}")
                now = time.time()
                yield self._finish(
                    index, fid, digest, cid, opts, now, data, None, info.attempt, reconciled=True
                )
                return (value,)
            if isinstance(outcome, Failed):
                self.metrics.call("reconciled")
                now = time.time()
                error = outcome.error
                yield self._finish(
                    index, fid, digest, cid, opts, now, None, error, info.attempt, reconciled=True
                )
                self._failures[id(error)] = (
                    f"durable call {fid} (call id {cid}), settled by its reconciler as failed "
                    "(journaled as its final outcome),"
                )
                raise error
            if not isinstance(outcome, StillRunning):
                raise ReconcileError(
                    f"reconciler of durable call {fid} returned {outcome!r}; it must return "
                    "Recovered, Failed, NotStarted or StillRunning"
                )
            if time.monotonic() + outcome.retry_after > deadline:
                raise ReconcileError(
                    f"durable call {fid} (call id {cid}) was still running after "
                    f"{opts.reconcile_timeout:.0f} s of reconciling; raise reconcile_timeout or "
                    "check the called system"
                )
            yield _Sleep(outcome.retry_after)

    def _replay(self, finished: CallFinished, what: str) -> Any:
        if finished.error is not None:
            error = rebuild_error(self.values, finished.error)
            self._failures[id(error)] = f"{what}, replaying its journaled failure,"
            raise error
        assert finished.value is not None
        return self.values.decode(finished.value)


# -- drivers -------------------------------------------------------------------


def _drive_sync(
    gen: Generator[_Effect, Any, Any],
    loop: asyncio.AbstractEventLoop | None,
    task: asyncio.Task[Any] | None = None,
) -> Any:
    """Perform effects blocking; never on an event loop (``execute`` refuses that).

    An async reconciler runs on the action's ``loop`` while this thread waits.
    """
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = gen.throw(error) if error is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, _Invoke):  # the common effects first
                token = _current_call.set(effect)
                try:
                    send = effect.run()
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Write):
                effect.writer.write(effect.record, effect.context, effect.reserved)
            elif isinstance(effect, _Reconcile):
                token = _current_call.set(effect.info)
                try:
                    send = effect.reconciler(effect.info)
                    if inspect.isawaitable(send):
                        send = _wait(send, loop)
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Sleep):
                _sleep(effect.seconds, loop, task)
            else:
                raise DivergenceError(
                    f"{effect.what} was cancelled by the action when it was journaled, which "
                    "only an awaited call can be; it is now made with the blocking "
                    "ctx.durable_execute. Make it with `await ctx.durable_execute_async(...)` "
                    "again, as when it was journaled"
                )
        except BaseException as exc:
            error = exc


async def _drive_async(gen: Generator[_Effect, Any, Any]) -> Any:
    """Perform effects on the event loop; whatever blocks runs in a worker thread."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = gen.throw(error) if error is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, _Invoke):  # the common effects first
                token = _current_call.set(effect)
                try:
                    if is_coroutine_function(effect.fn):
                        send = await effect.run()
                    else:
                        send = await asyncio.to_thread(effect.run)
                        if inspect.isawaitable(send):
                            send = await send
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Write):
                await _append(effect)
            elif isinstance(effect, _Reconcile):
                token = _current_call.set(effect.info)
                try:
                    send = await _call(effect.reconciler, effect.info)
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Sleep):
                await asyncio.sleep(effect.seconds)
            else:
                await asyncio.get_running_loop().create_future()  # until cancelled
        except BaseException as exc:
            error = exc


async def _append(effect: _Write) -> None:
    """Append in a worker thread. Cancelled meanwhile, it still waits for the append to end
    (a thread cannot be stopped), so the journal's order is the order of the effects."""
    append = asyncio.ensure_future(
        effect.writer.write_async(effect.record, effect.context, effect.reserved)
    )
    try:
        await asyncio.shield(append)
    except asyncio.CancelledError:
        await asyncio.wait({append})
        append.exception()  # a failed append is kept by the writer: its action fails
        raise


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(...)``: awaited here if it is async, else run in a worker thread (it may block)."""
    if is_coroutine_function(fn):
        result = fn(*args, **kwargs)
    else:
        result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _sleep(
    seconds: float, loop: asyncio.AbstractEventLoop | None, task: asyncio.Task[Any] | None
) -> None:
    """``time.sleep`` in a worker thread that ends, raising CancelledError, as soon as the
    action's task is cancelled or its loop stops: a backoff must not outlive its run."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.1))
        if (task is not None and task.cancelling()) or (loop is not None and not loop.is_running()):
            raise asyncio.CancelledError


def _wait(awaitable: Awaitable[Any], loop: asyncio.AbstractEventLoop | None) -> Any:
    """Run ``awaitable`` to its end from a thread without a loop: on the action's loop when
    it runs (its clients live there), else on a loop of its own."""
    if loop is not None and loop.is_running():
        return asyncio.run_coroutine_threadsafe(_await(awaitable), loop).result()
    return asyncio.run(_await(awaitable))


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
