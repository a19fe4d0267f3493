"""Finding a key from the command line as users type it: Kafka-sourced keys are bytes, so
``--key c1`` must find ``b"c1"``; the tools say which form matched, and show key values
where the journal holds them (dead letters)."""

from __future__ import annotations

import asyncio
import json

import pytest

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.durable.identity import key_id
from actionjournal.stores import SqliteStore
from actionjournal.tools.cli import main as cli


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        if event.input == "poison":
            raise ValueError("refused")
        ctx.send_event(OutputEvent(event.input))


def journal(path, keys) -> None:
    runner = LocalRunner(Echo(), SqliteStore(path), on_run_failure="dead-letter")
    asyncio.run(runner.run(keys))


def inspect(path, *args):
    return ["journal", "inspect", "--store", "sqlite", "--path", str(path), *args]


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "j.db"
    # b"c1" as a Kafka source keys it, a str, an int, a tuple a key selector made
    journal(path, [(b"c1", "a"), ("c2", "b"), (7, "c"), (("eu", 7), "d")])
    return path


@pytest.mark.parametrize(
    ("typed", "key", "note"),
    [
        ("c1", b"c1", "note: key 'c1' matched as bytes b'c1'"),
        ("c2", "c2", ""),  # the plain reading: nothing to say
        ("7", 7, "note: key '7' matched as int 7"),
        ('["eu", 7]', ("eu", 7), "note: key '[\"eu\", 7]' matched as tuple ('eu', 7)"),
        ("('eu', 7)", ("eu", 7), "note: key \"('eu', 7)\" matched as tuple ('eu', 7)"),
    ],
)
def test_a_key_is_found_in_the_form_the_journal_holds(path, capsys, typed, key, note):
    assert cli(inspect(path, "--key", typed)) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith(f"key {key!r} (key id {key_id(key)})")
    assert "run seq=0  finished" in captured.out
    assert captured.err.strip() == note
    assert cli(inspect(path, "--key", typed, "--json")) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["key_id"], doc["key"]) == (key_id(key), repr(key))


def test_a_key_type_given_is_the_only_form_tried(path, capsys):
    assert cli(inspect(path, "--key", "c1", "--key-type", "bytes")) == 0
    assert capsys.readouterr().err == ""
    assert cli(inspect(path, "--key", "c1", "--key-type", "str")) == 1
    assert "no records of key" in capsys.readouterr().err


def test_no_match_names_the_forms_tried_and_several_ask_for_a_key_type(tmp_path, capsys):
    path = tmp_path / "j.db"
    journal(path, [("x", "a"), (b"x", "b")])
    assert cli(inspect(path, "--key", "y")) == 1
    err = capsys.readouterr().err
    assert "no records of key 'y'" in err and "tried str 'y', bytes b'y'" in err
    assert cli(inspect(path, "--key", "x")) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "key 'x' names 2 keys in namespace 'default': str 'x', bytes b'x'; "
        "choose one with --key-type str or bytes"
    )
    assert len(err.splitlines()) == 1


def test_keys_shows_the_key_value_where_the_journal_holds_it(tmp_path, capsys):
    path = tmp_path / "j.db"
    journal(path, [(b"c1", "a"), (b"c9", "poison")])  # c9's run is dead-lettered
    assert cli(["journal", "keys", "--store", "sqlite", "--path", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {k["key_id"]: k["key"] for k in doc["keys"]} == {
        key_id(b"c1"): None,  # no record of its runs holds the value
        key_id(b"c9"): "b'c9'",
    }
    assert cli(["journal", "keys", "--store", "sqlite", "--path", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (c9,) = [line for line in lines if line.startswith(key_id(b"c9"))]
    assert c9.endswith("echo  b'c9'")
    assert cli(inspect(path, "--key-id", key_id(b"c9")[:8])) == 0
    assert capsys.readouterr().out.startswith(f"key b'c9' (key id {key_id(b'c9')})")
