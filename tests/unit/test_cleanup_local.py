"""Cleanup plan/apply and journal inspect on SQLite and the memory store (no broker needed).

The same scenario runs on a real Kafka broker in tests/integration/test_cleanup.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time

import pytest

from actionjournal import Agent, InputEvent, LocalRunner, action
from actionjournal.durable.errors import CleanupBoundaryError
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import (
    CONTROL_KEY,
    CallFinished,
    CallStarted,
    CleanupBoundary,
    RunCompleted,
)
from actionjournal.durable.writer import RunWriter
from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.tools import cleanup
from actionjournal.tools.cleanup import document
from actionjournal.tools.cleanup import vacuum as vacuum_module
from actionjournal.tools.cli import main as cli
from actionjournal.tools.toolkit import ToolError
from tests import cleanup_scenario as sc

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def journal(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    scenario = sc.build(store, tmp_path)
    store.close()
    return tmp_path / "j.db", scenario


def sqlite_args(path):
    return ["--store", "sqlite", "--path", str(path)]


def rows(path, where="1=1"):
    with sqlite3.connect(path) as db:
        query = f"SELECT pos, namespace, key_id, seq FROM journal WHERE {where}"
        return db.execute(query).fetchall()


def plan_file(tmp_path, path, snapshot, *extra):
    out = tmp_path / "plan.json"
    code = cli(["cleanup", "plan", *sqlite_args(path), "--snapshot", str(snapshot), "--out",
                str(out), *extra])  # fmt: skip
    assert code == 0
    return out, json.loads(out.read_text())


def test_plan_keeps_in_flight_idle_and_later_runs_and_says_why(journal, tmp_path, capsys):
    path, scenario = journal
    _, plan = plan_file(tmp_path, path, scenario.s)
    (entry,) = plan["partitions"]
    store = SqliteStore(path)
    idle_marker = None
    for item in store.scan(0, "default"):
        r = item.record
        if isinstance(r, RunCompleted) and r.key_id == key_id("idle"):
            idle_marker = item.position
    # The idle key's marker (its only RunCompleted) pins the journal; it stays itself.
    assert entry["delete_below"] == idle_marker
    assert entry["blocker"]["kind"] == "marker" and entry["blocker"]["key_id"] == key_id("idle")
    assert "stops at position" in entry["reason"] and "recovery marker" in entry["reason"]
    kept = {(k, s) for _, _, k, s in rows(path, f"pos >= {idle_marker}")}
    deleted = rows(path, f"pos < {idle_marker}")
    # Only finished runs: busy's, and idle's calls (its RunCompleted, the marker, stays).
    assert {k for _, _, k, _ in deleted} == {key_id("busy"), key_id("idle")}
    assert entry["records_deleted"] == len(deleted)
    assert (key_id("held"), 0) in kept and (key_id("fresh"), 0) in kept
    assert plan["store"]["uid"] == store.identity.uid and plan["namespace"] == "default"
    assert plan["state"]["kind"] == "snapshot" and plan["state"]["keys"] == 3
    assert "stops at position" in capsys.readouterr().out


def test_apply_then_restore_retained_replays_and_older_fails(journal, tmp_path, capsys):
    path, scenario = journal
    out, plan = plan_file(tmp_path, path, scenario.s)
    before = len(rows(path))
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    boundary = plan["partitions"][0]["delete_below"]
    assert len(rows(path)) == before - plan["totals"]["records_deleted"] + 1  # + the boundary
    assert min(pos for pos, *_ in rows(path)) == boundary
    store = SqliteStore(path)
    boundaries = [r for r in store.read_key("default", "worker", CONTROL_KEY, None)]
    assert [(b.partition, b.position) for b in boundaries if isinstance(b, CleanupBoundary)] == [
        (0, boundary)
    ]
    # Idempotent: a second apply deletes nothing more and succeeds.
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    assert "already applied" in capsys.readouterr().out
    executed = len(sc.EXECUTED)
    runner = sc.restore(store, scenario.s)
    assert len(sc.EXECUTED) == executed, "a durable call ran again after cleanup"
    assert len(runner.outputs) == len(sc.HELD) + len(sc.AFTER_S)
    with pytest.raises(CleanupBoundaryError, match=rf"position \d+, but cleanup deleted .* "
                       rf"below position {boundary}"):  # fmt: skip
        sc.restore(store, scenario.old)
    assert len(sc.EXECUTED) == executed


def test_rows_of_other_namespaces_are_never_deleted(journal, tmp_path):
    path, scenario = journal
    store = SqliteStore(path)
    other = RunWriter(store, "other-ns", "worker", 0, key_id("busy"), 0)
    positions = [other.write(other.build(RunCompleted, at=1.0, input_digest="d")).position]
    sc_store = SqliteStore(path)
    sc.restore(sc_store, scenario.s)  # the job goes on: its marker moves past other's rows
    out, _plan = plan_file(tmp_path, path, scenario.s)
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    assert [p for p, ns, *_ in rows(path, "namespace = 'other-ns'")] == positions


def test_a_writer_appending_during_apply_loses_nothing(tmp_path):
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    for seq in range(3000):  # a long journal of finished runs of one key
        w = RunWriter(store, "default", "worker", 0, key_id("old"), seq)
        w.write(w.build(CallFinished, action_id="a", index=0, call_id=f"c{seq}",
                        function_id="m:f", durable_id=None, arg_digest="x", value=b"\xc0",
                        error=None, at=time.time(), duration=0.0))  # fmt: skip
        w.write(w.build(RunCompleted, at=time.time(), input_digest="d"))
    out = tmp_path / "plan.json"
    assert cli(["cleanup", "plan", *sqlite_args(path), "--before", str(time.time() + 3600),
                "--safety-margin", "0", "--out", str(out)]) == 0  # fmt: skip
    plan = json.loads(out.read_text())
    stop = threading.Event()
    written: list[int] = []

    def writer():
        seq = 0
        while not stop.is_set() or seq < 50:
            w = RunWriter(store, "default", "worker", 0, key_id("new"), seq)
            record = w.build(RunCompleted, at=time.time(), input_digest="d")
            written.append(w.write(record).position)
            seq += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    finally:
        stop.set()
        thread.join()
    boundary = plan["partitions"][0]["delete_below"]
    assert boundary is not None and all(p >= boundary for p in written)
    kept = store.read_key("default", "worker", key_id("new"), None)
    assert [r.seq for r in kept if not isinstance(r, CleanupBoundary)] == list(range(len(written)))
    assert len({p for p, *_ in rows(path, f"key_id = '{key_id('new')}'")}) == len(written)


def test_time_based_plan_counts_runs_completed_before_the_cutoff(journal, tmp_path):
    path, _scenario = journal
    out = tmp_path / "plan.json"
    assert cli(["cleanup", "plan", *sqlite_args(path), "--before", "0", "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["partitions"][0]["delete_below"] is None  # nothing completed before 1970
    assert plan["partitions"][0]["blocker"]["kind"] in ("completed_after_cutoff", "marker")
    cli(["cleanup", "plan", *sqlite_args(path), "--before", str(time.time() + 60),
         "--safety-margin", "0", "--out", str(out)])  # fmt: skip
    plan = json.loads(out.read_text())
    entry = plan["partitions"][0]
    # Everything completed; the last completed run of every key is its estimated marker.
    assert entry["blocker"]["kind"] == "marker" and entry["blocker"]["estimated"]
    assert entry["blocker"]["key_id"] == key_id("idle")


def test_checkpoint_directory_is_judged_by_its_metadata_time(journal, tmp_path):
    path, _ = journal
    chk = tmp_path / "checkpoints" / "job" / "chk-7"
    chk.mkdir(parents=True)
    (chk / "_metadata").write_bytes(cleanup.FLINK_METADATA_MAGIC.to_bytes(4, "big") + b"x")
    later = tmp_path / "checkpoints" / "job" / "chk-9"
    later.mkdir()
    (later / "_metadata").write_bytes(cleanup.FLINK_METADATA_MAGIC.to_bytes(4, "big") + b"x")
    old = time.time() - 86400
    os.utime(chk / "_metadata", (old, old))
    out = tmp_path / "plan.json"
    assert cli(["cleanup", "plan", *sqlite_args(path), "--checkpoint",
                str(tmp_path / "checkpoints"), "--out", str(out)]) == 0  # fmt: skip
    plan = json.loads(out.read_text())
    assert plan["state"]["metadata"].endswith("chk-7/_metadata")  # the oldest retained one
    assert plan["state"]["cutoff"] == pytest.approx(old - cleanup.DEFAULT_MARGIN_S)
    assert plan["partitions"][0]["delete_below"] is None  # the journal is younger than it


def test_a_savepoint_path_as_flink_stop_prints_it_is_accepted(journal, tmp_path, capsys):
    """``flink stop`` says ``Savepoint completed. Path: file:/...``: that text, pasted."""
    path, _ = journal
    savepoint = tmp_path / "savepoints" / "savepoint-1a2b3c-0123456789ab"
    savepoint.mkdir(parents=True)
    (savepoint / "_metadata").write_bytes(cleanup.FLINK_METADATA_MAGIC.to_bytes(4, "big") + b"x")
    plan = ["cleanup", "plan", *sqlite_args(path), "--out", str(tmp_path / "plan.json")]
    for given in (f"file:{savepoint}", f"file://{savepoint}", f"file://localhost{savepoint}"):
        assert cli([*plan, "--checkpoint", given]) == 0, capsys.readouterr().err
        written = json.loads((tmp_path / "plan.json").read_text())
        assert written["state"]["metadata"] == str(savepoint / "_metadata")
    assert cli([*plan, "--checkpoint", f"s3://bucket{savepoint}"]) == 1
    error = capsys.readouterr().err
    assert "this machine's file system" in error and "Traceback" not in error


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--store", "postgres", "--path", "x"], 2, "invalid choice: 'postgres'"),
        (["--store", "sqlite"], 2, "needs --path"),
        (["--store", "kafka", "--topic", "t"], 2, "needs --bootstrap"),
    ],
)
def test_bad_store_options_are_usage_errors(args, code, message, tmp_path, capsys):
    assert cli(["cleanup", "plan", *args, "--before", "0"]) == code
    assert message in capsys.readouterr().err


def test_bad_input_is_refused_with_clear_errors_and_nothing_deleted(journal, tmp_path, capsys):
    path, scenario = journal
    before = rows(path)
    out = tmp_path / "plan.json"
    plan = ["cleanup", "plan", *sqlite_args(path), "--out", str(out)]
    assert cli([*plan, "--before", "0", "--namespace", "nope"]) == 1
    assert "namespace 'nope' has no records" in capsys.readouterr().err
    assert cli([*plan, "--snapshot", str(scenario.s), "--namespace", "nope"]) == 1
    assert "is of namespace 'default', operator 'worker', not of namespace 'nope'" in (
        capsys.readouterr().err
    )
    assert cli([*plan, "--checkpoint", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert cli([*plan, "--snapshot", str(tmp_path / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert cli([*plan, "--snapshot", str(scenario.s), "--before", "0"]) == 2
    assert cli(["cleanup", "plan", *sqlite_args(tmp_path / "none.db"), "--before", "0"]) == 1
    assert "no SQLite journal" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists(), "a typo created a journal"
    # A plan for another journal file, and a stale plan.
    assert cli([*plan, "--snapshot", str(scenario.s)]) == 0
    other = tmp_path / "other.db"
    SqliteStore(other).close()
    assert cli(["cleanup", "apply", "--plan", str(out), *sqlite_args(other)]) == 1
    assert "the plan is for SQLite journal" in capsys.readouterr().err
    # Plans that were right when made (re-sealed: what time and a recreated journal do).
    stale = cleanup.load(out)
    stale.created_at -= 7200
    (tmp_path / "stale.json").write_bytes(document.to_json(document.seal(stale)))
    assert cli(["cleanup", "apply", "--plan", str(tmp_path / "stale.json")]) == 1
    assert "older than --max-age" in capsys.readouterr().err
    recreated = cleanup.load(out)
    recreated.store.uid = "0" * 32
    (tmp_path / "recreated.json").write_bytes(document.to_json(document.seal(recreated)))
    assert cli(["cleanup", "apply", "--plan", str(tmp_path / "recreated.json")]) == 1
    assert "deleted and recreated" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{}")
    assert cli(["cleanup", "apply", "--plan", str(tmp_path / "junk.json")]) == 1
    assert cli(["cleanup", "apply", "--plan", str(tmp_path / "absent.json")]) == 2
    assert rows(path) == before, "a refused command deleted something"


def test_a_plan_whose_kept_records_were_deleted_meanwhile_is_refused(journal, tmp_path, capsys):
    path, scenario = journal
    out, plan = plan_file(tmp_path, path, scenario.s)
    with sqlite3.connect(path) as db:  # "retention" deletes past the plan's boundary
        db.execute("DELETE FROM journal WHERE pos <= ?", (plan["partitions"][0]["keep_from"],))
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 1
    assert "past the plan's boundary" in capsys.readouterr().err


def test_memory_store_cleanup_keeps_positions_and_other_namespaces():
    store = MemoryStore()
    for seq in range(3):
        RunWriter(store, "ns", "op", 0, "k", seq).write(
            RunCompleted("ns", "op", 0, "k", seq, at=1.0, input_digest="d")
        )
        store.append(RunCompleted("other", "op", 0, "k", seq, at=1.0, input_digest="d"))
    assert store.delete_below("ns", "op", 0, 4) == 2
    assert [i.position for i in store.scan(0, "ns")] == [4]
    assert [i.position for i in store.scan(0, "other")] == [1, 3, 5]
    assert store.position_range(0) == (1, 6)
    assert [r.seq for r in store.read_key("ns", "op", "k", None)] == [2]


# -- inspect -----------------------------------------------------------------------------------


def test_inspect_tree_and_json(journal, capsys):
    path, _ = journal
    assert cli(["journal", "inspect", *sqlite_args(path), "--key", "busy", "--run", "8"]) == 0
    tree = capsys.readouterr().out
    assert "run seq=8  finished" in tree
    assert "action handle" in tree and "completed" in tree
    assert "call 0 tests.cleanup_scenario:work  finished" in tree and "'first:boom'" in tree
    assert "call 1 tests.cleanup_scenario:work  failed" in tree and "ValueError: boom" in tree
    assert cli(["journal", "inspect", *sqlite_args(path), "--key", "busy", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["key_id"] == key_id("busy") and [r["seq"] for r in doc["runs"]] == list(range(9))
    call = doc["runs"][0]["actions"][0]["calls"][0]
    assert call["status"] == "finished" and call["outcome"]["value"] == "'first:b0'"
    assert call["function_id"] == "tests.cleanup_scenario:work" and call["duration_s"] >= 0
    # Typed keys: the int 1 and the string "1" are different keys.
    assert cli(["journal", "inspect", *sqlite_args(path), "--key", "1", "--key-type", "int"]) == 1
    assert "no records of key" in capsys.readouterr().err
    # By call id: the run holding it.
    assert cli(["journal", "inspect", *sqlite_args(path), "--call", call["call_id"],
                "--json"]) == 0  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert [r["seq"] for r in doc["runs"]] == [0] and doc["key_id"] == key_id("busy")


def test_inspect_statuses_of_unfinished_work(tmp_path, capsys):
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    w = RunWriter(store, "default", "op", 0, key_id("k"), 0)
    common = dict(action_id="a1", function_id="m:f", durable_id=None, arg_digest="x")
    w.write(w.build(CallStarted, index=0, call_id="c0", attempt=1, at=1.0, **common))
    w.write(w.build(CallFinished, index=0, call_id="c0", value=b"\x01", error=None, at=2.0,
                    duration=1.0, **common))  # fmt: skip
    w.write(w.build(CallStarted, index=1, call_id="c1", attempt=2, at=3.0, **common))
    store.close()
    assert cli(["journal", "inspect", *sqlite_args(path), "--key", "k", "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["status"] == "in flight"
    (action,) = run["actions"]
    assert action["status"] == "incomplete"
    assert [c["status"] for c in action["calls"]] == ["replayable", "unknown"]
    assert action["calls"][1]["attempt"] == 2
    assert cli(["journal", "inspect", *sqlite_args(path), "--key", "k"]) == 0
    tree = capsys.readouterr().out
    assert "in flight" in tree and "replayable" in tree and "unknown" in tree


def test_inspect_summary(journal, capsys):
    path, _ = journal
    assert cli(["journal", "inspect", *sqlite_args(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    totals = doc["totals"]
    assert totals["keys"] == 4 and totals["runs"] == len(sc.INPUTS)
    assert totals["runs_in_flight"] == 0 and totals["records"] == len(rows(path))
    assert doc["oldest_record_at"] is not None
    assert cli(["journal", "inspect", *sqlite_args(path)]) == 0
    assert "total" in capsys.readouterr().out
    assert cli(["journal", "inspect", *sqlite_args(path), "--namespace", "nope"]) == 1
    assert "namespaces found: default" in capsys.readouterr().err


def test_plan_refuses_a_snapshot_of_another_journal(journal, tmp_path):
    _path, scenario = journal
    other = SqliteStore(tmp_path / "other.db")
    other.append(RunCompleted("default", "worker", 0, "k", 0, at=1.0, input_digest="d"))
    state = None
    with pytest.raises(ToolError, match="taken with another journal"):
        state = cleanup.load_snapshot(scenario.s, other)
    assert state is None


# -- the store contract the tools rely on (memory, SQLite, Kafka; Fluss has its own) -----------


@pytest.fixture(params=["memory", "sqlite", pytest.param("kafka", marks=pytest.mark.kafka)])
def tool_store(request, tmp_path):
    if request.param == "kafka":
        import uuid

        from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

        bootstrap = request.getfixturevalue("aj_kafka_bootstrap")
        config = KafkaStoreConfig(
            bootstrap_servers=bootstrap, topic=f"tools-{uuid.uuid4().hex[:12]}", partitions=4
        )
        store = KafkaStore(config)
    elif request.param == "sqlite":
        store = SqliteStore(tmp_path / "j.db")
    else:
        store = MemoryStore()
    yield store
    store.close()


def _two_keys_in_one_partition(store):
    keys: dict[int, list[str]] = {}
    for n in range(100):
        keys.setdefault(store.partition_of(f"k{n}"), []).append(f"k{n}")
    return next(ks[:2] for ks in keys.values() if len(ks) >= 2)


def test_control_records_reach_every_key_of_their_partition(tool_store):
    store = tool_store
    a, b = _two_keys_in_one_partition(store)
    p = store.partition_of(a)
    for key in (a, b):
        store.append(RunCompleted("ns", "op", 0, key, 0, at=1.0, input_digest="d"))
    boundary = CleanupBoundary("ns", "op", 0, CONTROL_KEY, 0, partition=p, position=1, at=1.0)
    marker = store.append_control(boundary, p)
    assert marker.partition == p
    for key in (a, b, a):  # with Kafka's per-partition cache: a second read of a key too
        records = store.read_key("ns", "op", key, None)
        assert [type(r).__name__ for r in records] == ["RunCompleted", "CleanupBoundary"]
    scanned = list(store.scan(p, "ns"))
    assert [i.record for i in scanned][-1] == boundary and scanned[-1].position == marker.position
    low, high = store.position_range(p)
    assert low <= scanned[0].position and high == marker.position + 1


def test_delete_below_never_touches_the_position_or_above(tool_store):
    store = tool_store
    key = "k0"
    p = store.partition_of(key)
    markers = [
        store.append(RunCompleted("ns", "op", 0, key, seq, at=1.0, input_digest="d"))
        for seq in range(5)
    ]
    store.delete_below("ns", "op", p, markers[3].position)
    assert [r.seq for r in store.read_key("ns", "op", key, None)] == [3, 4]
    assert store.position_range(p)[0] == markers[3].position
    assert [i.position for i in store.scan(p, "ns")] == [m.position for m in markers[3:]]


def test_progress_bar_draws_on_stderr_only_when_enabled(journal, tmp_path, capsys):
    import io

    from actionjournal.tools.toolkit import ProgressBar

    stream = io.StringIO()
    bar = ProgressBar("scanning partition 0", enabled=True, stream=stream)
    bar(50, 100)
    bar(100, 100)
    bar.close()
    assert "scanning partition 0 [" in stream.getvalue() and "100%" in stream.getvalue()
    silent = io.StringIO()
    ProgressBar("x", enabled=False, stream=silent)(1, 2)
    assert silent.getvalue() == ""
    path, scenario = journal
    out = tmp_path / "plan.json"
    args = ["cleanup", "plan", *sqlite_args(path), "--snapshot", str(scenario.s)]
    assert cli([*args, "--out", str(out), "--progress"]) == 0
    assert "scanning partition 0 [" in capsys.readouterr().err
    assert cli(["cleanup", "apply", "--plan", str(out), "--progress"]) == 0
    assert "deleting partition 0 below" in capsys.readouterr().err


def test_restoring_state_that_never_saw_a_cleaned_key_is_refused(tmp_path):
    # Key "a" runs twice and "b" once; the plan is made for the snapshot after them, so a's
    # first run loses its records. A state from before "a" existed (here: none at all) would
    # take a's re-delivered input for new work and run its calls again.
    path = tmp_path / "j.db"
    store = SqliteStore(path)
    sc.EXECUTED.clear()
    first = [("a", "x0"), ("a", "x1"), ("b", "y0")]

    async def build():
        runner = LocalRunner(sc.Worker(), store)
        await runner.run(first)
        runner.snapshot(tmp_path / "s.snapshot")

    asyncio.run(build())
    out, plan = plan_file(tmp_path, path, tmp_path / "s.snapshot")
    assert plan["partitions"][0]["keys_with_records_deleted"] >= 1
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    executed = len(sc.EXECUTED)

    async def fresh(inputs):
        runner = LocalRunner(sc.Worker(), SqliteStore(path))
        await runner.run(inputs)
        return runner

    with pytest.raises(CleanupBoundaryError, match=r"key .*: cleanup deleted its journal records"
                       r" below position \d+ .* does not know the key"):  # fmt: skip
        asyncio.run(fresh(first[:1]))
    assert len(sc.EXECUTED) == executed, "a cleaned key's call ran again"
    runner = asyncio.run(fresh([("new", "n0")]))  # keys cleanup never touched run as usual
    assert len(runner.outputs) == 1


class Bulky(Agent):
    """Each run journals a 16 KiB call result: a journal that a cleanup makes mostly free."""

    uid = "bulky"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(str.__mul__, "x", 16384)


@pytest.mark.parametrize("vacuum", [False, True])
def test_a_sqlite_cleanup_says_the_file_keeps_its_size_and_vacuum_shrinks_it(
    tmp_path, capsys, vacuum
):
    path = tmp_path / "j.db"
    asyncio.run(LocalRunner(Bulky(), SqliteStore(path)).run([("k", i) for i in range(200)]))
    out = tmp_path / "plan.json"
    assert cli(["cleanup", "plan", *sqlite_args(path), "--before", str(time.time() + 60),
                "--safety-margin", "0", "--out", str(out)]) == 0  # fmt: skip
    before = vacuum_module.file_size(path)
    assert before > 3_000_000
    capsys.readouterr()
    assert cli(["cleanup", "apply", "--plan", str(out), *(["--vacuum"] if vacuum else [])]) == 0
    printed = capsys.readouterr().out
    after = vacuum_module.file_size(path)
    if vacuum:
        assert after < before / 10, (before, after)
        assert f"vacuumed {path}: " in printed
    else:
        assert after >= before  # SQLite keeps the pages
        assert f"SQLite journal {path} keeps its size" in printed and "--vacuum" in printed
    assert len(rows(path)) < 10  # the last run stays (the key's estimated marker)
