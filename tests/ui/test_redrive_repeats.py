"""What the explorer's timeline showed on its first re-drive: a call that returned a value
after a retried attempt ran again when the run was re-driven (docs/guarantees.md says
finished calls are not repeated): ``_redriven`` took any journaled failed attempt for the
call's failure, also when a value followed it. It replays now."""

from __future__ import annotations

import asyncio

from actionjournal import LocalRunner
from actionjournal.stores import MemoryStore
from tests.ui.agents import Orders
from tests.ui.journals import RETRY


def test_a_redrive_does_not_repeat_a_call_that_returned(tmp_path):
    agent = Orders(tmp_path / "payments-up")
    quotes = []
    quote = agent.quote

    def counted(order: str) -> int:
        quotes.append(order)
        return quote(order)

    agent.quote = counted
    runner = LocalRunner(agent, MemoryStore(), RETRY, on_run_failure="dead-letter")
    asyncio.run(runner.run([("carol", {"order": "o-3"})]))
    assert quotes == ["o-3", "o-3"]  # failed once, then returned 42
    (letter,) = runner.dead_letters  # the payment failed twice
    agent.flag.touch()

    async def redrive() -> None:
        runner.submit(letter.key, letter)
        await runner.drain()

    asyncio.run(redrive())
    assert runner.outputs[-1][1].attributes["output"]["paid"] == "paid o-3"
    assert quotes == ["o-3", "o-3"]  # the quote's value replays: it does not run again
