"""The effects the call decision (:mod:`actionjournal.durable.calls`) yields, and the two
drivers that perform them: blocking for ``ctx.durable_execute``, on the event loop for
``await ctx.durable_execute_async``. The decision says what happens; a driver only says how
an effect is carried out, so the two forms cannot disagree about what is journaled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Generator
from types import FunctionType
from typing import Any

from actionjournal.durable.call_options import Call, Reconciler
from actionjournal.durable.errors import DivergenceError
from actionjournal.durable.outcomes import CallInfo
from actionjournal.durable.records import JournalRecord
from actionjournal.durable.writer import JournalHealth, RunWriter

# A call being reconciled, or the Invoke of one running (its CallInfo made when asked for).
_current_call: contextvars.ContextVar[CallInfo | Invoke | None] = contextvars.ContextVar(
    "actionjournal_current_call", default=None
)

# Set in a worker thread whose caller, an action's event loop, waits on it blocked: a blocking
# call made there must not hand an async reconciler to that loop (it would wait forever).
_loop_waits: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "actionjournal_loop_waits", default=False
)


def current_call() -> CallInfo | None:
    """The durable call running or being reconciled in this context (its ``call_id`` is the
    idempotency key)."""
    call = _current_call.get()
    return call.info() if isinstance(call, Invoke) else call


def call_for_blocked_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a worker thread while the calling thread, an event loop's,
    waits for it: how a blocking durable call made in an ``async def`` action runs where such
    calls are allowed (the Flink Agents face). Every run on that loop waits meanwhile."""

    def run() -> Any:
        _loop_waits.set(True)
        return fn(*args, **kwargs)

    with concurrent.futures.ThreadPoolExecutor(1, "actionjournal-blocking-call") as pool:
        return pool.submit(contextvars.copy_context().run, run).result()


def loop_waits() -> bool:
    """Whether this thread runs for an event loop that waits for it (see above)."""
    return _loop_waits.get()


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


# Effects. Plain classes with slots: one or two are made per durable call, and a frozen
# dataclass costs several times as much to make.
class Write:
    """Append ``record``; ``context`` is what the caller is told when the append fails."""

    __slots__ = ("context", "record", "reserved", "writer")

    def __init__(self, writer: RunWriter, record: JournalRecord, context: str) -> None:
        self.writer = writer
        self.record = record
        self.context = context
        self.reserved = False  # the run's length budget counted it before the call ran


class Invoke:
    """Run the function. Its :class:`CallInfo` is made only when asked for (``current_call``):
    most functions never ask, and making one costs more than the rest of the effect."""

    __slots__ = ("_info", "attempt", "call", "health", "make_info")

    def __init__(
        self,
        call: Call,
        attempt: int,
        make_info: Callable[[Call, int], CallInfo],
        health: JournalHealth | None,
    ) -> None:
        self.call, self.attempt, self.make_info, self.health = call, attempt, make_info, health
        self._info: CallInfo | None = None

    def info(self) -> CallInfo:
        if self._info is None:
            self._info = self.make_info(self.call, self.attempt)
        return self._info

    def run(self) -> Any:
        """Call the function, on the thread it runs on: checked there, since a call made just
        before the journal refused a write may have waited for a thread since."""
        call = self.call
        if self.health is not None:
            self.health.check(call.name)
        return call.fn(*call.args, **call.kwargs)


class Reconcile:
    """Ask the reconciler about ``info``'s call."""

    __slots__ = ("info", "reconciler")

    def __init__(self, reconciler: Reconciler, info: CallInfo) -> None:
        self.reconciler = reconciler
        self.info = info


class Sleep:
    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class AwaitCancel:
    """Replay of a call its action cancelled: wait until the action cancels it again."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what  # names the call if it cannot wait (a blocking call)


Effect = Write | Invoke | Reconcile | Sleep | AwaitCancel


# -- drivers -------------------------------------------------------------------


def drive_sync(
    gen: Generator[Effect, Any, Any],
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
            if isinstance(effect, Invoke):  # the common effects first
                token = _current_call.set(effect)
                try:
                    send = effect.run()
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, Write):
                effect.writer.write(effect.record, effect.context, effect.reserved)
            elif isinstance(effect, Reconcile):
                token = _current_call.set(effect.info)
                try:
                    send = effect.reconciler(effect.info)
                    if inspect.isawaitable(send):
                        send = _wait(send, loop)
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, Sleep):
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


async def drive_async(gen: Generator[Effect, Any, Any]) -> Any:
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
            if isinstance(effect, Invoke):  # the common effects first
                token = _current_call.set(effect)
                try:
                    if is_coroutine_function(effect.call.fn):
                        send = await effect.run()
                    else:
                        send = await asyncio.to_thread(effect.run)
                        if inspect.isawaitable(send):
                            send = await send
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, Write):
                await _append(effect)
            elif isinstance(effect, Reconcile):
                token = _current_call.set(effect.info)
                try:
                    send = await _call(effect.reconciler, effect.info)
                finally:
                    _current_call.reset(token)
            elif isinstance(effect, Sleep):
                await asyncio.sleep(effect.seconds)
            else:
                await asyncio.get_running_loop().create_future()  # until cancelled
        except BaseException as exc:
            error = exc


async def _append(effect: Write) -> None:
    """Append on a journal thread. Cancelled meanwhile, it still waits for the append to end
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


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(...)``: awaited here if it is async, else run in a worker thread (it may block)."""
    if is_coroutine_function(fn):
        result = fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
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
