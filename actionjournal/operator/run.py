"""One run: the input of one key flowing through the agent's actions.

Completed actions are not executed again: their memory updates are re-applied
and their events re-sent with their original ids. Actions that had not
completed run again, and their durable calls replay from the journal.

Async actions of a run progress together; a sync action runs alone (no other
action of its run runs meanwhile), so read-modify-write of memory in ``def``
actions never loses an update.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from actionjournal.durable.agent import ActionSpec, Agent
from actionjournal.durable.calls import ActionCalls
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import ActionFailedError, DivergenceError
from actionjournal.durable.events import Event
from actionjournal.durable.guards import RunBudget, scope
from actionjournal.durable.identity import action_id, event_fingerprint, event_id, input_digest
from actionjournal.durable.records import (
    ActionCompleted,
    EventData,
    JournalRecord,
    Marker,
    MemoryOp,
    RunCompleted,
    RunInput,
    WaitOp,
)
from actionjournal.durable.replay import RecordedAction, RecordedRun
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.store import Store
from actionjournal.durable.values import ValueCodec
from actionjournal.durable.writer import JournalHealth, RunWriter
from actionjournal.operator.context import RunnerContext
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.memory import Memory, apply_op
from actionjournal.operator.waits import ActionWaits, Delivery, Origin, RunWaits

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    outputs: list[Event]
    memory: dict[str, Any]
    marker: Marker | None  # None when the run had completed before and was fully replayed
    dead_letter: DeadLetter | None = None  # the run failed and was dead-lettered
    waits: list[WaitOp] = field(default_factory=list)  # its actions' timer and signal changes
    consumed: Origin | None = None  # the timer or signal it delivered (used up)


@dataclass
class RunEnv:
    """What every run of one operator shares."""

    agent: Agent
    store: Store
    config: JournalConfig
    values: ValueCodec
    metrics: JournalMetrics  # what the engine counts and times
    health: JournalHealth  # the journal's threads, and its first refused write


class RunExecution:
    def __init__(
        self,
        env: RunEnv,
        key: Any,
        key_id: str,
        seq: int,
        input_data: bytes,
        memory: dict[str, Any],
        recorded: RecordedRun,
        refresh_marker: bool = False,
        consequence: str = "",
        redrive: int = 0,
        *,
        waits: RunWaits,
        delivery: Delivery | None = None,
    ) -> None:
        self.env = env
        self.waits = waits
        self.delivery = delivery  # what a timer or signal that started the run delivers
        self.wait_ops: list[WaitOp] = []
        self.refresh_marker = refresh_marker
        self.consequence = consequence  # what happens when the run fails (its policy)
        self.redrive = redrive  # re-drives its dead letter number ``redrive`` (0: no)
        self.key = key
        self.seq = seq
        self.input_data = input_data
        self.recorded = recorded
        config = env.config
        budget = RunBudget(
            config.run_records_warn,
            config.max_run_records,
            env.metrics,
            f"key id {key_id}, seq {seq}",
            recorded.records,
        )
        self.writer = RunWriter(
            env.store,
            config.namespace,
            env.agent.operator_uid,
            config.epoch,
            key_id,
            seq,
            env.metrics,
            budget,
            health=env.health,
        )
        self.short_term = memory
        self.sensory: dict[str, Any] = {}
        self.outputs: list[Event] = []
        self._queue: deque[tuple[Event, bytes]] = deque()
        self._tasks: set[asyncio.Task[list[tuple[Event, bytes]]]] = set()
        self._last: list[ActionCompleted] = []  # written with the RunCompleted, in one commit
        self._ordinals: Counter[tuple[str, str]] = Counter()
        self._turns = _Turns()

    async def execute(self) -> RunResult:
        with scope(f"key {_short(self.key)} (key id {self.writer.key_id}), seq {self.seq}"):
            self._check_recorded_actions()
            return await self._execute_run()

    def _check_recorded_actions(self) -> None:
        """Journaled actions the agent no longer has (renamed or removed) are divergence:
        their calls would silently run again under another action's identity."""
        names = self.env.agent.action_names()
        gone = {a.name: a for a in self.recorded.actions.values() if a.name and a.name not in names}
        if not gone:
            return
        self.env.metrics.call("diverged", sum(len(a.calls) for a in gone.values()))
        missing = ", ".join(sorted(gone))
        where = f"key {_short(self.key)} (key id {self.writer.key_id}), seq {self.seq}"
        if self.env.config.on_divergence == "fail":
            raise DivergenceError(
                f"the journal of {where} holds action(s) {missing} that agent "
                f"{type(self.env.agent).__name__} (operator uid {self.env.agent.operator_uid}) "
                "no longer has: renamed or removed since the journal was written, so its "
                "journaled calls would run again under another name. Restore the action's name, "
                "or set journal.on_divergence='rerun' to run this run's actions without the "
                "journaled ones (calls they had made run again)",
                key_id=self.writer.key_id,
                seq=self.seq,
                action=missing,
            )
        log.warning(
            "%s: the journal holds action(s) %s that the agent no longer has; "
            "journal.on_divergence='rerun': the run goes on without them",
            where,
            missing,
        )

    async def _execute_run(self) -> RunResult:
        values = self.env.values
        uid, kid = self.env.agent.operator_uid, self.writer.key_id
        delivery = self.delivery
        if delivery is None:
            value = values.decode(self.input_data)
            input_event: Event | None = Event.rebuild(
                self.env.agent.input_event_type,
                {"input": value},
                event_id(uid, kid, "input", self.seq),
            )
            digest = input_digest(values.canonical(value, "agent input"))
        else:  # a timer's or a signal's run: journaled with its first records
            input_event = delivery.event
            self.writer.lead.append(self.writer.build(RunInput, at=time.time(), **delivery.record))
            what = [delivery.record["kind"], delivery.record["id"], self.input_data]
            digest = input_digest(values.canonical(what, "run input"))
        if input_event is not None:
            self._queue.append((input_event, values.encode(input_event.attributes)))
        tasks = self._tasks
        try:
            while True:
                while self._queue:
                    tasks.update(self._dispatch(*self._queue.popleft()))
                if not tasks:
                    break
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                tasks -= done
                for task in done:
                    self._queue.extend(task.result())
        finally:
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        records: list[JournalRecord] = list(self._last)
        if self.recorded.completed is None or self.refresh_marker:
            # Also after a full replay when the key's marker points into a skipped journal
            # (upgrade mode): the marker then moves into the current one.
            records.append(self.writer.build(RunCompleted, at=time.time(), input_digest=digest))
        marker = None
        if records:
            context = ", ".join(f"action {r.action}" for r in self._last)
            markers = await self.writer.write_all_async(
                records,
                f"{context} finished but was not journaled" if context else "",
            )
            for _ in self._last:
                self.env.metrics.action("executed")
            if isinstance(records[-1], RunCompleted):
                marker = markers[-1]
        self.env.metrics.run("completed" if self.recorded.completed is None else "replayed")
        return RunResult(self.outputs, self.short_term, marker, waits=self.wait_ops)

    def _dispatch(self, event: Event, attributes: bytes) -> list[asyncio.Task[Any]]:
        if event.type == self.env.agent.output_event_type:
            self.outputs.append(event)
            return []
        tasks = []
        canonical = self.env.values.canonical(event.attributes, f"event {event.type!r}")
        fingerprint = event_fingerprint(event.type, canonical)
        legacy = event_fingerprint(event.type, attributes)  # format-1 journals: journaled bytes
        for spec in self.env.agent.actions().get(event.type, ()):
            ordinal = self._ordinals[(spec.name, fingerprint)]
            self._ordinals[(spec.name, fingerprint)] += 1
            aid = self.recorded.known_id(
                action_id(self.seq, spec.name, fingerprint, ordinal),
                action_id(self.seq, spec.name, legacy, ordinal),
            )
            recorded = self.recorded.action(aid)
            if recorded.completed is not None:
                self._replay(recorded.completed)
            else:
                tasks.append(asyncio.ensure_future(self._execute(spec, event, aid, recorded)))
        return tasks

    def _replay(self, completed: ActionCompleted) -> None:
        self.env.metrics.action("replayed")
        for op in completed.memory_ops:
            target = self.short_term if op.scope == "short_term" else self.sensory
            try:
                apply_op(target, op, self.env.values)
            except ValueError as exc:
                raise ActionFailedError(
                    f"replaying the memory updates of action {completed.action} (key id "
                    f"{self.writer.key_id}, seq {self.seq}) failed at {op.op} {op.path!r}: "
                    f"{exc}. Memory differs from when the action ran: the journal was written "
                    "by code that allowed this update"
                ) from exc
        self.waits.replay(completed.waits, self.seq)
        self.wait_ops.extend(completed.waits)
        upstream = (completed.trigger_event_id, completed.action)
        for data in completed.outputs:
            attributes = self.env.values.decode(data.attributes)
            event = Event.rebuild(data.type, attributes, data.id, upstream)
            self._queue.append((event, data.attributes))

    async def _execute(
        self, spec: ActionSpec, event: Event, aid: str, recorded: RecordedAction
    ) -> list[tuple[Event, bytes]]:
        with scope(f"action {spec.name}"):  # this task's context: its threads inherit it
            return await self._execute_action(spec, event, aid, recorded)

    async def _execute_action(
        self, spec: ActionSpec, event: Event, aid: str, recorded: RecordedAction
    ) -> list[tuple[Event, bytes]]:
        env = self.env
        ops: list[MemoryOp] = []
        sent: list[Event] = []
        writer = self.writer.for_action(spec.name)  # remembers failed writes, closes at the end
        calls = ActionCalls(
            writer, aid, spec.name, recorded, env.config, env.values, env.metrics, self.redrive
        )
        owner = f"action {spec.name} (key {_short(self.key)}, seq {self.seq})"
        waits = ActionWaits(self.waits, spec.name, aid, self.seq)
        ctx = RunnerContext(
            env.agent,
            self.key,
            self.seq,
            calls,
            Memory("short_term", self.short_term, env.values, ops, owner),
            Memory("sensory", self.sensory, env.values, ops, owner),
            sent,
            waits,
        )
        try:
            async with self._turns.take(alone=not spec.is_async):
                await _run_body(spec, event, ctx)
            if writer.failure is not None:
                raise writer.failure
            out = self._sent_events(spec.name, aid, sent, event.id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = writer.failure
            raise self._failed(spec.name, exc, failure, calls) from (failure or exc)
        finally:
            ctx.close()
            writer.close()
        record = self.writer.build(
            ActionCompleted,
            action_id=aid,
            action=spec.name,
            memory_ops=ops,
            outputs=[EventData(e.id or "", e.type, data) for e, data in out],
            at=time.time(),
            trigger_event_id=event.id,
            waits=waits.ops,
        )
        self.wait_ops.extend(waits.ops)
        if self._ends_run(out):  # nothing of the run follows: one commit with RunCompleted
            self._last.append(record)
            return out
        await self.writer.write_async(record, f"action {spec.name} finished but was not journaled")
        env.metrics.action("executed")
        return out

    def _ends_run(self, out: list[tuple[Event, bytes]]) -> bool:
        """True when the action finishing with ``out`` is the run's last: no other action is
        running or queued, and none of ``out`` starts one. Its ``ActionCompleted`` may then wait
        for the ``RunCompleted`` (a crash in between loses both, as one before either would)."""
        if len(self._tasks) != 1 or self._queue:
            return False
        actions = self.env.agent.actions()
        output = self.env.agent.output_event_type
        return all(event.type == output or not actions.get(event.type) for event, _ in out)

    def _sent_events(
        self, action: str, aid: str, sent: list[Event], trigger: str | None
    ) -> list[tuple[Event, bytes]]:
        """The events an action sent, as the journal keeps them and as replay rebuilds them,
        so the next actions get the same event (class, id, attributes, lineage) every run."""
        uid, kid = self.env.agent.operator_uid, self.writer.key_id
        out = []
        for index, sent_event in enumerate(sent):
            extra = getattr(sent_event, "__dict__", None)
            if extra:
                raise TypeError(
                    f"event {sent_event.type!r} ({type(sent_event).__name__}) keeps "
                    f"{sorted(extra)} outside its attributes; only attributes are journaled, so "
                    "a replayed event would lack them. Keep the data in attributes and expose "
                    "it with properties"
                )
            data, attributes = self.env.values.roundtrip(
                sent_event.attributes, f"attributes of event {sent_event.type!r} sent by {action}"
            )
            eid = event_id(uid, kid, aid, index)  # the id send_event returned
            out.append((Event.rebuild(sent_event.type, attributes, eid, (trigger, action)), data))
        return out

    def _failed(
        self, action: str, exc: Exception, write_failure: Exception | None, calls: ActionCalls
    ) -> ActionFailedError:
        where = f"action {action} failed for key {self.key!r} seq {self.seq}"
        fields: dict[str, Any] = {"key_id": self.writer.key_id, "seq": self.seq, "action": action}
        if write_failure is not None:
            return ActionFailedError(
                f"{where}: a journal write of the action failed ({write_failure}); the action "
                "fails even if its code caught that error, so nothing of it is journaled as "
                f"completed. {self.consequence}",
                **fields,
            )
        raised = calls.failure_of(exc)
        if raised is None:
            return ActionFailedError(f"{where}: {_described(exc)}. {self.consequence}", **fields)
        how, call_id = raised
        return ActionFailedError(
            f"{where}: {how} raised {_described(exc)}. {self.consequence}",
            **fields,
            call_id=call_id,
        )


def _described(exc: Exception) -> str:
    """``repr(exc)``, and its ``str()`` too when that says more (a custom ``__str__``)."""
    text = repr(exc)
    try:
        message = str(exc)
    except Exception:
        return text
    return text if not message or message in text else f"{text}: {message}"


async def _run_body(spec: ActionSpec, event: Event, ctx: RunnerContext) -> None:
    """Run the action to its end: whatever it returns that is awaitable is awaited."""
    if spec.is_async:
        result = spec.fn(event, ctx)
    else:
        result = await asyncio.to_thread(spec.fn, event, ctx)
    while inspect.isawaitable(result):
        result = await result
    if inspect.isgenerator(result) or inspect.isasyncgen(result):
        raise TypeError(
            f"action {spec.name} returned a generator, whose body never ran: an action must run "
            "to its end; send events with ctx.send_event instead of yield"
        )


class _Turns:
    """Which actions of a run may run now: any number of async ones, or one sync one.

    A sync action waits until the running async ones finished, and async ones that
    arrive while a sync one runs or waits start after it (Flink Agents runs one action
    of a key at a time; async actions interleave only at ``await``, on one thread).
    """

    def __init__(self) -> None:
        self._changed = asyncio.Condition()
        self._together = 0  # async actions running
        self._alone = False  # a sync action running
        self._waiting_alone = 0

    @contextlib.asynccontextmanager
    async def take(self, alone: bool) -> AsyncIterator[None]:
        async with self._changed:
            if alone:
                self._waiting_alone += 1
                try:
                    await self._changed.wait_for(lambda: not self._alone and not self._together)
                finally:
                    self._waiting_alone -= 1
                self._alone = True
            else:
                await self._changed.wait_for(lambda: not self._alone and not self._waiting_alone)
                self._together += 1
        try:
            yield
        finally:
            async with self._changed:
                if alone:
                    self._alone = False
                else:
                    self._together -= 1
                self._changed.notify_all()


def _short(key: Any, limit: int = 60) -> str:
    text = repr(key)
    return text if len(text) <= limit else text[: limit - 3] + "..."
