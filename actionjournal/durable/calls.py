"""Durable calls of one action execution: execute once, journal, replay.

The decision logic is written once, as a generator that yields effects
(journal a record, invoke the function, ask the reconciler, wait). A sync and
an async driver perform those effects, so ``durable_execute`` and
``durable_execute_async`` cannot drift apart.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from typing import Any

from actionjournal.durable.config import JournalConfig, UnknownOutcomePolicy
from actionjournal.durable.errors import (
    ConfigurationError,
    DivergenceError,
    ReconcileError,
    UnknownOutcomeError,
)
from actionjournal.durable.identity import call_id, function_id
from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Recovered, StillRunning
from actionjournal.durable.records import CallFinished, CallsDropped, CallStarted, JournalRecord
from actionjournal.durable.replay import RecordedAction, RecordedCall
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.values import ValueCodec
from actionjournal.durable.writer import RunWriter

Reconciler = Callable[[CallInfo], Any]  # returns an Outcome, or an awaitable of one

_current_call: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar(
    "actionjournal_current_call", default=None
)


def current_call() -> CallInfo | None:
    """The durable call running in this context (its ``call_id`` is the idempotency key)."""
    return _current_call.get()


# Effects the decision generator asks a driver to perform.
@dataclass(frozen=True)
class _Write:
    writer: RunWriter
    record: JournalRecord
    context: str  # what the caller is told when the append fails


@dataclass(frozen=True)
class _Invoke:
    fn: Callable[..., Any]
    info: CallInfo


@dataclass(frozen=True)
class _Reconcile:
    reconciler: Reconciler
    info: CallInfo


@dataclass(frozen=True)
class _Sleep:
    seconds: float


_Effect = _Write | _Invoke | _Reconcile | _Sleep


@dataclass(frozen=True)
class CallOptions:
    durable_id: str | None = None
    reconciler: Reconciler | None = None
    on_unknown: UnknownOutcomePolicy | None = None
    record_failures: bool = True
    reconcile_timeout: float = 300.0


class ActionCalls:
    """The durable calls made by one action execution, in invocation order."""

    def __init__(
        self,
        writer: RunWriter,
        action_id: str,
        action_name: str,
        recorded: RecordedAction,
        config: JournalConfig,
        values: ValueCodec,
        counts: JournalMetrics,
    ) -> None:
        self.writer = writer
        self.action_id = action_id
        self.action_name = action_name
        self.recorded = recorded
        self.config = config
        self.values = values
        self.counts = counts
        self._next_index = 0

    def execute(self, fn: Callable[..., Any], args: tuple, kwargs: dict, opts: CallOptions) -> Any:
        if inspect.iscoroutinefunction(fn):
            raise TypeError(
                f"{function_id(fn)} is a coroutine function: use "
                "`await ctx.durable_execute_async(...)` for it"
            )
        gen = self._decide(fn, args, kwargs, opts)  # the index is taken now, at invocation
        return _drive_sync(gen)

    def execute_async(
        self, fn: Callable[..., Any], args: tuple, kwargs: dict, opts: CallOptions
    ) -> Coroutine[Any, Any, Any]:
        # A plain function returning a coroutine: the index is assigned when the call is
        # made, not when the coroutine first runs, so gather() and out-of-order awaits replay.
        gen = self._decide(fn, args, kwargs, opts)
        return _drive_async(gen)

    # -- the decision, written once -------------------------------------------

    def _decide(
        self, fn: Callable[..., Any], args: tuple, kwargs: dict, opts: CallOptions
    ) -> Generator[_Effect, Any, Any]:
        index = self._next_index
        self._next_index += 1
        fid = function_id(fn)
        digest = self.values.digest([list(args), kwargs])
        identity = f"d:{opts.durable_id}" if opts.durable_id is not None else f"f:{fid}#{index}"
        w = self.writer
        cid = call_id(
            w.namespace, w.operator_uid, w.epoch, w.key_id, w.seq, self.action_id, identity
        )
        policy = opts.on_unknown or ("reconcile" if opts.reconciler else self.config.on_unknown)
        if policy == "reconcile" and opts.reconciler is None:
            raise ConfigurationError(
                f"durable call {fid} has on_unknown='reconcile' but no reconciler; pass "
                "reconciler=... or register one for this function"
            )
        return self._run(fn, args, kwargs, opts, index, fid, digest, cid, policy)

    def _run(
        self,
        fn: Callable[..., Any],
        args: tuple,
        kwargs: dict,
        opts: CallOptions,
        index: int,
        fid: str,
        digest: str,
        cid: str,
        policy: str,
    ) -> Generator[_Effect, Any, Any]:
        def info(attempt: int) -> CallInfo:
            return CallInfo(
                cid,
                opts.durable_id,
                fid,
                args,
                kwargs,
                attempt,
                self.writer.key_id,
                self.writer.seq,
                self.action_name,
            )

        attempt = 0
        recorded = self.recorded.calls.get(index)
        if recorded is not None and not self._matches(recorded, fid, opts.durable_id, digest):
            yield from self._diverged(recorded, index, fid, opts.durable_id, digest)
            recorded = None
        if recorded is not None and recorded.finished is not None:
            self.counts.call("replayed")  # never an execution, and no duration sample
            return self._replay(recorded.finished)
        if recorded is not None:  # started, no outcome: the process died during the call
            self.counts.call("unknown")
            attempt = recorded.attempt + 1
            if policy == "fail":
                raise UnknownOutcomeError(
                    f"durable call {fid} (call id {cid}, key {self.writer.key_id}, seq "
                    f"{self.writer.seq}, action {self.action_name}) started before a failure and "
                    "has no recorded outcome; its policy is on_unknown='fail'. Check the called "
                    "system, then register a reconciler or set on_unknown='rerun'"
                )
            if policy == "reconcile":
                assert opts.reconciler is not None
                settled = yield from self._reconcile(opts, info(attempt), index, fid, digest, cid)
                if settled is not None:
                    return settled[0]

        needs_start = opts.reconciler is not None or policy != "rerun"
        if needs_start:
            yield _Write(
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
                    at=time.time(),
                ),
                f"durable call {fid} was not started: its CallStarted was not journaled",
            )
        started = time.time()
        clock = time.perf_counter()
        try:
            value = yield _Invoke(fn, info(attempt))
        except Exception as exc:
            self.counts.call_executed(time.perf_counter() - clock)
            if opts.record_failures:
                yield self._finish(index, fid, digest, cid, opts, started, None, exc)
            raise
        self.counts.call_executed(time.perf_counter() - clock)
        data, value = self.values.roundtrip(value, f"result of durable call {fid} (call id {cid})")
        yield self._finish(index, fid, digest, cid, opts, started, data, None)
        return value

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
        reconciled: bool = False,
    ) -> _Write:
        now = time.time()
        record = self.writer.build(
            CallFinished,
            action_id=self.action_id,
            index=index,
            call_id=cid,
            function_id=fid,
            durable_id=opts.durable_id,
            arg_digest=digest,
            value=data,
            error=self.values.capture_error(exc) if exc is not None else None,
            at=now,
            duration=now - started,
            reconciled=reconciled,
        )
        return _Write(
            self.writer,
            record,
            f"durable call {fid} (call id {cid}) ran, but its outcome was not journaled and will "
            "be unknown after a failure",
        )

    def _matches(
        self, recorded: RecordedCall, fid: str, durable_id: str | None, digest: str
    ) -> bool:
        head = recorded.head
        if durable_id is not None or head.durable_id is not None:
            same_call = head.durable_id == durable_id
        else:
            same_call = head.function_id == fid
        return same_call and head.arg_digest == digest

    def _diverged(
        self, recorded: RecordedCall, index: int, fid: str, durable_id: str | None, digest: str
    ) -> Generator[_Effect, Any, None]:
        self.counts.call("diverged")
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
                self.counts.call("reconciled")
                data, value = self.values.roundtrip(outcome.value, f"recovered result of {fid}")
                yield self._finish(index, fid, digest, cid, opts, time.time(), data, None, True)
                return (value,)
            if isinstance(outcome, Failed):
                self.counts.call("reconciled")
                yield self._finish(
                    index, fid, digest, cid, opts, time.time(), None, outcome.error, True
                )
                raise outcome.error
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

    def _replay(self, finished: CallFinished) -> Any:
        if finished.error is not None:
            raise self.values.rebuild_error(finished.error)
        assert finished.value is not None
        return self.values.decode(finished.value)


# -- drivers -------------------------------------------------------------------


def _drive_sync(gen: Generator[_Effect, Any, Any]) -> Any:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = gen.throw(error) if error is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, _Write):
                effect.writer.write(effect.record, effect.context)
            elif isinstance(effect, _Invoke):
                token = _current_call.set(effect.info)
                try:
                    send = effect.fn(*effect.info.args, **effect.info.kwargs)
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Reconcile):
                send = effect.reconciler(effect.info)
                if inspect.isawaitable(send):
                    send = asyncio.run(_await(send))
            else:
                time.sleep(effect.seconds)
        except BaseException as exc:
            error = exc


async def _drive_async(gen: Generator[_Effect, Any, Any]) -> Any:
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = gen.throw(error) if error is not None else gen.send(send)
        except StopIteration as stop:
            return stop.value
        send, error = None, None
        try:
            if isinstance(effect, _Write):
                await asyncio.to_thread(effect.writer.write, effect.record, effect.context)
            elif isinstance(effect, _Invoke):
                token = _current_call.set(effect.info)
                try:
                    if inspect.iscoroutinefunction(effect.fn):
                        send = await effect.fn(*effect.info.args, **effect.info.kwargs)
                    else:
                        send = await asyncio.to_thread(
                            effect.fn, *effect.info.args, **effect.info.kwargs
                        )
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, _Reconcile):
                send = effect.reconciler(effect.info)
                if inspect.isawaitable(send):
                    send = await send
            else:
                await asyncio.sleep(effect.seconds)
        except BaseException as exc:
            error = exc


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
