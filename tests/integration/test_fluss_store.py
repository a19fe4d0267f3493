"""The Fluss store on a real cluster: failures surface, recovery reads are validated and cheap."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections import Counter

import pytest
from pydantic import ValidationError

from actionjournal import (
    ActionFailedError,
    Agent,
    DataLossError,
    InputEvent,
    JournalWriteError,
    LocalRunner,
    MarkerMismatchError,
    OutputEvent,
    StoreRecreatedError,
    action,
)
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import StoreError
from actionjournal.durable.records import CallFinished, RunCompleted
from actionjournal.operator.engine import AgentEngine, KeyState, PendingInput
from actionjournal.testing.service import CountingService

fluss = pytest.importorskip("fluss")

from actionjournal.stores.fluss import (  # noqa: E402
    FlussStore,
    FlussStoreConfig,
    bucketing,
)
from actionjournal.stores.fluss import store as fluss_store_module  # noqa: E402
from tests.store_checks import check_one_pass_per_partition, rc, seqs  # noqa: E402

pytestmark = pytest.mark.fluss


class Noop(Agent):
    uid = "op"

    @action(InputEvent)
    def handle(self, event, ctx):
        pass


def pending_state(marker) -> KeyState:
    return KeyState(next_seq=1, pending=[PendingInput(0, b"\xc0")], marker=marker)


def drop(fluss_run, table: str) -> None:
    path = fluss.TablePath("actionjournal", table)
    fluss_run(lambda conn: conn.get_admin().drop_table(path, ignore_if_not_exists=True))


# -- no cluster needed -----------------------------------------------------------------------


def test_bucketing_matches_the_fluss_reference_vectors():
    # From fluss-rust's murmur_hash.rs and bucketing/mod.rs tests (the Java client agrees).
    h = bucketing._murmur_bytes
    i = bucketing._murmur_int
    assert h(b"") == 0x087FCD5C
    assert h(b"The quick brown fox jumps over the lazy dog") == 0x1BC6F880
    assert (i(0), i(42), i(-77)) == (0x2362F9DE, 0x43A46E1D, 0x2EEB27DE)
    assert i(h(bytes([0, 10]))) % 7 == 1
    assert i(h(bytes([0, 10, 10, 10]))) % 12 == 0
    assert i(h(b"2bb87d68-baf9-4e64-90f9-f80910419fa6")) % 16 == 6
    assert i(h(b"The quick brown fox jumps over the lazy dog")) % 8 == 6


def test_config_errors_name_the_setting_and_never_show_secrets():
    secret = {"security.sasl.password": "hunter2"}
    with pytest.raises(ValidationError) as caught:
        FlussStoreConfig(bootstrap_servers="b:9123", client_config={**secret, "writer.acks": "1"})
    assert "'writer.acks'" in str(caught.value) and "acks=all" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in repr(FlussStoreConfig(bootstrap_servers="b:9123", client_config=secret))
    with pytest.raises(ValidationError, match="buckets"):
        FlussStoreConfig(bootstrap_servers="b:9123", buckets=0)
    with pytest.raises(ValidationError, match="table"):
        FlussStoreConfig(bootstrap_servers="b:9123", table="no spaces")
    with pytest.raises(ValidationError, match="replication_factor"):
        FlussStoreConfig(
            bootstrap_servers="b:9123", table_properties={"table.replication.factor": "3"}
        )
    with pytest.raises(ValidationError, match="linger"):
        FlussStoreConfig(bootstrap_servers="b:9123", linger=5)  # unknown settings fail
    # An unknown client property fails at start, naming the property but not its value.
    bad = FlussStoreConfig(bootstrap_servers="b:9123", client_config={"sasl.passwrd": "hunter2"})
    with pytest.raises(StoreError, match="sasl.passwrd") as caught:
        FlussStore(bad)
    assert "hunter2" not in str(caught.value)


def test_unreachable_coordinator_fails_at_start_not_hangs():
    start = time.monotonic()
    config = FlussStoreConfig(bootstrap_servers="127.0.0.1:9", request_timeout_s=3)
    opening = r"opening Fluss table actionjournal\.action_state on 127\.0\.0\.1:9"
    with pytest.raises(StoreError, match=opening):
        FlussStore(config)
    assert time.monotonic() - start < 15


# -- the table -------------------------------------------------------------------------------


def test_existing_table_with_another_bucket_count_is_refused(fluss_store, fluss_table):
    fluss_store(fluss_table, buckets=3).close()
    with pytest.raises(StoreError, match=r"has 3 buckets but buckets=4.*Set buckets=3"):
        fluss_store(fluss_table, buckets=4)
    assert fluss_store(fluss_table, buckets=3).partition_of("k") in range(3)


def test_missing_table_without_create_table_is_refused(fluss_store, fluss_table):
    with pytest.raises(StoreError, match=r"does not exist .* create_table is false"):
        fluss_store(fluss_table, create_table=False)


def test_store_identity_is_the_table_id(fluss_store, fluss_table, fluss_run):
    store = fluss_store(fluss_table, buckets=64)  # the default, as a job gets it
    path = fluss.TablePath("actionjournal", fluss_table)
    info = fluss_run(lambda conn: conn.get_admin().get_table_info(path))
    assert info.num_buckets == 64
    assert store.identity.backend == "fluss"
    assert store.identity.name == f"actionjournal.{fluss_table}"
    assert store.identity.uid == str(info.table_id)
    assert store.identity == fluss_store(fluss_table, buckets=64).identity  # stable across opens


def test_rows_land_in_the_bucket_the_store_computes(fluss_store, fluss_table, fluss_run):
    store = fluss_store(fluss_table, buckets=8)
    keys = [f"key-{n}-{'x' * (n % 13)}-\u00e9" for n in range(120)]
    markers = {key: store.append(rc(key, 0)) for key in keys}
    path = fluss.TablePath("actionjournal", fluss_table)

    async def where(conn) -> dict[str, tuple[int, int]]:
        table = await conn.get_table(path)
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe_buckets({b: 0 for b in range(8)})
        found: dict[str, tuple[int, int]] = {}
        while len(found) < len(keys):
            for rb in await scanner.poll_record_batch(1000):
                for n, key in enumerate(rb.batch.column("key_id").to_pylist()):
                    found[key] = (rb.bucket.bucket_id, rb.base_offset + n)
        return found

    found = fluss_run(where)
    for key in keys:
        bucket, offset = found[key]
        assert bucket == store.partition_of(key) == markers[key].partition
        assert markers[key].position >= offset  # the marker covers the record


# -- writes ----------------------------------------------------------------------------------


def test_appends_to_a_dropped_table_fail_naming_it(fluss_store, fluss_table, fluss_run):
    store = fluss_store(fluss_table, ack_timeout_s=5)
    store.append(rc("k", 0))
    drop(fluss_run, fluss_table)
    # The tablet server may take appends for a moment while it deletes the table's replicas.
    deadline = time.monotonic() + 30
    while True:
        start = time.monotonic()
        try:
            store.append(rc("k", 1))
        except JournalWriteError as exc:
            message = str(exc)
            break
        assert time.monotonic() < deadline, "appends to the dropped table kept succeeding"
        time.sleep(0.1)
    assert time.monotonic() - start < 5 + 10
    assert f"table actionjournal.{fluss_table} bucket {store.partition_of('k')}" in message
    assert "RunCompleted of key k seq 1" in message and "dropped" in message


# -- recovery validation ---------------------------------------------------------------------


def test_recreated_table_is_detected(fluss_store, fluss_table, fluss_run):
    first = fluss_store(fluss_table)
    marker = first.append(rc("k", 0))
    drop(fluss_run, fluss_table)
    second = fluss_store(fluss_table)
    assert second.identity.uid != marker.store.uid
    engine = AgentEngine(Noop(), second)
    with pytest.raises(StoreRecreatedError, match=f"{fluss_table}.*deleted and recreated"):
        engine.restore.validate_marker("k", pending_state(marker).marker)
    # The store opened before the drop refuses to write into the new table.
    with pytest.raises(JournalWriteError, match="recreated"):
        first.append(rc("k", 1))
    assert seqs(second, "k") == []


def test_marker_of_another_table_is_refused(fluss_store, fluss_table):
    other = fluss_store(f"{fluss_table}_other")
    marker = other.append(rc("k", 0))
    engine = AgentEngine(Noop(), fluss_store(fluss_table))
    with pytest.raises(
        MarkerMismatchError, match=f"{fluss_table}_other.*configured store is fluss"
    ):
        engine.restore.validate_marker("k", pending_state(marker).marker)


def test_expired_records_below_a_pending_marker_are_data_loss(fault_cluster):
    fault_cluster.start_tablet_server()  # if an earlier test left it stopped
    table = f"ttl_{uuid.uuid4().hex[:8]}"
    config = FlussStoreConfig(
        bootstrap_servers=fault_cluster.bootstrap,
        table=table,
        buckets=1,
        table_properties={"table.log.ttl": "2s"},
    )
    store = FlussStore(config)
    try:
        # ~1 KB records: the 64 KB segments roll, and closed ones expire after 2 s.
        markers = [store.append(rc("k", n, digest="x" * 1000)) for n in range(300)]
        deadline = time.monotonic() + 60
        while store.earliest_position("k") <= markers[0].position + 1:
            assert time.monotonic() < deadline, "retention never deleted a segment"
            time.sleep(0.5)
        earliest = store.earliest_position("k")
        engine = AgentEngine(Noop(), store)
        # Retention keeps deleting: the engine sees the earliest offset past the marker, or
        # the store finds offsets gone while it reads; both refuse, naming the table.
        with pytest.raises(
            DataLossError, match=rf"actionjournal\.{table} (partition 0 now|bucket 0 no longer)"
        ):
            engine.recover("k", pending_state(markers[0]))
        # A marker inside the retained range is fine; an idle key reads what is left.
        assert engine.recover("k", pending_state(markers[-1])).records == 0
        assert engine.recover("k", KeyState(next_seq=300, marker=markers[0])).records == 0
        tail = seqs(store, "k")  # retention keeps deleting meanwhile
        assert tail == list(range(tail[0], 300)) and tail[0] >= earliest
        # Reading from a deleted offset is refused, not silently shortened.
        with pytest.raises(DataLossError, match="no longer holds offsets"):
            store.read_key("ns", "op", "k", markers[0])
    finally:
        store.close()


# -- reads -----------------------------------------------------------------------------------


class CountingCodec(RecordCodec):
    decoded = 0

    def decode(self, data: bytes, where: str = ""):
        CountingCodec.decoded += 1
        return super().decode(data, where)


def test_namespaces_sharing_a_table_do_not_interfere(fluss_store, fluss_table):
    # Two jobs, each signing with its own key: reading ours never touches theirs.
    ours = fluss_store(fluss_table, codec=CountingCodec(b"our key"))
    theirs = fluss_store(fluss_table, codec=RecordCodec(b"their key"))
    for n in range(5):
        ours.append(rc("k", n, namespace="a"))
        theirs.append(rc("k", 100 + n, namespace="b"))
        theirs.append(rc("k2", n, namespace="b"))
    CountingCodec.decoded = 0
    assert seqs(ours, "k", namespace="a") == [0, 1, 2, 3, 4]
    assert CountingCodec.decoded == 5  # only our records were decoded
    assert seqs(theirs, "k", namespace="b") == [100, 101, 102, 103, 104]
    assert seqs(ours, "k2", namespace="a") == []


def test_many_keys_recover_with_one_pass_per_bucket(fluss_store, fluss_table, monkeypatch):
    writer = fluss_store(fluss_table, buckets=2)
    reader = functools.partial(fluss_store, fluss_table, buckets=2)
    check_one_pass_per_partition(writer, reader, fluss_store_module, "_read_end", monkeypatch)


def double(value: str) -> str:
    return value * 2


class TwoCalls(Agent):
    """Four records per run: two CallFinished, ActionCompleted, RunCompleted."""

    uid = "two-calls"

    @action(InputEvent)
    def handle(self, event, ctx):
        first = ctx.durable_execute(double, event.input)
        ctx.send_event(OutputEvent(ctx.durable_execute(double, first)))


def test_each_checkpoint_recovers_exactly_the_runs_after_it(fluss_store, fluss_table):
    # Only a run's last record (RunCompleted) has its offset probed; its marker is what
    # keyed state keeps. A marker one record too early or too late shows here: every state
    # a checkpoint could hold must read back exactly the records of its pending and later runs.
    store = fluss_store(fluss_table, buckets=1)  # both keys in one bucket, interleaved
    engine = AgentEngine(TwoCalls(), store)
    ids = {key: engine.key_id(key) for key in ("a", "b")}
    states = {key: KeyState() for key in ids}
    checkpoints: list[KeyState] = []  # "a" with its next input pending, before each run
    runs = 12
    for n in range(runs):
        # Some runs of "a" follow its previous run directly, some follow a run of "b".
        for key in ("a", "b") if n % 2 else ("b", "a"):
            key_id = ids[key]
            state = engine.accept(states[key], f"{key}{n}")
            if key == "a":
                checkpoints.append(state)
            result = asyncio.run(engine.run_next(key, key_id, state))
            states[key] = engine.complete(state, result, key_id)
    namespace = engine.config.namespace
    for n, checkpoint in enumerate(checkpoints):
        reader = fluss_store(fluss_table, buckets=1)  # as after a restart
        records = reader.read_key(namespace, "two-calls", ids["a"], checkpoint.marker)
        assert [r.seq for r in records] == [seq for seq in range(n, runs) for _ in range(4)]
        assert isinstance(records[-1], RunCompleted)
        journal = AgentEngine(TwoCalls(), reader).recover(ids["a"], checkpoint)
        assert sorted(journal.runs) == list(range(n, runs))
    # The marker of any other record is a bound below it, with no probe: the bucket's end as
    # last seen (after the last run, of "b") minus one. Records after it include it.
    record = CallFinished(
        namespace, "two-calls", 0, ids["a"], runs, action_id="x", index=0, call_id="c",
        function_id="f", durable_id=None, arg_digest="d", value=None, error=None, at=1.0,
        duration=0.0,
    )  # fmt: skip
    marker = store.append(record)
    assert store.read_key(namespace, "two-calls", ids["a"], marker)[-1] == record
    assert marker.position == states["b"].marker.position


def test_read_is_bounded_by_the_end_captured_at_its_start(fluss_store, fluss_table):
    store = fluss_store(fluss_table)
    for n in range(200):
        store.append(rc("k", n))
    stop = threading.Event()

    def keep_writing() -> None:
        n = 1000
        while not stop.is_set():
            store.append(rc("k", n))
            n += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        got = seqs(store, "k")
    finally:
        stop.set()
        writer.join()
    assert got[:200] == list(range(200))
    assert got[200:] == list(range(1000, 1000 + len(got) - 200))


# -- a tablet server going away ----------------------------------------------------------------


class Counted(Agent):
    """Two durable calls to the counting service per input."""

    uid = "counted"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        first = ctx.durable_execute(_call_service, self.url, "first", event.input)
        second = ctx.durable_execute(_call_service, self.url, "second", first)
        ctx.send_event(OutputEvent(second))


def _call_service(url: str, name: str, value):
    import httpx

    from actionjournal import current_call

    reply = httpx.post(
        f"{url}/calls/{name}", json={"call_id": current_call().call_id, "value": value}
    )
    reply.raise_for_status()
    return reply.json()["value"]


def _journaled_calls(store: FlussStore, keys: set[str]) -> set[str]:
    records = [
        r
        for key in keys
        for r in store.read_key("default", "counted", AgentEngine.key_id(key), None)
    ]
    return {r.call_id for r in records if isinstance(r, CallFinished)}


def test_tablet_server_stopped_mid_run_fails_fast_then_recovers(fault_cluster, tmp_path):
    config = FlussStoreConfig(
        bootstrap_servers=fault_cluster.bootstrap,
        table=f"stop_{uuid.uuid4().hex[:8]}",
        buckets=4,
        ack_timeout_s=5,
    )
    fault_cluster.start_tablet_server()  # if an earlier test left it stopped
    # Inputs arrive over ~6 s; the tablet server stops (~3 s, gracefully) after 10 calls.
    inputs = [(f"user-{n % 4}", n) for n in range(60)]
    snapshot = tmp_path / "snapshot"
    store = FlussStore(config)
    with CountingService() as service:
        runner = LocalRunner(Counted(service.url), store)
        stopped_at: list[float] = []

        def stop_when_busy() -> None:
            while len(service.counts) < 10:
                time.sleep(0.01)
            fault_cluster.stop_tablet_server()
            stopped_at.append(time.monotonic())

        stopper = threading.Thread(target=stop_when_busy)
        stopper.start()
        try:
            # The action fails with the journal error (wrapped once more if a call's).
            with pytest.raises((JournalWriteError, ActionFailedError)) as caught:
                run = runner.run(inputs, snapshot_path=snapshot, snapshot_every=2, pace=0.1)
                asyncio.run(run)
            failed_at = time.monotonic()
        finally:
            stopper.join()
        message = str(caught.value)
        assert f"table {store.name} bucket" in message, message
        assert "counts as not written" in message
        assert any(hint in message for hint in ("TabletServer", "tablet server")), message
        # No hang: the append in flight when the server went away gave up within its timeout.
        assert failed_at - stopped_at[0] < config.ack_timeout_s + 5
        store.close()

        fault_cluster.start_tablet_server()
        service.wait_idle()
        executed_before = dict(service.counts)
        restored_store = FlussStore(config)
        journaled = _journaled_calls(restored_store, {k for k, _ in inputs})

        async def restore() -> LocalRunner:
            restored = LocalRunner.restore(snapshot, Counted(service.url), restored_store)
            restored.resume()
            await restored.run_source(inputs, snapshot_path=snapshot, snapshot_every=2)
            return restored

        restored = asyncio.run(restore())
        counts = dict(service.counts)
        restored_store.close()
    # Every input completed, across the failed run and the restored one.
    assert {e.output for _, e in runner.outputs + restored.outputs} == set(range(len(inputs)))
    assert len(counts) == 2 * len(inputs)
    # No silent loss: a call whose result the journal acknowledged never ran again; only
    # calls without an acknowledged record ran twice (policy "rerun").
    assert journaled and all(counts[c] == 1 for c in journaled)
    assert {c for c, n in counts.items() if n > 1} <= set(executed_before) - journaled
    assert max(counts.values()) <= 2


def test_tablet_server_crash_losing_acknowledged_records_is_reported(fault_cluster):
    # Replication factor 1 and a high watermark checkpointed hourly: a killed tablet server
    # comes back without the records acknowledged since it started (see docs/fluss.md).
    config = FlussStoreConfig(
        bootstrap_servers=fault_cluster.bootstrap,
        table=f"crash_{uuid.uuid4().hex[:8]}",
        buckets=1,
        ack_timeout_s=3,
    )
    fault_cluster.start_tablet_server()  # if an earlier test left it stopped
    store = FlussStore(config)
    try:
        fault_cluster.restart_tablet_server()  # a fresh incarnation, nothing checkpointed since
        deadline = time.monotonic() + 60
        while True:  # the client reconnects with backoff
            try:
                store.append(rc("k", 0))
                break
            except JournalWriteError:
                assert time.monotonic() < deadline, "appends did not work after the restart"
        marker = [store.append(rc("k", n)) for n in range(1, 6)][-1]
        fault_cluster.kill_tablet_server()
        start = time.monotonic()
        with pytest.raises(JournalWriteError, match="TabletServer|ack_timeout_s"):
            store.append(rc("k", 6))
        assert time.monotonic() - start < config.ack_timeout_s + 10
        fault_cluster.start_tablet_server()
    finally:
        store.close()
    reopened = FlussStore(config)
    try:
        with pytest.raises(DataLossError, match="acknowledged records were lost"):
            reopened.read_key("ns", "op", "k", marker)
    finally:
        reopened.close()


# -- end to end ------------------------------------------------------------------------------

CALLS: list[str] = []


def lookup(ticket: str) -> str:
    CALLS.append(ticket)
    return ticket.upper()


class Lookup(Agent):
    uid = "lookup"

    @action(InputEvent)
    def handle(self, event, ctx):
        found = ctx.durable_execute(lookup, event.input)
        ctx.short_term_memory.set("last", found)
        ctx.send_event(OutputEvent(found))


def test_second_run_over_the_same_table_replays_everything(fluss_store, fluss_table):
    inputs = [(f"user-{n % 4}", f"ticket-{n}") for n in range(12)]
    CALLS.clear()
    first = LocalRunner(Lookup(), fluss_store(fluss_table))
    asyncio.run(first.run(inputs))
    assert first.counts["executed"] == 12 and len(CALLS) == 12
    second = LocalRunner(Lookup(), fluss_store(fluss_table))  # as a new process would
    asyncio.run(second.run(inputs))
    assert second.counts["executed"] == 0 and second.counts["actions_replayed"] == 12
    assert len(CALLS) == 12
    assert sorted(e.output for _, e in second.outputs) == sorted(e.output for _, e in first.outputs)
    assert Counter(CALLS) == Counter(f"ticket-{n}" for n in range(12))
