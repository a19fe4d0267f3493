"""The soak's plots (PNG, matplotlib): one per measure over soak time, each fault a vertical
line labelled with what was killed, a killed broker's downtime shaded."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

MB = 1024 * 1024
LABELS = {"tm-kill": "TaskManager SIGKILL", "leader-kill": "journal leader SIGKILL"}


def write_plots(results: Mapping[str, Any], directory: Path) -> list[Path]:
    """Write the five plots into ``directory``; their paths."""
    start = results["load_started_at"]
    windows, samples = results["windows"], results["samples"]
    faults = results["faults"]

    def minutes(t: float) -> float:
        return (t - start) / 60

    def plot(name: str, title: str, ylabel: str, draw: Callable[[Axes], None]) -> Path:
        figure, axes = plt.subplots(figsize=(11, 3.6), layout="constrained")
        draw(axes)
        _mark_faults(axes, faults, minutes)
        _mark_pauses(axes, results["sessions"], minutes)
        axes.set_title(title)
        axes.set_xlabel("minutes")
        axes.set_ylabel(ylabel)
        axes.grid(alpha=0.3)
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        path = directory / f"{name}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        return path

    wt = [minutes(w["t"] + 5) for w in windows]  # the middle of each 10 s window
    st = [minutes(s["t"]) for s in samples]

    def throughput(axes: Axes) -> None:
        axes.plot(wt, [w["inputs_per_s"] for w in windows], label="inputs sent /s")
        axes.plot(wt, [w["outputs_per_s"] for w in windows], label="results committed /s")

    def latency(axes: Axes) -> None:
        for kind, style in (("committed", "-"), ("processed", ":")):
            for q in ("p50", "p99"):
                values = [w[f"{kind}_{q}_s"] for w in windows]
                axes.plot(wt, _gaps(values), style, label=f"{kind} {q}")
        axes.set_yscale("log")

    def rss(axes: Axes) -> None:
        names = sorted({n for s in samples for n in s.get("taskmanagers", {})})
        for name in names:
            for part, style, what in (
                ("jvm_mb", "-", "JVM"),
                ("python_mb", "--", "Python workers"),
                ("heap_used_mb", ":", "heap in use"),
            ):
                values = [s.get("taskmanagers", {}).get(name, {}).get(part) for s in samples]
                axes.plot(st, _gaps(values), style, label=f"{name} {what}")

    def checkpoints(axes: Axes) -> None:
        for field, label in (
            ("state_bytes", "latest checkpoint, full state"),
            ("incremental_bytes", "latest checkpoint, uploaded (incremental)"),
            ("dir_bytes", "checkpoint directory (3 retained)"),
        ):
            values = [_mb(s.get("checkpoint", {}).get(field)) for s in samples]
            axes.plot(st, _gaps(values), label=label)

    def journal(axes: Axes) -> None:
        axes.plot(
            st, [_mb(s["journal"].get("disk_bytes")) for s in samples], label="on disk (one copy)"
        )
        records = axes.twinx()
        values = [s["journal"].get("records") for s in samples]
        records.plot(st, _gaps(values), color="tab:orange", label="records retained")
        records.set_ylabel("records")
        records.legend(loc="lower left", bbox_to_anchor=(1.01, 0), fontsize="small")

    return [
        plot("throughput", "Throughput", "per second", throughput),
        plot("latency", "End-to-end latency (per 10 s window)", "seconds", latency),
        plot("rss", "TaskManager memory (RSS; the JVM's heap is touched at start)", "MB", rss),
        plot("checkpoint", "Checkpoint size (RocksDB, incremental)", "MB", checkpoints),
        plot("journal", "Journal size (Kafka topic, continuous cleanup)", "MB", journal),
    ]


def _mark_faults(axes: Axes, faults: Sequence[Mapping[str, Any]], minutes: Any) -> None:
    """Each kill a dashed red line; shaded: the job restarting after a TaskManager's loss
    (until all its tasks ran again), a killed broker's downtime (until it served again)."""
    shades = {"tm-kill": ("running_wall", "tab:orange", "job restarting"),
              "leader-kill": ("back_wall", "red", "broker down")}  # fmt: skip
    labelled = set()
    for fault in faults:
        at = minutes(fault["wall"])
        axes.axvline(at, color="red", linestyle="--", linewidth=1)
        axes.annotate(
            LABELS.get(fault["kind"], fault["kind"]), (at, 1), xycoords=("data", "axes fraction"),
            xytext=(3, -12), textcoords="offset points", color="red", fontsize="small",
        )  # fmt: skip
        until, color, label = shades.get(fault["kind"], (None, "", ""))
        if until and fault.get(until):
            axes.axvspan(
                at, minutes(fault[until]), color=color, alpha=0.1,
                label=None if label in labelled else label,
            )  # fmt: skip
            labelled.add(label)


def _mark_pauses(axes: Axes, sessions: Sequence[Sequence[float]], minutes: Any) -> None:
    """An interrupted soak's pause until it was resumed, in grey."""
    for (_, ended), (resumed, _) in itertools.pairwise(sessions):
        axes.axvspan(minutes(ended), minutes(resumed), color="grey", alpha=0.15, label="paused")


def _gaps(values: Sequence[float | None]) -> list[float]:
    return [float("nan") if v is None else v for v in values]


def _mb(value: float | None) -> float | None:
    return None if value is None else value / MB
