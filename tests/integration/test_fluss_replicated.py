"""The Fluss store on three real tablet servers (table replication 3, 2 in sync): what it asks
of a table and a cluster, and appends and restores while a tablet server is SIGKILLed."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
import uuid

import pytest
from pydantic import ValidationError

fluss = pytest.importorskip("fluss")

from actionjournal import ActionJournalError, JournalWriteError, LocalRunner  # noqa: E402
from actionjournal.durable.errors import StoreError  # noqa: E402
from actionjournal.durable.records import CallFinished  # noqa: E402
from actionjournal.stores.fluss import FlussStore, FlussStoreConfig  # noqa: E402
from actionjournal.testing.service import CountingService  # noqa: E402
from tests.e2e.agents import Orders  # noqa: E402
from tests.integration.test_kafka_failover import KEYS, PER_KEY, source  # noqa: E402
from tests.store_checks import rc, seqs  # noqa: E402

pytestmark = [pytest.mark.fluss, pytest.mark.slow]


def test_min_insync_replicas_defaults_to_two_of_three_and_is_validated():
    def config(**fields) -> FlussStoreConfig:
        return FlussStoreConfig(bootstrap_servers="b:1", **fields)

    assert config(replication_factor=3).min_insync_replicas == 2
    assert config().min_insync_replicas == 1
    with pytest.raises(ValidationError, match=r"min_insync_replicas=3 .* replication_factor=2"):
        config(replication_factor=2, min_insync_replicas=3)
    with pytest.raises(ValidationError, match="weak_table"):
        config(weak_table="ignore")


def test_a_table_below_the_configured_replication_is_refused_or_warned(aj_fluss_cluster):
    table = f"aj_handmade_{uuid.uuid4().hex[:8]}"
    one = FlussStoreConfig(
        bootstrap_servers=aj_fluss_cluster.bootstrap, table=table, buckets=4, replication_factor=1
    )
    FlussStore(one).close()  # created with one replica
    three = one.model_copy(update={"replication_factor": 3, "min_insync_replicas": 2})
    with pytest.raises(StoreError, match=r"replication factor 1, below the configured "
                       r"replication_factor=3") as refused:  # fmt: skip
        FlussStore(three)
    assert "weak_table='warn'" in str(refused.value)
    FlussStore(three.model_copy(update={"weak_table": "warn"})).close()


def call(key: str, seq: int) -> CallFinished:
    return CallFinished(
        "ns", "op", 0, key, seq, action_id="a", index=0, call_id=f"c{seq}",
        function_id="f", durable_id=None, arg_digest="d", value=b"v", error=None, at=1.0,
        duration=0.001,
    )  # fmt: skip


class Appender:
    """Threads appending to one store until stopped; when each append was acknowledged."""

    def __init__(self, store: FlussStore, threads: int = 4) -> None:
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


def tablet_servers(bootstrap: str) -> int:
    """How many tablet servers the coordinator lists as registered."""

    async def ask() -> int:
        conn = await fluss.FlussConnection.create(fluss.Config({"bootstrap.servers": bootstrap}))
        try:
            nodes = await conn.get_admin().get_server_nodes()
        finally:
            await conn.close()
        return sum(node.server_type == "TabletServer" for node in nodes)

    return asyncio.run(ask())


def wait_for(condition, what: str, timeout: float = 90) -> None:
    """A bound, not a speed claim: the machine may be busy."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout:g} s"
        time.sleep(0.5)


def test_appends_follow_a_new_leader_after_a_tablet_server_sigkill(
    aj_fluss_cluster, aj_fluss_replicated
):
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


def test_two_of_three_tablet_servers_sigkilled_appends_fail(aj_fluss_cluster, aj_fluss_replicated):
    """Each bucket's in-sync set shrank to the survivor and appends were acknowledged on one
    copy; with 2 in sync required they fail, naming table and bucket."""
    config = aj_fluss_replicated.model_copy(
        update={"ack_timeout_s": 20.0, "request_timeout_s": 10.0}
    )
    store = FlussStore(config)
    try:
        store.append(rc("k", 0))
        aj_fluss_cluster.kill_tablet_server(0)
        aj_fluss_cluster.kill_tablet_server(1)
        # Once their sessions expire the coordinator drops them and each ISR shrinks to one.
        wait_for(lambda: tablet_servers(config.bootstrap_servers) == 1, "1 tablet server left")
        with pytest.raises(JournalWriteError) as refused:
            for seq in range(1, 6):
                store.append(rc("k", seq))
        assert config.table in str(refused.value) and "bucket" in str(refused.value)
        # And a store opened now refuses the cluster: one tablet server cannot keep 2 copies.
        with pytest.raises(StoreError, match=r"1 tablet server\(s\) registered, below the "
                           r"configured min_insync_replicas=2"):  # fmt: skip
            FlussStore(config).close()
    finally:
        store.close()


def test_a_restore_right_after_a_tablet_server_kill_waits_and_succeeds(
    aj_fluss_cluster, aj_fluss_replicated
):
    writer = FlussStore(aj_fluss_replicated)
    keys = [f"key-{n}" for n in range(20)]
    try:
        for key in keys:
            for seq in range(3):
                writer.append(rc(key, seq))
    finally:
        writer.close()
    aj_fluss_cluster.kill_tablet_server(0)
    reader = FlussStore(aj_fluss_replicated)
    try:
        assert {key: seqs(reader, key) for key in keys} == {key: [0, 1, 2] for key in keys}
    finally:
        reader.close()


def test_an_agent_through_a_tablet_server_sigkill_loses_nothing_and_runs_nothing_twice(
    tmp_path, aj_fluss_cluster, aj_fluss_replicated
):
    snapshot = tmp_path / "snapshot"
    with CountingService(delay=0.005) as service:
        store = FlussStore(aj_fluss_replicated)
        runner = LocalRunner(Orders(service.url), store)

        async def run() -> None:
            task = asyncio.ensure_future(
                runner.run_source(source(), pace=0.01, snapshot_path=snapshot, snapshot_every=5)
            )
            while not task.done() and service.executions() < KEYS * PER_KEY // 2:
                await asyncio.sleep(0.05)
            await asyncio.to_thread(aj_fluss_cluster.kill_tablet_server, 0)
            await task

        try:
            asyncio.run(run())
            again = None
        except ActionJournalError:  # appends in flight to the lost leader: restore and go on
            again = LocalRunner.restore(snapshot, Orders(service.url), store)
            asyncio.run(again.run_source(source()))
        finally:
            store.close()
        outputs = {e.output["i"] for _, e in runner.outputs + (again.outputs if again else [])}
        counts = dict(service.counts)
    assert outputs == set(range(KEYS * PER_KEY))
    assert not {call: n for call, n in counts.items() if n > 1}, "a call ran twice"
    assert len(counts) == 2 * KEYS * PER_KEY
