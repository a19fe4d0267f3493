"""Memory refuses updates that would silently drop data, live and on replay (issue 14 item 11)."""

from __future__ import annotations

import asyncio
import time

import pytest

from actionjournal import ActionFailedError, Agent, InputEvent, LocalRunner, action
from actionjournal.durable.identity import action_id, event_fingerprint, key_id
from actionjournal.durable.records import ActionCompleted, MemoryOp
from actionjournal.durable.values import ValueCodec
from actionjournal.operator.memory import Memory
from actionjournal.stores import MemoryStore


def memory():
    return Memory("short_term", {}, ValueCodec(), [])


def test_set_over_an_object_with_a_value_raises():
    m = memory()
    m.new_object("o")
    m.set("o.c", 1)
    with pytest.raises(ValueError, match=r"'o' holds an object with fields \['c'\]"):
        m.set("o", 123)
    assert m.get("o") == {"c": 1}


def test_new_object_over_a_value_raises_unless_overwrite():
    m = memory()
    m.set("p", "x")
    with pytest.raises(ValueError, match=r"'p' holds a value \(str\), not an object"):
        m.new_object("p")
    assert m.get("p") == "x"
    m.new_object("p", overwrite=True)
    assert m.get("p") == {}


def test_a_path_through_a_value_raises():
    m = memory()
    m.set("a", 1)
    with pytest.raises(ValueError, match=r"goes through 'a', which holds a value \(int\)"):
        m.set("a.b", 2)
    with pytest.raises(ValueError, match="goes through 'a'"):
        m.new_object("a.b")
    assert m.to_dict() == {"a": 1}


def test_what_stays_allowed():
    m = memory()
    m.new_object("o")
    m.set("o.c", 1)
    m.new_object("o")  # exists: kept
    assert m.get("o") == {"c": 1}
    m.set("o", {"d": 2})  # an object replaced by another object
    m.set("v", 1)
    m.set("v", "two")  # a value replaced by a value
    m.delete("o")
    m.set("o", 5)  # deleted first: fine
    assert m.to_dict() == {"o": 5, "v": "two"}


def test_what_a_path_holds_and_an_objects_field_names_without_copying():
    m = memory()
    m.set("o.b", 1)
    m.new_object("o.a")
    assert (m.kind(), m.kind("o"), m.kind("o.b"), m.kind("o.x"), m.kind("o.b.c")) == (
        "object",
        "object",
        "value",
        None,
        None,
    )
    assert m.field_names() == ["o"] and m.field_names("o") == ["b", "a"]
    assert m.field_names("o.b") == [] and m.field_names("nothing") == []
    assert "o.a" in m and "o.c" not in m


class Recorder(Agent):
    uid = "mem"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.short_term_memory.set("p", "x")
        ctx.short_term_memory.new_object("p", overwrite=True)
        ctx.short_term_memory.set("p.q", event.input)


def test_replay_applies_the_same_rules():
    store = MemoryStore()
    first = LocalRunner(Recorder(), store)
    asyncio.run(first.run([("k", 1)]))
    replay = LocalRunner(Recorder(), store)  # the overwrite replays as delete + new_object
    asyncio.run(replay.run([("k", 1)]))
    assert replay.counts["actions_replayed"] == 1

    def state(runner):
        [(_, s)] = runner.states.values()
        return runner.engine.env.values.decode(s.memory)

    assert state(first) == state(replay) == {"p": {"q": 1}}

    # A journal that holds an update the rules refuse (written by code that allowed it):
    # replay fails loudly, naming the action and the update, instead of guessing.
    old = MemoryStore()
    values = ValueCodec()
    old.append(
        ActionCompleted(
            namespace="default",
            operator_uid="mem",
            epoch=0,
            key_id=key_id("k"),
            seq=0,
            action_id=replay_action_id(),
            action="handle",
            memory_ops=[
                MemoryOp("short_term", "set", "p", values.encode("x")),
                MemoryOp("short_term", "new_object", "p"),
            ],
            outputs=[],
            at=time.time(),
        )
    )
    with pytest.raises(ActionFailedError, match=r"action handle .* failed at new_object 'p'"):
        asyncio.run(LocalRunner(Recorder(), old).run([("k", 1)]))


def replay_action_id():
    attributes = ValueCodec().encode({"input": 1})
    return action_id(0, "handle", event_fingerprint("input", attributes), 0)
