"""Timers and signals on the Flink Agents face's RunnerContext (actionjournal's extension,
issue 34): an upstream-style agent schedules a typed event, cancels a timer, expects a
signal and gets SignalReceivedEvent or SignalTimedOutEvent."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from actionjournal import LocalRunner, SignalInput
from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.decorators import action
from actionjournal.flink_agents.api.events.event import Event, InputEvent, OutputEvent
from actionjournal.flink_agents.api.events.signal_event import (
    SignalReceivedEvent,
    SignalTimedOutEvent,
)
from actionjournal.flink_agents.runtime.configuration import AgentConfiguration
from actionjournal.flink_agents.runtime.plan import EngineAgent
from actionjournal.stores import MemoryStore
from actionjournal.testing import ManualClock


class Reminder(Event):
    EVENT_TYPE: ClassVar[str] = "reminder"
    text: str


class Approvals(Agent):
    @action(InputEvent)
    @staticmethod
    def start(event: InputEvent, ctx: Any) -> None:
        request = event.input
        if request == "remind":
            ctx.schedule_event(Reminder(type=Reminder.EVENT_TYPE, text="call back"), delay=60)
            dropped = ctx.schedule_event(Reminder(type=Reminder.EVENT_TYPE, text="x"), delay=30)
            ctx.send_event(OutputEvent({"cancelled": ctx.cancel_timer(dropped)}))
        else:
            signal = ctx.expect_signal("approval", timeout=request)
            ctx.send_event(OutputEvent({"signal": signal.id}))

    @action(Reminder)
    @staticmethod
    def remind(event: Reminder, ctx: Any) -> None:
        ctx.send_event(OutputEvent({"reminder": event.text}))

    @action(SignalReceivedEvent)
    @staticmethod
    def approved(event: SignalReceivedEvent, ctx: Any) -> None:
        ctx.send_event(OutputEvent({"approved": event.value, "name": event.name}))

    @action(SignalTimedOutEvent)
    @staticmethod
    def expired(event: SignalTimedOutEvent, ctx: Any) -> None:
        ctx.send_event(OutputEvent({"expired": event.signal_id}))


def outputs_of(runner: LocalRunner, clock: ManualClock, *steps: Any) -> list[Any]:
    async def go() -> None:
        for step in steps:
            if isinstance(step, (int, float)):
                clock.advance(step)
            else:
                runner.submit(*step)
            await runner.drain()

    asyncio.run(go())
    return [event.attributes["output"] for _, event in runner.outputs]


def runner() -> tuple[LocalRunner, ManualClock]:
    clock = ManualClock()
    agent = EngineAgent(Approvals(), AgentConfiguration(), {})
    return LocalRunner(agent, MemoryStore(), clock=clock), clock


def test_a_typed_event_scheduled_through_the_face_arrives_as_its_class():
    face, clock = runner()
    assert outputs_of(face, clock, ("k", "remind"), 61) == [
        {"cancelled": True},
        {"reminder": "call back"},
    ]


def test_signals_through_the_face_are_received_or_time_out():
    face, clock = runner()
    (asked,) = outputs_of(face, clock, ("a", 3600))
    answer = ("a", SignalInput(asked["signal"], "yes"))
    later = outputs_of(face, clock, answer, ("b", 10), 11)[1:]
    expired = later[-1]["expired"]
    assert later[:-1] == [{"approved": "yes", "name": "approval"}, {"signal": expired}]
