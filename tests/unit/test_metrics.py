"""Metrics and guards: scenarios on the local runner, and the exact metric values they leave.

Every scenario asserts the complete set of non-zero counter series, so a count that should
not move (a replay counted as an execution, a 0 ms latency sample) fails the test.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from pydantic import ValidationError

from actionjournal import (
    ActionJournalError,
    Agent,
    DivergenceError,
    InputEvent,
    JournalConfig,
    LocalRunner,
    NotStarted,
    OutputEvent,
    Recovered,
    action,
)
from actionjournal.durable.errors import (
    ActionFailedError,
    JournalWriteError,
    PayloadTooLargeError,
    RunJournalTooLongError,
)
from actionjournal.durable.stats import JournalMetrics, MetricGroupMirror
from actionjournal.stores import MemoryStore, SqliteStore

CALLS: list[str] = []
CRASH: list[bool] = []  # while non-empty, actions raise after their calls (a crash)


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    CRASH.clear()


def service(name: str, size: int = 0) -> str:
    CALLS.append(name)
    return "x" * size if size else f"{name} done"


def crash_point() -> None:
    if CRASH:
        raise RuntimeError("crash after the calls")


def run(agent: Agent, store, inputs, config: JournalConfig | None = None) -> LocalRunner:
    runner = LocalRunner(agent, store, config)
    try:
        asyncio.run(runner.run(inputs))
    except ActionJournalError as exc:  # an action failed, or the journal refused a record
        runner.failure = exc
    else:
        runner.failure = None
    return runner


def nonzero(metrics: JournalMetrics) -> dict[str, float]:
    """Every non-zero counter series, as ``name{label=value,...}``."""
    out = {}
    for name, labels, value in metrics.counter_samples():
        if value:
            inner = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            out[f"{name}{{{inner}}}"] = value
    return out


def count(metrics: JournalMetrics, histogram: str, **labels: str) -> float:
    return metrics.value(f"{histogram}_count", **labels)


def memory_bytes(store: MemoryStore, start: int = 0) -> int:
    return sum(len(entry[3]) for entry in store.entries[start:])


class TwoCalls(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        a = ctx.durable_execute(service, "a")
        b = ctx.durable_execute(service, "b")
        crash_point()
        ctx.send_event(OutputEvent([a, b, event.input]))


# -- scenarios ---------------------------------------------------------------------------


def test_normal_runs():
    store = MemoryStore()
    runner = run(TwoCalls(), store, [("k1", 1), ("k2", 2)])
    m = runner.metrics
    assert runner.failure is None and CALLS == ["a", "b", "a", "b"]
    assert nonzero(m) == {
        "actionjournal_calls_total{outcome=executed}": 4,
        "actionjournal_call_attempts_total{result=succeeded}": 4,
        "actionjournal_actions_total{outcome=executed}": 2,
        "actionjournal_runs_total{outcome=completed}": 2,
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store),
    }
    assert count(m, "actionjournal_call_duration_seconds") == 4
    # per run: 2 CallFinished, ActionCompleted, RunCompleted
    assert (
        count(m, "actionjournal_journal_append_seconds", backend="memory")
        == 8
        == len(store.entries)
    )
    assert count(m, "actionjournal_recovery_seconds", backend="memory") == 2  # one per key
    assert runner.counts == {
        "executed": 4,
        "replayed": 0,
        "reconciled": 0,
        "unknown": 0,
        "diverged": 0,
        "actions_executed": 2,
        "actions_replayed": 0,
    }


def test_a_completed_run_replays_without_executing_or_timing_anything():
    store = MemoryStore()
    run(TwoCalls(), store, [("k1", 1), ("k2", 2)])
    CALLS.clear()
    again = run(TwoCalls(), store, [("k1", 1), ("k2", 2)])
    m = again.metrics
    assert CALLS == []
    # A completed action is replayed whole: its calls are not made, so not counted as calls.
    assert nonzero(m) == {
        "actionjournal_actions_total{outcome=replayed}": 2,
        "actionjournal_runs_total{outcome=replayed}": 2,
        "actionjournal_recovery_records_total{kind=scanned}": 8,
        "actionjournal_recovery_records_total{kind=applied}": 8,
    }
    assert count(m, "actionjournal_call_duration_seconds") == 0
    assert count(m, "actionjournal_journal_append_seconds", backend="memory") == 0
    assert count(m, "actionjournal_recovery_seconds", backend="memory") == 2


def test_crash_then_replay_counts_replayed_calls_never_as_executions():
    store = MemoryStore()
    CRASH.append(True)
    crashed = run(TwoCalls(), store, [("k", 1)])
    assert crashed.failure is not None
    assert nonzero(crashed.metrics) == {
        "actionjournal_calls_total{outcome=executed}": 2,
        "actionjournal_call_attempts_total{result=succeeded}": 2,
        "actionjournal_runs_total{outcome=failed}": 1,  # on_run_failure="fail": it stops
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store),
    }
    assert count(crashed.metrics, "actionjournal_call_duration_seconds") == 2

    CRASH.clear()
    CALLS.clear()
    before = len(store.entries)
    recovered = run(TwoCalls(), store, [("k", 1)])
    m = recovered.metrics
    assert recovered.failure is None and CALLS == []
    assert nonzero(m) == {
        "actionjournal_calls_total{outcome=replayed}": 2,
        "actionjournal_actions_total{outcome=executed}": 1,
        "actionjournal_runs_total{outcome=completed}": 1,
        "actionjournal_recovery_records_total{kind=scanned}": 2,
        "actionjournal_recovery_records_total{kind=applied}": 2,
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store, before),
    }
    assert count(m, "actionjournal_call_duration_seconds") == 0  # no 0 ms samples
    assert m.value("actionjournal_call_duration_seconds_sum") == 0
    assert count(m, "actionjournal_journal_append_seconds", backend="memory") == 2
    assert count(m, "actionjournal_recovery_seconds", backend="memory") == 1


def test_crash_then_replay_from_a_snapshot(tmp_path):
    """The same through a snapshot restore, as after a real crash of the local runner."""
    store = SqliteStore(tmp_path / "journal.db")
    snapshot = tmp_path / "snap"
    first = LocalRunner(TwoCalls(), store)

    async def crash_mid_run():
        CRASH.append(True)
        first.submit("k", 1)
        first.snapshot(snapshot)  # the run is pending in the snapshot
        with pytest.raises(ActionFailedError):
            await first.drain()

    asyncio.run(crash_mid_run())
    CRASH.clear()
    restored = LocalRunner.restore(snapshot, TwoCalls(), store)

    async def resume():
        restored.resume()
        await restored.drain()

    asyncio.run(resume())
    m = restored.metrics
    (body_bytes,) = store._db.execute(
        "SELECT SUM(LENGTH(body)) FROM journal WHERE pos > 2"
    ).fetchone()
    assert nonzero(m) == {
        "actionjournal_calls_total{outcome=replayed}": 2,
        "actionjournal_actions_total{outcome=executed}": 1,
        "actionjournal_runs_total{outcome=completed}": 1,
        "actionjournal_recovery_records_total{kind=scanned}": 2,
        "actionjournal_recovery_records_total{kind=applied}": 2,
        "actionjournal_journal_append_bytes_total{backend=sqlite}": body_bytes,
    }
    assert count(m, "actionjournal_call_duration_seconds") == 0
    assert count(m, "actionjournal_journal_append_seconds", backend="sqlite") == 2
    assert count(m, "actionjournal_recovery_seconds", backend="sqlite") == 1
    assert CALLS == ["a", "b"]
    store.close()


class Pays(Agent):
    def __init__(self, reconciler) -> None:
        self.reconciler = reconciler

    @action(InputEvent)
    def handle(self, event, ctx):
        paid = ctx.durable_execute(service, "pay", reconciler=self.reconciler)
        crash_point()
        ctx.send_event(OutputEvent(paid))


def crash_during_the_call(store: MemoryStore, agent: Agent) -> None:
    """Run once and drop the CallFinished: as if the process died during the call."""
    CRASH.append(True)
    crashed = run(agent, store, [("k", "o-1")])
    assert crashed.failure is not None
    assert nonzero(crashed.metrics)["actionjournal_calls_total{outcome=executed}"] == 1
    store.entries = [
        e for e in store.entries if type(store.codec.decode(e[3])).__name__ != "CallFinished"
    ]
    CRASH.clear()
    CALLS.clear()


def test_reconciled_call():
    store = MemoryStore()
    agent = Pays(lambda info: Recovered("paid (seen in the payment API)"))
    crash_during_the_call(store, agent)
    before = len(store.entries)
    runner = run(agent, store, [("k", "o-1")])
    m = runner.metrics
    assert runner.failure is None and CALLS == []
    assert nonzero(m) == {
        "actionjournal_calls_total{outcome=unknown}": 1,
        "actionjournal_calls_total{outcome=reconciled}": 1,
        "actionjournal_actions_total{outcome=executed}": 1,
        "actionjournal_runs_total{outcome=completed}": 1,
        "actionjournal_recovery_records_total{kind=scanned}": 1,  # the CallStarted
        "actionjournal_recovery_records_total{kind=applied}": 1,
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store, before),
    }
    assert count(m, "actionjournal_call_duration_seconds") == 0
    # CallFinished (reconciled), ActionCompleted, RunCompleted
    assert count(m, "actionjournal_journal_append_seconds", backend="memory") == 3


def test_unknown_call_that_had_not_started_is_executed_once():
    store = MemoryStore()
    agent = Pays(lambda info: NotStarted())
    crash_during_the_call(store, agent)
    runner = run(agent, store, [("k", "o-1")])
    m = runner.metrics
    assert CALLS == ["pay"]
    assert nonzero(m)["actionjournal_calls_total{outcome=unknown}"] == 1
    assert nonzero(m)["actionjournal_calls_total{outcome=executed}"] == 1
    assert m.value("actionjournal_calls_total", outcome="reconciled") == 0
    assert count(m, "actionjournal_call_duration_seconds") == 1
    # CallStarted (attempt 1), CallFinished, ActionCompleted, RunCompleted
    assert count(m, "actionjournal_journal_append_seconds", backend="memory") == 4


class Versioned(Agent):
    def __init__(self, arg: str) -> None:
        self.arg = arg

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(service, "a")
        ctx.durable_execute(service, self.arg)
        crash_point()
        ctx.send_event(OutputEvent("done"))


def test_divergence_rerun():
    store = MemoryStore()
    config = JournalConfig(on_divergence="rerun")
    CRASH.append(True)
    run(Versioned("b"), store, [("k", 1)], config)
    CRASH.clear()
    CALLS.clear()
    before = len(store.entries)
    runner = run(Versioned("c"), store, [("k", 1)], config)
    m = runner.metrics
    assert runner.failure is None and CALLS == ["c"]
    assert nonzero(m) == {
        "actionjournal_calls_total{outcome=replayed}": 1,
        "actionjournal_calls_total{outcome=diverged}": 1,
        "actionjournal_calls_total{outcome=executed}": 1,
        "actionjournal_call_attempts_total{result=succeeded}": 1,
        "actionjournal_actions_total{outcome=executed}": 1,
        "actionjournal_runs_total{outcome=completed}": 1,
        "actionjournal_recovery_records_total{kind=scanned}": 2,
        "actionjournal_recovery_records_total{kind=applied}": 2,
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store, before),
    }
    assert count(m, "actionjournal_call_duration_seconds") == 1
    # CallsDropped, CallFinished, ActionCompleted, RunCompleted
    assert count(m, "actionjournal_journal_append_seconds", backend="memory") == 4


def test_divergence_fail():
    store = MemoryStore()
    CRASH.append(True)
    run(Versioned("b"), store, [("k", 1)])
    CRASH.clear()
    runner = run(Versioned("c"), store, [("k", 1)])
    assert isinstance(runner.failure.__cause__, DivergenceError)
    assert nonzero(runner.metrics) == {
        "actionjournal_calls_total{outcome=replayed}": 1,
        "actionjournal_calls_total{outcome=diverged}": 1,
        "actionjournal_runs_total{outcome=failed}": 1,
        "actionjournal_recovery_records_total{kind=scanned}": 2,
        "actionjournal_recovery_records_total{kind=applied}": 2,
    }
    assert count(runner.metrics, "actionjournal_call_duration_seconds") == 0


class FailingStore(MemoryStore):
    def append(self, record):
        if type(record).__name__ == "ActionCompleted":
            raise JournalWriteError("disk full")
        return super().append(record)


def test_failed_append_is_counted_and_not_timed():
    store = FailingStore()
    runner = run(TwoCalls(), store, [("k", 1)])
    assert isinstance(runner.failure, JournalWriteError)
    assert nonzero(runner.metrics) == {
        "actionjournal_calls_total{outcome=executed}": 2,
        "actionjournal_call_attempts_total{result=succeeded}": 2,
        "actionjournal_runs_total{outcome=failed}": 1,
        "actionjournal_journal_append_bytes_total{backend=memory}": memory_bytes(store),
        "actionjournal_journal_append_errors_total{backend=memory}": 1,
    }
    assert count(runner.metrics, "actionjournal_journal_append_seconds", backend="memory") == 2


def test_each_engine_has_its_own_registry():
    store = MemoryStore()
    a = run(TwoCalls(), store, [("k1", 1)])
    b = run(TwoCalls(), store, [("k2", 1)])
    assert a.metrics.registry is not b.metrics.registry
    assert a.counts["executed"] == b.counts["executed"] == 2


# -- exporters -----------------------------------------------------------------------------


def test_http_exporter_serves_the_runner_metrics():
    runner = run(TwoCalls(), MemoryStore(), [("k", 1)])
    port = runner.serve_metrics()
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'actionjournal_calls_total{outcome="executed"} 2.0' in body
    assert 'actionjournal_calls_total{outcome="replayed"} 0.0' in body
    assert "# TYPE actionjournal_journal_append_seconds histogram" in body
    assert 'actionjournal_journal_append_seconds_count{backend="memory"} 4.0' in body


EXPOSITIONS = {  # the same metrics in both formats a scraper may ask for
    "metrics_exposition.txt": generate_latest,
    "metrics_exposition.openmetrics.txt": openmetrics_latest,
}


CREATED = r"^(\S+_created(?:\{[^}]*\})?) (\S+)$"


def every_report(m: JournalMetrics) -> None:
    """Each reporting method once or more, with fixed values (durations on bucket edges and
    between them, a second backend, label values in a non-sorted order)."""
    m.call("replayed", 3)
    m.call("diverged")
    m.call_executed(0.001)
    m.call_executed(0.0123)
    m.call_executed(400.0)
    m.attempt("succeeded")
    m.attempt("retried")
    m.retry(0.25)
    m.action("replayed")
    m.run("dead_lettered")
    m.run_woken()
    m.run_polled()
    m.run_polled()
    m.appended("sqlite", 120, 0.0002)
    m.appended("memory", 80, 0.5)
    m.appended("sqlite", 64, 20.0)
    m.append_failed("kafka")
    m.recovered("memory", 0.004, 7, 5)
    m.guard_hit("run_records", "warn")
    m.add("actions_executed", 2)
    m.foreign(4)
    m.budget_spent(2, 150)
    m.budget_exhausted("tokens")
    m.wait("timers", "fired")
    m.wait("signals", "late")
    m.wait("signals", "late")


@pytest.mark.parametrize("golden", EXPOSITIONS)
def test_exposition_is_the_documented_one(golden: str):
    """The text Prometheus scrapes, byte for byte: names, help, types, label order, bucket
    bounds, values and one ``_created`` timestamp per series (set when the series began)."""
    before = time.time()
    m = JournalMetrics()
    every_report(m)
    after = time.time()
    text = EXPOSITIONS[golden](m.registry).decode()
    created = [float(v) for _, v in re.findall(CREATED, text, re.MULTILINE)]
    assert len(created) == 48 and all(before <= v <= after for v in created)
    masked = re.sub(CREATED, r"\1 <time>", text, flags=re.MULTILINE)
    assert masked == (Path(__file__).parent / "data" / golden).read_text()
    assert m.as_dict() == {
        "executed": 3,
        "replayed": 3,
        "reconciled": 0,
        "unknown": 0,
        "diverged": 1,
        "actions_executed": 2,
        "actions_replayed": 1,
    }
    assert m.value("actionjournal_journal_append_seconds_count", backend="sqlite") == 2
    assert m.value("actionjournal_journal_append_seconds_count", backend="nowhere") == 0


def test_exposition_follows_prometheus_clients_switch_for_created_series():
    m = JournalMetrics()
    every_report(m)
    golden = (Path(__file__).parent / "data" / "metrics_exposition.txt").read_text()
    without = [line for line in golden.splitlines(keepends=True) if "_created" not in line]
    prometheus_metrics.disable_created_metrics()
    try:
        assert generate_latest(m.registry).decode() == "".join(without)
    finally:
        prometheus_metrics.enable_created_metrics()


class FakeCounter:
    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n


class FakeGroup:
    """Shaped like PyFlink's MetricGroup: key/value groups and counters."""

    def __init__(self, path: tuple[str, ...] = ()) -> None:
        self.path = path
        self.groups: dict[tuple[str, ...], FakeGroup] = {}
        self.counters: dict[tuple[str, ...], FakeCounter] = {}

    def add_group(self, name: str, extra: str | None = None) -> FakeGroup:
        path = (*self.path, name) if extra is None else (*self.path, name, extra)
        return self.groups.setdefault(path, FakeGroup(path))

    def counter(self, name: str) -> FakeCounter:
        return self.counters.setdefault((*self.path, name), FakeCounter())

    def all(self) -> dict[str, int]:
        out = {".".join(k): c.count for k, c in self.counters.items()}
        for group in self.groups.values():
            out.update(group.all())
        return out


def test_flink_metric_group_mirror_adds_what_each_counter_gained():
    store = MemoryStore()
    CRASH.append(True)
    run(TwoCalls(), store, [("k", 1)])
    CRASH.clear()
    runner = LocalRunner(TwoCalls(), store)
    group = FakeGroup()
    mirror = MetricGroupMirror(runner.metrics, group)
    mirror.sync()
    assert group.all() == {}
    asyncio.run(runner.run([("k", 1)]))
    mirror.sync()
    mirror.sync()  # nothing new: nothing added
    assert group.all() == {
        "actionjournal.outcome.replayed.calls": 2,
        "actionjournal.outcome.executed.actions": 1,
        "actionjournal.outcome.completed.runs": 1,
        "actionjournal.kind.scanned.recovery_records": 2,
        "actionjournal.kind.applied.recovery_records": 2,
        "actionjournal.backend.memory.journal_append_bytes": memory_bytes(store, 2),
    }
    asyncio.run(runner.run([("k", 2)]))  # one more input: a fresh run
    mirror.sync()
    assert group.all()["actionjournal.outcome.executed.calls"] == 2
    assert group.all()["actionjournal.outcome.replayed.calls"] == 2


# -- guards --------------------------------------------------------------------------------


class BigResult(Agent):
    def __init__(self, size: int) -> None:
        self.size = size

    @action(InputEvent)
    def handle(self, event, ctx):
        result = ctx.durable_execute(service, "big", self.size)
        ctx.send_event(OutputEvent(len(result)))


def test_payload_over_the_warn_threshold_is_logged_and_counted(caplog):
    config = JournalConfig(payload_warn_bytes=100, max_payload_bytes=1000)
    with caplog.at_level(logging.WARNING, logger="actionjournal.guards"):
        runner = run(BigResult(500), MemoryStore(), [("alice", 1)], config)
    assert runner.failure is None
    hits = {k: v for k, v in nonzero(runner.metrics).items() if "guard" in k}
    assert hits == {"actionjournal_guard_hits_total{guard=payload_bytes,level=warn}": 1}
    (message,) = [r.getMessage() for r in caplog.records if "payload_warn_bytes" in r.getMessage()]
    for part in ("result of durable call", "call id", "key 'alice'", "seq 0", "action handle"):
        assert part in message, (part, message)
    assert "encodes to 503 bytes, over journal.payload_warn_bytes=100" in message


def test_payload_over_the_fail_threshold_fails_clearly_and_is_counted(caplog):
    config = JournalConfig(payload_warn_bytes=100, max_payload_bytes=1000)
    with caplog.at_level(logging.WARNING, logger="actionjournal.guards"):
        runner = run(BigResult(2000), MemoryStore(), [("alice", 1)], config)
    cause = runner.failure.__cause__
    assert isinstance(cause, PayloadTooLargeError)
    for part in ("call id", "key 'alice'", "seq 0", "action handle", "max_payload_bytes=1000"):
        assert part in str(cause), (part, str(cause))
    hits = {k: v for k, v in nonzero(runner.metrics).items() if "guard" in k}
    assert hits == {"actionjournal_guard_hits_total{guard=payload_bytes,level=fail}": 1}
    assert not [r for r in caplog.records if "payload_warn_bytes" in r.getMessage()]


class ManyCalls(Agent):
    def __init__(self, n: int) -> None:
        self.n = n

    @action(InputEvent)
    def handle(self, event, ctx):
        for i in range(self.n):
            ctx.durable_execute(service, f"call-{i}")
        crash_point()
        ctx.send_event(OutputEvent("done"))


def test_run_journal_length_warns_once_when_it_reaches_the_threshold(caplog):
    config = JournalConfig(run_records_warn=3, max_run_records=100)
    with caplog.at_level(logging.WARNING, logger="actionjournal.guards"):
        runner = run(ManyCalls(5), MemoryStore(), [("bob", 1)], config)
    assert runner.failure is None
    hits = {k: v for k, v in nonzero(runner.metrics).items() if "guard" in k}
    assert hits == {"actionjournal_guard_hits_total{guard=run_records,level=warn}": 1}
    (message,) = [r.getMessage() for r in caplog.records if "run_records_warn" in r.getMessage()]
    for part in ("key 'bob'", "seq 0", "action handle", "3 records", "call id", "=3"):
        assert part in message, (part, message)


def test_run_journal_length_fails_past_the_limit_also_after_a_restart():
    store = MemoryStore()
    config = JournalConfig(run_records_warn=2, max_run_records=4)
    runner = run(ManyCalls(5), store, [("bob", 1)], config)
    cause = runner.failure.__cause__
    assert isinstance(cause, RunJournalTooLongError)
    assert "would journal 5 records" in str(cause) and "journal.max_run_records=4" in str(cause)
    assert "key 'bob'" in str(cause) and "action handle" in str(cause)
    assert "was not run" in str(cause)
    assert len(store.entries) == 4  # the fifth record was refused
    assert CALLS == [f"call-{i}" for i in range(4)]  # the fifth call never ran: no room
    hits = {k: v for k, v in nonzero(runner.metrics).items() if "guard" in k}
    assert hits == {
        "actionjournal_guard_hits_total{guard=run_records,level=warn}": 1,
        "actionjournal_guard_hits_total{guard=run_records,level=fail}": 1,
    }
    # After a restart the run's recorded records count: it fails at the same place.
    again = run(ManyCalls(5), store, [("bob", 1)], config)
    assert isinstance(again.failure.__cause__, RunJournalTooLongError)
    assert again.metrics.value("actionjournal_calls_total", outcome="replayed") == 4
    assert len(store.entries) == 4
    assert CALLS == [f"call-{i}" for i in range(4)]  # nor after the restart


def test_guard_settings_are_validated_with_their_names():
    for name in ("payload_warn_bytes", "max_payload_bytes", "run_records_warn", "max_run_records"):
        with pytest.raises(ValidationError, match=name):
            JournalConfig(**{name: 0})
    defaults = JournalConfig()
    assert (defaults.payload_warn_bytes, defaults.max_payload_bytes) == (256 * 1024, 2 * 1024**2)
    assert (defaults.run_records_warn, defaults.max_run_records) == (10_240, 51_200)
