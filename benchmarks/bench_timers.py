"""Timers (issue 34): what scheduling one costs a run, how late one fires in a Flink job with
10,000 pending, and what one costs in keyed state.

* ``timers.schedule.overhead``: ms per run of 2,000 runs over 100 keys on the local runner
  (SQLite journal), each run one instant durable call and the scheduling of a follow-up
  timer an hour ahead (named, so each key keeps one); baseline: the same runs without the
  timer. Median of seven interleaved rounds. Target: ratio at most 1.2.
* ``timers.fire.lateness.p99``: a Flink job (parallelism 1) where 100 keys hold 100 timers
  each, due in an hour (10,000 pending), then 200 probe timers on other keys (50 inputs a
  second), each due six seconds after its input arrived: ms from a probe's due time to the
  start of its run (its action, async: it starts with the run). Baseline: a plain PyFlink
  ``KeyedProcessFunction`` in the same job, fed by the same source, registering the same
  processing-time timers (10,000 far ones, then the probes): ms from each probe's
  timestamp to its ``on_timer``. Target: ratio at most 1.5.
* ``timers.pending.state_bytes``: keyed state bytes per pending timer (a ``KeyState`` with
  1,000 timers of a small event, less one without, per timer); baseline: the bytes of the
  event's encoded attributes, which any timer must keep. Reported; target: ours at most 100.
"""

from __future__ import annotations

import asyncio
import functools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from actionjournal import Agent, Event, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.operator.engine import KeyState
from actionjournal.operator.waits import Timer
from actionjournal.stores import SqliteStore
from actionjournal.testing import ManualClock
from benchmarks.common import entry

RUNS, KEYS = 2_000, 100
FAR_KEYS, FAR_PER_KEY, PROBES = 100, 100, 200
PROBE_DELAY_S = 6.0  # long enough that a probe's timer is registered before it is due
RATE = 50  # inputs per second, probes included
GAP = 250  # ticks (5 s) between the far timers and the probes: their runs are done by then
WAIT_S = 600  # a bound on waiting for a job's probes (start-up included), not a target


def instant(value: Any) -> Any:
    return value


class Plain(Agent):
    uid = "bench-timers"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(instant, event.input)))


class FollowingUp(Plain):
    @action(InputEvent)
    def handle(self, event, ctx):
        reply = ctx.durable_execute(instant, event.input)
        follow_up = Event("follow_up", {"ticket": event.input})
        ctx.schedule_event(follow_up, delay=3600, timer_id="follow-up")
        ctx.send_event(OutputEvent(reply))

    @action("follow_up")
    def follow_up(self, event, ctx):
        pass


def _ms_per_run(directory: Path, agent: Agent) -> float:
    store = SqliteStore(directory / f"journal-{time.monotonic_ns()}.db")
    runner = LocalRunner(agent, store, clock=ManualClock())
    inputs = [(f"key-{i % KEYS}", i) for i in range(RUNS)]
    started = time.perf_counter()
    asyncio.run(runner.run(inputs))
    elapsed = time.perf_counter() - started
    store.close()
    assert len(runner.outputs) == RUNS
    return elapsed / RUNS * 1e3


def schedule_overhead(ctx: Any) -> dict:
    ours, plain = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(7):  # this machine's load moves single rounds by 30%
            ours.append(_ms_per_run(Path(tmp), FollowingUp()))
            plain.append(_ms_per_run(Path(tmp), Plain()))
    return entry(
        "timers.schedule.overhead", "ms/run", statistics.median(ours), statistics.median(plain), 1.2
    )


def state_bytes(ctx: Any) -> dict:
    attributes = msgspec.msgpack.encode({"ticket": "T-1234"})
    timers = [
        Timer(f"{i:032x}", 1_900_000_000.0 + i, "follow_up", attributes, seq=i)
        for i in range(1_000)
    ]
    empty = len(msgspec.msgpack.encode(KeyState(next_seq=1000)))
    full = len(msgspec.msgpack.encode(KeyState(next_seq=1000, timers=timers)))
    return entry(
        "timers.pending.state_bytes", "bytes", (full - empty) / len(timers), len(attributes), 100
    )


# -- lateness in a Flink job -----------------------------------------------------------------


def _requests(tick: str) -> list[str]:
    far = [json.dumps({"k": f"far-{k}", "far": FAR_PER_KEY}) for k in range(FAR_KEYS)]
    probes = [json.dumps({"k": f"probe-{i}", "probe": i}) for i in range(PROBES)]
    return far + [tick] * GAP + probes


def _lateness(directory: Path) -> tuple[list[float], list[float]]:
    """ms late of each probe timer of ours and of the plain function, both in one job (the
    same source feeds both), so that both see the same load."""
    from actionjournal.flink import AgentsConfig, AgentsExecutionEnvironment
    from actionjournal.stores import SqliteStoreConfig
    from actionjournal.testing.flink import JsonLines, local_env, paced_source
    from benchmarks import timer_jobs

    env = local_env(directory / "checkpoints", checkpoint_interval_ms=5_000)
    journal = SqliteStoreConfig(path=str(directory / "journal.db"))
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig(store=journal))
    elements = _requests(timer_jobs.TICK) + [timer_jobs.TICK] * 100_000
    requests = (
        paced_source(env, elements, per_second=RATE, name="requests")
        .filter(timer_jobs.not_a_tick)
        .map(timer_jobs.parsed, output_type=timer_jobs.PICKLED)
    )
    ours, plain = JsonLines(directory / "ours.jsonl"), JsonLines(directory / "plain.jsonl")
    job = agents.from_datastream(requests, key_selector=timer_jobs.key_of)
    job.apply(timer_jobs.Probes(PROBE_DELAY_S)).to_datastream().map(ours)
    requests.key_by(timer_jobs.key_of).process(
        timer_jobs.PlainTimers(PROBE_DELAY_S), output_type=timer_jobs.PICKLED
    ).map(plain)
    client = env.execute_async("timer-lateness")
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and min(len(ours.read()), len(plain.read())) < PROBES:
            time.sleep(0.5)
    finally:
        client.cancel().result()
    late = [[r["late_ms"] for r in sink.read()] for sink in (ours, plain)]
    assert min(map(len, late)) >= PROBES, f"probes fired: ours {len(late[0])}, plain {len(late[1])}"
    return late[0][:PROBES], late[1][:PROBES]


@functools.cache
def _lateness_both() -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        return _lateness(Path(tmp))


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def fire_lateness(ctx: Any) -> dict:
    ours, plain = _lateness_both()
    return entry("timers.fire.lateness.p99", "ms", _p99(ours), _p99(plain), 1.5)


BENCHMARKS = {
    "timers.schedule.overhead": schedule_overhead,
    "timers.fire.lateness.p99": fire_lateness,
    "timers.pending.state_bytes": state_bytes,
}
