"""From what the soak recorded to its figures: throughput and latency per window, recovery
per fault, RSS slopes after warm-up, the journal's and checkpoints' sizes.

Latency is end to end: from an order's send time (its input record's timestamp) to the
moment a watcher first saw its result, ``committed`` (a ``read_committed`` consumer, after
the checkpoint that commits the sink's transaction) or ``processed`` (``read_uncommitted``:
when the agent wrote it).

A fault's **recovery** is the time from the kill until the job is back to normal: the last
moment after the kill at which some order sent more than ``L`` earlier still had no
committed result, before a ``HOLD_S`` span in which every order was committed within ``L``
(or before the next fault), where ``L`` is the committed p99 latency of the orders sent after
warm-up (the start-up's catch-up left out) and committed before the first fault. 0 when the
fault never held an order back longer than that; a later slowdown (the machine's load), after
the job had caught up, is not the fault's. ``output_gap_s`` is the longest time without
any committed result after the kill.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.soak.settings import FaultRecord

WINDOW_S = 10.0
STEP_S = 0.5
HOLD_S = 30.0
"""Caught up this long (three checkpoints of the soak), a job has recovered."""


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def windows(
    sent: Mapping[int, float],
    committed: Mapping[int, float],
    processed: Mapping[int, float],
    start: float,
    end: float,
) -> list[dict[str, Any]]:
    """Per ``WINDOW_S`` from ``start``: inputs/s (by send time), committed outputs/s (by
    arrival), p50/p99 latency of the results that arrived in the window."""
    count = max(1, int((end - start) // WINDOW_S) + 1)
    inputs = [0] * count
    outputs = [0] * count
    latencies: dict[str, list[list[float]]] = {
        "committed": [[] for _ in range(count)],
        "processed": [[] for _ in range(count)],
    }
    for t in sent.values():
        if start <= t < start + count * WINDOW_S:
            inputs[int((t - start) // WINDOW_S)] += 1
    for kind, arrivals in (("committed", committed), ("processed", processed)):
        for order_id, at in arrivals.items():
            if order_id not in sent or not start <= at < start + count * WINDOW_S:
                continue
            i = int((at - start) // WINDOW_S)
            latencies[kind][i].append(at - sent[order_id])
            if kind == "committed":
                outputs[i] += 1
    rows = []
    for i in range(count):
        row: dict[str, Any] = {
            "t": round(start + i * WINDOW_S, 3),
            "inputs_per_s": inputs[i] / WINDOW_S,
            "outputs_per_s": outputs[i] / WINDOW_S,
        }
        for kind, values in latencies.items():
            row[f"{kind}_p50_s"] = rounded(percentile(values[i], 0.5))
            row[f"{kind}_p99_s"] = rounded(percentile(values[i], 0.99))
        rows.append(row)
    return rows


def recovery(
    faults: Sequence[FaultRecord],
    sent: Mapping[int, float],
    committed: Mapping[int, float],
    end: float,
    steady_from: float | None = None,
) -> tuple[float | None, list[dict[str, Any]]]:
    """The normal latency ``L`` and, per fault, its recovery and output gap (module doc);
    ``L`` from the orders sent from ``steady_from`` on, all of them if none was."""
    first = min((f.wall for f in faults), default=end)
    before = [committed[i] - t for i, t in sent.items() if i in committed and committed[i] < first]
    steady = [
        committed[i] - t
        for i, t in sent.items()
        if steady_from is not None and t >= steady_from and i in committed and committed[i] < first
    ]
    before = steady or before
    limit = percentile(before, 0.99)
    ordered = sorted(sent.items(), key=lambda item: item[1])
    times = [t for _, t in ordered]
    # latest[k]: the latest commit among the first k + 1 orders sent (inf: one never came)
    latest, high = [], 0.0
    for order_id, _ in ordered:
        high = max(high, committed.get(order_id, float("inf")))
        latest.append(high)
    arrivals = sorted(committed.values())
    found = []
    for n, fault in enumerate(sorted(faults, key=lambda f: f.wall)):
        until = faults[n + 1].wall if n + 1 < len(faults) else end
        late_until = on_time_since = None
        if limit is not None:
            t = fault.wall
            while t < until:
                k = bisect.bisect_right(times, t - limit) - 1
                if k >= 0 and latest[k] > t:
                    late_until, on_time_since = t, None
                elif late_until is not None and on_time_since is None:
                    on_time_since = t
                if on_time_since is not None and t - on_time_since >= HOLD_S:
                    break
                t += STEP_S
        gap = _longest_gap(arrivals, fault.wall, until)
        found.append(
            {
                "kind": fault.kind,
                "target": fault.target,
                "at_s": fault.at_s,
                "recovery_s": None
                if limit is None
                else rounded(0.0 if late_until is None else late_until + STEP_S - fault.wall),
                "output_gap_s": rounded(gap),
                "replacement_s": _since(fault, fault.back_wall),
                "running_again_s": _since(fault, fault.running_wall),
            }
        )
    return rounded(limit), found


def _since(fault: FaultRecord, moment: float | None) -> float | None:
    return None if moment is None else rounded(moment - fault.wall)


def _longest_gap(arrivals: Sequence[float], start: float, end: float) -> float:
    """The longest time without an arrival from ``start`` to the last arrival before ``end``."""
    i = bisect.bisect_left(arrivals, start)
    previous, longest = start, 0.0
    for at in arrivals[i:]:
        if at > end:
            break
        longest, previous = max(longest, at - previous), at
    return longest


def rss_slopes(
    samples: Sequence[Mapping[str, Any]], faults: Sequence[FaultRecord], warmup_s: float
) -> dict[str, dict[str, Any]]:
    """Per TaskManager, MB/min of its RSS (JVM, Python workers, both) fitted from warm-up on:
    ``warmup_s`` after its first sample or after the latest TaskManager loss before its
    last sample (every worker restarts with the job), whichever is later. And the slope of
    its heap's low points (each sample where the heap in use fell since the one before: what a
    collection left), when there are three of them a minute apart or more."""
    series: dict[str, list[tuple[float, float, float, float | None]]] = {}
    for sample in samples:
        for name, memory in sample.get("taskmanagers", {}).items():
            series.setdefault(name, []).append(
                (sample["t"], memory["jvm_mb"], memory["python_mb"], memory.get("heap_used_mb"))
            )
    losses = sorted(f.running_wall or f.wall for f in faults if f.kind == "tm-kill")
    slopes = {}
    for name, points in series.items():
        first, last = points[0][0], points[-1][0]
        restarts = [t for t in losses if t <= last]
        fit_from = max(first, restarts[-1] if restarts else first) + warmup_s
        kept = [p for p in points if p[0] >= fit_from]
        entry: dict[str, Any] = {
            "from": round(fit_from, 3),
            "samples": len(kept),
            "last_jvm_mb": points[-1][1],
            "last_python_mb": points[-1][2],
        }
        if len(kept) >= 6 and kept[-1][0] - kept[0][0] >= 60:
            t = [(p[0] - kept[0][0]) / 60 for p in kept]
            entry["jvm_mb_per_min"] = rounded(_slope(t, [p[1] for p in kept]))
            entry["python_mb_per_min"] = rounded(_slope(t, [p[2] for p in kept]))
            entry["mb_per_min"] = rounded(_slope(t, [p[1] + p[2] for p in kept]))
            lows = [
                (minute, p[3])
                for minute, p, before in zip(t[1:], kept[1:], kept, strict=False)
                if p[3] is not None and before[3] is not None and p[3] < before[3]
            ]
            if len(lows) >= 3 and lows[-1][0] - lows[0][0] >= 1:
                entry["heap_low_mb_per_min"] = rounded(
                    _slope([m for m, _ in lows], [h for _, h in lows])
                )
        slopes[name] = entry
    return slopes


def cpu_per_order(samples: Sequence[Mapping[str, Any]], orders: int) -> dict[str, float | None]:
    """Milliseconds of CPU per order, by role (python workers, JVMs, brokers, service), from
    the first sample to the last (a process's first sample is its start), and of the whole
    machine: what the soak's processes did not use of it, others on the machine did."""
    if not samples or not orders:
        return {}
    seen: dict[str, dict[str, tuple[float, float]]] = {}
    for sample in samples:
        for role, pids in sample.get("cpu", {}).items():
            for pid, seconds in pids.items():
                first, _ = seen.setdefault(role, {}).get(pid, (seconds, seconds))
                seen[role][pid] = (first, max(seconds, first))
    used = {role: sum(b - a for a, b in pids.values()) for role, pids in seen.items()}
    found: dict[str, float | None] = {r: rounded(s * 1000 / orders, 1) for r, s in used.items()}
    machine = samples[-1].get("machine_cpu_s", 0) - samples[0].get("machine_cpu_s", 0)
    found["machine"] = rounded(machine * 1000 / orders, 1)
    found["others_on_machine"] = rounded((machine - sum(used.values())) * 1000 / orders, 1)
    return found


def _slope(x: Sequence[float], y: Sequence[float]) -> float:
    return statistics.linear_regression(x, y).slope


def rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)
