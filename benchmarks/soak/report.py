"""The soak's results: benchmarks/results/soak/latest.json, its plots, and its closing line
``soak: inputs=N outputs=N duplicated=0 lost=0 ...``."""

from __future__ import annotations

import json
import os
import platform
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.soak import analysis
from benchmarks.soak.settings import FaultRecord, Settings

RESULTS = Path(__file__).resolve().parents[1] / "results" / "soak"


class Verdict(msgspec.Struct):
    """What the final reads found."""

    inputs: int
    outputs: int
    duplicated_outputs: list[int]
    duplicated_calls: list[str]
    lost: list[int]
    calls: int
    keys: int

    @property
    def duplicated(self) -> int:
        return len(self.duplicated_outputs) + len(self.duplicated_calls)


def verdict(
    sent: Mapping[int, float],
    output_counts: Counter[int],
    call_counts: Mapping[str, int],
    keys: int,
) -> Verdict:
    from benchmarks.soak.load import customer

    return Verdict(
        inputs=len(sent),
        outputs=len(output_counts),
        duplicated_outputs=sorted(i for i, n in output_counts.items() if n > 1),
        duplicated_calls=sorted(c for c, n in call_counts.items() if n > 1),
        lost=sorted(set(sent) - set(output_counts)),
        calls=sum(call_counts.values()),
        keys=len({customer(i, keys) for i in sent}),
    )


def results(
    *,
    settings: Settings,
    load_started_at: float,
    ended_at: float,
    sessions: Sequence[tuple[float, float]],
    found: Verdict,
    sent: Mapping[int, float],
    committed: Mapping[int, float],
    processed: Mapping[int, float],
    samples: Sequence[Mapping[str, Any]],
    faults: Sequence[FaultRecord],
    load: Mapping[str, str],
    cleanup_rounds: Mapping[str, int],
) -> dict[str, Any]:
    steady_from = load_started_at + settings.warmup_s
    limit, recovered = analysis.recovery(faults, sent, committed, ended_at, steady_from)
    slopes = analysis.rss_slopes(samples, faults, settings.warmup_s)
    latencies = {
        kind: [arrivals[i] - t for i, t in sent.items() if i in arrivals]
        for kind, arrivals in (("committed", committed), ("processed", processed))
    }
    journal = [s["journal"]["disk_bytes"] for s in samples]
    warm = [
        s["journal"]["disk_bytes"] for s in samples if s["t"] >= load_started_at + settings.warmup_s
    ]
    first_sent, last_sent = min(sent.values(), default=0), max(sent.values(), default=0)
    summary = {
        "inputs": found.inputs,
        "outputs": found.outputs,
        "duplicated": found.duplicated,
        "lost": len(found.lost),
        "calls": found.calls,
        "keys": found.keys,
        "rate_target_per_s": settings.rate,
        "rate_sent_per_s": round(found.inputs / max(1e-9, last_sent - first_sent), 2),
        "latency_s": {
            f"{kind}_{q}": analysis.rounded(analysis.percentile(values, p))
            for kind, values in latencies.items()
            for q, p in (("p50", 0.5), ("p99", 0.99))
        },
        "normal_p99_s": limit,
        "recovery": recovered,
        "rss": slopes,
        "rss_slope_limit_mb_per_min": settings.rss_slope_limit or None,
        "journal_bytes": {
            "start": journal[0] if journal else None,
            "after_warmup": warm[0] if warm else None,
            "max": max(journal, default=None),
            "end": journal[-1] if journal else None,
        },
        "cpu_ms_per_order": analysis.cpu_per_order(samples, found.inputs),
        "checkpoint_bytes_end": samples[-1].get("checkpoint", {}).get("state_bytes")
        if samples
        else None,
        "cleanup_rounds": dict(cleanup_rounds),
    }
    return {
        "load_started_at": load_started_at,
        "ended_at": ended_at,
        "sessions": [list(s) for s in sessions],
        "machine": f"{platform.system()} {platform.release()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "load": dict(load),
        "settings": msgspec.to_builtins(settings),
        "summary": summary,
        "verdict": msgspec.to_builtins(found),
        "faults": [msgspec.to_builtins(f) for f in faults],
        "windows": analysis.windows(sent, committed, processed, load_started_at, ended_at),
        "samples": list(samples),
    }


def climbing(summary: Mapping[str, Any]) -> list[str]:
    """TaskManagers whose RSS slope after warm-up is above the limit (none without one)."""
    limit = summary["rss_slope_limit_mb_per_min"]
    return sorted(
        name
        for name, entry in summary["rss"].items()
        if limit and (entry.get("mb_per_min") or 0) > limit
    )


def closing_line(found: Verdict, summary: Mapping[str, Any], minutes: float) -> str:
    recovery = ",".join(
        f"{r['kind']}:{_s(r['recovery_s'])}s(gap {_s(r['output_gap_s'])}s)"
        for r in summary["recovery"]
    )
    rss = ",".join(
        f"{name}:{_signed(entry.get('mb_per_min'))}"
        for name, entry in sorted(summary["rss"].items())
    )
    journal = summary["journal_bytes"]
    latency = summary["latency_s"]
    return (
        f"soak: inputs={found.inputs} outputs={found.outputs} duplicated={found.duplicated} "
        f"lost={len(found.lost)} minutes={minutes:g} rate={summary['rate_sent_per_s']}/s "
        f"keys={found.keys} calls={found.calls} "
        f"latency_p50/p99={_s(latency['committed_p50'])}/{_s(latency['committed_p99'])}s "
        f"recovery={recovery or 'no faults'} rss_slope_mb_per_min={rss or 'n/a'} "
        f"journal_bytes_start={journal['start']} journal_bytes_after_warmup="
        f"{journal['after_warmup']} journal_bytes_end={journal['end']} (max {journal['max']})"
    )


def write(result: Mapping[str, Any], directory: Path = RESULTS) -> list[Path]:
    from benchmarks.soak.plots import write_plots

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "latest.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return [path, *write_plots(result, directory)]


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"
