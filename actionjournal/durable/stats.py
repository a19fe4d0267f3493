"""What the engine counts and times, exposed as Prometheus metrics in a registry of its own.

Every engine (a local runner, a Flink operator subtask) has one :class:`JournalMetrics`
with its own ``CollectorRegistry``, so nothing leaks between engines in one process and a
test can read exact values. A replayed call is counted as ``replayed`` and never as a fresh
execution, and only executed calls add a duration sample: replaying a result takes no time
and must not drag the latency histogram towards 0 ms.

Counting is on the path of every durable call, so it adds plain numbers under one lock,
and a Prometheus collector turns them into the samples prometheus_client's own ``Counter``
and ``Histogram`` would expose (names, help, labels, buckets and ``_created``; the exact
text is pinned by tests/unit/test_metrics.py). Their locks, one per value, cost more than
the rest of a durable call on the memory store.

The metrics are listed, with their meaning, in docs/operations.md ("Metrics"). They are
served over HTTP by :meth:`JournalMetrics.serve`, and inside a Flink job the counters are
mirrored into the operator's metric group by :class:`MetricGroupMirror` (the core does not
import Flink: the mirror takes any object shaped like a Flink ``MetricGroup``).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

CALL_OUTCOMES = ("executed", "replayed", "reconciled", "unknown", "diverged")
ACTION_OUTCOMES = ("executed", "replayed")
RUN_OUTCOMES = ("completed", "replayed", "failed", "dead_lettered")
ATTEMPT_RESULTS = ("succeeded", "retried", "failed")
RECOVERY_KINDS = ("scanned", "applied")
GUARDS = ("payload_bytes", "run_records")
GUARD_LEVELS = ("warn", "fail")

# Seconds. A journal append is a local fsync or a broker round trip; a call may be an LLM.
APPEND_BUCKETS: tuple[float, ...]
APPEND_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1)
APPEND_BUCKETS += (0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CALL_BUCKETS: tuple[float, ...]
CALL_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CALL_BUCKETS += (60.0, 120.0, 300.0)
RECOVERY_BUCKETS: tuple[float, ...]
RECOVERY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
RECOVERY_BUCKETS += (60.0,)

# The names of as_dict() (local runner ``counts``, stats files, the demo's report).
_LEGACY = {
    "executed": ("calls", "executed"),
    "replayed": ("calls", "replayed"),
    "reconciled": ("calls", "reconciled"),
    "unknown": ("calls", "unknown"),
    "diverged": ("calls", "diverged"),
    "actions_executed": ("actions", "executed"),
    "actions_replayed": ("actions", "replayed"),
}


@dataclass(frozen=True)
class _Family:
    """One metric as prometheus_client names it (a counter's name without ``_total``)."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()  # a histogram's upper bounds (+Inf implied); none: counter


CALLS = _Family(
    "actionjournal_calls",
    "Durable calls by what happened to them: executed (the function ran), replayed "
    "(the recorded outcome was returned), reconciled (a reconciler settled an unknown "
    "outcome), unknown (a call found started without outcome on recovery), diverged "
    "(the call differs from the journal)",
    ("outcome",),
)
CALL_SECONDS = _Family(
    "actionjournal_call_duration_seconds",
    "Wall time of executed durable calls (replayed and reconciled calls add no sample)",
    buckets=CALL_BUCKETS,
)
ACTIONS = _Family(
    "actionjournal_actions",
    "Action executions: executed (the action body ran and completed) or replayed "
    "(a completed action's memory updates and events re-applied from the journal)",
    ("outcome",),
)
ATTEMPTS = _Family(
    "actionjournal_call_attempts",
    "Attempts of durable calls (function invocations) by how they ended: succeeded, "
    "retried (failed; the retry policy tries again: CallAttemptFailed journaled) or "
    "failed (the call's final failure, journaled unless record_failures=False)",
    ("result",),
)
RETRIES = _Family(
    "actionjournal_call_retries",
    "Retries started: attempts made after a failed attempt, those resumed after a restart included",
)
BACKOFF_SECONDS = _Family(
    "actionjournal_call_backoff_seconds",
    "Seconds durable calls waited between attempts (after a restart: only what was left)",
)
RUNS = _Family(
    "actionjournal_runs",
    "Runs (one input of one key): completed (RunCompleted journaled now), replayed "
    "(the journal already held its RunCompleted), failed (the run failed the task, "
    "on_run_failure='fail' or a try of 'retry-then-dead-letter') or dead_lettered (a "
    "final RunFailed journaled now, the input sent to the dead letters)",
    ("outcome",),
)
APPEND_SECONDS = _Family(
    "actionjournal_journal_append_seconds",
    "Time until an append was durable (encode, write, commit or ack), per store backend",
    ("backend",),
    APPEND_BUCKETS,
)
APPEND_BYTES = _Family(
    "actionjournal_journal_append_bytes",
    "Encoded bytes of the records appended, per store backend",
    ("backend",),
)
APPEND_ERRORS = _Family(
    "actionjournal_journal_append_errors",
    "Appends that failed (the record is not kept), per store backend",
    ("backend",),
)
RECOVERY_SECONDS = _Family(
    "actionjournal_recovery_seconds",
    "Time to read and index one key's journal after a (re)start, per store backend",
    ("backend",),
    RECOVERY_BUCKETS,
)
RECOVERY_RECORDS = _Family(
    "actionjournal_recovery_records",
    "Journal records read during recovery: scanned (the key's records after its "
    "marker) and applied (those indexed for replay: current epoch, runs not yet done)",
    ("kind",),
)
FOREIGN_RECORDS = _Family(
    "actionjournal_foreign_records",
    "Records in the journal that actionjournal did not write (no record envelope, no "
    "actionjournal headers), skipped by recovery reads with a warning",
)
GUARD_HITS = _Family(
    "actionjournal_guard_hits",
    "Guard thresholds crossed: guard payload_bytes (one encoded value) or run_records "
    "(records of one run), level warn (logged) or fail (refused with an error)",
    ("guard", "level"),
)
RUN_WAKEUPS = _Family(
    "actionjournal_run_wakeups",
    "Flink operator: finished runs reported to the operator as they finished, which "
    "emits them at once",
)
RUN_POLLS = _Family(
    "actionjournal_run_polls",
    "Flink operator: timers that looked at a key's run and found it still running "
    "(each costs a round trip to the Python worker)",
)
BUDGET_SPENT = _Family(
    "actionjournal_budget_spent",
    "What agent loops with a budget spent, per resource: rounds (model answers) and tokens "
    "(the model's reported usage); counted when the model answers, not when an answer is "
    "replayed",
    ("resource",),
)
BUDGET_EXHAUSTED = _Family(
    "actionjournal_budget_exhausted",
    "Agent loops stopped (or given a final round) by their budget, per resource that ran "
    "out: rounds, tokens or wall_time",
    ("resource",),
)
BUDGET_RESOURCES = ("rounds", "tokens", "wall_time")
TIMERS = _Family(
    "actionjournal_timers",
    "Timers by what happened to them: scheduled and cancelled (by actions that ran, not "
    "replayed ones), fired (a run delivered the timer's event)",
    ("event",),
)
SIGNALS = _Family(
    "actionjournal_signals",
    "Signals by what happened to them: expected (by actions that ran, not replayed ones), "
    "received (an answer came first), timed_out (the deadline passed first), late (an "
    "answer after the signal was answered or timed out: journaled, nothing runs)",
    ("event",),
)
WAIT_EVENTS = {
    "timers": ("scheduled", "cancelled", "fired"),
    "signals": ("expected", "received", "timed_out", "late"),
}
# In the order they are exposed.
FAMILIES: tuple[_Family, ...]
FAMILIES = (CALLS, CALL_SECONDS, ACTIONS, ATTEMPTS, RETRIES, BACKOFF_SECONDS, RUNS)
FAMILIES += (APPEND_SECONDS, APPEND_BYTES, APPEND_ERRORS, RECOVERY_SECONDS, RECOVERY_RECORDS)
FAMILIES += (FOREIGN_RECORDS, GUARD_HITS, RUN_WAKEUPS, RUN_POLLS, BUDGET_SPENT, BUDGET_EXHAUSTED)
FAMILIES += (TIMERS, SIGNALS)
# A histogram's ``le`` label values, +Inf last, spelled as prometheus_client spells them.
_LE: dict[_Family, list[str]] = {
    f: [floatToGoString(b) for b in (*f.buckets, math.inf)]  # type: ignore[no-untyped-call]
    for f in FAMILIES
    if f.buckets
}


class _Count:
    """One counter series."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()


class _Spread:
    """One histogram series: a count per bucket (the last one +Inf) and the sum."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        """Called under the metrics' lock. A bucket holds values up to its bound, inclusive."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class JournalMetrics(Collector):
    """The metrics of one engine. Thread-safe: runs and calls report from worker threads."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._lock = threading.Lock()
        self._series: dict[_Family, dict[tuple[str, ...], _Count | _Spread]] = {
            family: {} for family in FAMILIES
        }
        # Every label value exists from the start, so dashboards and tests see zeros.
        self._call = {o: self._count(CALLS, o) for o in CALL_OUTCOMES}
        self._call_seconds = self._spread(CALL_SECONDS)
        self._action = {o: self._count(ACTIONS, o) for o in ACTION_OUTCOMES}
        self._attempt = {o: self._count(ATTEMPTS, o) for o in ATTEMPT_RESULTS}
        self._retries = self._count(RETRIES)
        self._backoff = self._count(BACKOFF_SECONDS)
        self._run = {o: self._count(RUNS, o) for o in RUN_OUTCOMES}
        self._recovery = {k: self._count(RECOVERY_RECORDS, k) for k in RECOVERY_KINDS}
        self._foreign = self._count(FOREIGN_RECORDS)
        self._guard = {(g, v): self._count(GUARD_HITS, g, v) for g in GUARDS for v in GUARD_LEVELS}
        self._wakeups = self._count(RUN_WAKEUPS)
        self._polls = self._count(RUN_POLLS)
        self._spent = {r: self._count(BUDGET_SPENT, r) for r in BUDGET_RESOURCES[:2]}
        self._exhausted = {r: self._count(BUDGET_EXHAUSTED, r) for r in BUDGET_RESOURCES}
        self._waits = {
            (kind, e): self._count(TIMERS if kind == "timers" else SIGNALS, e)
            for kind, events in WAIT_EVENTS.items()
            for e in events
        }
        self._backends: dict[str, tuple[_Spread, _Count, _Count]] = {}
        self._recovery_seconds: dict[str, _Spread] = {}
        self._executed, self._succeeded = self._call["executed"], self._attempt["succeeded"]
        self.registry.register(self)

    def _count(self, family: _Family, *labels: str) -> _Count:
        series = self._series[family][labels] = _Count()
        return series

    def _spread(self, family: _Family, *labels: str) -> _Spread:
        series = self._series[family][labels] = _Spread(family.buckets)
        return series

    # -- reporting --------------------------------------------------------------------

    def call(self, outcome: str, n: int = 1) -> None:
        with self._lock:
            self._call[outcome].value += n

    def call_executed(self, seconds: float, succeeded: bool = False) -> None:
        """The function of a durable call ran (returned or raised) in ``seconds``;
        ``succeeded``: its attempt counts as succeeded too."""
        with self._lock:
            self._executed.value += 1
            self._call_seconds.observe(seconds)
            if succeeded:
                self._succeeded.value += 1

    def attempt(self, result: str) -> None:
        """An attempt of a durable call ended: ``succeeded``, ``retried`` or ``failed``."""
        with self._lock:
            self._attempt[result].value += 1

    def retry(self, waited: float) -> None:
        """A retry starts after waiting ``waited`` seconds of backoff."""
        with self._lock:
            self._retries.value += 1
            self._backoff.value += waited

    def action(self, outcome: str) -> None:
        with self._lock:
            self._action[outcome].value += 1

    def run(self, outcome: str) -> None:
        with self._lock:
            self._run[outcome].value += 1

    def run_woken(self) -> None:
        with self._lock:
            self._wakeups.value += 1

    def run_polled(self) -> None:
        with self._lock:
            self._polls.value += 1

    def appended(self, backend: str, nbytes: int, seconds: float) -> None:
        with self._lock:
            series = self._backends.get(backend) or self._backend(backend)
            series[0].observe(seconds)
            series[1].value += nbytes

    def append_failed(self, backend: str) -> None:
        with self._lock:
            (self._backends.get(backend) or self._backend(backend))[2].value += 1

    def _backend(self, backend: str) -> tuple[_Spread, _Count, _Count]:
        """The series of a backend's first append (called under the lock)."""
        series = self._backends[backend] = (
            self._spread(APPEND_SECONDS, backend),
            self._count(APPEND_BYTES, backend),
            self._count(APPEND_ERRORS, backend),
        )
        return series

    def recovered(self, backend: str, seconds: float, scanned: int, applied: int) -> None:
        with self._lock:
            spread = self._recovery_seconds.get(backend)
            if spread is None:
                spread = self._recovery_seconds[backend] = self._spread(RECOVERY_SECONDS, backend)
            spread.observe(seconds)
            self._recovery["scanned"].value += scanned
            self._recovery["applied"].value += applied

    def foreign(self, n: int) -> None:
        """A recovery read skipped ``n`` foreign records."""
        with self._lock:
            self._foreign.value += n

    def guard_hit(self, guard: str, level: str) -> None:
        with self._lock:
            self._guard[(guard, level)].value += 1

    def budget_spent(self, rounds: int, tokens: int) -> None:
        with self._lock:
            self._spent["rounds"].value += rounds
            self._spent["tokens"].value += tokens

    def budget_exhausted(self, resource: str) -> None:
        with self._lock:
            self._exhausted[resource].value += 1

    def wait(self, kind: str, event: str) -> None:
        """A timer (``kind`` ``timers``) or signal (``signals``) ``event`` (WAIT_EVENTS)."""
        with self._lock:
            self._waits[(kind, event)].value += 1

    def add(self, name: str, n: int = 1) -> None:
        """Count by the legacy name (``executed``, ``actions_replayed``, ...)."""
        family, label = _LEGACY[name]
        with self._lock:
            (self._call if family == "calls" else self._action)[label].value += n

    # -- reading ----------------------------------------------------------------------

    def value(self, name: str, **labels: str) -> float:
        """One sample by its exposed name, e.g. ``value("actionjournal_calls_total",
        outcome="executed")`` or ``value("actionjournal_journal_append_seconds_count",
        backend="sqlite")``; 0.0 when the labelled series does not exist yet."""
        got = self.registry.get_sample_value(name, labels)
        return 0.0 if got is None else got

    def as_dict(self) -> dict[str, int]:
        """The call and action counts under their legacy names."""
        with self._lock:
            return {
                name: int((self._call if family == "calls" else self._action)[label].value)
                for name, (family, label) in _LEGACY.items()
            }

    def counter_samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        """``(name, labels, value)`` of every counter series (``_total`` names)."""
        with self._lock:
            samples = [
                (f"{family.name}_total", dict(zip(family.labels, labels, strict=True)), s.value)
                for family, children in self._series.items()
                if not family.buckets
                for labels, s in children.items()
                if isinstance(s, _Count)
            ]
        yield from samples

    def describe(self) -> Iterable[Metric]:
        """The metric names, for the registry's check that no two collectors share one."""
        return [Metric(f.name, f.help, "histogram" if f.buckets else "counter") for f in FAMILIES]

    def collect(self) -> Iterable[Metric]:
        """The samples prometheus_client's ``Counter`` and ``Histogram`` would expose."""
        # prometheus_client's switch for ``_created`` samples (PROMETHEUS_DISABLE_CREATED_SERIES).
        created = getattr(prometheus_metrics, "_use_created", True)
        with self._lock:
            snapshot = [
                (family, [(labels, _state(s)) for labels, s in children.items()])
                for family, children in self._series.items()
            ]
        for family, children in snapshot:
            metric = Metric(family.name, family.help, "histogram" if family.buckets else "counter")
            for labels, (values, total, since) in children:
                named = dict(zip(family.labels, labels, strict=True))
                if not family.buckets:
                    metric.add_sample(f"{family.name}_total", named, total)
                else:
                    cumulative = 0.0
                    for le, n in zip(_LE[family], values, strict=True):
                        cumulative += n
                        metric.add_sample(f"{family.name}_bucket", {**named, "le": le}, cumulative)
                    metric.add_sample(f"{family.name}_count", named, cumulative)
                    metric.add_sample(f"{family.name}_sum", named, total)
                if created:
                    metric.add_sample(f"{family.name}_created", named, since)
            yield metric

    def serve(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` over HTTP on ``addr:port`` (0: a free port); returns the port.

        The server runs in a daemon thread for the life of the process.
        """
        server, _thread = start_http_server(port, addr, registry=self.registry)
        return server.server_address[1]


def _state(series: _Count | _Spread) -> tuple[list[int], float, float]:
    """(bucket counts, value or sum, created) of a series, copied under the lock."""
    if isinstance(series, _Count):
        return [], series.value, series.created
    return list(series.counts), series.sum, series.created


class MetricGroupMirror:
    """Mirrors the counters of a :class:`JournalMetrics` into a Flink ``MetricGroup``.

    ``group`` is anything with ``add_group(name, value)`` and ``counter(name)`` returning
    an object with ``inc(n)``, as PyFlink's ``runtime_context.get_metrics_group()``. Flink
    counters may only be touched on the task's processing thread, while calls are counted
    on worker threads; so :meth:`sync` is called from the processing thread and adds what
    each counter gained since the last sync. A Prometheus label becomes a key/value group:
    ``actionjournal_calls_total{outcome="replayed"}`` is counter ``calls`` in group
    ``actionjournal.outcome.replayed``.
    """

    def __init__(self, metrics: JournalMetrics, group: Any) -> None:
        self.metrics = metrics
        self.group = group.add_group("actionjournal")
        self._counters: dict[tuple[Any, ...], Any] = {}
        self._seen: dict[tuple[Any, ...], float] = {}

    def sync(self) -> None:
        for name, labels, value in self.metrics.counter_samples():
            key = (name, *sorted(labels.items()))
            delta = int(value - self._seen.get(key, 0.0))
            if delta <= 0:
                continue
            self._seen[key] = self._seen.get(key, 0.0) + delta
            counter = self._counters.get(key)
            if counter is None:
                group = self.group
                for label, label_value in sorted(labels.items()):
                    group = group.add_group(label, label_value)
                short = name.removeprefix("actionjournal_").removesuffix("_total")
                counter = self._counters[key] = group.counter(short)
            counter.inc(delta)
