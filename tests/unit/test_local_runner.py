"""The local runner: every path that takes a store uses the configured codec, new inputs are
never dropped, bad input shapes and agent errors are reported once (issue 14 items 16, 17)."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3

import pytest

from actionjournal import (
    ActionFailedError,
    Agent,
    InputEvent,
    JournalConfig,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.durable.codec import FLAG_SIGNED, RecordCodec
from actionjournal.durable.errors import ConfigurationError, SignatureError
from actionjournal.stores import MemoryStore, SqliteStore

CALLS: list[object] = []


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


class Receipt:
    """Not plain data: journaled only with allow_pickle."""

    def __init__(self, order):
        self.order = order


def charge(order):
    CALLS.append(order)
    return Receipt(order)


class Shop(Agent):
    uid = "shop"

    @action(InputEvent)
    def pay(self, event, ctx):
        receipt = ctx.durable_execute(charge, event.input)
        ctx.send_event(OutputEvent(receipt.order))


def signed(key):
    return JournalConfig(signing_key=key, allow_pickle=True)


# -- item 16


def test_the_local_runner_signs_with_the_configured_key(tmp_path):
    path = tmp_path / "journal.db"
    runner = LocalRunner(Shop(), SqliteStore(path), signed("right key"))  # opened without codec
    asyncio.run(runner.run([("k", "o-1")]))
    flags = [body[4] for (body,) in sqlite3.connect(path).execute("SELECT body FROM journal")]
    assert flags and all(f & FLAG_SIGNED for f in flags), "records were written unsigned"

    # The same journal, read by a runner with the wrong key: refused, nothing unpickled or run.
    wrong = LocalRunner(Shop(), SqliteStore(path), signed("wrong key"))
    with pytest.raises(SignatureError, match="signature does not match"):
        asyncio.run(wrong.run([("k", "o-1")]))
    # The right key replays it.
    again = LocalRunner(Shop(), SqliteStore(path), signed("right key"))
    asyncio.run(again.run([("k", "o-1")]))
    assert CALLS == ["o-1"] and [e.output for _, e in again.outputs] == ["o-1"]


def test_a_store_opened_with_another_key_is_refused():
    store = MemoryStore(codec=RecordCodec(b"other key"))
    with pytest.raises(ConfigurationError, match="signing key other than journal.signing_key"):
        LocalRunner(Shop(), store, signed("right key"))
    LocalRunner(Shop(), MemoryStore(codec=RecordCodec(b"right key")), signed("right key"))  # fine


# -- item 17


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def echo(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(charge, event.input).order))


def outputs(runner):
    return sorted(e.output for _, e in runner.outputs)


def test_a_second_run_call_runs_all_its_inputs():
    runner = LocalRunner(Echo(), MemoryStore(), signed("k"))
    asyncio.run(runner.run([("a", 1), ("b", 2)]))
    asyncio.run(runner.run([("c", 3), ("d", 4)]))
    assert outputs(runner) == [1, 2, 3, 4]


def test_after_a_restore_new_inputs_are_new_and_the_source_is_explicit(tmp_path):
    store = MemoryStore()
    first = LocalRunner(Echo(), store, signed("k"))
    asyncio.run(first.run([("a", 1), ("b", 2)]))
    first.snapshot(tmp_path / "snap")

    restored = LocalRunner.restore(tmp_path / "snap", Echo(), store, signed("k"))
    asyncio.run(restored.run([("c", 3)]))  # a new input, not position 0 of a source
    assert outputs(restored) == [3]

    # The source replayed from the snapshot's position: inputs 0-1 were consumed before it.
    rewound = LocalRunner.restore(tmp_path / "snap", Echo(), store, signed("k"))
    asyncio.run(rewound.run_source([("a", 1), ("b", 2), ("c", 3)]))
    # Keys a and b ran concurrently: their calls' order is not the inputs'.
    assert outputs(rewound) == [3] and sorted(CALLS) == [1, 2, 3]
    with pytest.raises(ValueError, match="source position is 2"):
        again = LocalRunner.restore(tmp_path / "snap", Echo(), store, signed("k"))
        asyncio.run(again.run_source([("a", 1)]))


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (["text"], r"input #0 is 'text', not a \(key, input\) pair"),
        ({"k": 1}, r"not a dict; for a mapping of key to input pass list\(inputs.items\(\)\)"),
        ("text", "takes a list of"),
        ([("k", 1, 2)], r"input #0 is \('k', 1, 2\)"),
    ],
)
def test_badly_shaped_inputs_say_the_expected_shape(inputs, message):
    runner = LocalRunner(Echo(), MemoryStore())
    with pytest.raises(TypeError, match=message):
        asyncio.run(runner.run(inputs))
    assert runner.inputs_consumed == 0  # nothing half-accepted


class Broken(Agent):
    @action(InputEvent)
    def boom(self, event, ctx):
        raise RuntimeError(f"boom {event.input}")


def test_an_agent_error_is_raised_once_and_never_logged_as_unretrieved(caplog):
    runner = LocalRunner(Broken(), MemoryStore())
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(ActionFailedError, match="boom") as err:
            asyncio.run(runner.run([("a", 1), ("b", 2), ("c", 3)], pace=0.05))
        gc.collect()
    assert "never retrieved" not in caplog.text
    assert caplog.records == []
    with pytest.raises(Exception, match="stopped after a failure") as stopped:
        asyncio.run(runner.run([("d", 4)]))  # a failed runner takes no input silently
    assert stopped.value.__cause__ is err.value


def test_an_agent_without_actions_fails_when_the_runner_is_made():
    class Empty(Agent):
        pass

    with pytest.raises(TypeError, match="Empty has no @action methods"):
        LocalRunner(Empty(), MemoryStore())
