"""The agent job of docs/deploying.md on a real Flink session cluster, Kafka in and Kafka
out: a TaskManager killed with calls in flight, and savepoints restored at parallelism 3,
then 1. Executions are counted by the HTTP service the agent calls; outputs are read
back by ``read_committed`` (and, for comparison, ``read_uncommitted``) consumers.

Each test submits real jobs (tens of seconds each on 2 cores), so there are few.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from actionjournal.dev.flink import STATE_BACKENDS
from actionjournal.dev.process import alive, cmdline
from actionjournal.testing.service import CountingService
from tests import docs_shell
from tests.cluster.conftest import (
    BIN,
    DOC,
    ROOT,
    Shell,
    TopicReader,
    agent_taskmanagers,
    cancel_quietly,
    create_topics,
    doc_block,
    job_id,
    private_cache,
    produce,
    savepoint_path,
    vertex_states,
    wait_running,
)

pytestmark = [pytest.mark.cluster, pytest.mark.flink, pytest.mark.kafka, pytest.mark.slow]
CUSTOMERS = 8


def orders(first: int, count: int) -> list[dict]:
    return [
        {"id": i, "customer": f"c{i % CUSTOMERS}", "item": f"item-{i}"}
        for i in range(first, first + count)
    ]


def journal(store: str, tmp_path: Path) -> str:
    if store == "sqlite":  # every TaskManager of the dev cluster is on this machine
        return f"sqlite:{tmp_path / 'journal.db'}"
    return f"kafka:journal-{uuid.uuid4().hex[:8]}"


def job_args(topics: tuple[str, str], store: str) -> dict[str, str]:
    """The job's options of a test: its own topics and journal."""
    return {"--input": topics[0], "--output": topics[1], "--journal": store}


def with_args(block: str, args: dict[str, str]) -> str:
    """The doc's ``flink run`` block with the test's job options instead of its journal."""
    assert " --journal kafka:orders-journal " in block, block
    options = " ".join(f"{k} {v}" for k, v in args.items())
    return block.replace(" --journal kafka:orders-journal ", f" {options} ")


def wait_for(reader: TopicReader, ids: set[int], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ids <= reader.ids():
        assert time.monotonic() < deadline, f"outputs missing: {sorted(ids - reader.ids())}"
        reader.poll(0.5)


def assert_exactly_once(reader: TopicReader, ids: set[int], counts: dict[str, int]) -> None:
    seen = Counter(r["id"] for r in reader.records)
    assert set(seen) == ids, f"missing {sorted(ids - set(seen))}, extra {set(seen) - ids}"
    assert [i for i, n in seen.items() if n > 1] == [], "an output was committed twice"
    assert len(counts) == 2 * len(ids), "a call is missing or ran under a second id"
    assert Counter(counts.values()) == {1: 2 * len(ids)}, "a durable call executed twice"


def assert_memory_followed_keys(reader: TopicReader) -> None:
    """Each customer's orders are counted 1, 2, 3... in the order they were produced."""
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in reader.records:
        by_key[r["key"]].append((r["id"], r["n"]))
    for key, seen in by_key.items():
        assert [n for _, n in sorted(seen)] == list(range(1, len(seen) + 1)), key


def test_the_page_runs_top_to_bottom(tmp_path_factory):
    """docs/deploying.md pasted into a terminal as it stands: its own broker, cluster and
    order service, 16 orders in and their results out, a savepoint, a restore at
    parallelism 3, 16 more orders, every result and every call once, everything stopped.
    Runs before the tests below start the session's cluster (one cluster at a time)."""
    env = {**os.environ, "ACTIONJOURNAL_CACHE": str(private_cache(tmp_path_factory))}
    for name in ("BOOTSTRAP", "SERVICE", "JOB_ID", "SAVEPOINT", "VIRTUAL_ENV"):
        env.pop(name, None)  # the page defines each one it uses
    page = docs_shell.steps(DOC)
    try:
        code, out = docs_shell.run(page, env, timeout=1800)
    finally:  # what the page started, stopped even when it failed half-way
        subprocess.run(
            "actionjournal dev flink stop; python examples/kafka_orders/service.py stop; "
            "actionjournal dev kafka stop",
            shell=True,
            cwd=ROOT,
            env={**env, "PATH": f"{BIN}{os.pathsep}{env['PATH']}"},
            capture_output=True,
            timeout=300,
        )
    shown = zip(page[: len(out)], out, strict=True)  # the steps that ran (all, or to a failure)
    ran = "".join(f"--- line {s.line}:\n{s.code}{o[-3000:]}" for s, o in shown)
    assert code == 0 and len(out) == len(page), ran[-12000:]
    everything = "".join(out)
    assert "16 of 16 orders have their result; none twice" in everything
    assert re.search(r"Savepoint completed\. Path: file:/\S+", everything)
    assert "32 of 32 orders have their result; none twice" in everything
    assert "64 calls executed, 64 executions; none twice" in everything
    assert not (ROOT / ".orders-service.json").exists()


def on_backend(command: str, state_backend: str) -> str:
    """``flink run`` with the job's state backend set (the doc's cluster runs RocksDB)."""
    flags = " ".join(f"-D{key}={value}" for key, value in STATE_BACKENDS[state_backend].items())
    return command.replace("flink run ", f"flink run {flags} ", 1)


def assert_state_backend(cluster, job: str, state_backend: str) -> None:
    used = cluster.rest(f"/jobs/{job}/checkpoints/config")["state_backend"]
    expected = {"rocksdb": "EmbeddedRocksDBStateBackend", "hashmap": "HashMapStateBackend"}
    assert used == expected[state_backend], used


# One store each keeps the suite within a few minutes: both run the same agent job. The
# TaskManager loss runs on RocksDB (the doc's cluster) and, in make test-extended, on the
# heap backend (about 50 s more; tests/e2e kills Python workers on both in make test).
@pytest.mark.parametrize("store", ["kafka"])
@pytest.mark.parametrize(
    "state_backend", ["rocksdb", pytest.param("hashmap", marks=pytest.mark.extended)]
)
def test_taskmanager_killed_with_calls_in_flight(
    full_cluster, shell: Shell, aj_kafka_bootstrap, reader, tmp_path, store, state_backend
):
    cluster, bootstrap = full_cluster, aj_kafka_bootstrap
    topics = (f"orders-{uuid.uuid4().hex[:8]}", f"charged-{uuid.uuid4().hex[:8]}")
    create_topics(bootstrap, *topics)
    before, during = orders(0, 16), orders(16, 48)
    ids = {o["id"] for o in before + during}
    committed = reader(topics[1], "read_committed")
    uncommitted = reader(topics[1], "read_uncommitted")
    job = None
    with CountingService(delay=0.2) as service:  # each call is in flight for 0.2 s
        try:
            submit = with_args(doc_block("submit"), job_args(topics, journal(store, tmp_path)))
            submit = on_backend(submit, state_backend)
            job = job_id(shell.flink(submit, BOOTSTRAP=bootstrap, SERVICE=service.url))
            assert_state_backend(cluster, job, state_backend)
            produce(bootstrap, topics[0], before)
            wait_for(committed, {o["id"] for o in before})
            victim = agent_taskmanagers(cluster, job)[0]
            produce(bootstrap, topics[0], during)
            # Kill while a call is in flight and outputs of finished runs are written but not
            # committed yet (seen by read_uncommitted only): the restart aborts them.
            deadline = time.monotonic() + 120
            pending: set[int] = set()
            while not (pending and service.waiting()):
                assert time.monotonic() < deadline, "the job does not progress"
                committed.poll(0.02)
                uncommitted.poll(0.02)
                pending = uncommitted.ids() - committed.ids()
            in_flight, committed_at_kill = service.waiting(), len(committed.ids())
            killed = time.monotonic()
            cluster.kill_taskmanager(victim)
            running = wait_restarted(cluster, job, committed)
            wait_for(committed, ids)
            service.wait_idle()
            counts = dict(service.counts)
            uncommitted.poll(3.0)
            left = cluster.orphans()
        finally:
            cancel_quietly(cluster, job)
    first = min(r["arrived"] for r in committed.records if r["arrived"] > killed)
    print(
        f"\n[{store}, {state_backend}] kill -> tasks running {running - killed:.1f} s -> "
        "first committed output "
        f"{first - running:+.1f} s; calls in flight at the kill {in_flight}, outputs written "
        f"but not committed {len(pending)}; outputs "
        f"read_committed {len(committed.records)}, read_uncommitted {len(uncommitted.records)} "
        f"for {len(ids)} inputs; calls executed {sum(counts.values())} for {len(ids)} inputs; "
        f"orphaned processes {[(pid, cmdline(pid)) for pid in left]}"
    )
    assert in_flight > 0, "no call was in flight at the kill"
    assert committed_at_kill < len(ids), "everything was done before the kill"
    assert_exactly_once(committed, ids, counts)
    assert_memory_followed_keys(committed)
    # The killed TaskManager's Python workers may outlive it; `dev flink start` (replacing
    # the TaskManager) ends them, as `dev flink stop` would, and says what it did.
    said = shell.run(doc_block("start"), timeout=400)
    assert f"TaskManager {victim} was lost: replaced by tm-" in said
    assert [pid for pid in left if alive(pid)] == [], "processes of a killed TaskManager live on"


def wait_restarted(cluster, job: str, reader: TopicReader, timeout: float = 300) -> float:
    """When every task of ``job`` runs again after a failure; reads outputs meanwhile."""
    deadline = time.monotonic() + timeout
    down = False
    while time.monotonic() < deadline:
        states = set(vertex_states(cluster, job))
        if down and states == {"RUNNING"}:
            return time.monotonic()
        down = down or states != {"RUNNING"}
        reader.poll(0.2)
    raise AssertionError(f"job {job} not running again within {timeout} s: {states}")


@pytest.mark.parametrize("store", ["sqlite"])
def test_savepoints_restored_at_parallelism_3_then_1(
    full_cluster, shell: Shell, aj_kafka_bootstrap, reader, tmp_path, store
):
    cluster, bootstrap = full_cluster, aj_kafka_bootstrap
    topics = (f"orders-{uuid.uuid4().hex[:8]}", f"charged-{uuid.uuid4().hex[:8]}")
    create_topics(bootstrap, *topics)
    batches = [orders(12 * b, 12) for b in range(4)]
    batches[0].append({"id": 1000, "customer": None, "item": "keyless"})  # warned, still runs
    ids = {o["id"] for batch in batches for o in batch}
    args = job_args(topics, journal(store, tmp_path))
    committed = reader(topics[1], "read_committed")
    parallelisms = []
    job = None
    with CountingService() as service:
        run = {"BOOTSTRAP": bootstrap, "SERVICE": service.url}
        try:
            job = job_id(shell.flink(with_args(doc_block("submit"), args), **run))
            assert_state_backend(cluster, job, "rocksdb")  # the doc's cluster's
            produce(bootstrap, topics[0], batches[0])
            wait_for(committed, {o["id"] for o in batches[0]})
            service.hold("charge")  # runs stay in flight, half done, until released
            produce(bootstrap, topics[0], batches[1])
            deadline = time.monotonic() + 120
            while service.waiting() < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            held = service.waiting()
            done = {o["id"] for o in batches[0]}
            for parallelism, batch in ((3, batches[2]), (1, batches[3])):
                parallelisms.append(agent_parallelism(cluster, job))
                # If a savepoint waited for runs to finish, this would never return.
                stopped = shell.flink(doc_block("savepoint"), JOB_ID=job, **run)
                service.release("charge")
                service.wait_idle()
                restore = with_args(doc_block("restore"), args).replace(
                    "--parallelism 3", f"--parallelism {parallelism}"
                )
                began = time.monotonic()
                job = job_id(shell.flink(restore, SAVEPOINT=savepoint_path(stopped), **run))
                submitted = time.monotonic()
                wait_running(cluster, job)
                running = time.monotonic()
                produce(bootstrap, topics[0], batch)
                done |= {o["id"] for o in batch + batches[1]}
                wait_for(committed, done)  # running, and caught up: ready for a savepoint
                first = min(r["arrived"] for r in committed.records if r["arrived"] > began)
                print(
                    f"\n[{store}] restore at p{parallelism}: submitted {submitted - began:.1f} s, "
                    f"tasks running {running - began:.1f} s, first committed output "
                    f"{first - began:.1f} s after `flink run --fromSavepoint`"
                )
            parallelisms.append(agent_parallelism(cluster, job))
            shell.flink(doc_block("cancel"), JOB_ID=job, **run)
            job = None
            service.wait_idle()
            counts = dict(service.counts)
        finally:
            cancel_quietly(cluster, job)
    assert held >= 3, "no run was in flight when the first savepoint was taken"
    assert parallelisms == [2, 3, 1]
    assert_exactly_once(committed, ids, counts)
    assert_memory_followed_keys(committed)
    logs = "".join(p.read_text() for p in (cluster.workdir / "log").glob("*.out"))
    assert f"1 Kafka record(s) without a key in {topics[0]}" in logs


def agent_parallelism(cluster, job: str) -> int:
    (vertex,) = [v for v in cluster.rest(f"/jobs/{job}")["vertices"] if "agent" in v["name"]]
    return vertex["parallelism"]
