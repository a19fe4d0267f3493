"""The soak's counting service, in a process of its own (``python -m benchmarks.soak.service``).

It is :class:`actionjournal.testing.CountingService` with random latencies: every durable
call of the job is executed (and counted by its call id) here, outside the job, so "did a
call run twice" is answered by the called system. Its own process keeps the soak's sampling
from slowing the calls down, and lets it outlive an interrupted soak: on SIGTERM it saves
what it executed to ``counts.json`` in its directory and loads it when started again, on
the same port (the URL is an argument of every call, so part of its journaled identity).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actionjournal.testing import CountingService

READY = "service.json"
COUNTS = "counts.json"


def serve(directory: Path, low_ms: float, high_ms: float, seed: int) -> None:
    saved = _read(directory / COUNTS)
    port = _read(directory / READY).get("port", 0)
    service = CountingService(low_ms / 1000, high_ms / 1000, seed=seed, port=port)
    service.counts.update(saved.get("counts", {}))
    service.responses.update(saved.get("responses", {}))

    def save(*_: Any) -> None:
        service.stop()
        service.wait_idle(quiet=0.1, timeout=5)  # calls already in flight finish first
        state = {"counts": dict(service.counts), "responses": dict(service.responses)}
        temporary = directory / f"{COUNTS}.tmp"
        temporary.write_text(json.dumps(state))
        temporary.replace(directory / COUNTS)
        sys.exit(0)

    signal.signal(signal.SIGTERM, save)
    signal.signal(signal.SIGINT, save)
    with service:
        address = {"url": service.url, "port": int(service.url.rsplit(":", 1)[1])}
        (directory / READY).write_text(json.dumps({**address, "pid": os.getpid()}))
        while True:
            signal.pause()


def _read(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, required=True, help="where its address and counts live")
    p.add_argument("--latency-ms", type=float, nargs=2, default=(5.0, 50.0), metavar=("MIN", "MAX"))
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    serve(args.dir, *args.latency_ms, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
