"""The Restate side of ``peer.restate.step.sqlite``: a service whose handler makes the peer
benchmark's steps, served by hypercorn (``hypercorn benchmarks.restate_service:app``)."""

from __future__ import annotations

import restate

from benchmarks.bench_peer import STEPS, work

service = restate.Service("AjPeerBench")


@service.handler()
async def steps(ctx: restate.Context, payload: dict) -> int:
    """``STEPS`` journaled steps (``ctx.run``), each the same call as ours."""
    total = 0
    for i in range(STEPS):
        total += (await ctx.run_typed("work", work, restate.RunOptions(), payload, i))["i"]
    return total


@service.handler()
async def plain(ctx: restate.Context, payload: dict) -> int:
    """The same calls without journaling them: what an invocation costs anyway."""
    total = 0
    for i in range(STEPS):
        total += work(payload, i)["i"]
    return total


app = restate.app(services=[service])
