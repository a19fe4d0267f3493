"""One run: the input of one key flowing through the agent's actions.

Completed actions are not executed again: their memory updates are re-applied
and their events re-sent with their original ids. Actions that had not
completed run again, and their durable calls replay from the journal.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from actionjournal.durable.calls import ActionCalls
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import ActionFailedError
from actionjournal.durable.guards import RunBudget, scope
from actionjournal.durable.identity import action_id, event_fingerprint, event_id, input_digest
from actionjournal.durable.records import (
    ActionCompleted,
    EventData,
    Marker,
    MemoryOp,
    RunCompleted,
)
from actionjournal.durable.replay import RecordedAction, RecordedRun
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.values import ValueCodec
from actionjournal.durable.writer import RunWriter
from actionjournal.operator.agent import ActionSpec, Agent
from actionjournal.operator.context import RunnerContext
from actionjournal.operator.events import Event, InputEvent
from actionjournal.operator.memory import Memory, apply_op


@dataclass
class RunResult:
    outputs: list[Event]
    memory: dict[str, Any]
    marker: Marker | None  # None when the run had completed before and was fully replayed


@dataclass
class RunEnv:
    """What every run of one operator shares."""

    agent: Agent
    store: Any  # ActionStateStore
    config: JournalConfig
    values: ValueCodec
    counts: JournalMetrics  # what the engine counts and times


class Run:
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
    ) -> None:
        self.env = env
        self.refresh_marker = refresh_marker
        self.key = key
        self.seq = seq
        self.input_data = input_data
        self.recorded = recorded
        config = env.config
        budget = RunBudget(
            config.run_records_warn,
            config.max_run_records,
            env.counts,
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
            env.counts,
            budget,
        )
        self.short_term = memory
        self.sensory: dict[str, Any] = {}
        self.outputs: list[Event] = []
        self._queue: deque[tuple[Event, bytes]] = deque()
        self._ordinals: Counter[tuple[str, str]] = Counter()

    async def execute(self) -> RunResult:
        with scope(f"key {_short(self.key)} (key id {self.writer.key_id}), seq {self.seq}"):
            return await self._execute_run()

    async def _execute_run(self) -> RunResult:
        values = self.env.values
        input_event = InputEvent(None, id=event_id(f"input:{self.writer.key_id}", self.seq))
        input_event.attributes = {"input": values.decode(self.input_data)}
        self._queue.append((input_event, values.encode(input_event.attributes)))
        tasks: set[asyncio.Task[list[tuple[Event, bytes]]]] = set()
        try:
            while True:
                while self._queue:
                    tasks.update(self._dispatch(*self._queue.popleft()))
                if not tasks:
                    break
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    self._queue.extend(task.result())
        finally:
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        marker = None
        if self.recorded.completed is None or self.refresh_marker:
            # Also after a full replay when the key's marker points into a skipped journal
            # (upgrade mode): the marker then moves into the current one.
            record = self.writer.build(
                RunCompleted, at=time.time(), input_digest=input_digest(self.input_data)
            )
            marker = await asyncio.to_thread(self.writer.write, record)
        self.env.counts.run("completed" if self.recorded.completed is None else "replayed")
        return RunResult(self.outputs, self.short_term, marker)

    def _dispatch(self, event: Event, attributes: bytes) -> list[asyncio.Task[Any]]:
        if event.type == "output":
            self.outputs.append(event)
            return []
        tasks = []
        fingerprint = event_fingerprint(event.type, attributes)
        for spec in self.env.agent.actions().get(event.type, ()):
            ordinal = self._ordinals[(spec.name, fingerprint)]
            self._ordinals[(spec.name, fingerprint)] += 1
            aid = action_id(self.seq, spec.name, fingerprint, ordinal)
            recorded = self.recorded.action(aid)
            if recorded.completed is not None:
                self._replay(recorded.completed)
            else:
                tasks.append(asyncio.ensure_future(self._execute(spec, event, aid, recorded)))
        return tasks

    def _replay(self, completed: ActionCompleted) -> None:
        self.env.counts.action("replayed")
        for op in completed.memory_ops:
            target = self.short_term if op.scope == "short_term" else self.sensory
            apply_op(target, op, self.env.values)
        for data in completed.outputs:
            attributes = self.env.values.decode(data.attributes)
            self._queue.append((Event.rebuild(data.type, attributes, data.id), data.attributes))

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
        calls = ActionCalls(
            self.writer, aid, spec.name, recorded, env.config, env.values, env.counts
        )
        ctx = RunnerContext(
            env.agent,
            self.key,
            self.seq,
            calls,
            Memory("short_term", self.short_term, env.values, ops),
            Memory("sensory", self.sensory, env.values, ops),
            sent,
        )
        try:
            if spec.is_async:
                await spec.fn(event, ctx)
            else:
                await asyncio.to_thread(spec.fn, event, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise ActionFailedError(
                f"action {spec.name} failed for key {self.key!r} seq {self.seq}: {exc!r}. The "
                "journal keeps its finished durable calls; they replay when the run is retried"
            ) from exc
        out: list[tuple[Event, bytes]] = []
        for index, sent_event in enumerate(sent):
            sent_event.id = event_id(aid, index)
            data, sent_event.attributes = env.values.roundtrip(
                sent_event.attributes,
                f"attributes of event {sent_event.type!r} sent by {spec.name}",
            )
            out.append((sent_event, data))
        record = self.writer.build(
            ActionCompleted,
            action_id=aid,
            action=spec.name,
            memory_ops=ops,
            outputs=[EventData(e.id or "", e.type, data) for e, data in out],
            at=time.time(),
        )
        await asyncio.to_thread(
            self.writer.write, record, f"action {spec.name} finished but was not journaled"
        )
        env.counts.action("executed")
        return out


def _short(key: Any, limit: int = 60) -> str:
    text = repr(key)
    return text if len(text) <= limit else text[: limit - 3] + "..."
