"""The explorer's test journal, made by real scenarios on one SQLite file:

* ``checkout``: ann's order runs; bob's is SIGKILLed (a real child process) after his
  charge was journaled as started and ran, before its outcome was journaled; the restore
  replays bob's lookup, settles his charge with the reconciler, then sends the email.
  erin's charge is started when a second crash kills the process: it stays in flight.
* ``orders``: carol's and dave's quotes fail once and are retried; their payments fail
  twice, so their runs are dead-lettered (``on_run_failure='dead-letter'``). The runner is
  returned: it is the job a re-drive goes back to.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from actionjournal import JournalConfig, LocalRunner, RetryPolicy
from actionjournal.stores import SqliteStore
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.harness import RestoreScenario
from tests.ui.agents import CARD, Checkout, Orders

RETRY = JournalConfig(retry=RetryPolicy(max_attempts=2, initial_interval=0.05))


@dataclass
class Made:
    journal: Path
    flag: Path  # create it and the payment service is up
    runner: LocalRunner  # the orders job (its keyed state knows the dead-lettered runs)
    store: SqliteStore
    crash_calls: dict[str, int]  # what the counting service saw, crash and restore included
    snapshot: Path  # the checkout job's checkpoint (a LocalRunner snapshot) after ann's run


def make_journal(directory: Path) -> Made:
    directory.mkdir(parents=True, exist_ok=True)
    journal = directory / "journal.db"
    with RestoreScenario(
        Checkout, SqliteStoreConfig(path=str(journal)), directory=directory / "scenario"
    ) as sc:
        sc.start()
        sc.run([("ann", "o-1")])
        cp = sc.checkpoint()
        snapshot = directory / "checkout.snapshot"
        snapshot.write_bytes(cp.path.read_bytes())
        step = sc.crash([("bob", "o-2")], at="before:CallFinished:2")
        assert step.crashed
        sc.restore(cp)
        calls = dict(sc.calls())
        # erin's charge is started when the process dies, and nothing restores it: in flight
        assert sc.crash([("erin", "o-5")], at="after:CallStarted:1").crashed
    flag = directory / "payments-up"
    store = SqliteStore(journal)
    runner = LocalRunner(Orders(flag), store, RETRY, on_run_failure="dead-letter")
    inputs = [
        ("carol", {"order": "o-3", "card_number": CARD}),
        ("dave", {"order": "o-4", "card_number": CARD}),
    ]
    asyncio.run(runner.run(inputs))
    assert len(runner.dead_letters) == 2
    return Made(journal, flag, runner, store, calls, snapshot)
