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


_TOTALS = {  # counters of what successful rounds did: attribute of RoundResult -> help
    "records_deleted": "Records of the namespace and operator deleted from the journal",
    "bytes_deleted": "Encoded bytes of the records deleted",
    "runs_deleted": "Completed runs whose records went",
}
_GAUGES = {
    "records_kept": "Records of the namespace and operator the last successful round left",
    "bytes_kept": "Encoded bytes of the records the last successful round left",
    "last_success_timestamp_seconds": "When the last round that did not fail ended (Unix "
    "time; 0: none yet)",
    "last_error_timestamp_seconds": "When the last failed round ended (Unix time; 0: none yet)",
    "consecutive_failures": "Rounds failed in a row (0 after a round that did not fail): alert "
    "when it grows",
    "last_round_seconds": "How long the last round took (reading the journal, re-checking, "
    "deleting)",
}


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
        self._totals = {
            name: Counter(f"actionjournal_cleanup_{name}", text, registry=r)
            for name, text in _TOTALS.items()
        }
        self._gauges = {
            name: Gauge(f"actionjournal_cleanup_{name}", text, registry=r)
            for name, text in _GAUGES.items()
        }
        self._last_error = Info(
            "actionjournal_cleanup_last_error",
            "The error of the last failed round (label error; empty: none yet)",
            registry=r,
        )
        self._last_error.info({"error": ""})

    def record(self, result: RoundResult) -> None:
        self._rounds.labels(result.result).inc()
        gauges = self._gauges
        gauges["last_round_seconds"].set(result.seconds)
        if result.result == "failed":
            gauges["last_error_timestamp_seconds"].set(result.ended_at)
            gauges["consecutive_failures"].inc()
            self._last_error.info({"error": (result.error or "")[:MAX_ERROR_CHARS]})
            return
        for name, counter in self._totals.items():
            counter.inc(getattr(result, name))
        gauges["records_kept"].set(result.records_kept)
        gauges["bytes_kept"].set(result.bytes_kept)
        gauges["last_success_timestamp_seconds"].set(result.ended_at)
        gauges["consecutive_failures"].set(0)

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
