"""Run benchmarks side by side and write benchmarks/results/latest.json.

Every entry measures our path and its baseline in the same run and reports
``ratio = ours / baseline``; ``target`` is a ratio unless the entry says
otherwise in docs/performance.md (e.g. microseconds per call for the memory store).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import traceback
from pathlib import Path

from benchmarks import (
    bench_cleanup,
    bench_core,
    bench_examples,
    bench_flink,
    bench_fluss,
    bench_kafka,
    bench_peer,
    bench_replicated,
    bench_retry,
    bench_scale,
    bench_timers,
    bench_ui,
    report,
)
from benchmarks.common import BenchContext, unavailable
from benchmarks.postgres import ServiceUnavailable

MODULES = [
    bench_cleanup,
    bench_core,
    bench_kafka,
    bench_fluss,
    bench_replicated,
    bench_flink,
    bench_scale,
    bench_peer,
    bench_retry,
    bench_timers,
    bench_examples,
    bench_ui,
]

RESULTS = Path(__file__).parent / "results" / "latest.json"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()} {cpu}"
    return f"{system}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--only", default="", help="run entries whose name starts with this prefix")
    args = p.parse_args(argv)
    selected = {
        name: fn
        for module in MODULES
        for name, fn in module.BENCHMARKS.items()
        if name.startswith(args.only) or args.only.startswith(name)
    }
    if not selected:
        print(f"no benchmark name starts with {args.only!r}")
        return 2
    results: list[dict] = []
    load = round(os.getloadavg()[0], 1)  # other work on the machine skews absolute figures
    with BenchContext() as ctx:
        for name, fn in selected.items():
            print(f"running {name} ...", flush=True)
            try:
                produced = fn(ctx)
            except Exception as exc:  # one benchmark that cannot run does not stop the others
                reason = f"{type(exc).__name__}: {exc}"
                print(f"{name}: NOT MEASURED: {reason}", flush=True)
                if not isinstance(exc, ServiceUnavailable):
                    traceback.print_exc()
                produced = unavailable(name, reason)
            results.extend(produced if isinstance(produced, list) else [produced])
    results = [r for r in results if r["name"].startswith(args.only)]
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for r in results:
        r["when"] = when
        r["load"] = load
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    # A partial run (--only) replaces what it ran and keeps the other entries: an entry is
    # replaced when it was produced again, or when its benchmark ran (it may have failed).
    previous = json.loads(RESULTS.read_text())["benchmarks"] if RESULTS.exists() else []
    fresh = {r["name"] for r in results}

    def rerun(name: str) -> bool:
        return name in fresh or (
            name.startswith(args.only)
            and any(name == s or name.startswith(s + ".") for s in selected)
        )

    kept = [r for r in previous if not rerun(r["name"])]
    doc = {
        "machine": machine(),
        "when": when,
        "benchmarks": sorted(kept + results, key=lambda r: r["name"]),
    }
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\n{'name':32} {'unit':10} {'ours':>10} {'baseline':>10} {'ratio':>8} {'target':>8}")
    for r in results:
        if "error" in r:
            print(f"{r['name']:32} not measured: {r['error']}")
            continue
        print(
            f"{r['name']:32} {r['unit']:10} {r['ours']:>10} {r['baseline']:>10} "
            f"{r['ratio']!s:>8} {r['target']:>8}"
        )
    print(f"\nwrote {RESULTS}")
    report.write(RESULTS, report.PAGE)
    print(f"wrote {report.PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
