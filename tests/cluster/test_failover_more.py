"""More replicated-journal failovers, beyond the one of each kind the integration suite keeps:
an agent through a Kafka partition leader's SIGKILL (the Flink job version is in tests/e2e),
and appends following new Fluss bucket leaders after a tablet server's SIGKILL (an agent
through one is in tests/integration/test_fluss_replicated.py)."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from actionjournal import JournalWriteError, LocalRunner
from actionjournal.durable.records import CallFinished
from actionjournal.testing.service import CountingService
from tests.e2e.agents import Orders
from tests.failover_checks import KEYS, PER_KEY, run_until
from tests.integration.test_kafka_failover import Witness, all_acknowledged_are_journaled
from tests.store_checks import rc

pytestmark = [pytest.mark.slow, pytest.mark.extended]


@pytest.fixture
def service() -> Iterator[CountingService]:
    with CountingService(delay=0.005) as counting:
        yield counting


@pytest.mark.kafka
def test_a_leader_sigkill_mid_run_loses_nothing_and_runs_nothing_twice(
    aj_kafka_cluster, aj_kafka_replicated, service
):
    store = Witness(aj_kafka_replicated)
    runner = LocalRunner(Orders(service.url), store)
    killed = []

    def kill_leader() -> None:
        killed.append(aj_kafka_cluster.leader(aj_kafka_replicated.topic, 0))
        aj_kafka_cluster.kill_broker(killed[0])

    try:
        asyncio.run(
            run_until(runner, lambda: service.executions() >= KEYS * PER_KEY // 2, kill_leader,
                      pace=0.01)
        )  # fmt: skip
    finally:
        store.close()
    assert killed, "the run ended before the kill: make it longer"
    assert not store.refused, store.refused[0]
    outputs = sorted(event.output["i"] for _, event in runner.outputs)
    assert outputs == list(range(KEYS * PER_KEY))  # no input lost
    assert sorted(service.calls_by_name().items()) == [
        ("first", KEYS * PER_KEY), ("second", KEYS * PER_KEY)
    ]  # fmt: skip
    twice = {call: n for call, n in service.counts.items() if n > 1}
    assert not twice, f"calls run twice: {twice}"
    all_acknowledged_are_journaled(store, aj_kafka_replicated)
    print(f"leader {killed[0]} killed: appends paused {store.longest_pause():.1f} s at most")


def call(key: str, seq: int) -> CallFinished:
    return CallFinished(
        "ns", "op", 0, key, seq, action_id="a", index=0, call_id=f"c{seq}",
        function_id="f", durable_id=None, arg_digest="d", value=b"v", error=None, at=1.0,
        duration=0.001,
    )  # fmt: skip


class Appender:
    """Threads appending to one store until stopped; when each append was acknowledged."""

    def __init__(self, store: Any, threads: int = 4) -> None:
        self.store = store
        self.acknowledged: list[float] = []
        self.refused: list[tuple[float, JournalWriteError]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]
        for thread in self._threads:
            thread.start()

    def _run(self, n: int) -> None:
        for seq in itertools.count():
            if self._stop.is_set():
                return
            key = f"key-{n}-{seq % 16}"
            try:  # mostly durable calls' results (no marker), a run's end now and then
                self.store.append(rc(key, seq) if seq % 4 == 0 else call(key, seq))
                self.acknowledged.append(time.monotonic())
            except JournalWriteError as exc:
                self.refused.append((time.monotonic(), exc))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def after_the_pause(self, since: float) -> tuple[float, int]:
        """The longest pause of acknowledgements since ``since``, and how many came after it."""
        times = sorted(t for t in self.acknowledged if t >= since)
        gaps = [(b - a, n) for n, (a, b) in enumerate(itertools.pairwise([since, *times]))]
        pause, at = max(gaps, default=(0.0, 0))
        return pause, len(times) - at


@pytest.mark.fluss
def test_appends_follow_a_new_leader_after_a_tablet_server_sigkill(
    aj_fluss_cluster, aj_fluss_replicated
):
    pytest.importorskip("fluss")
    from actionjournal.stores.fluss import FlussStore
    from tests.integration.test_fluss_replicated import wait_for

    """The open writer never moved to the new leader: appends stalled for ack_timeout_s and
    failed with "bucket N had no reachable leader" although it had one."""
    config = aj_fluss_replicated.model_copy(update={"ack_timeout_s": 60.0})
    store = FlussStore(config)
    appender = Appender(store)
    try:
        wait_for(lambda: len(appender.acknowledged) > 50, "appends")
        killed_at = time.monotonic()
        aj_fluss_cluster.kill_tablet_server(0)

        # The new leaders are elected ~10 s after the kill; then appends go on (before, they
        # stalled until ack_timeout_s, then failed).
        def resumed() -> bool:
            pause, after = appender.after_the_pause(killed_at)
            return pause >= 1 and after >= 50

        wait_for(resumed, "appends after the new leaders' election")
    finally:
        appender.stop()
        store.close()
    pause, _ = appender.after_the_pause(killed_at)
    print(f"appends paused {pause:.1f} s after the kill; {len(appender.refused)} refused")
    assert pause < 30, f"appends stalled {pause:.0f} s"
    for _, refused in appender.refused:  # in flight at the kill: said so, with table and bucket
        assert config.table in str(refused) and "bucket" in str(refused), refused
