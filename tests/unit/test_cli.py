"""Every command, fed bad input, answers with one ``error:`` line and a non-zero exit code.

Never a traceback: an on-call engineer must be able to trust what the tool says. The table
drives the real entry point (``actionjournal.tools.cli.main``); a few cases run it as a
process, for what only a process shows (a closed pipe, Ctrl-C).
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from actionjournal.durable.identity import key_id
from actionjournal.stores import SqliteStore
from actionjournal.tools import cli as cli_module
from actionjournal.tools.cleanup import document
from actionjournal.tools.cli import main as cli
from actionjournal.tools.journal.cli import inspect_parser
from actionjournal.tools.store_options import store_config
from tests import cleanup_scenario as sc
from tests import journals
from tests.docs import ROOT

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def sqlite(path):
    return ["--store", "sqlite", "--path", str(path)]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A journal and its snapshot, a valid plan, and broken things of every kind."""
    d = tmp_path_factory.mktemp("world")
    store = SqliteStore(d / "j.db")
    scenario = sc.build(store, d)
    store.close()
    out = d / "plan.json"
    args = ["cleanup", "plan", *sqlite(d / "j.db"), "--snapshot", str(scenario.s)]
    assert cli([*args, "--out", str(out)]) == 0
    plan = json.loads(out.read_text())

    def edited(name, change, reseal=False):
        doc = json.loads(out.read_text())
        change(doc)
        if reseal:  # a plan that is wrong although its digest matches (a bug, not an edit)
            typed = msgspec.convert(doc, document.CleanupPlan)
            (d / name).write_bytes(document.to_json(document.seal(typed)))
        else:
            (d / name).write_text(json.dumps(doc))
        return d / name

    boundary = plan["partitions"][0]["delete_below"]
    files = {
        "journal": d / "j.db",
        "snapshot": scenario.s,
        "plan": out,
        "raised": edited(
            "raised.json", lambda p: p["partitions"][0].update(delete_below=boundary + 20)
        ),
        "namespace": edited("ns.json", lambda p: p.update(namespace="other")),
        "created": edited("created.json", lambda p: p.update(created_at="yesterday")),
        "not_int": edited("notint.json", lambda p: p["partitions"][0].update(delete_below="121")),
        "bad_keys": edited("keys.json", lambda p: p["partitions"][0].update(deleted_keys="%%%")),
        "no_parts": edited("noparts.json", lambda p: p.pop("partitions")),
        "unknown_part": edited(
            "unknown.json", lambda p: p["partitions"][0].update(partition=7), reseal=True
        ),
        "short_keys": edited(
            "short.json",
            lambda p: p["partitions"][0].update(deleted_keys=base64.b64encode(b"abc").decode()),
            reseal=True,
        ),
        "v2": edited("v2.json", lambda p: p.update(version=2)),
    }
    (d / "latin1.json").write_bytes(
        out.read_bytes().replace(b"default", "défault".encode("latin-1"))
    )
    files["latin1"] = d / "latin1.json"
    (d / "text.txt").write_text("not a journal\n")
    files["text"] = d / "text.txt"
    malformed = d / "malformed.db"
    journals.write(malformed, journals.runs("k" * 32, 500))
    with open(malformed, "r+b") as f:
        f.seek(4096 * 3)
        f.write(b"\xff" * 4096)
    files["malformed"] = malformed
    corrupt = d / "corrupt.db"
    journals.write(corrupt, [("default", "worker", b"AJ\x01\x05\x00garbage")])
    files["corrupt"] = corrupt
    foreign = d / "someones-dir"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work\n")
    files["foreign"] = foreign
    files["dir"] = d
    files["missing"] = d / "missing.db"
    return files


J = ["journal", "inspect"]
K = ["journal", "keys"]
P = ["cleanup", "plan"]
A = ["cleanup", "apply"]
R = ["cleanup", "run"]


def run(world, *options, snapshot=None):
    """``cleanup run`` on the world's journal, with its snapshot (or a name of none)."""
    state = str(world[snapshot]) if snapshot else "s"
    return [*R, *sqlite(world["journal"]), "--snapshot", state, *options]


Q = ["journal", "quarantine"]
D = ["runs", "dead-letters"]

# (id, argv given the world's files, a part of the message)
BAD_INPUTS = [
    ("unknown command", lambda w: ["bogus"], "unknown command 'bogus'"),
    ("unknown subcommand", lambda w: ["journal", "bogus"], "unknown command 'bogus'"),
    ("unknown dev service", lambda w: ["dev", "bogus"], "unknown command 'bogus'"),
    ("no --store", lambda w: J, "the following arguments are required: --store"),
    ("unknown option", lambda w: [*J, *sqlite(w["journal"]), "--bogus"], "unrecognized"),
    ("unknown backend", lambda w: [*J, "--store", "postgres"], "invalid choice: 'postgres'"),
    ("missing journal", lambda w: [*J, *sqlite(w["missing"])], "no SQLite journal"),
    ("not sqlite", lambda w: [*J, *sqlite(w["text"])], "file is not a database"),
    ("malformed page", lambda w: [*J, *sqlite(w["malformed"])], "malformed"),
    ("malformed page, keys", lambda w: [*K, *sqlite(w["malformed"])], "malformed"),
    (
        "malformed page, events",
        lambda w: ["journal", "events", *sqlite(w["malformed"])],
        "malformed",
    ),
    (
        "events --out a file",
        lambda w: ["journal", "events", *sqlite(w["journal"]), "--out", str(w["text"])],
        "not a directory",
    ),
    ("malformed page, dead letters", lambda w: [*D, *sqlite(w["malformed"])], "malformed"),
    ("bad --since, dead letters", lambda w: [*D, *sqlite(w["journal"]), "--since", "x"], "--since"),
    ("malformed page, timers", lambda w: ["timers", "list", *sqlite(w["malformed"])], "malformed"),
    (
        "bad --status, signals",
        lambda w: ["signals", "list", *sqlite(w["journal"]), "--status", "lost"],
        "invalid choice: 'lost'",
    ),
    (
        "ui off loopback without a token",
        lambda w: ["ui", *sqlite(w["journal"]), "--host", "0.0.0.0"],
        "give --token",
    ),
    ("ui, missing journal", lambda w: ["ui", *sqlite(w["missing"])], "no SQLite journal"),
    ("plan of no agent", lambda w: ["plan", "actionjournal:Agentless"], "has no"),
    ("plan without a colon", lambda w: ["plan", "shop"], "give MODULE:AGENT"),
    (
        "redrive, missing journal",
        lambda w: [
            "runs",
            "redrive",
            *sqlite(w["missing"]),
            "--key-id",
            "ab",
            "--seq",
            "0",
            "--to-topic",
            "t",
            "--to-bootstrap",
            "h:1",
        ],
        "no SQLite journal",
    ),
    (
        "malformed page, plan",
        lambda w: [*P, *sqlite(w["malformed"]), "--before", "0", "--out", str(w["dir"] / "p.json")],
        "malformed",
    ),
    (
        "bad topic",
        lambda w: [*J, "--store", "kafka", "--bootstrap", "h:1", "--topic", "a b"],
        "--topic: a Kafka topic name",
    ),
    (
        "reserved client setting",
        lambda w: [
            *J,
            "--store",
            "kafka",
            "--bootstrap",
            "h:1",
            "--topic",
            "t",
            "--client-config",
            "acks=0",
        ],
        "--client-config: client_config may not set 'acks'",
    ),
    (
        "client setting without =",
        lambda w: [
            *J,
            "--store",
            "kafka",
            "--bootstrap",
            "h:1",
            "--topic",
            "t",
            "--client-config",
            "acks",
        ],
        "takes KEY=VALUE",
    ),
    (
        "unknown client setting",
        lambda w: [
            *J,
            "--store",
            "kafka",
            "--bootstrap",
            "127.0.0.1:1",
            "--topic",
            "t",
            "--client-config",
            "no.such.setting=1",
        ],
        "no.such.setting",
    ),
    ("path with kafka", lambda w: [*J, "--store", "kafka", "--path", "x"], "--path not for"),
    (
        "key and key id",
        lambda w: [*J, *sqlite(w["journal"]), "--key", "a", "--key-id", "ab"],
        "not both",
    ),
    ("key id not hex", lambda w: [*J, *sqlite(w["journal"]), "--key-id", "xyz!"], "is not an id"),
    (
        "bad literal key",
        lambda w: [*J, *sqlite(w["journal"]), "--key", "(", "--key-type", "literal"],
        "not a valid literal",
    ),
    (
        "bad int key",
        lambda w: [*J, *sqlite(w["journal"]), "--key", "x", "--key-type", "int"],
        "not a valid int",
    ),
    (
        "unsupported key",
        lambda w: [*J, *sqlite(w["journal"]), "--key", "1j", "--key-type", "literal"],
        "not supported",
    ),
    ("run without key", lambda w: [*J, *sqlite(w["journal"]), "--run", "1"], "needs --key"),
    (
        "since nan",
        lambda w: [*J, *sqlite(w["journal"]), "--key", "busy", "--since", "nan"],
        "not a time",
    ),
    ("limit negative", lambda w: [*K, *sqlite(w["journal"]), "--limit", "-1"], "at least 0"),
    (
        "unknown operator",
        lambda w: [*J, *sqlite(w["journal"]), "--operator-uid", "nope"],
        "no records of operator 'nope'; operators found: worker",
    ),
    (
        "unknown operator, keys",
        lambda w: [*K, *sqlite(w["journal"]), "--operator-uid", "nope"],
        "operators found: worker",
    ),
    (
        "unknown namespace",
        lambda w: [*J, *sqlite(w["journal"]), "--namespace", "nope"],
        "namespaces found: default",
    ),
    ("no such call", lambda w: [*J, *sqlite(w["journal"]), "--call", "ffffffff"], "no record"),
    ("ambiguous call prefix", lambda w: [*J, *sqlite(w["journal"]), "--call", ""], "is not an id"),
    ("before inf", lambda w: [*P, *sqlite(w["journal"]), "--before", "inf"], "not a time"),
    ("before nan", lambda w: [*P, *sqlite(w["journal"]), "--before", "nan"], "not a time"),
    ("before 1970", lambda w: [*P, *sqlite(w["journal"]), "--before", "-5"], "not a time"),
    ("before 1e308", lambda w: [*P, *sqlite(w["journal"]), "--before", "1e308"], "not a time"),
    ("before words", lambda w: [*P, *sqlite(w["journal"]), "--before", "yesterday"], "ISO 8601"),
    ("before year 0", lambda w: [*P, *sqlite(w["journal"]), "--before", "0000-01-01"], "ISO"),
    ("no state", lambda w: [*P, *sqlite(w["journal"])], "exactly one of"),
    (
        "margin negative",
        lambda w: [*P, *sqlite(w["journal"]), "--before", "0", "--safety-margin", "-1"],
        "at least 0",
    ),
    (
        "out in missing dir",
        lambda w: [
            *P,
            *sqlite(w["journal"]),
            "--before",
            "0",
            "--out",
            str(w["dir"] / "no" / "p.json"),
        ],
        "does not exist",
    ),
    (
        "out is a dir",
        lambda w: [*P, *sqlite(w["journal"]), "--before", "0", "--out", str(w["dir"])],
        "is a directory",
    ),
    (
        "snapshot of another operator",
        lambda w: [
            *P,
            *sqlite(w["journal"]),
            "--snapshot",
            str(w["snapshot"]),
            "--operator-uid",
            "agent-two",
            "--out",
            str(w["dir"] / "x.json"),
        ],
        "not of operator 'agent-two'",
    ),
    (
        "missing snapshot",
        lambda w: [*P, *sqlite(w["journal"]), "--snapshot", str(w["missing"])],
        "does not exist",
    ),
    (
        "snapshot not a snapshot",
        lambda w: [
            *P,
            *sqlite(w["journal"]),
            "--snapshot",
            str(w["text"]),
            "--out",
            str(w["dir"] / "x.json"),
        ],
        "not a LocalRunner snapshot",
    ),
    (
        "missing checkpoint",
        lambda w: [*P, *sqlite(w["journal"]), "--checkpoint", str(w["missing"])],
        "does not exist",
    ),
    ("run how often", lambda w: run(w), "--every DURATION"),
    ("run every 0", lambda w: run(w, "--every", "0"), "give a duration above 0"),
    ("run every soon", lambda w: run(w, "--every", "soon"), "'soon' is not a duration"),
    (
        "run without state",
        lambda w: [*R, *sqlite(w["journal"]), "--every", "5m"],
        "--snapshot FILE (a LocalRunner job) or --checkpoints DIR",
    ),
    ("run two kinds of state", lambda w: run(w, "--checkpoints", "c", "--once"), "not both"),
    ("run once, twice", lambda w: run(w, "--once", "--max-rounds", "2"), "leave out --max-rounds"),
    ("run port 7e4", lambda w: run(w, "--once", "--metrics-port", "7e4"), "not a whole number"),
    ("run port 70000", lambda w: run(w, "--once", "--metrics-port", "70000"), "a port is 0 to"),
    (
        "run on fluss",
        lambda w: [*R, "--store", "fluss", "--bootstrap", "h:1", "--snapshot", "s", "--once"],
        "cleanup does not apply to Fluss journals",
    ),
    (
        "run for another operator",
        lambda w: run(w, "--every", "10ms", "--operator-uid", "agent-two", snapshot="snapshot"),
        "not of operator 'agent-two'",
    ),
    (
        "run once on a missing journal",
        lambda w: [*R, *sqlite(w["missing"]), "--snapshot", str(w["snapshot"]), "--once"],
        "round 1 failed: no SQLite journal",
    ),
    (
        "quarantine without position",
        lambda w: [*Q, *sqlite(w["journal"])],
        "the following arguments are required: --position",
    ),
    (
        "quarantine a readable record",
        lambda w: [*Q, *sqlite(w["journal"]), "--position", "1"],
        "reads fine",
    ),
    (
        "quarantine nothing",
        lambda w: [*Q, *sqlite(w["journal"]), "--position", "99999"],
        "no record at partition 0 position 99999",
    ),
    (
        "quarantine in a missing partition",
        lambda w: [*Q, *sqlite(w["journal"]), "--partition", "3", "--position", "1"],
        "has no partition 3",
    ),
    ("plan missing", lambda w: [*A, "--plan", str(w["missing"])], "cannot read plan file"),
    ("plan is a journal", lambda w: [*A, "--plan", str(w["journal"])], "not a cleanup plan"),
    ("plan not UTF-8", lambda w: [*A, "--plan", str(w["latin1"])], "Invalid UTF-8"),
    ("plan version 2", lambda w: [*A, "--plan", str(w["v2"])], "version 2 plan"),
    ("plan bad created_at", lambda w: [*A, "--plan", str(w["created"])], "created_at"),
    ("plan delete_below not int", lambda w: [*A, "--plan", str(w["not_int"])], "delete_below"),
    ("plan bad deleted_keys", lambda w: [*A, "--plan", str(w["bad_keys"])], "was changed"),
    ("plan without partitions", lambda w: [*A, "--plan", str(w["no_parts"])], "partitions"),
    (
        "plan unknown partition",
        lambda w: [*A, "--plan", str(w["unknown_part"])],
        "partition 7 is repeated or not in the store",
    ),
    (
        "plan short deleted_keys",
        lambda w: [*A, "--plan", str(w["short_keys"])],
        "malformed deleted_keys",
    ),
    ("plan boundary raised", lambda w: [*A, "--plan", str(w["raised"])], "was changed"),
    ("plan namespace edited", lambda w: [*A, "--plan", str(w["namespace"])], "was changed"),
    ("max age negative", lambda w: [*A, "--plan", str(w["plan"]), "--max-age", "-5"], "at least 0"),
    ("max age nan", lambda w: [*A, "--plan", str(w["plan"]), "--max-age", "nan"], "at least 0"),
    (
        "apply to another journal",
        lambda w: [*A, "--plan", str(w["plan"]), *sqlite(w["malformed"])],
        "the plan is for SQLite",
    ),
    (
        "dev port out of range",
        lambda w: ["dev", "kafka", "start", "--port", "70000"],
        "between 1 and 65535",
    ),
    ("dev port not a number", lambda w: ["dev", "fluss", "start", "--port", "x"], "not a port"),
    ("dev unknown action", lambda w: ["dev", "kafka", "restart"], "invalid choice"),
    (
        "dev flink without taskmanagers",
        lambda w: ["dev", "flink", "start", "--taskmanagers", "0"],
        "at least 1 TaskManager",
    ),
    (
        "demo into someone's folder",
        lambda w: ["demo", "--local", "--dir", str(w["foreign"])],
        "not empty and was not made by the demo",
    ),
    ("demo into a file", lambda w: ["demo", "--local", "--dir", str(w["text"])], "is a file"),
    ("demo without inputs", lambda w: ["demo", "--inputs", "0"], "at least 1"),
]


@pytest.mark.parametrize(
    ("argv", "message"), [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS]
)
def test_bad_input_gives_one_error_line_and_no_traceback(world, argv, message, capsys):
    before = sorted(p.name for p in world["dir"].iterdir())
    code = cli(argv(world))
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert message in lines[0]
    assert sorted(p.name for p in world["dir"].iterdir()) == before, "a refused command wrote"
    assert (world["foreign"] / "thesis.tex").read_text() == "years of work\n"


def test_every_command_is_in_the_table():
    commands = {" ".join(argv) for argv in _commands()}
    anywhere = collections.defaultdict(lambda: Path("x"))
    tried = set()
    for _, argv, _ in BAD_INPUTS:
        words = argv(anywhere)
        tried |= {c for c in commands if words[: len(c.split())] == c.split()}
    assert tried == commands


def _commands():
    for name, entry in cli_module.COMMANDS.items():
        if isinstance(entry, cli_module.Command):
            yield [name]
        else:
            yield from ([name, sub] for sub in entry)


def test_corrupt_records_are_reported_with_their_position_and_skipped(tmp_path, capsys):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("k"), 2))
    journals.write(path, [("default", "worker", b"AJ\x01\x05\x00garbage")])  # position 5
    journals.write(path, journals.runs(key_id("k"), 1, first_seq=2))
    assert cli([*J, *sqlite(path), "--json"]) == 0
    captured = capsys.readouterr()
    assert (
        captured.err.startswith("warning: skipped an unreadable record at partition 0 position 5: ")
        and len(captured.err.splitlines()) == 1
    )
    doc = json.loads(captured.out)
    assert doc["totals"]["records"] == 6 and doc["unreadable"][0]["position"] == 5
    assert cli([*J, *sqlite(path), "--key", "k"]) == 0
    assert "run seq=2" in capsys.readouterr().out  # the run after the bad record is shown
    out = tmp_path / "p.json"
    argv = [*P, *sqlite(path), "--before", str(time.time()), "--safety-margin", "0"]
    assert cli([*argv, "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    entry = plan["partitions"][0]
    assert entry["delete_below"] == 5 and entry["blocker"]["kind"] == "unreadable"
    assert plan["unreadable"][0]["position"] == 5
    assert "unreadable record at partition 0 position 5" in capsys.readouterr().out


def test_help_version_and_unknown_commands(capsys):
    assert cli(["--version"]) == 0
    assert capsys.readouterr().out.startswith("actionjournal ")
    for argv in (
        ["help"],
        ["--help"],
        ["journal", "--help"],
        ["dev", "--help"],
        ["cleanup", "help"],
        ["help", "cleanup", "plan"],
        ["journal", "keys", "--help"],
        ["dev", "kafka", "--help"],
        ["dev", "kafka", "start", "--help"],
    ):
        assert cli(argv) == 0, argv
        out = capsys.readouterr().out
        assert "usage:" in out, argv
    assert cli([]) == 2
    assert "commands:" in capsys.readouterr().err


def test_every_option_says_what_it_does_and_its_default():
    for parser in cli_module.parsers().values():
        parsers = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
        for p in parsers:
            formatter = p._get_formatter()
            for action in p._actions:
                if not action.option_strings or action.help == argparse.SUPPRESS:
                    continue
                where = f"{p.prog} {'/'.join(action.option_strings)}"
                assert action.help, f"{where}: no help text"
                if action.default not in (None, False, [], argparse.SUPPRESS):
                    assert "default" in formatter._get_help_string(action), (
                        f"{where}: its default is not said"
                    )
    assert set(cli_module.parsers()) == {" ".join(argv) for argv in _commands()}


def test_a_closed_pipe_ends_quietly(tmp_path):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("big"), 3000))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "actionjournal.tools.cli",
            *J,
            *sqlite(path),
            "--key",
            "big",
            "--limit",
            "0",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.read(100)  # what `| head -c 100` reads, then it goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


def test_a_key_with_many_runs_shows_the_last_ones(tmp_path, capsys):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs(key_id("big"), 3000))
    assert cli([*J, *sqlite(path), "--key", "big"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "3000 runs" in lines[0]
    assert lines[1] == "(2980 earlier runs not shown: --limit N shows the last N, --limit 0 all)"
    runs = [line for line in lines if "run seq=" in line]
    assert len(runs) == 20 and "run seq=2999" in runs[-1]
    assert len(lines) == 2 + 20 * 3
    since = str(1_700_000_000 + 2990)
    assert cli([*J, *sqlite(path), "--key", "big", "--since", since, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["seq"] for r in doc["runs"]] == list(range(2990, 3000)) and doc["runs_total"] == 10


def test_ctrl_c_is_one_line(tmp_path):
    path = tmp_path / "j.db"
    journals.write(path, journals.runs("k" * 32, 100_000))
    proc = subprocess.Popen(
        [sys.executable, "-m", "actionjournal.tools.cli", *J, *sqlite(path), "--progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # as from a terminal: a suite started in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = b""
    while b"[" not in seen:  # the progress bar is drawn: the scan is under way
        chunk = proc.stderr.read1(4096)
        assert chunk, "the command ended before the scan began"
        seen += chunk
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = (seen + err).decode()
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert err.rstrip().splitlines()[-1].startswith("error: interrupted")


def test_the_demo_never_deletes_files_it_did_not_make(tmp_path):
    from actionjournal.tools import demo

    ours = tmp_path / "demo"
    demo.prepare(ours)
    (ours / "journal.db").write_text("from an earlier demo")
    (ours / "notes.txt").write_text("mine")
    demo.prepare(ours)  # an earlier demo's folder: its files go, others stay
    assert not (ours / "journal.db").exists() and (ours / "notes.txt").read_text() == "mine"
    shutil.rmtree(ours)


def test_an_unreachable_broker_is_one_error_line_naming_it():
    pytest.importorskip("confluent_kafka")
    done = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.cli", *K, "--store", "kafka", "--bootstrap",
         "127.0.0.1:1", "--topic", "t", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "127.0.0.1:1" in errors[0], done.stderr[-2000:]
    assert done.stderr.rstrip().splitlines()[-1] == errors[0]


def test_the_journal_topic_and_table_default_to_the_stores_own():
    """A job that sets no topic journals to the store's default one: so do the tools."""
    pytest.importorskip("confluent_kafka")
    done = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.cli", *K, "--store", "kafka", "--bootstrap",
         "127.0.0.1:1", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "describing topic actionjournal" in done.stderr, done.stderr
    args = inspect_parser().parse_args(["--store", "fluss", "--bootstrap", "h:1"])
    config = store_config(args)
    assert (config.database, config.table) == ("actionjournal", "action_state")


def test_the_readme_lists_every_command():
    summary = (ROOT / "README.md").read_text()
    missing = [c for c in map(" ".join, _commands()) if f"| `actionjournal {c}` |" not in summary]
    assert missing == [], "commands missing from README.md's command table"
