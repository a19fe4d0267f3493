"""The order service the agent of docs/deploying.md calls, run in the background.

    SERVICE=$(python examples/kafka_orders/service.py start)   # prints its URL
    python examples/kafka_orders/service.py counts  # calls executed; exit 1 if one ran twice
    python examples/kafka_orders/service.py stop

It is :class:`actionjournal.testing.CountingService`: ``POST /calls/<step>`` executes a
call and counts it by its call id, ``GET /calls/<call id>`` tells the agent's reconciler
whether a call arrived. It runs in a process of its own, on 127.0.0.1 and a free port;
its address and pid are kept in ``--state`` (``.orders-service.json`` here by default).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from actionjournal.testing import CountingService


def serve(state: Path) -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with CountingService() as service:
        state.write_text(json.dumps({"url": service.url, "pid": os.getpid()}))
        while True:
            signal.pause()


def start(state: Path) -> str:
    if state.exists():
        sys.exit(f"error: {state} says a service runs at {json.loads(state.read_text())['url']}")
    log = state.with_suffix(".log")
    with open(log, "w") as out:
        subprocess.Popen(
            [sys.executable, __file__, "serve", "--state", str(state)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # lives on after this command (and its terminal) ends
        )
    deadline = time.monotonic() + 60
    while not state.exists():
        if time.monotonic() > deadline:
            sys.exit(f"error: the service did not start within 60 s; see {log}")
        time.sleep(0.1)
    return json.loads(state.read_text())["url"]


def counts(state: Path) -> int:
    executed = httpx.get(f"{_running(state)['url']}/counts", timeout=10).json()
    twice = sorted(call for call, n in executed.items() if n > 1)
    print(
        f"{len(executed)} calls executed, {sum(executed.values())} executions; "
        + (f"executed more than once: {', '.join(twice)}" if twice else "none twice")
    )
    return 1 if twice else 0


def stop(state: Path) -> None:
    pid = _running(state)["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    state.unlink()
    state.with_suffix(".log").unlink(missing_ok=True)


def _running(state: Path) -> dict:
    if not state.exists():
        sys.exit(f"error: no service: {state} does not exist (start one with `start`)")
    return json.loads(state.read_text())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("start", "counts", "stop", "serve"))
    p.add_argument("--state", type=Path, default=Path(".orders-service.json"))
    args = p.parse_args()
    if args.command == "serve":
        serve(args.state)
    if args.command == "start":
        print(start(args.state))
    if args.command == "counts":
        return counts(args.state)
    if args.command == "stop":
        stop(args.state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
