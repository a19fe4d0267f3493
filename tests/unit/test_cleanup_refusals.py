"""Cleanup refuses what it cannot prove safe: edited plans, other jobs' snapshots, odd times.

A digest catches an edited plan; these tests go further and re-seal the edit (as a bug in a
plan writer would), so what refuses it is ``apply`` re-checking the journal itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time

import msgspec
import pytest

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.operator.local import Snapshot
from actionjournal.stores import SqliteStore
from actionjournal.tools.cleanup import document
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def journal(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    scenario = sc.build(store, tmp_path)
    store.close()
    return tmp_path / "j.db", scenario


def sqlite(path):
    return ["--store", "sqlite", "--path", str(path)]


def snapshot_of(path):
    return ["--snapshot", str(path)]


def rows(path):
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT pos, namespace, operator_uid, key_id, seq FROM journal"
        ).fetchall()
    finally:
        db.close()


def make_plan(tmp_path, path, *state):
    out = tmp_path / "plan.json"
    assert cli(["cleanup", "plan", *sqlite(path), *state, "--out", str(out)]) == 0
    return out


def reseal(out, change):
    plan = document.load(out)
    change(plan)
    out.write_bytes(document.to_json(document.seal(plan)))


def test_a_boundary_past_a_recovery_marker_is_refused_whoever_wrote_it(journal, tmp_path, capsys):
    path, scenario = journal
    out = make_plan(tmp_path, path, *snapshot_of(scenario.s))
    boundary = document.load(out).partitions[0].delete_below
    assert boundary is not None
    reseal(out, lambda p: setattr(p.partitions[0], "delete_below", boundary + 20))
    before = rows(path)
    capsys.readouterr()
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"the plan deletes below {boundary + 20}, but position {boundary} must stay" in err
    assert "recovery marker" in err and "Nothing was deleted" in err
    assert rows(path) == before, "a boundary record was journaled or rows deleted"


def test_a_plan_pointed_at_another_namespace_writes_no_boundary(journal, tmp_path, capsys):
    path, _ = journal
    future = str(time.time() + 3600)
    out = make_plan(tmp_path, path, "--before", future, "--safety-margin", "0")
    reseal(out, lambda p: setattr(p, "namespace", "someone-else"))
    before = rows(path)
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    assert "nothing of namespace 'someone-else' left below" in capsys.readouterr().out
    assert rows(path) == before


def test_a_snapshot_plan_pointed_at_another_namespace_is_refused(journal, tmp_path, capsys):
    path, scenario = journal
    out = make_plan(tmp_path, path, *snapshot_of(scenario.s))
    reseal(out, lambda p: setattr(p.state, "namespace", "someone-else"))
    before = rows(path)
    capsys.readouterr()
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 1
    assert "is of namespace 'default', operator 'worker', not of namespace 'someone-else'" in (
        capsys.readouterr().err
    )
    assert rows(path) == before


def test_a_snapshot_changed_since_the_plan_is_refused(journal, tmp_path, capsys):
    path, scenario = journal
    out = make_plan(tmp_path, path, *snapshot_of(scenario.s))
    scenario.s.write_bytes(scenario.old.read_bytes())  # an older state is now the restorable one
    before = rows(path)
    capsys.readouterr()
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 1
    assert "changed since the plan was made" in capsys.readouterr().err
    assert rows(path) == before


class One(Agent):
    uid = "agent-one"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(event.input))


class Two(One):
    uid = "agent-two"


def test_a_snapshot_names_its_operator_and_plans_follow_it(tmp_path, capsys):
    path = tmp_path / "j.db"

    async def run(agent, snap):
        runner = LocalRunner(agent, SqliteStore(path))
        await runner.run([("k", 1), ("k", 2)])
        runner.snapshot(snap)

    asyncio.run(run(One(), tmp_path / "one.snap"))
    asyncio.run(run(Two(), tmp_path / "two.snap"))
    snap = msgspec.msgpack.decode((tmp_path / "one.snap").read_bytes(), type=Snapshot)
    assert (snap.namespace, snap.operator_uid) == ("default", "agent-one")
    # Two operators in the namespace: the snapshot says which one the plan is for.
    out = make_plan(tmp_path, path, *snapshot_of(tmp_path / "one.snap"))
    assert json.loads(out.read_text())["operator_uid"] == "agent-one"
    argv = ["cleanup", "plan", *sqlite(path), "--out", str(tmp_path / "x.json")]
    capsys.readouterr()
    assert cli([*argv, *snapshot_of(tmp_path / "one.snap"), "--operator-uid", "agent-two"]) == 1
    assert "not of operator 'agent-two'" in capsys.readouterr().err
    old = msgspec.structs.replace(snap, namespace="", operator_uid="")
    (tmp_path / "old.snap").write_bytes(msgspec.msgpack.encode(old))
    assert cli([*argv, *snapshot_of(tmp_path / "old.snap")]) == 1
    assert "does not say which namespace and operator" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_a_future_time_is_accepted_with_a_warning(journal, tmp_path, capsys):
    path, _ = journal
    make_plan(tmp_path, path, "--before", str(time.time() + 86400))
    err = capsys.readouterr().err
    assert err.startswith("warning: --before ") and "is in the future" in err
    make_plan(tmp_path, path, "--before", "2020-01-01T00:00:00+00:00")
    assert capsys.readouterr().err == ""


def test_the_plan_digest_covers_what_it_was_computed_from(journal, tmp_path):
    path, scenario = journal
    plan = document.load(make_plan(tmp_path, path, *snapshot_of(scenario.s)))
    assert plan.state.sha256 == hashlib.sha256(scenario.s.read_bytes()).hexdigest()
    assert plan.location == {"backend": "sqlite", "path": str(path.resolve())}
    for change in (
        lambda p: setattr(p.state, "sha256", "0" * 64),
        lambda p: setattr(p, "operator_uid", "agent-two"),
        lambda p: p.location.update(path="/elsewhere.db"),
        lambda p: setattr(p.partitions[0], "deleted_keys", ""),
    ):
        edited = msgspec.convert(msgspec.to_builtins(plan), document.CleanupPlan)
        change(edited)
        assert document.compute_digest(edited) != plan.digest
