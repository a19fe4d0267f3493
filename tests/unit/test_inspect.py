"""``journal inspect`` and ``journal keys`` show what users need, as they see it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re

import pytest

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.durable.identity import key_id
from actionjournal.stores import SqliteStore
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc
from tests import journals

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def inspect(path, *args):
    return ["journal", "inspect", "--store", "sqlite", "--path", str(path), *args]


def keys(path, *args):
    return ["journal", "keys", "--store", "sqlite", "--path", str(path), *args]


@pytest.fixture
def journal(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    sc.build(store, tmp_path)
    store.close()
    return tmp_path / "j.db"


def test_ids_as_printed_are_accepted_and_ambiguous_prefixes_refused(journal, tmp_path, capsys):
    assert cli(inspect(journal, "--key", "busy", "--run", "0")) == 0
    tree = capsys.readouterr().out
    call = re.search(r"\[call id ([0-9a-f]{12})\]", tree).group(1)
    action_prefix = re.search(r"action handle \[([0-9a-f]{12})\]", tree).group(1)
    for argv in (["--call", call], ["--call", call + "…"], ["--action", action_prefix]):
        assert cli(inspect(journal, *argv, "--json")) == 0, argv
        doc = json.loads(capsys.readouterr().out)
        assert doc["key_id"] == key_id("busy") and [r["seq"] for r in doc["runs"]] == [0]
    assert cli(inspect(journal, "--key-id", key_id("busy")[:8], "--json")) == 0
    assert json.loads(capsys.readouterr().out)["key_id"] == key_id("busy")
    many = tmp_path / "many.db"
    journals.write(many, journals.runs(key_id("k"), 20))  # call ids 000...000 to 000...013
    assert cli(inspect(many, "--call", "0000")) == 1
    assert "call id prefix 0000 matches 20 calls" in capsys.readouterr().err
    assert cli(inspect(many, "--call", f"{7:032x}", "--json")) == 0
    assert [r["seq"] for r in json.loads(capsys.readouterr().out)["runs"]] == [7]


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(event.input))


def test_tuple_and_bytes_keys_can_be_looked_up(tmp_path, capsys):
    path = tmp_path / "j.db"
    runner = LocalRunner(Echo(), SqliteStore(path))
    asyncio.run(runner.run([(("eu", 7), "a"), (b"\x01id", "b"), (1.5, "c")]))
    for text, kind in (("('eu', 7)", "literal"), ("b'\\x01id'", "literal"), ("1.5", "float")):
        assert cli(inspect(path, "--key", text, "--key-type", kind)) == 0, text
        assert "run seq=0  finished" in capsys.readouterr().out
    assert (
        cli(inspect(path, "--key", '["eu", 7]', "--key-type", "json")) == 1
    )  # a list, not a tuple
    assert "no records of key" in capsys.readouterr().err


def test_keys_lists_counts_and_last_activity(tmp_path, capsys):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("old"), 3, at=1_000.0))
    journals.write(path, journals.runs(key_id("new"), 2, at=2_000.0))
    journals.write(path, journals.runs(key_id("mid"), 1, at=1_500.0))
    assert cli(keys(path, "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [k["key_id"] for k in doc["keys"]] == [key_id("new"), key_id("mid"), key_id("old")]
    new = doc["keys"][0]
    assert (new["runs"], new["records"], new["runs_in_flight"], new["last_at"]) == (2, 4, 0, 2001.0)
    assert new["operator_uids"] == ["worker"] and doc["keys_total"] == 3
    assert cli(keys(path, "--limit", "1", "--since", "1200", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [k["key_id"] for k in doc["keys"]] == [key_id("new")] and doc["keys_total"] == 2
    assert cli(keys(path, "--limit", "2")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(key_id("new"))
    # Times say their zone: ISO 8601 with the UTC offset, as --since and --before accept them.
    assert re.search(r" 1970-01-01T\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d ", out[1]), out[1]
    assert out[-1] == "3 keys; the 2 most recently active shown (--limit 0: all)"


def test_operators_of_a_namespace_are_shown_and_filtered(tmp_path, capsys):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("k"), 2, operator_uid="agent-one"))
    journals.write(path, journals.runs(key_id("k"), 1, operator_uid="agent-two", at=2e9))
    assert cli(inspect(path, "--key", "k")) == 0
    tree = capsys.readouterr().out
    assert "operator agent-one, agent-two  3 runs" in tree.splitlines()[0]
    assert tree.count("operator agent-one  finished") == 2
    assert "operator agent-two  finished" in tree
    assert cli(inspect(path, "--key", "k", "--operator-uid", "agent-two", "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["operator_uid"] for r in doc["runs"]] == ["agent-two"]
    assert cli(inspect(path)) == 0
    assert "operators: agent-one (4 records), agent-two (2 records)" in capsys.readouterr().out
    assert cli(inspect(path, "--key", "k", "--operator-uid", "nope")) == 1
    assert "it has runs of agent-one, agent-two" in capsys.readouterr().err


def test_positions_are_half_open_ranges(tmp_path, capsys):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("k"), 2))  # positions 1-2 and 3-4
    assert cli(inspect(path, "--key", "k", "--json")) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["first_position"], r["end_position"]) for r in runs] == [(1, 3), (3, 5)]
    assert cli(inspect(path, "--key", "k")) == 0
    tree = capsys.readouterr().out
    assert "positions [1, 3)" in tree and "positions [3, 5)" in tree
    assert cli(inspect(path)) == 0
    assert re.search(r"^\s+0\s+\[1, 5\)\s+4\s", capsys.readouterr().out, re.M)


@pytest.mark.parametrize("writer_open", [False, True], ids=["idle", "while a job writes"])
def test_the_tools_never_write_to_a_sqlite_journal(journal, tmp_path, capsys, writer_open):
    writer = SqliteStore(journal) if writer_open else None  # a running job: -wal and -shm exist
    before = sorted(p.name for p in tmp_path.iterdir())
    digest = hashlib.sha256(journal.read_bytes()).hexdigest()
    out = tmp_path / "plan.json"
    for argv in (
        inspect(journal),
        inspect(journal, "--key", "busy"),
        keys(journal),
        ["cleanup", "plan", *inspect(journal)[2:], "--before", "0", "--out", str(out)],
    ):
        assert cli(argv) == 0, argv
    out.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert hashlib.sha256(journal.read_bytes()).hexdigest() == digest
    if writer is not None:
        writer.close()


def test_an_incomplete_action_is_named_from_its_call_records(tmp_path, capsys):
    """Issue 30, item 5: no `action ?` when the action's call records carry its name."""

    def charge(order):
        return f"charged {order}"

    class Crashes(Agent):
        uid = "crashes"

        @action(InputEvent)
        def pay(self, event, ctx):
            ctx.durable_execute(charge, event.input)
            raise RuntimeError("stopped after the charge")

    store = SqliteStore(tmp_path / "j.db")
    with pytest.raises(Exception, match="stopped after the charge"):
        asyncio.run(LocalRunner(Crashes(), store).run([("alice", "o-1")]))
    store.close()
    assert cli(inspect(tmp_path / "j.db", "--key", "alice")) == 0
    tree = capsys.readouterr().out
    assert "action pay [" in tree and "incomplete" in tree, tree
    assert "action ?" not in tree
