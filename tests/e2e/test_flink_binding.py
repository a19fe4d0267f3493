"""A savepoint restored against another journal or namespace runs nothing, in PyFlink jobs.

Parallelism 2, journals on SQLite and on a real Kafka broker. The first job runs keys
0-3 and is stopped with a savepoint while idle, so those keys have recovery markers. The
restored job reads a new source of inputs of keys 4-7, which the savepoint has no state
for: without the job's journal binding their durable calls ran against the wrong journal
and the job never failed (with inputs of keys that have a marker after them it failed,
after a race those calls could win: 4 calls on SQLite in one run, none in another). Calls
are counted by a real HTTP service. Keys without a marker whose first run was in flight
at the checkpoint are covered with the local runner (tests/integration/test_journal_binding.py).
"""

from __future__ import annotations

import functools
import json
import time

import pytest
from py4j.protocol import Py4JJavaError
from pyflink.common import Configuration

from actionjournal import JournalConfig
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import CONTROL_KEY, UpgradeSkipped
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment, stop_with_savepoint
from actionjournal.stores import open_store
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.harness import journals
from actionjournal.testing.service import CountingService
from tests.e2e.agents import TwoSteps, key_of

pytestmark = [pytest.mark.flink, pytest.mark.slow]

# Keys 0-3 run 8 inputs, then the job idles on filler (dropped before the agent) until it is
# stopped with a savepoint: the keys have markers and no run in flight.
BEFORE = [json.dumps({"k": i % 4, "i": i}) for i in range(8)] + [
    json.dumps({"k": -1, "i": -1}) for _ in range(400)
]
# Keys 4-7: their first input arrives after the savepoint, so they have no marker. Without
# the binding nothing stops them: the job runs them all against the wrong journal.
NEW_KEYS = [json.dumps({"k": 4 + i % 4, "i": 1000 + i}) for i in range(8)]
# Keys with markers as well, after the new ones (the upgrade).
ALL_KEYS = NEW_KEYS + [json.dumps({"k": i % 4, "i": 2000 + i}) for i in range(8)]


def store(journal) -> functools.partial:
    """A picklable store factory: every Flink worker opens ``journal``."""
    return functools.partial(open_store, journal)


def real(element: str) -> bool:
    return key_of(element) >= 0


def job(env, url, store, source, upgrade=False, namespace="default"):
    journal = JournalConfig(upgrade="fresh" if upgrade else "off", namespace=namespace)
    config = AgentsConfig(journal=journal)
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    keyed = agents.from_datastream(source.filter(real), key_selector=key_of)
    return keyed.apply(TwoSteps(url), store_factory=store).to_datastream()


def savepoint_of_first_job(tmp_path, url, service, store, state_backend) -> str:
    env = local_env(tmp_path / "checkpoints", parallelism=2, state_backend=state_backend)
    sink = JsonLines(tmp_path / "first.jsonl")
    job(env, url, store, paced_source(env, BEFORE, 8)).map(sink)
    client = env.execute_async("binding-first")
    deadline = time.monotonic() + 900  # a bound, not a speed claim: the machine may be busy
    while len(sink.read()) < 8 and time.monotonic() < deadline:
        assert not client.get_job_status().result().is_globally_terminal_state()
        time.sleep(0.2)
    assert len(sink.read()) == 8, "the first job did not finish its runs"
    return stop_with_savepoint(client, tmp_path / "savepoints")


def restore_job(tmp_path, url, store, savepoint, name, inputs=NEW_KEYS, upgrade=False, **journal):
    """Run the restored job on ``inputs``; returns its outputs, or raises the job's failure."""
    env = local_env(
        tmp_path / f"checkpoints-{name}",
        parallelism=2,
        restarts=0,
        restore_from=savepoint,
        state_backend=journal.pop("state_backend"),
    )
    settings = Configuration()
    settings.set_string("execution.state-recovery.ignore-unclaimed-state", "true")  # new source
    env.configure(settings)
    sink = JsonLines(tmp_path / f"{name}.jsonl")
    source = paced_source(env, inputs, 20, name="after")
    job(env, url, store, source, upgrade, **journal).map(sink)
    env.execute(f"binding-{name}")
    return sink.read()


def refused_job(tmp_path, url, service, store, savepoint, name, **journal) -> str:
    before = service.executions()
    with pytest.raises(Py4JJavaError) as caught:  # the job failed
        restore_job(tmp_path, url, store, savepoint, name, **journal)
    assert service.executions() == before, "a durable call ran against the wrong journal"
    return str(caught.value)


def audits(journal) -> list[UpgradeSkipped]:
    store = journals.open_journal(journal, RecordCodec())
    try:
        records = store.read_key("default", "two-steps", CONTROL_KEY, None)
    finally:
        store.close()
    return [r for r in records if isinstance(r, UpgradeSkipped)]


# Each journal on one of Flink's state backends: both backends, both stores.
@pytest.fixture(
    params=[
        ("aj_sqlite", "hashmap"),
        pytest.param(("aj_kafka", "rocksdb"), marks=pytest.mark.kafka),
    ],
    ids=["sqlite-hashmap", "kafka-rocksdb"],
)
def journal(request: pytest.FixtureRequest):
    """The first job's journal and Flink state backend; the test derives the other journals
    from it and deletes them."""
    fixture, state_backend = request.param
    first = request.getfixturevalue(fixture)
    yield first, state_backend
    journals.delete([journals.derive(first, n) for n in (2, 3)])


def test_restore_against_another_journal_or_namespace_runs_nothing_until_upgrade_mode(
    tmp_path, journal
):
    journal, backend = journal
    new, upgraded = journals.derive(journal, 2), journals.derive(journal, 3)
    restore = functools.partial(restore_job, state_backend=backend)
    refused = functools.partial(refused_job, state_backend=backend)
    with CountingService() as service:
        savepoint = savepoint_of_first_job(tmp_path, service.url, service, store(journal), backend)
        service.wait_idle()

        message = refused(tmp_path, service.url, service, store(new), savepoint, "new")
        assert "MarkerMismatchError" in message and "journal.upgrade='fresh'" in message
        assert journals.name_of(journal) in message and journals.name_of(new) in message

        # Same journal, other namespace: markers do not name it, so every key ran again.
        message = refused(
            tmp_path, service.url, service, store(journal), savepoint, "ns", namespace="other"
        )
        assert "namespace 'default'" in message and "journal.namespace is 'other'" in message

        before = service.executions()  # the right journal: restores and runs as before
        outputs = restore(tmp_path, service.url, store(journal), savepoint, "same", ALL_KEYS)
        assert {o["i"] for o in outputs} == {json.loads(a)["i"] for a in ALL_KEYS}
        assert service.executions() - before == 2 * len(ALL_KEYS)

        before = service.executions()
        outputs = restore(
            tmp_path, service.url, store(upgraded), savepoint, "upgraded", ALL_KEYS, True
        )
        assert {o["i"] for o in outputs} == {json.loads(a)["i"] for a in ALL_KEYS}
        assert service.executions() - before == 2 * len(ALL_KEYS)
        (audit,) = audits(upgraded)  # one for both subtasks
        assert audit.old_name == journals.name_of(journal)

        journals.recreate(journal)
        message = refused(tmp_path, service.url, service, store(journal), savepoint, "again")
        assert "StoreRecreatedError" in message and "deleted and recreated" in message


def test_a_key_that_did_not_run_since_an_upgrade_is_refused_naming_the_old_journal(
    tmp_path, aj_sqlite
):
    # Keys keep a short reference to their journal; the agent operator keeps the journals
    # themselves, the current one and, after an upgrade, the old one, so that a key which has
    # not run since is still refused naming its journal once upgrade mode is off.
    upgraded = journals.derive(aj_sqlite, 2)
    with CountingService() as service:
        first = savepoint_of_first_job(tmp_path, service.url, service, store(aj_sqlite), "rocksdb")
        env = local_env(  # one subtask: it reports the new binding (it gets inputs)
            tmp_path / "checkpoints-upgrade",
            parallelism=1,
            restore_from=first,
            state_backend="rocksdb",
        )
        settings = Configuration()
        settings.set_string("execution.state-recovery.ignore-unclaimed-state", "true")
        env.configure(settings)
        sink = JsonLines(tmp_path / "upgrade.jsonl")
        filler = [json.dumps({"k": -1, "i": -1})] * 400
        source = paced_source(env, NEW_KEYS + filler, 8, name="upgrade")  # keys 0-3 do not run
        job(env, service.url, store(upgraded), source, upgrade=True).map(sink)
        client = env.execute_async("binding-upgrade")
        deadline = time.monotonic() + 900  # a bound, not a speed claim
        while len(sink.read()) < len(NEW_KEYS) and time.monotonic() < deadline:
            assert not client.get_job_status().result().is_globally_terminal_state()
            time.sleep(0.2)
        second = stop_with_savepoint(client, tmp_path / "savepoints-upgrade")
        service.wait_idle()

        message = refused_job(
            tmp_path, service.url, service, store(upgraded), second, "stale",
            inputs=ALL_KEYS[len(NEW_KEYS):], state_backend="rocksdb",
        )  # fmt: skip
    assert "MarkerMismatchError" in message and "recovery marker of key" in message
    assert f"references sqlite journal {journals.name_of(aj_sqlite)!r}" in message
