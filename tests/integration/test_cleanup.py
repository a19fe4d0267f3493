"""Cleanup plan/apply and journal inspect against a real Kafka broker.

The scenario (tests/cleanup_scenario.py) is the one the SQLite tests use: finished,
in-flight and idle keys, an older snapshot and the oldest restorable one.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from actionjournal.durable.errors import CleanupBoundaryError
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CONTROL_KEY, CleanupBoundary, RunCompleted
from actionjournal.durable.writer import RunWriter
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def kafka_args(bootstrap, topic):
    return ["--store", "kafka", "--bootstrap", bootstrap, "--topic", topic]


def plan(tmp_path, bootstrap, topic, snapshot, name="plan.json"):
    out = tmp_path / name
    args = ["cleanup", "plan", *kafka_args(bootstrap, topic), "--snapshot", str(snapshot)]
    assert cli([*args, "--out", str(out)]) == 0
    return out, json.loads(out.read_text())


def test_plan_apply_restore_on_kafka(kafka_store, aj_kafka_bootstrap, topic, tmp_path, capsys):
    store = kafka_store(topic)
    scenario = sc.build(store, tmp_path)
    out, doc = plan(tmp_path, aj_kafka_bootstrap, topic, scenario.s)
    assert doc["store"]["backend"] == "kafka" and doc["store"]["uid"] == store.identity.uid
    location = doc["location"]  # the job's store config, as the topic is: 4 partitions
    assert (location["backend"], location["topic"], location["partitions"]) == ("kafka", topic, 4)
    assert "client_config" not in location
    busy = store.partition_of(key_id("busy"))
    entry = doc["partitions"][busy]
    assert entry["delete_below"] is not None and entry["records_deleted"] > 0
    assert f"partition {busy} stops at offset {entry['delete_below']}" in entry["reason"]
    lows = {p: store.position_range(p)[0] for p in store.partitions()}

    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    for e in doc["partitions"]:
        low, _ = store.position_range(e["partition"])
        assert low == (e["delete_below"] if e["delete_below"] is not None else lows[e["partition"]])
    # The boundary lives in its own partition, after the boundary, and reaches every key there.
    boundaries = [
        r
        for r in store.read_key("default", "worker", key_id("busy"), None)
        if isinstance(r, CleanupBoundary)
    ]
    assert [(b.partition, b.position) for b in boundaries] == [(busy, entry["delete_below"])]
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0  # idempotent
    assert "already applied" in capsys.readouterr().out

    executed = len(sc.EXECUTED)
    runner = sc.restore(kafka_store(topic), scenario.s)
    assert len(sc.EXECUTED) == executed, "a durable call ran again after cleanup"
    assert len(runner.outputs) == len(sc.HELD) + len(sc.AFTER_S)
    with pytest.raises(CleanupBoundaryError, match=rf"partition {busy} position \d+, but cleanup"):
        sc.restore(kafka_store(topic), scenario.old)
    assert len(sc.EXECUTED) == executed


def test_shared_topic_stops_at_another_namespace(
    kafka_store, aj_kafka_bootstrap, topic, tmp_path, capsys
):
    store = kafka_store(topic)
    busy = key_id("busy")
    foreign = RunWriter(store, "other-ns", "worker", 0, busy, 0)
    kept = foreign.write(foreign.build(RunCompleted, at=1.0, input_digest="d"))
    scenario = sc.build(store, tmp_path)
    out, doc = plan(tmp_path, aj_kafka_bootstrap, topic, scenario.s)
    entry = doc["partitions"][kept.partition]
    assert entry["delete_below"] is None  # delete_records would take other-ns's record too
    assert entry["blocker"]["kind"] == "other_namespace"
    assert "namespace 'other-ns'" in entry["reason"]
    assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    assert store.position_range(kept.partition)[0] == kept.position
    assert [r.seq for r in store.read_key("other-ns", "worker", busy, None)] == [0]


def test_a_writer_appending_during_apply_loses_nothing(
    kafka_store, aj_kafka_bootstrap, topic, tmp_path
):
    store = kafka_store(topic)
    scenario = sc.build(store, tmp_path)
    out, _ = plan(tmp_path, aj_kafka_bootstrap, topic, scenario.s)
    stop = threading.Event()
    written = []

    def writer():
        seq = 0
        while not stop.is_set() or seq < 30:
            w = RunWriter(store, "default", "worker", 0, key_id("busy"), 1000 + seq)
            written.append(w.write(w.build(RunCompleted, at=time.time(), input_digest="d")))
            seq += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert cli(["cleanup", "apply", "--plan", str(out)]) == 0
    finally:
        stop.set()
        thread.join()
    records = store.read_key("default", "worker", key_id("busy"), None)
    seqs = [r.seq for r in records if r.key_id != CONTROL_KEY and r.seq >= 1000]
    assert seqs == [1000 + i for i in range(len(written))]


def test_bad_input_on_kafka(kafka_store, aj_kafka_bootstrap, topic, tmp_path, capsys):
    store = kafka_store(topic)
    scenario = sc.build(store, tmp_path)
    out, _ = plan(tmp_path, aj_kafka_bootstrap, topic, scenario.s)
    other = kafka_store(topic + "-b")
    lows = {p: store.position_range(p)[0] for p in store.partitions()}
    other_lows = {p: other.position_range(p)[0] for p in other.partitions()}
    elsewhere = kafka_args(aj_kafka_bootstrap, topic + "-b")
    code = cli(["cleanup", "apply", "--plan", str(out), *elsewhere])
    assert code == 1
    assert f"the plan is for Kafka topic {topic!r}" in capsys.readouterr().err
    wrong = ["--before", "0", "--namespace", "nope", "--out", str(tmp_path / "x")]
    assert cli(["cleanup", "plan", *kafka_args(aj_kafka_bootstrap, topic), *wrong]) == 1
    assert "namespace 'nope' has no records" in capsys.readouterr().err
    assert cli(["journal", "inspect", *kafka_args(aj_kafka_bootstrap, topic + "-missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert {p: store.position_range(p)[0] for p in store.partitions()} == lows
    assert {p: other.position_range(p)[0] for p in other.partitions()} == other_lows


def test_inspect_on_kafka(kafka_store, aj_kafka_bootstrap, topic, tmp_path, capsys):
    store = kafka_store(topic)
    sc.build(store, tmp_path)
    args = ["journal", "inspect", *kafka_args(aj_kafka_bootstrap, topic)]
    assert cli([*args, "--key", "held"]) == 0
    tree = capsys.readouterr().out
    assert f"partition {store.partition_of(key_id('held'))}" in tree
    assert "run seq=0  finished" in tree and "'second:h0'" in tree
    assert cli([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["partitions_total"] == 4 and doc["totals"]["runs"] == len(sc.INPUTS)
    used = {p["partition"] for p in doc["partitions"]}
    assert used == {store.partition_of(key_id(k)) for k, _ in sc.INPUTS}
    assert cli([*args, "--all-partitions", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["partitions"]) == 4
    # An empty partition gets a line only when asked for.
    empty = next(iter(set(range(4)) - used), None)
    assert cli(args) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split()[0] for line in lines[3:] if "[" in line]
    assert sorted(map(int, rows)) == sorted(used)
    if empty is not None:
        assert any("hold no records of the namespace" in line for line in lines)
