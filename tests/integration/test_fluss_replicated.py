"""The Fluss store on three real tablet servers (table replication 3, 2 in sync): what it asks
of a table and a cluster, and appends and restores while a tablet server is SIGKILLed."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from pydantic import ValidationError

fluss = pytest.importorskip("fluss")

from actionjournal import ActionJournalError, JournalWriteError, LocalRunner  # noqa: E402
from actionjournal.durable.errors import StoreError  # noqa: E402
from actionjournal.stores.fluss import FlussStore, FlussStoreConfig  # noqa: E402
from actionjournal.testing.service import CountingService  # noqa: E402
from tests.e2e.agents import Orders  # noqa: E402
from tests.failover_checks import (  # noqa: E402
    KEYS,
    PER_KEY,
    Witnessing,
    calls_after,
    check_restore_after_a_kill,
    run_until,
    source,
)
from tests.store_checks import rc  # noqa: E402

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
    """It sometimes failed at open with "Connection refused"."""
    check_restore_after_a_kill(
        lambda: FlussStore(aj_fluss_replicated), lambda: aj_fluss_cluster.kill_tablet_server(0)
    )


class Witness(Witnessing, FlussStore):
    """The Fluss store, remembering what it acknowledged and refused."""


def test_an_agent_through_a_tablet_server_sigkill_loses_nothing_and_runs_nothing_twice(
    tmp_path, aj_fluss_cluster, aj_fluss_replicated
):
    """Appends in flight to the lost leader fail (counted as not written): the runner stops
    at once, starting no durable call after the first refusal (it went on 12.5-41 s,
    starting new runs), and a restore finishes the work."""
    snapshot = tmp_path / "snapshot"
    with CountingService(delay=0.005) as service:
        store = Witness(aj_fluss_replicated)
        runner = LocalRunner(Orders(service.url), store)
        half = KEYS * PER_KEY // 2

        def kill() -> None:
            aj_fluss_cluster.kill_tablet_server(0)

        stopped_at = None
        try:
            asyncio.run(
                run_until(runner, lambda: service.executions() >= half, kill, pace=0.01,
                          snapshot_path=snapshot, snapshot_every=5)
            )  # fmt: skip
            again = None
        except ActionJournalError:  # appends in flight to the lost leader: restore, go on
            stopped_at = time.time()
            late = calls_after(service, store.first_refusal() or stopped_at)
            again = LocalRunner.restore(snapshot, Orders(service.url), store)
            asyncio.run(again.run_source(source()))
        finally:
            store.close()
        outputs = {e.output["i"] for _, e in runner.outputs + (again.outputs if again else [])}
        counts = dict(service.counts)
    assert outputs == set(range(KEYS * PER_KEY))
    assert not {call: n for call, n in counts.items() if n > 1}, "a call ran twice"
    assert len(counts) == 2 * KEYS * PER_KEY
    if stopped_at is not None:
        first = store.first_refusal()
        assert first is not None
        assert not late, f"{len(late)} durable calls started after the first JournalWriteError"
        assert stopped_at - first <= 10, f"the runner went on {stopped_at - first:.0f} s"
        print(f"runner stopped {stopped_at - first:.1f} s after the first refusal")
