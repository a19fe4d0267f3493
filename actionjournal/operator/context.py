"""What an action sees: memory, sending events, durable calls, timers and signals."""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any, get_args

from actionjournal.durable.agent import Agent
from actionjournal.durable.call_options import CallOptions, Reconciler
from actionjournal.durable.calls import ActionCalls
from actionjournal.durable.config import UnknownOutcomePolicy
from actionjournal.durable.errors import ConfigurationError, ContextClosedError
from actionjournal.durable.events import Event
from actionjournal.durable.identity import event_id, function_id
from actionjournal.durable.retry import RetryPolicy
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.waits import Signal
from actionjournal.operator.memory import Memory
from actionjournal.operator.waits import ActionWaits
from actionjournal.reconcilers.registry import resolve


class RunnerContext:
    def __init__(
        self,
        agent: Agent,
        key: Any,
        seq: int,
        calls: ActionCalls,
        short_term_memory: Memory,
        sensory_memory: Memory,
        sent: list[Event],
        waits: ActionWaits | None = None,
    ) -> None:
        self.agent = agent
        self.key = key
        self.seq = seq
        self.short_term_memory = short_term_memory
        self.sensory_memory = sensory_memory
        self._calls = calls
        self._sent = sent
        self._waits = waits
        self._closed = False

    @property
    def metrics(self) -> JournalMetrics:
        """The engine's metrics, for what an action counts itself (an agent loop's budget)."""
        return self._calls.metrics

    def close(self) -> None:
        """The action finished: every later use of this context raises ContextClosedError."""
        self._closed = True
        self.short_term_memory.close()
        self.sensory_memory.close()

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise ContextClosedError(
                f"{what} through the context of action {self._calls.action_name} (key "
                f"{self.key!r}, seq {self.seq}) after the action finished: a context is valid "
                "only while its action runs. Make the call inside the action and await it "
                "before the action returns"
            )

    async def _while_open(self, call: Coroutine[Any, Any, Any], what: str) -> Any:
        if self._closed:
            call.close()
            self._check_open(what)
        return await call

    def send_event(self, event: Event) -> str:
        """Send an event; it is delivered when the action returns (replayed with its id).

        Returns the event's id (also set on ``event``): it is known at once, so an action
        can refer to an event it sent, e.g. to match the answer to a request.
        """
        self._check_open("send_event")
        if not isinstance(event, Event):
            raise TypeError(f"send_event takes an Event, got {type(event).__name__}")
        writer = self._calls.writer
        event.id = event_id(
            writer.operator_uid, writer.key_id, self._calls.action_id, len(self._sent)
        )
        self._sent.append(event)
        return event.id

    def schedule_event(
        self,
        event: Event,
        *,
        delay: float | timedelta | None = None,
        at: datetime | None = None,
        timer_id: str | None = None,
    ) -> str:
        """Deliver ``event`` to this key as a new run after ``delay`` (seconds or a
        timedelta) or ``at`` (an aware datetime); returns the timer's id.

        Like a sent event, the timer is an effect of the action: journaled with it (its
        due time as an absolute time), kept in the key's state when the run completes, and
        dropped if the action fails. ``timer_id`` names it (unique per key: scheduling it
        again replaces the pending one); without one the id derives from the run, the
        action and the request's position. See docs/timers.md.
        """
        return self._wait_requests("schedule_event").schedule_event(event, delay, at, timer_id)

    def cancel_timer(self, timer_id: str) -> bool:
        """Cancel a pending timer of this key: True if it was pending (it then never
        fires), False if it had fired, was cancelled, or never existed."""
        return self._wait_requests("cancel_timer").cancel_timer(timer_id)

    def expect_signal(
        self,
        name: str,
        *,
        timeout: float | timedelta,
        timeout_event: Event | None = None,
    ) -> Signal:
        """Wait for an answer from outside, without keeping the action running.

        Give ``signal.id`` to whoever answers; their ``SignalInput(signal.id, value)``,
        given to this key as an input, starts a run with a ``SignalReceived``. If
        ``timeout`` (seconds or a timedelta) passes first, a run gets a ``SignalTimedOut``
        (or ``timeout_event``). The first of the two wins; a later answer runs nothing.
        """
        return self._wait_requests("expect_signal").expect_signal(name, timeout, timeout_event)

    def _wait_requests(self, what: str) -> ActionWaits:
        self._check_open(what)
        if self._waits is None:
            raise ConfigurationError(f"{what}: this context keeps no timers or signals")
        return self._waits

    def durable_execute(
        self,
        fn: Callable[..., Any],
        *args: Any,
        durable_id: str | None = None,
        reconciler: Reconciler | str | None = None,
        on_unknown: UnknownOutcomePolicy | None = None,
        record_failures: bool = True,
        reconcile_timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` once; after a failure return or raise what it recorded.

        ``reconciler`` is a callable or the name of one registered in the agent; without
        it, the function's own (``@reconciled_by``) is used. ``retry`` (a
        :class:`~actionjournal.RetryPolicy`) replaces ``journal.retry`` for this call; a
        failure it retries is journaled as an attempt, and only a final failure (not
        retryable, or the last attempt) as the call's outcome, unless ``record_failures``
        is false (then the call runs again when its run does). Options are checked now. Not
        on an event loop (it blocks, backoff included): in an ``async def`` action await
        :meth:`durable_execute_async`.
        """
        self._check_open("durable_execute")
        opts = self._options(
            fn, durable_id, reconciler, on_unknown, record_failures, reconcile_timeout, retry
        )
        return self._calls.execute(fn, args, kwargs, opts)

    def durable_execute_async(
        self,
        fn: Callable[..., Any],
        *args: Any,
        durable_id: str | None = None,
        reconciler: Reconciler | str | None = None,
        on_unknown: UnknownOutcomePolicy | None = None,
        record_failures: bool = True,
        reconcile_timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Any]:
        """Awaitable form; its position is fixed when called, so ``asyncio.gather`` replays."""
        self._check_open("durable_execute_async")
        opts = self._options(
            fn, durable_id, reconciler, on_unknown, record_failures, reconcile_timeout, retry
        )
        call = self._calls.execute_async(fn, args, kwargs, opts)
        return self._while_open(call, "durable_execute_async")

    def chat(
        self,
        model: str,
        messages: Any,
        schema: type | None = None,
        *,
        durable_id: str | None = None,
    ) -> Any:
        """Ask the agent's chat model ``model`` (a name in its ``chat_models``) as a durable
        call: the response, or with a pydantic ``schema`` the validated object. See
        :mod:`actionjournal.chat`."""
        from actionjournal.chat.calls import chat

        return chat(self, model, messages, schema, durable_id=durable_id)

    def chat_async(
        self,
        model: str,
        messages: Any,
        schema: type | None = None,
        *,
        durable_id: str | None = None,
    ) -> Coroutine[Any, Any, Any]:
        """Awaitable form of :meth:`chat`, for ``async def`` actions (position taken now)."""
        from actionjournal.chat.calls import chat_async

        return chat_async(self, model, messages, schema, durable_id=durable_id)

    def _options(
        self,
        fn: Callable[..., Any],
        durable_id: str | None,
        reconciler: Reconciler | str | None,
        on_unknown: UnknownOutcomePolicy | None,
        record_failures: bool,
        reconcile_timeout: float,
        retry: RetryPolicy | None = None,
    ) -> CallOptions:
        """The call's options, checked when the call is made: a mistake in one must not wait
        for a crash to show (or, worse, re-run a call it was meant to protect)."""
        if not callable(fn):
            raise TypeError(f"a durable call takes the function to call first, got {fn!r}")
        call = f"durable call {function_id(fn)}"
        if durable_id is not None and (not isinstance(durable_id, str) or not durable_id):
            raise ConfigurationError(
                f"durable_id={durable_id!r} of {call}: use a non-empty str, or None to identify "
                "the call by its function and position"
            )
        if on_unknown is not None and on_unknown not in get_args(UnknownOutcomePolicy):
            allowed = ", ".join(repr(p) for p in get_args(UnknownOutcomePolicy))
            raise ConfigurationError(
                f"on_unknown={on_unknown!r} of {call}: use one of {allowed}, or None for the "
                "job's journal.on_unknown"
            )
        if not isinstance(record_failures, bool):
            raise ConfigurationError(
                f"record_failures={record_failures!r} of {call}: use True or False"
            )
        if (
            isinstance(reconcile_timeout, bool)
            or not isinstance(reconcile_timeout, int | float)
            or not 0 < reconcile_timeout < math.inf
        ):
            raise ConfigurationError(
                f"reconcile_timeout={reconcile_timeout!r} of {call}: use a positive number of "
                "seconds"
            )
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ConfigurationError(
                f"retry={retry!r} of {call}: use actionjournal.RetryPolicy(...), or None for the "
                "job's journal.retry"
            )
        chosen = resolve(reconciler, fn, self.agent.reconcilers(), call)
        return CallOptions(
            durable_id, chosen, on_unknown, record_failures, reconcile_timeout, retry
        )
