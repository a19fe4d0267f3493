"""What the continuous cleanup (``cleanup run``) did, as Prometheus metrics in a registry of
its own: rounds by result, what they deleted, what stays, when it last succeeded or failed.

The metrics are listed, with their meaning, in docs/operations.md ("Continuous cleanup").
A round is minutes apart from the next, so prometheus_client's own metric classes do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Info, start_http_server

if TYPE_CHECKING:
    from actionjournal.tools.cleanup.loop import RoundResult

ROUND_RESULTS = ("deleted", "nothing", "failed")
MAX_ERROR_CHARS = 500


class CleanupMetrics:
    """The metrics of one :class:`~actionjournal.tools.cleanup.CleanupLoop`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._rounds = Counter(
            "actionjournal_cleanup_rounds",
            "Cleanup rounds by result: deleted (records went), nothing (nothing may go yet), "
            "failed (the round logged why; the next one tries again)",
            ["result"],
            registry=r,
        )
        for result in ROUND_RESULTS:
            self._rounds.labels(result)
        self._records = Counter(
            "actionjournal_cleanup_records_deleted",
            "Records of the namespace and operator deleted from the journal",
            registry=r,
        )
        self._bytes = Counter(
            "actionjournal_cleanup_bytes_deleted",
            "Encoded bytes of the records deleted",
            registry=r,
        )
        self._runs = Counter(
            "actionjournal_cleanup_runs_deleted", "Completed runs whose records went", registry=r
        )
        self._records_kept = Gauge(
            "actionjournal_cleanup_records_kept",
            "Records of the namespace and operator the last successful round left in the journal",
            registry=r,
        )
        self._bytes_kept = Gauge(
            "actionjournal_cleanup_bytes_kept",
            "Encoded bytes of the records the last successful round left in the journal",
            registry=r,
        )
        self._last_success = Gauge(
            "actionjournal_cleanup_last_success_timestamp_seconds",
            "When the last round that did not fail ended (Unix time; 0: none yet)",
            registry=r,
        )
        self._last_error_at = Gauge(
            "actionjournal_cleanup_last_error_timestamp_seconds",
            "When the last failed round ended (Unix time; 0: none yet)",
            registry=r,
        )
        self._last_error = Info(
            "actionjournal_cleanup_last_error",
            "The error of the last failed round (label error; empty: none yet)",
            registry=r,
        )
        self._last_error.info({"error": ""})
        self._failing = Gauge(
            "actionjournal_cleanup_consecutive_failures",
            "Rounds failed in a row (0 after a round that did not fail): alert when it grows",
            registry=r,
        )
        self._seconds = Gauge(
            "actionjournal_cleanup_last_round_seconds",
            "How long the last round took (reading the journal, re-checking, deleting)",
            registry=r,
        )

    def record(self, result: RoundResult) -> None:
        self._rounds.labels(result.result).inc()
        self._seconds.set(result.seconds)
        if result.result == "failed":
            self._last_error_at.set(result.ended_at)
            self._last_error.info({"error": (result.error or "")[:MAX_ERROR_CHARS]})
            self._failing.inc()
            return
        self._records.inc(result.records_deleted)
        self._bytes.inc(result.bytes_deleted)
        self._runs.inc(result.runs_deleted)
        self._records_kept.set(result.records_kept)
        self._bytes_kept.set(result.bytes_kept)
        self._last_success.set(result.ended_at)
        self._failing.set(0)

    def value(self, name: str, **labels: str) -> float:
        """One sample by its exposed name, e.g. ``value("actionjournal_cleanup_rounds_total",
        result="deleted")``; 0.0 when it does not exist."""
        got = self.registry.get_sample_value(name, labels)
        return 0.0 if got is None else got

    def serve(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` on ``addr:port`` (0: a free port) from a daemon thread; returns
        the port."""
        server, _thread = start_http_server(port, addr, registry=self.registry)
        return int(server.server_address[1])
