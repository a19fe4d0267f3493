"""The refund approval agent on the local runner, over a simulated day:
``python examples/refund_approval/local.py``.

The clock is a ``ManualClock``: a day passes in no time. The runner is stopped and
restored from a snapshot while the proposals wait, as a job is restarted; approvals come
in with ``submit``; one refund is never answered and escalates after 24 hours; its
approval, sent an hour after that, runs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make `examples` importable
    sys.path.insert(0, str(ROOT))

from actionjournal import LocalRunner, SignalInput  # noqa: E402
from actionjournal.stores import SqliteStore  # noqa: E402
from actionjournal.testing import CountingService, ManualClock  # noqa: E402
from examples.refund_approval.agent import REQUESTS, RefundApproval  # noqa: E402


async def _day(directory: Path, payments_url: str, clock: ManualClock) -> LocalRunner:
    store = SqliteStore(directory / "journal.db")
    runner = LocalRunner(RefundApproval(payments_url), store, clock=clock)
    for request in REQUESTS:
        runner.submit(request["id"], request)
    await runner.drain()
    runner.snapshot(directory / "snapshot")  # the runner stops here; the proposals wait
    proposed = {o["id"]: o["signal"] for _, e in runner.outputs if (o := e.output)}
    clock.advance(timedelta(hours=2))
    runner = LocalRunner.restore(
        directory / "snapshot", RefundApproval(payments_url), store, clock=clock
    )
    runner.submit("r-1", SignalInput(proposed["r-1"], {"approved": True}))
    runner.submit("r-2", SignalInput(proposed["r-2"], {"approved": False, "reason": "no receipt"}))
    await runner.drain()
    clock.advance(timedelta(hours=23))  # 25 hours after the proposals
    await runner.drain()
    runner.submit("r-3", SignalInput(proposed["r-3"], {"approved": True}))  # too late
    await runner.drain()
    return runner


def simulate(directory: Path) -> tuple[list[dict[str, Any]], dict[str, int], int]:
    """Run the day; the outcomes (after the restore), the payments service's calls by
    name, and how many answers came too late."""
    with CountingService() as payments:
        runner = asyncio.run(_day(directory, payments.url, ManualClock()))
        calls = payments.calls_by_name()
    late = int(runner.metrics.value("actionjournal_signals_total", event="late"))
    return [event.output for _, event in runner.outputs], calls, late


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", type=Path, help="keep the journal and snapshot here (default: temp)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="refund-approval-") as temp:
        directory = args.dir or Path(temp)
        directory.mkdir(parents=True, exist_ok=True)
        outcomes, calls, late = simulate(directory)
    for outcome in outcomes:
        print(f"{outcome['id']}: {outcome['status']} ({outcome['amount']})")
    print(f"payments service calls: {calls}; answers too late: {late}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
