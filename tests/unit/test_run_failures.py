"""The run failure policy on the local runner: fail, dead-letter, retry-then-dead-letter, and
re-drives. Calls go to a real HTTP service that counts them; the journal is SQLite.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from actionjournal import (
    ActionFailedError,
    DeadLetter,
    InputEvent,
    JournalConfig,
    JournalWriteError,
    LocalRunner,
    OutputEvent,
    RetryPolicy,
    action,
)
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import RunFailed
from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.testing.service import CountingService
from actionjournal.tools.cli import main as cli
from tests.docs import docs_sample
from tests.retry_agent import Checkout, call_service

FAST = JournalConfig(retry=RetryPolicy(2, 0.01, 1.0, 0.01))
INPUTS = [("a", "a-1"), ("poison", "p-1"), ("b", "b-1"), ("poison", "p-2"), ("a", "a-2")]


@pytest.fixture
def service():
    with CountingService() as svc:
        yield svc


def run(runner: LocalRunner, inputs, snapshot=None) -> None:
    asyncio.run(runner.run(inputs, snapshot_path=snapshot, snapshot_every=1 if snapshot else 0))


def redrive(runner: LocalRunner, key, letter: DeadLetter) -> None:
    async def go() -> None:
        runner.submit(key, letter)
        await runner.drain()

    asyncio.run(go())


def poison(service: CountingService) -> None:
    """The charge of input p-1 is always refused (ValueError: not retryable)."""
    service.fail("charge-p-1", times=None, status=400)


class Shop(Checkout):
    """Checkout, with the charge of each input at its own path (so one can be refused)."""

    @action(InputEvent)
    async def handle(self, event, ctx):
        reserved = await ctx.durable_execute_async(call_service, self.url, "reserve", event.input)
        charged = await ctx.durable_execute_async(
            call_service, self.url, f"charge-{event.input}", reserved
        )
        ctx.send_event(OutputEvent(charged))


def journaled(store, key) -> list:
    return store.read_key("default", "checkout", key_id(key), None)


def test_dead_letter_sets_the_run_aside_and_the_key_moves_on(service, tmp_path):
    poison(service)
    store = SqliteStore(tmp_path / "j.db")
    runner = LocalRunner(Shop(service.url), store, FAST, on_run_failure="dead-letter")
    run(runner, INPUTS)
    assert sorted(e.output for _, e in runner.outputs) == ["a-1", "a-2", "b-1", "p-2"]
    (letter,) = runner.dead_letters
    assert (letter.key, letter.seq, letter.input) == ("poison", 0, "p-1")
    assert letter.error_type == "builtins.ValueError"
    assert "durable call tests.retry_agent:call_service" in letter.error
    assert "not retryable" in letter.error and "dead-lettered" in letter.error
    (failed,) = [r for r in journaled(store, "poison") if isinstance(r, RunFailed)]
    assert failed.final and failed.seq == 0
    (at,) = store.scan(0, "default", start=letter.position, end=letter.position + 1)
    assert at.record == failed  # the dead letter says where its record is
    m = runner.metrics
    assert m.value("actionjournal_runs_total", outcome="dead_lettered") == 1
    assert m.value("actionjournal_call_attempts_total", result="failed") == 1


def test_a_dead_letter_is_handed_out_again_after_a_restore_and_nothing_reruns(service, tmp_path):
    poison(service)
    store = SqliteStore(tmp_path / "j.db")
    snap = tmp_path / "snap"
    runner = LocalRunner(Shop(service.url), store, FAST, on_run_failure="dead-letter")
    # The snapshot after the poison input was taken before its run was dead-lettered.
    asyncio.run(runner.run(INPUTS[:2], snapshot_path=snap, snapshot_every=2))
    restored = LocalRunner.restore(
        snap, Shop(service.url), store, FAST, on_run_failure="dead-letter"
    )
    asyncio.run(restored.run_source(INPUTS))
    (letter,) = restored.dead_letters
    assert (letter.key, letter.seq, letter.input) == ("poison", 0, "p-1")
    assert letter.position is None  # handed out again: the record had been written before
    assert list(service.attempts("charge-p-1").values()) == [[0]]  # not asked again
    assert max(service.counts.values()) == 1  # the poison run's finished reserve: not repeated
    assert sorted(e.output for _, e in restored.outputs) == ["a-1", "a-2", "b-1", "p-2"]


def test_fail_stops_with_a_message_naming_key_call_and_what_happens(service, tmp_path):
    poison(service)
    runner = LocalRunner(Shop(service.url), SqliteStore(tmp_path / "j.db"), FAST)
    with pytest.raises(ActionFailedError) as failed:
        run(runner, INPUTS[1:2])
    text = str(failed.value)
    assert "action handle failed for key 'poison' seq 0" in text
    assert "durable call tests.retry_agent:call_service (call id " in text
    assert "ValueError(\"charge-p-1 refused 'p-1'\")" in text
    assert "The task fails (a LocalRunner stops) and the run runs again after the restore" in text
    assert "a journaled failure fails it again, the call is not re-run" in text
    assert runner.dead_letters == []


def test_retry_then_dead_letter_fails_n_times_then_sets_the_run_aside(service, tmp_path):
    poison(service)
    store = SqliteStore(tmp_path / "j.db")
    snap = tmp_path / "snap"
    options = {"on_run_failure": "retry-then-dead-letter", "run_failure_restarts": 2}
    runner = LocalRunner(Shop(service.url), store, FAST, **options)
    messages = []
    with pytest.raises(ActionFailedError) as failed:
        asyncio.run(runner.run(INPUTS[1:2], snapshot_path=snap, snapshot_every=1))
    messages.append(str(failed.value))
    for _ in range(2):  # each restore is a task restart
        restored = LocalRunner.restore(snap, Shop(service.url), store, FAST, **options)
        try:
            asyncio.run(restored.run_source(INPUTS[1:2]))
        except ActionFailedError as exc:
            messages.append(str(exc))
    assert "Failed try 1 of 3" in messages[0] and "Failed try 2 of 3" in messages[1]
    assert len(messages) == 2  # the third try was dead-lettered
    (letter,) = restored.dead_letters
    assert letter.seq == 0 and letter.input == "p-1"
    tries = [r.final for r in journaled(store, "poison") if isinstance(r, RunFailed)]
    assert tries == [False, False, True]
    assert list(service.attempts("charge-p-1").values()) == [[0]]  # replayed, never re-run
    assert max(service.counts.values()) == 1


def test_a_journal_that_cannot_be_written_fails_the_task_under_every_policy(service):
    class Down(MemoryStore):
        def append(self, record):
            if type(record).__name__ == "CallFinished":
                raise JournalWriteError("broker did not acknowledge the append")
            return super().append(record)

    runner = LocalRunner(Checkout(service.url), Down(), FAST, on_run_failure="dead-letter")
    with pytest.raises(ActionFailedError, match="journal write of the action failed"):
        run(runner, [("k", "o-1")])
    assert runner.dead_letters == []  # the input is not at fault


def test_redrive_runs_the_same_run_again_and_repeats_no_finished_call(service, tmp_path, capsys):
    service.fail("charge-p-1", times=None)  # 503 until the service heals
    store = SqliteStore(tmp_path / "j.db")
    runner = LocalRunner(Shop(service.url), store, FAST, on_run_failure="dead-letter")
    run(runner, INPUTS[1:3])
    (letter,) = runner.dead_letters
    assert list(service.attempts("charge-p-1").values()) == [[0, 1]]  # exhausted
    service.fail("charge-p-1", times=0)  # healed
    redrive(runner, "poison", letter)
    assert [e.output for k, e in runner.outputs if k == "poison"] == ["p-1"]
    # The same call, a new round of attempts after the two journaled ones; reserve not again.
    assert list(service.attempts("charge-p-1").values()) == [[0, 1, 2]]
    assert sorted(service.counts.values()) == [1, 1, 1, 1]  # reserve x2 keys, charges x2
    # The listing says the run was re-driven (and leaves it out without --all).
    capsys.readouterr()
    listing = ["runs", "dead-letters", "--store", "sqlite", "--path", str(tmp_path / "j.db")]
    assert cli([*listing, "--json"]) == 0 and json.loads(capsys.readouterr().out) == []
    assert cli([*listing, "--json", "--all"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["redriven"] and doc["seq"] == 0
    assert doc["key"] == "poison" and not doc["key_literal"]  # the key, not its repr


def test_redrive_after_a_code_fix_with_on_divergence_rerun(service, tmp_path):
    poison(service)
    store = SqliteStore(tmp_path / "j.db")
    runner = LocalRunner(Shop(service.url), store, FAST, on_run_failure="dead-letter")
    run(runner, INPUTS[1:2])
    (letter,) = runner.dead_letters

    class Fixed(Shop):  # the fix: charge the reserved amount at the path that works
        @action(InputEvent)
        async def handle(self, event, ctx):
            reserved = await ctx.durable_execute_async(
                call_service, self.url, "reserve", event.input
            )
            charged = await ctx.durable_execute_async(call_service, self.url, "charge", reserved)
            ctx.send_event(OutputEvent(charged))

    runner.snapshot(tmp_path / "snap")  # the job restarts from its last state with the new code
    fixed = LocalRunner.restore(
        tmp_path / "snap",
        Fixed(service.url),
        store,
        JournalConfig(retry=FAST.retry, on_divergence="rerun"),
        on_run_failure="dead-letter",
    )
    redrive(fixed, "poison", letter)
    assert [e.output for _, e in fixed.outputs] == ["p-1"]
    assert fixed.dead_letters == []
    assert service.calls_by_name() == {"reserve": 1, "charge": 1}  # reserve replayed


def test_a_redrive_whose_journal_is_gone_is_refused_never_rerun_blindly(service, tmp_path):
    poison(service)
    runner = LocalRunner(
        Shop(service.url), SqliteStore(tmp_path / "j.db"), FAST, on_run_failure="dead-letter"
    )
    run(runner, INPUTS[1:2])
    (letter,) = runner.dead_letters
    db = sqlite3.connect(tmp_path / "j.db")
    with db:
        db.execute("DELETE FROM journal")  # as a cleanup of dead-lettered runs does
    redrive(runner, "poison", letter)
    again = runner.dead_letters[1]
    assert again.error_type == "actionjournal.durable.errors.RedriveError"
    assert "does not hold its dead letter #1" in again.error
    assert service.calls_by_name() == {"reserve": 1}  # nothing ran again


def test_a_dead_letter_of_another_key_is_refused_when_submitted(service, tmp_path):
    poison(service)
    runner = LocalRunner(
        Shop(service.url), SqliteStore(tmp_path / "j.db"), FAST, on_run_failure="dead-letter"
    )
    run(runner, INPUTS[1:2])
    with pytest.raises(Exception, match="a re-drive must reach the key it was dead-lettered"):
        runner.submit("a", runner.dead_letters[0])


def test_dead_letters_round_trip_through_json_with_their_exact_key():
    letter = DeadLetter(("eu", 7), 3, {"order": 5}, "boom", "builtins.ValueError", 1.5, "k1")
    text = letter.to_json()
    doc = json.loads(text)
    assert doc["key"] == "('eu', 7)" and doc["input"] == {"order": 5} and doc["seq"] == 3
    assert DeadLetter.from_json(text) == letter  # the tuple key stays a tuple


def test_runs_dead_letters_lists_key_seq_error_when(service, tmp_path, capsys):
    poison(service)
    path = tmp_path / "j.db"
    runner = LocalRunner(Shop(service.url), SqliteStore(path), FAST, on_run_failure="dead-letter")
    run(runner, INPUTS)
    capsys.readouterr()
    assert cli(["runs", "dead-letters", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    letter = runner.dead_letters[0]
    assert (doc["key"], doc["seq"], doc["when"]) == (
        "poison",  # the key as JSON holds it, not its repr
        0,
        pytest.approx(letter.when, abs=1),
    )
    assert doc["error"] == letter.error and doc["input"] == "p-1" and not doc["redriven"]
    assert cli(["runs", "dead-letters", "--store", "sqlite", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert "key 'poison'" in out and "seq 0" in out and "ValueError" in out


class Refuses(Checkout):
    @action(InputEvent)
    async def handle(self, event, ctx):
        raise ValueError("refused")


def test_runs_dead_letters_json_holds_each_input_as_json_not_its_repr(tmp_path, capsys):
    path = tmp_path / "j.db"
    order = {"order": 5, "items": ["a", "b"], "note": None}
    runner = LocalRunner(Refuses("-"), SqliteStore(path), FAST, on_run_failure="dead-letter")
    run(runner, [("k1", order), ("k2", b"raw")])
    capsys.readouterr()
    assert cli(["runs", "dead-letters", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    docs = {d["key"]: d for d in json.loads(capsys.readouterr().out)}
    assert docs["k1"]["input"] == order and not docs["k1"]["input_literal"]
    assert docs["k2"]["input"] == "b'raw'" and docs["k2"]["input_literal"]  # JSON has no bytes
    assert cli(["runs", "dead-letters", "--store", "sqlite", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert "input: {'order': 5, 'items': ['a', 'b'], 'note': None}" in out
    assert "input: b'raw'" in out


def test_docs_samples_run_as_written():
    namespace: dict = {"__name__": "docs_guarantees"}
    exec(docs_sample("guarantees.md", "runner.submit(letter.key, letter)"), namespace)
    exec(docs_sample("configuration.md", "non_retryable=(PermissionError,)"), {})


class CardDeclined(Exception):
    """An exception whose message is its own ``__str__``, not its args."""

    def __init__(self, order: str, code: int) -> None:
        super().__init__(order, code)
        self.order, self.code = order, code

    def __str__(self) -> str:
        return f"card for order {self.order} was declined (code {self.code})"


def decline(order: str) -> None:
    raise CardDeclined(order, 51)


class Declining(Checkout):
    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(decline, event.input)


def test_a_dead_letter_keeps_the_errors_own_message_and_its_repr(tmp_path):
    """Issue 30, item 5: a custom ``__str__`` message is not lost to the repr."""
    store = SqliteStore(tmp_path / "j.db")
    snap = tmp_path / "snap"
    runner = LocalRunner(Declining("-"), store, FAST, on_run_failure="dead-letter")
    run(runner, [("k", "o2")], snapshot=snap)
    (letter,) = runner.dead_letters
    assert "CardDeclined('o2', 51)" in letter.error
    assert "card for order o2 was declined (code 51)" in letter.error
    assert letter.error_message == "card for order o2 was declined (code 51)"
    assert letter.error_type.endswith("test_run_failures.CardDeclined")
    assert letter.action == "handle" and letter.call_id  # structured, not only in the text
    assert letter.call_id in letter.error
    assert DeadLetter.from_json(letter.to_json()) == letter
    # After a restore, o2's dead letter is handed out again from the journal: same message.
    again = LocalRunner.restore(snap, Declining("-"), store, FAST, on_run_failure="dead-letter")
    asyncio.run(again.run_source([("k", "o2"), ("k", "o3")]))
    assert [d.error_message for d in again.dead_letters] == [
        "card for order o2 was declined (code 51)",
        "card for order o3 was declined (code 51)",
    ]
    assert again.dead_letters[0].call_id == letter.call_id  # from the journaled RunFailed
    assert again.dead_letters[0].action == "handle"
