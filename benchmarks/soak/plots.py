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

    def plot(
        name: str, title: str, ylabel: str | Sequence[str], *draws: Callable[[Axes], None]
    ) -> Path:
        """One panel per ``draws`` (stacked, one time axis), each with its own ``ylabel``."""
        figure, panels = plt.subplots(
            len(draws), figsize=(11, 1.2 + 2.4 * len(draws)), sharex=True, layout="constrained",
            squeeze=False,
        )  # fmt: skip
        labels = [ylabel] if isinstance(ylabel, str) else list(ylabel)
        for axes, draw, label in zip(panels[:, 0], draws, labels, strict=True):
            draw(axes)
            _mark_faults(axes, faults, minutes)
            _mark_pauses(axes, results["sessions"], minutes)
            axes.set_ylabel(label)
            axes.grid(alpha=0.3)
            _legend(axes)
        panels[0, 0].set_title(title)
        panels[-1, 0].set_xlabel("minutes")
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

    names = sorted({n for s in samples for n in s.get("taskmanagers", {})})

    def memory(part: str) -> Callable[[Axes], None]:
        def draw(axes: Axes) -> None:
            for name in names:
                values = [s.get("taskmanagers", {}).get(name, {}).get(part) for s in samples]
                axes.plot(st, _gaps(values), label=name)

        return draw

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

    return [
        plot("throughput", "Throughput", "per second", throughput),
        plot("latency", "End-to-end latency (per 10 s window)", "seconds", latency),
        plot(
            "rss",
            "TaskManager memory: RSS of the JVM (its heap touched at start), of its Python "
            "workers, and the heap in use",
            ("JVM RSS, MB", "workers RSS, MB", "heap in use, MB"),
            memory("jvm_mb"),
            memory("python_mb"),
            memory("heap_used_mb"),
        ),
        plot("checkpoint", "Checkpoint size (RocksDB, incremental)", "MB", checkpoints),
        plot("journal", "Journal size (Kafka topic, continuous cleanup)", "MB", journal),
    ]


def _legend(axes: Axes) -> None:
    """One legend right of the panel for its lines and those of its twin (a ``twinx`` axes,
    at the same place, whose scale is on the right: the legend keeps clear of it)."""
    handles, names = axes.get_legend_handles_labels()
    for twin in axes.figure.axes:
        if twin is not axes and twin.get_position().bounds == axes.get_position().bounds:
            more = twin.get_legend_handles_labels()
            handles, names = handles + more[0], names + more[1]
    axes.legend(handles, names, loc="upper left", bbox_to_anchor=(1.08, 1), fontsize="small")


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
