"""What the engine counts and times, as Prometheus metrics in a registry of its own.

Every engine (a local runner, a Flink operator subtask) has one :class:`JournalMetrics`
with its own ``CollectorRegistry``, so nothing leaks between engines in one process and a
test can read exact values. A replayed call is counted as ``replayed`` and never as a fresh
execution, and only executed calls add a duration sample: replaying a result takes no time
and must not drag the latency histogram towards 0 ms.

The metrics are listed, with their meaning, in docs/operations.md ("Metrics"). They are
served over HTTP by :meth:`JournalMetrics.serve`, and inside a Flink job the counters are
mirrored into the operator's metric group by :class:`MetricGroupMirror` (the core does not
import Flink: the mirror takes any object shaped like a Flink ``MetricGroup``).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

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


class JournalMetrics:
    """The metrics of one engine. Thread-safe: runs and calls report from worker threads."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "actionjournal_calls",
            "Durable calls by what happened to them: executed (the function ran), replayed "
            "(the recorded outcome was returned), reconciled (a reconciler settled an unknown "
            "outcome), unknown (a call found started without outcome on recovery), diverged "
            "(the call differs from the journal)",
            ["outcome"],
            registry=r,
        )
        self.call_seconds = Histogram(
            "actionjournal_call_duration_seconds",
            "Wall time of executed durable calls (replayed and reconciled calls add no sample)",
            buckets=CALL_BUCKETS,
            registry=r,
        )
        self.actions = Counter(
            "actionjournal_actions",
            "Action executions: executed (the action body ran and completed) or replayed "
            "(a completed action's memory updates and events re-applied from the journal)",
            ["outcome"],
            registry=r,
        )
        self.attempts = Counter(
            "actionjournal_call_attempts",
            "Attempts of durable calls (function invocations) by how they ended: succeeded, "
            "retried (failed; the retry policy tries again: CallAttemptFailed journaled) or "
            "failed (the call's final failure, journaled unless record_failures=False)",
            ["result"],
            registry=r,
        )
        self.retries = Counter(
            "actionjournal_call_retries",
            "Retries started: attempts made after a failed attempt, those resumed after a "
            "restart included",
            registry=r,
        )
        self.backoff_seconds = Counter(
            "actionjournal_call_backoff_seconds",
            "Seconds durable calls waited between attempts (after a restart: only what was left)",
            registry=r,
        )
        self.runs = Counter(
            "actionjournal_runs",
            "Runs (one input of one key): completed (RunCompleted journaled now), replayed "
            "(the journal already held its RunCompleted), failed (the run failed the task, "
            "on_run_failure='fail' or a try of 'retry-then-dead-letter') or dead_lettered (a "
            "final RunFailed journaled now, the input sent to the dead letters)",
            ["outcome"],
            registry=r,
        )
        self.append_seconds = Histogram(
            "actionjournal_journal_append_seconds",
            "Time until an append was durable (encode, write, commit or ack), per store backend",
            ["backend"],
            buckets=APPEND_BUCKETS,
            registry=r,
        )
        self.append_bytes = Counter(
            "actionjournal_journal_append_bytes",
            "Encoded bytes of the records appended, per store backend",
            ["backend"],
            registry=r,
        )
        self.append_errors = Counter(
            "actionjournal_journal_append_errors",
            "Appends that failed (the record is not kept), per store backend",
            ["backend"],
            registry=r,
        )
        self.recovery_seconds = Histogram(
            "actionjournal_recovery_seconds",
            "Time to read and index one key's journal after a (re)start, per store backend",
            ["backend"],
            buckets=RECOVERY_BUCKETS,
            registry=r,
        )
        self.recovery_records = Counter(
            "actionjournal_recovery_records",
            "Journal records read during recovery: scanned (the key's records after its "
            "marker) and applied (those indexed for replay: current epoch, runs not yet done)",
            ["kind"],
            registry=r,
        )
        self.foreign_records = Counter(
            "actionjournal_foreign_records",
            "Records in the journal that actionjournal did not write (no record envelope, no "
            "actionjournal headers), skipped by recovery reads with a warning",
            registry=r,
        )
        self.guard_hits = Counter(
            "actionjournal_guard_hits",
            "Guard thresholds crossed: guard payload_bytes (one encoded value) or run_records "
            "(records of one run), level warn (logged) or fail (refused with an error)",
            ["guard", "level"],
            registry=r,
        )
        self.run_wakeups = Counter(
            "actionjournal_run_wakeups",
            "Flink operator: finished runs reported to the operator as they finished, which "
            "emits them at once",
            registry=r,
        )
        self.run_polls = Counter(
            "actionjournal_run_polls",
            "Flink operator: timers that looked at a key's run and found it still running "
            "(each costs a round trip to the Python worker)",
            registry=r,
        )
        # Every label value exists from the start, so dashboards and tests see zeros.
        self._call = {o: self.calls.labels(o) for o in CALL_OUTCOMES}
        self._action = {o: self.actions.labels(o) for o in ACTION_OUTCOMES}
        self._run = {o: self.runs.labels(o) for o in RUN_OUTCOMES}
        self._attempt = {o: self.attempts.labels(o) for o in ATTEMPT_RESULTS}
        self._recovery = {k: self.recovery_records.labels(k) for k in RECOVERY_KINDS}
        self._guard = {(g, v): self.guard_hits.labels(g, v) for g in GUARDS for v in GUARD_LEVELS}
        self._backends: dict[str, tuple[Any, Any, Any]] = {}
        # Every counter series, for mirroring: (exposed name, labels, child).
        self._series: list[tuple[str, dict[str, str], Any]] = []
        for name, children, label_names in (
            ("calls", self._call, ("outcome",)),
            ("actions", self._action, ("outcome",)),
            ("runs", self._run, ("outcome",)),
            ("call_attempts", self._attempt, ("result",)),
            ("recovery_records", self._recovery, ("kind",)),
            ("guard_hits", self._guard, ("guard", "level")),
        ):
            for label_values, child in children.items():
                values = label_values if isinstance(label_values, tuple) else (label_values,)
                self._series.append(
                    (
                        f"actionjournal_{name}_total",
                        dict(zip(label_names, values, strict=True)),
                        child,
                    )
                )
        self._series.append(("actionjournal_foreign_records_total", {}, self.foreign_records))
        self._series.append(("actionjournal_call_retries_total", {}, self.retries))
        self._series.append(("actionjournal_call_backoff_seconds_total", {}, self.backoff_seconds))
        self._series.append(("actionjournal_run_wakeups_total", {}, self.run_wakeups))
        self._series.append(("actionjournal_run_polls_total", {}, self.run_polls))
        self._lock = threading.Lock()

    # -- reporting --------------------------------------------------------------------

    def call(self, outcome: str, n: int = 1) -> None:
        self._call[outcome].inc(n)

    def call_executed(self, seconds: float) -> None:
        """The function of a durable call ran (returned or raised) in ``seconds``."""
        self._call["executed"].inc()
        self.call_seconds.observe(seconds)

    def attempt(self, result: str) -> None:
        """An attempt of a durable call ended: ``succeeded``, ``retried`` or ``failed``."""
        self._attempt[result].inc()

    def retry(self, waited: float) -> None:
        """A retry starts after waiting ``waited`` seconds of backoff."""
        self.retries.inc()
        self.backoff_seconds.inc(waited)

    def action(self, outcome: str) -> None:
        self._action[outcome].inc()

    def run(self, outcome: str) -> None:
        self._run[outcome].inc()

    def run_woken(self) -> None:
        self.run_wakeups.inc()

    def run_polled(self) -> None:
        self.run_polls.inc()

    def appended(self, backend: str, nbytes: int, seconds: float) -> None:
        children = self._backends.get(backend) or self._backend(backend)
        children[0].observe(seconds)
        children[1].inc(nbytes)

    def append_failed(self, backend: str) -> None:
        children = self._backends.get(backend) or self._backend(backend)
        children[2].inc()

    def _backend(self, backend: str) -> tuple[Any, Any, Any]:
        with self._lock:
            children = self._backends.get(backend)
            if children is None:
                children = self._backends[backend] = (
                    self.append_seconds.labels(backend),
                    self.append_bytes.labels(backend),
                    self.append_errors.labels(backend),
                )
                labels = {"backend": backend}
                self._series.append(
                    ("actionjournal_journal_append_bytes_total", labels, children[1])
                )
                self._series.append(
                    ("actionjournal_journal_append_errors_total", labels, children[2])
                )
            return children

    def recovered(self, backend: str, seconds: float, scanned: int, applied: int) -> None:
        self.recovery_seconds.labels(backend).observe(seconds)
        self._recovery["scanned"].inc(scanned)
        self._recovery["applied"].inc(applied)

    def guard_hit(self, guard: str, level: str) -> None:
        self._guard[(guard, level)].inc()

    def add(self, name: str, n: int = 1) -> None:
        """Count by the legacy name (``executed``, ``actions_replayed``, ...)."""
        family, label = _LEGACY[name]
        (self._call if family == "calls" else self._action)[label].inc(n)

    # -- reading ----------------------------------------------------------------------

    def value(self, name: str, **labels: str) -> float:
        """One sample by its exposed name, e.g. ``value("actionjournal_calls_total",
        outcome="executed")`` or ``value("actionjournal_journal_append_seconds_count",
        backend="sqlite")``; 0.0 when the labelled series does not exist yet."""
        got = self.registry.get_sample_value(name, labels)
        return 0.0 if got is None else got

    def as_dict(self) -> dict[str, int]:
        """The call and action counts under their legacy names."""
        return {
            name: int((self._call if family == "calls" else self._action)[label]._value.get())
            for name, (family, label) in _LEGACY.items()
        }

    def counter_samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        """``(name, labels, value)`` of every counter series (``_total`` names)."""
        for name, labels, child in list(self._series):
            yield name, labels, child._value.get()

    def serve(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` over HTTP on ``addr:port`` (0: a free port); returns the port.

        The server runs in a daemon thread for the life of the process.
        """
        server, _thread = start_http_server(port, addr, registry=self.registry)
        return server.server_address[1]


# The metrics of the engine whose RunWriter is appending in this context (see note_append).
appending: contextvars.ContextVar[JournalMetrics | None] = contextvars.ContextVar(
    "actionjournal_appending", default=None
)


def note_append(backend: str, nbytes: int, started: float) -> None:
    """A store's hook, called when an append is durable: ``nbytes`` encoded bytes, ``started``
    the ``time.perf_counter()`` at which the append began. Counted for the engine appending."""
    metrics = appending.get()
    if metrics is not None:
        metrics.appended(backend, nbytes, time.perf_counter() - started)


# The metrics of the engine whose recovery is reading in this context (see note_foreign).
reading: contextvars.ContextVar[JournalMetrics | None] = contextvars.ContextVar(
    "actionjournal_reading", default=None
)


def note_foreign(n: int) -> None:
    """A store's hook: its recovery read skipped ``n`` foreign records (counted for the engine
    reading)."""
    metrics = reading.get()
    if metrics is not None:
        metrics.foreign_records.inc(n)


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
