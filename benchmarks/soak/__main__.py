"""``python -m benchmarks.soak`` (``make soak``): the soak, or the rest of an interrupted one.

A run left unfinished in the work directory is resumed with its own settings; ``--fresh``
discards it. Exit code 0 when nothing was duplicated or lost and no TaskManager's RSS
climbed after warm-up, 1 otherwise, 2 for bad options.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import msgspec

from benchmarks.soak.processes import Processes
from benchmarks.soak.report import RESULTS
from benchmarks.soak.run import Soak, State, on_signals
from benchmarks.soak.settings import Settings, default_faults, parse_faults

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = Settings()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.soak", description=__doc__.splitlines()[0]
    )
    p.add_argument("--minutes", type=float, default=10.0, help="soak time with load (default 10)")
    p.add_argument("--rate", type=float, default=DEFAULTS.rate, help="orders per second")
    p.add_argument("--keys", type=int, default=DEFAULTS.keys, help="agent keys (customers)")
    p.add_argument(
        "--faults",
        help="KIND@SECONDS,... with KIND tm-kill or leader-kill; '' for none (default: tm-kill "
        "at 40%% of the run, leader-kill at 70%%)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=DEFAULTS.warmup_s,
        help="seconds before RSS slopes are fitted",
    )
    p.add_argument(
        "--rss-slope-limit",
        type=float,
        default=DEFAULTS.rss_slope_limit,
        metavar="MB_PER_MIN",
        help="fail when a TaskManager's RSS grows faster after warm-up (0: no check)",
    )
    p.add_argument(
        "--workdir", type=Path, default=ROOT / ".soak", help="brokers' logs, checkpoints, state"
    )
    p.add_argument(
        "--results", type=Path, default=RESULTS, help="where latest.json and the plots go"
    )
    p.add_argument("--fresh", action="store_true", help="discard an unfinished run in --workdir")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.minutes <= 0 or args.rate <= 0 or args.keys <= 0 or not args.rss_slope_limit >= 0:
        parser().error("--minutes, --rate and --keys must be above 0, --rss-slope-limit not below")
    try:
        faults = default_faults(args.minutes) if args.faults is None else parse_faults(args.faults)
    except ValueError as exc:
        parser().error(str(exc))
    settings = Settings(
        minutes=args.minutes,
        rate=args.rate,
        keys=args.keys,
        faults=faults,
        warmup_s=args.warmup,
        rss_slope_limit=args.rss_slope_limit,
    )
    workdir = args.workdir.resolve()
    state = _unfinished(workdir)
    if state is not None and not args.fresh:
        print(
            f"soak: resuming the run of {time.ctime(state.started_at)} in {workdir}: "
            f"{state.elapsed_s / 60:.1f} of {state.settings.minutes:g} minutes done "
            "(--fresh discards it)"
        )
    else:
        Processes(workdir, settings).end_leftovers()
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        state = State(settings=settings, started_at=time.time())
    on_signals()
    return Soak(workdir, state, args.results).run()


def _unfinished(workdir: Path) -> State | None:
    try:
        state = msgspec.json.decode((workdir / "state.json").read_bytes(), type=State)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return None if state.finished else state


if __name__ == "__main__":
    sys.exit(main())
