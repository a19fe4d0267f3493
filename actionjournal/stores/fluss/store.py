"""The Fluss store: the journal contract over one Fluss log table, and nothing else.

Its one job is longer than 500 lines because every operation (opening, appending with a
marker, reading a bucket range, closing) runs on the store's own event loop against state
only that loop touches (connections, the table handle, the writer and its generation,
probes); the parts that need none of it are the sibling modules. What it guarantees and why
is in the package docstring (:mod:`actionjournal.stores.fluss`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import fluss
import pyarrow as pa

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import (
    DataLossError,
    JournalWriteError,
    RecordTooLargeError,
    StoreError,
)
from actionjournal.durable.records import JournalRecord, Marker, RunCompleted, StoreIdentity
from actionjournal.durable.store import (
    Inspectable,
    Progress,
    ScanFilter,
    ScannedRecord,
    StoreObserver,
)
from actionjournal.stores.fluss.bucketing import fluss_bucket
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.fluss.errors import (
    NO_TABLET_SERVER,
    ask_cluster,
    codes,
    describe,
    not_ready,
    refused_for_now,
    unreachable,
)
from actionjournal.stores.fluss.inspection import as_found, scan_bucket
from actionjournal.stores.fluss.leaders import WriterWatch, tablet_servers
from actionjournal.stores.fluss.loop import Loop, WriterLost, acknowledged, own_loop
from actionjournal.stores.fluss.read import RecordSpan, Spans, collect, decode_runs, runs_cost
from actionjournal.stores.fluss.table import (
    check_replication,
    check_table,
    create_table,
    table_info,
)
from actionjournal.stores.quarantine import KeyRead, store_options
from actionjournal.stores.recovery import RecentProbes, RecoveryCache
from actionjournal.stores.replication import insync_replicas
from actionjournal.stores.seen import SeenKeys

__all__ = ["FlussStore", "FlussStoreConfig", "fluss_bucket"]

log = logging.getLogger("actionjournal.stores.fluss")

T = TypeVar("T")

# Past the store's own timeouts (enforced on the loop), how long a caller waits for the loop.
_LOOP_MARGIN_S = 5.0
_EARLIEST_TTL_S = 1.0  # a recovery burst shares one earliest-offset query
_WAVE_S = 1.0  # ... and one end-offset probe per bucket (see "Recovery reads ...")
_POLL_MS = 100
_POLL_FOR_S = 0.5  # polls per trip to the loop (see _poll)
# Client settings of the store's own, unless client_config says otherwise: no batching delay
# for a lone append (p50 ~0.8 ms vs ~100 ms with the default 100 ms), short fetch waits for
# reads (the first fetch of a subscription waits this long even when data is there).
_WRITER_DEFAULTS = {"writer.batch-timeout-ms": "0"}
_READER_DEFAULTS = {
    "scanner.log.fetch.wait-max-time-ms": "10",
    "scanner.log.max-poll-records": "5000",
}

_open_stores: weakref.WeakSet[FlussStore] = weakref.WeakSet()
# pyfluss 1.0: closing, or dropping, a connection whose writer lost track of batches during a
# tablet server outage makes a tokio worker spin at 100% CPU once the server is back, which on
# a small machine starves every other Fluss connection of the process (their appends stall).
# Such connections stay here, open and idle, for the life of the process instead.
_parked: list[Any] = []


@atexit.register
def _close_open_stores() -> None:
    # pyfluss aborts the interpreter (SIGABRT) when its futures are still pending at exit.
    for store in list(_open_stores):
        store.close()


class FlussStore(Inspectable):
    """Journal in a Fluss log table. Thread-safe; one instance per process is enough."""

    def __init__(
        self,
        config: FlussStoreConfig,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
    ) -> None:
        self.config = config
        self.codec = codec or RecordCodec()
        self.observer = observer
        self.name = f"{config.database}.{config.table}"
        self._path = fluss.TablePath(config.database, config.table)
        self._writer_config = self._client_config(_WRITER_DEFAULTS)
        self._reader_config = self._client_config(_READER_DEFAULTS)
        self._closed = False
        self._loop = Loop(f"actionjournal-fluss-{self.name}")
        # Loop-thread state: connections, the current table handle and writer, probes.
        self._conn: Any = None
        self._reader: Any = None  # (connection, table) for reads; _open starts opening it
        self._reader_opening: asyncio.Task[tuple[Any, Any]] | None = None  # see _open_reader_soon
        self._earliest_query: tuple[float, asyncio.Task[dict[int, int]]] | None = None
        self._table: Any = None
        self._writer: Any = None
        self._generation = 0
        self._reopen: asyncio.Lock | None = None
        self._probes: dict[int, asyncio.Future[int]] = {}
        self._ends: dict[int, int] = {}  # each bucket's end offset as last seen, for markers
        self._watch = WriterWatch()  # see leaders.py
        self._watching: asyncio.Task[None] | None = None
        # Asks which tablet servers are registered. Not the writer's connection: pyfluss 1.0
        # forgets a connection's table metadata when asked for the server nodes, and its
        # writer then fails every append with "Table not found".
        self._servers_conn: Any = None
        try:
            self.table_id = self._call(self._open(), config.request_timeout_s, "opening")
        except BaseException:
            self.close()
            raise
        self.identity = StoreIdentity("fluss", self.name, str(self.table_id))
        self._read_lock = threading.Lock()
        self._windows = RecoveryCache(config.recovery_cache_bytes, control=False, cost=runs_cost)
        self._wave_ends: RecentProbes[int] = RecentProbes()  # see _end_of
        # Keys already read, by namespace/operator: read again, they need the current end
        # (in fixed memory: a key taken for read before is only read the slower way).
        self._served: dict[tuple[str, str], SeenKeys] = {}
        self._earliest: tuple[float, dict[int, int]] = (0.0, {})
        _open_stores.add(self)
        log.info(
            "Fluss journal: table %s (id %s, %d buckets) on %s",
            self.name, self.table_id, config.buckets, config.bootstrap_servers,
        )  # fmt: skip

    # -- opening -----------------------------------------------------------------------------

    def _client_config(self, defaults: dict[str, str]) -> Any:
        properties = {
            **defaults,
            **self.config.client_config,
            "bootstrap.servers": self.config.bootstrap_servers,
        }
        try:
            return fluss.Config(properties)
        except fluss.FlussError as exc:  # names the property, never its value
            raise StoreError(f"bad Fluss client_config: {exc.message}") from None

    async def _open(self) -> int:
        cfg = self.config
        self._reopen = asyncio.Lock()
        try:
            self._conn = await fluss.FlussConnection.create(self._writer_config)
            self._servers_conn = await fluss.FlussConnection.create(self._writer_config)
            admin = self._conn.get_admin()
            info = await _riding_failovers(
                lambda: table_info(admin, self._path), cfg.request_timeout_s
            )
            if info is None:
                if not cfg.create_table:
                    raise StoreError(
                        f"Fluss table {self.name} does not exist on {cfg.bootstrap_servers} and "
                        "create_table is false: create it, or set create_table=true"
                    )
                info = await create_table(admin, self._path, cfg)
            check_table(info, cfg)
            self.table_id = int(info.table_id)  # _wait_ready scans its buckets
            await self._wait_ready()
            await self._check_replication(info)
            self._watching = _started(
                self._watch.run(
                    self._servers_conn.get_admin(), lambda: self._generation, self._invalidate
                )
            )
            # Every agent reads each key's journal before its first run, and a restored job at
            # once: the read connection (7-10 ms) and the earliest offsets (2-20 ms, reused
            # for a second) are asked for now, not within the first read.
            self._open_reader_soon()
            self._earliest_asked(_EARLIEST_TTL_S)
        except fluss.FlussError as exc:
            raise StoreError(
                f"opening Fluss table {self.name} on {cfg.bootstrap_servers} failed: "
                f"{describe(exc)}. Check that the cluster is up and the client_config security "
                "settings"
            ) from None
        return int(info.table_id)

    async def _wait_ready(self) -> None:
        """Wait until every bucket has a leader: a new table, or a restarted tablet server,
        needs a moment (pyfluss then says "table not found" although the table exists).

        The coordinator may answer ``list_offsets`` before the restarted tablet server leads
        every bucket again, so each bucket's leader is asked too (the limit scan of
        ``_high_watermark``, which waits out "no leader")."""
        admin = self._conn.get_admin()
        buckets = list(range(self.config.buckets))
        while True:
            try:
                self._ends = await admin.list_offsets(
                    self._path, buckets, fluss.OffsetSpec.latest()
                )
                self._table = await self._conn.get_table(self._path)
                await asyncio.gather(*(self._high_watermark(b) for b in buckets))
                await self._new_writer(self._table)
                return
            except fluss.FlussError as exc:
                if not not_ready(exc) and exc.error_code not in NO_TABLET_SERVER:
                    raise
            await asyncio.sleep(0.1)

    async def _check_replication(self, info: Any) -> None:
        """Refuse (or warn of) a table or cluster that keeps fewer copies than configured;
        tablet servers still registering (a cluster starting) are waited for, for half of
        request_timeout_s."""
        deadline = time.monotonic() + self.config.request_timeout_s / 2
        # As registered when the writer was made, then asked again while too few.
        wanted = insync_replicas(self.config.replication_factor, self.config.min_insync_replicas)
        while len(self._watch.servers) < wanted:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
            self._watch.servers = await tablet_servers(self._servers_conn.get_admin())
        problem = check_replication(info, len(self._watch.servers), self.config)
        if problem is None:
            return
        if self.config.weak_table == "warn":
            log.warning("%s; going on because weak_table='warn'", problem)
            return
        raise StoreError(
            f"{problem}. A tablet server's loss could lose acknowledged journal records. Fix "
            "it, or set weak_table='warn' to go on as it is"
        )

    async def _new_writer(self, table: Any) -> None:
        """A writer of ``table``, and the tablet servers it may send to (see leaders.py)."""
        self._watch.servers = await tablet_servers(self._servers_conn.get_admin())
        self._writer = table.new_append().create_writer()

    # -- appends ---------------------------------------------------------------------------------

    def partition_of(self, key_id: str) -> int:
        """Stable forever: the bucket Fluss puts the key's rows in."""
        return fluss_bucket(key_id, self.config.buckets)

    @classmethod
    def open_existing(
        cls,
        config: FlussStoreConfig,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
        read_only: bool = False,
    ) -> FlussStore:
        """Open the existing table ``config`` names with the bucket count it has; never
        creates it (``read_only``: a promise the tools keep)."""
        return cls(as_found(config), codec, observer=observer)

    # -- the tools' view (Inspectable) --------------------------------------------------------

    def partitions(self) -> list[int]:
        return list(range(self.config.buckets))

    def position_range(self, partition: int) -> tuple[int, int]:
        return self._earliest_of(partition, 0.0), self._end_of(partition, 0.0)

    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        return scan_bucket(self, partition, start, end, wanted, progress)

    # -- appends -------------------------------------------------------------------------------

    def append(self, record: JournalRecord) -> Marker:
        started = time.perf_counter()
        data = self.codec.encode(record)
        bucket = self.partition_of(record.key_id)
        what = (
            f"{type(record).__name__} of key {record.key_id} seq {record.seq} "
            f"(table {self.name} bucket {bucket})"
        )
        if self._closed:
            raise JournalWriteError(f"cannot append {what}: the Fluss store was closed")
        row = (record.key_id, record.namespace, record.operator_uid, data)
        timeout = self.config.ack_timeout_s
        exact = isinstance(record, RunCompleted)  # the one marker keyed state keeps
        here = None if exact else own_loop()
        try:
            with self._watch.waiting():
                position = None
                if here is not None and (writer := self._writer) is not None:
                    with contextlib.suppress(_RefusedForNow):
                        position = self._append_here(here, writer, row, bucket)
                if position is None:  # on the store's loop, which retries refusals
                    position = self._loop.call(
                        self._append(row, bucket, exact), timeout + _LOOP_MARGIN_S
                    )
        except WriterLost as exc:
            raise JournalWriteError(
                f"{what} was sent to a bucket leader that is gone: {exc}. The record may or "
                "may not have been written and counts as not written"
            ) from None
        except TimeoutError:
            raise JournalWriteError(
                f"{what}: no acknowledgement within ack_timeout_s={timeout:g}; the record may or "
                f"may not have been written and counts as not written. {self._diagnose(bucket)}"
            ) from None
        except fluss.FlussError as exc:
            too_large = exc.error_code == codes.RECORD_TOO_LARGE_EXCEPTION
            raise (RecordTooLargeError if too_large else JournalWriteError)(
                f"{what} failed: {describe(exc)}; the record counts as not written. "
                f"{self._advice(exc, bucket)}"
            ) from None
        self.observe_append(len(data), started)
        return self.marker(record.key_id, position, record.epoch)

    async def _append(self, row: tuple[str, str, str, bytes], bucket: int, exact: bool) -> int:
        """Append ``row``; its marker position: exact (one probe) or a bound below the row.

        The bound is the bucket's end as seen before the row was sent, minus one: every
        offset the row, or anything later, can get is past it.
        """
        deadline = time.monotonic() + self.config.ack_timeout_s
        async with asyncio.timeout(self.config.ack_timeout_s):
            while True:
                if self._writer is None:
                    await self._fresh_table()  # a table really dropped fails here, at once
                generation = self._generation
                below = self._ends.get(bucket, 0) - 1
                try:
                    remaining = deadline - time.monotonic()
                    await acknowledged(self._writer, row, remaining, self._lost_of(generation))
                    return await self._end_offset(bucket) - 1 if exact else below
                except fluss.FlussError as exc:
                    self._invalidate(generation)
                    if not refused_for_now(exc):
                        raise
                except BaseException:
                    self._invalidate(generation)
                    raise
                await asyncio.sleep(0.2)  # a new leader soon: to it through a new writer

    def _append_here(
        self,
        here: asyncio.AbstractEventLoop,
        writer: Any,
        row: tuple[str, str, str, bytes],
        bucket: int,
    ) -> int:
        """:meth:`_append` without a probe, waiting on the calling thread's own loop.

        Hopping onto the store's loop and back would add two thread wake-ups to the append,
        on a busy machine up to a third of its time; pyfluss completes a wait on whichever loop
        awaits it. After a failure the store's loop, which owns the writer, drops it (the
        error message's question to the cluster queues behind that on the same loop, so for
        a timeout or a server error it is dropped before the caller can append again).
        """
        generation = self._generation
        below = self._ends.get(bucket, 0) - 1
        try:
            here.run_until_complete(
                acknowledged(writer, row, self.config.ack_timeout_s, self._lost_of(generation))
            )
        except BaseException as exc:
            with contextlib.suppress(RuntimeError):  # the store was closed meanwhile
                self._loop.loop.call_soon_threadsafe(self._invalidate, generation)
            if isinstance(exc, fluss.FlussError) and refused_for_now(exc):
                raise _RefusedForNow from exc
            raise
        return below

    def _lost_of(self, generation: int) -> Callable[[], str | None]:
        return lambda: self._watch.lost(generation)

    def _invalidate(self, generation: int) -> None:
        """After a failure, write through a new table handle and writer.

        The old handle may be stuck for good (see the module docstring); records of its
        generation still in flight are abandoned.
        """
        if generation == self._generation:
            self._writer = None
            self._generation += 1
            self._ends.clear()  # the server may have restarted, having lost records

    async def _fresh_table(self) -> Any:
        """The current table handle (with its writer), reopened after a failure."""
        assert self._reopen is not None
        async with self._reopen:
            if self._writer is None:
                table = await self._conn.get_table(self._path)
                table_id = table.get_table_info().table_id
                if table_id != self.table_id:
                    raise fluss.FlussError(
                        f"table {self.name} was dropped and recreated (id {self.table_id}, now "
                        f"{table_id}): the journal this store wrote is gone. Restart the job; "
                        "restore with journal.upgrade='fresh' to start a new journal",
                        codes.TABLE_NOT_EXIST,
                    )
                self._table = table
                await self._new_writer(table)
            return self._table

    async def _end_offset(self, bucket: int) -> int:
        """The bucket's high watermark, read after every acknowledgement that waits on it.

        Acknowledgements are handled on this loop, so those of one loop iteration share the
        probe scheduled by the first of them; a probe is sent only after all of them.
        """
        probe = self._probes.get(bucket)
        if probe is None:
            probe = asyncio.get_running_loop().create_future()
            self._probes[bucket] = probe
            asyncio.get_running_loop().call_soon(self._send_probe, bucket, probe)
        return await asyncio.shield(probe)

    def _send_probe(self, bucket: int, probe: asyncio.Future[int]) -> None:
        del self._probes[bucket]  # later acknowledgements need a later probe
        # Retrieved even when every waiter gave up, so asyncio does not log it as lost.
        probe.add_done_callback(lambda f: f.cancelled() or f.exception())

        def done(task: asyncio.Task[int]) -> None:
            if probe.done():
                return
            if task.cancelled():
                probe.cancel()
            elif task.exception() is not None:
                probe.set_exception(task.exception())  # type: ignore[arg-type]
            else:
                probe.set_result(task.result())

        asyncio.ensure_future(self._high_watermark(bucket)).add_done_callback(done)

    async def _high_watermark(self, bucket: int) -> int:
        """Last readable offset + 1, by a one-record limit scan of the bucket's leader."""
        while True:
            scan = self._table.new_scan().limit(1)
            scanner = scan.create_bucket_batch_scanner(fluss.TableBucket(self.table_id, bucket))
            try:
                batches = await scanner.collect_all_batches()
            except fluss.FlussError as exc:
                if not not_ready(exc) and not unreachable(exc):
                    raise
                await asyncio.sleep(0.05)  # leader moving: callers bound the wait
                continue
            if batches:
                end = int(batches[-1].last_offset) + 1
            else:  # nothing readable: the bucket ends where it starts
                admin = self._conn.get_admin()
                latest = await admin.list_offsets(self._path, [bucket], fluss.OffsetSpec.latest())
                end = int(latest[bucket])
            self._ends[bucket] = end
            return end

    # -- errors ------------------------------------------------------------------------------

    def _diagnose(self, bucket: int | None = None) -> str:
        """What the cluster says about the table, for an error message (best effort, ~3 s)."""
        try:
            return self._loop.call(self._ask_cluster(bucket), 3 + _LOOP_MARGIN_S)
        except Exception:
            return (
                f"The coordinator at {self.config.bootstrap_servers} did not answer either: "
                "check that the cluster is up and reachable"
            )

    def _advice(self, exc: fluss.FlussError, bucket: int) -> str:
        code = exc.error_code
        if code == codes.RECORD_TOO_LARGE_EXCEPTION:
            return "Lower journal.max_payload_bytes, or raise the cluster's request size limits"
        if code in (codes.AUTHENTICATE_EXCEPTION, codes.AUTHORIZATION_EXCEPTION):
            return "Check the security.* settings in client_config and the table's ACLs"
        return self._diagnose(bucket)

    async def _ask_cluster(self, bucket: int | None) -> str:
        admin = self._conn.get_admin()
        return await ask_cluster(admin, self.config, self._path, self.table_id, bucket)

    # -- reads -------------------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float, doing: str) -> T:
        """Run ``coro`` on the loop within ``timeout``; an error or timeout is a StoreError."""
        try:
            return self._loop.call(asyncio.wait_for(coro, timeout), timeout + _LOOP_MARGIN_S)
        except TimeoutError:
            raise StoreError(
                f"{doing} of Fluss table {self.name} on {self.config.bootstrap_servers}: no "
                f"answer within {timeout:g} s (request_timeout_s); check that the cluster, its "
                "tablet servers included, is up"
            ) from None
        except fluss.FlussError as exc:
            raise StoreError(
                f"{doing} of Fluss table {self.name} failed: {describe(exc)}. {self._diagnose()}"
            ) from None

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        bucket = self.partition_of(key_id)
        where = f"table {self.name} bucket {bucket}"
        with self._read_lock:
            served = self._served.setdefault((namespace, operator_uid), SeenKeys())
            again = key_id in served
            try:
                entries, start, high = self._entries(
                    bucket, namespace, operator_uid, key_id, after, again, served
                )
            finally:
                served.add(key_id)  # even when the read failed: asked again, it reads afresh
        read = KeyRead(where, "offset", bucket, namespace, operator_uid, key_id, self.tool_options)
        return decode_runs(self.codec, entries, start, high, read)

    def tool_options(self) -> str:
        cfg = self.config
        return store_options(
            self.codec,
            store="fluss",
            bootstrap=cfg.bootstrap_servers,
            database=cfg.database,
            table=cfg.table,
        )

    def _entries(
        self,
        bucket: int,
        namespace: str,
        uid: str,
        key_id: str,
        after: Marker | None,
        again: bool,
        served: SeenKeys,
    ) -> tuple[list[RecordSpan], int, int]:
        """The key's entries at ``[start, high)`` and that range (see :meth:`read_key`)."""
        high = self._end_of(bucket, 0.0 if again else _WAVE_S, earliest=after is None)
        if after is not None and after.position >= high:
            raise DataLossError(
                f"the recovery marker of key {key_id} is at offset {after.position} but "
                f"table {self.name} bucket {bucket} now ends at offset {high}: acknowledged "
                "records were lost (e.g. a tablet server crashed with replication factor 1, see "
                "docs/fluss.md). Restore with journal.upgrade='fresh' to start a new journal"
            )
        if after is not None:
            start = after.position + 1
        else:  # all retained records; retention may move the start meanwhile (see _scan)
            start = self._earliest_of(bucket, _EARLIEST_TTL_S)
        if start >= high:
            return [], start, high
        everything = after is None
        if self.config.recovery_cache_bytes == 0 or again:
            found = self._scan(bucket, start, high, namespace, uid, key_id, skip_deleted=everything)
            return found.get(key_id, []), start, high

        def scan(begin: int, end: int, earlier: bool) -> Spans:
            return self._scan(
                bucket, begin, end, namespace, uid, skip_deleted=everything and earlier
            )

        entries = self._windows.read(bucket, namespace, uid, key_id, start, high, scan, served)
        return entries, start, high

    def _end_of(self, bucket: int, max_age: float, earliest: bool = False) -> int:
        """The bucket's end offset, probed at most ``max_age`` seconds ago; a probe also starts
        the query of the earliest offsets if ``earliest`` (the read needs them next)."""
        timeout = self.config.request_timeout_s
        what = f"reading the end of bucket {bucket}"
        return self._wave_ends.get(
            bucket, max_age, lambda: self._call(self._probe_end(bucket, earliest), timeout, what)
        )

    async def _probe_end(self, bucket: int, earliest: bool) -> int:
        """:meth:`_read_end`, while what the read needs next is under way: the read
        connection (if not open), the earliest offsets (if ``earliest``)."""
        if self._reader is None:
            self._open_reader_soon()
        if earliest and self._earliest_stale(bucket, _EARLIEST_TTL_S):
            self._earliest_asked(_EARLIEST_TTL_S)
        return await self._read_end(bucket)

    def _scan(
        self,
        bucket: int,
        start: int,
        end: int,
        namespace: str,
        uid: str,
        key_id: str = "",
        skip_deleted: bool = False,
    ) -> Spans:
        """Rows of ``namespace``/``uid`` (and ``key_id`` if given) at offsets ``[start, end)``.

        Offsets retention deleted meanwhile are a DataLossError, or skipped with
        ``skip_deleted`` (a read of everything retained). pyfluss returns nothing at all for
        a subscription below the bucket's start, so a stalled read checks that start.
        """
        where = f"table {self.name} bucket {bucket}"
        timeout = self.config.request_timeout_s
        doing = f"reading bucket {bucket}"
        scanner = self._call(self._subscribe(bucket, start), timeout, doing)
        found: Spans = {}
        position = start
        progress = time.monotonic()
        while position < end:
            batches = self._call(self._poll(scanner, end), timeout, doing)
            if not batches:
                stalled = time.monotonic() - progress
                if stalled > min(2.0, timeout) and position < self._earliest_of(bucket, stalled):
                    earliest = self._earliest_of(bucket, 0)
                    if not skip_deleted:
                        raise self._gap(where, position, earliest)
                    position = earliest
                    scanner = self._call(self._subscribe(bucket, position), timeout, doing)
                    progress = time.monotonic()
                    continue
                if stalled > timeout:
                    self._call(self._drop_reader(), timeout, "reopening")
                    raise StoreError(
                        f"reading {where} from offset {position} to {end} made no progress for "
                        f"{timeout:g} s (request_timeout_s); check that its tablet server is up"
                    )
                continue
            progress = time.monotonic()
            for base, batch in batches:
                if position >= end:
                    break  # a poll may return more than the range
                if base > position:
                    if not skip_deleted:
                        raise self._gap(where, position, base)
                    position = base
                batch = batch.slice(position - base, end - position)
                position += batch.num_rows
                collect(batch, position - batch.num_rows, namespace, uid, key_id, found)
        return found

    def _gap(self, where: str, position: int, first: int) -> DataLossError:
        return DataLossError(
            f"{where} no longer holds offsets {position}..{first - 1} (retention or cleanup "
            "deleted them while recovery needed them). Restore a newer checkpoint, or restore with "
            "journal.upgrade='fresh' to start a new journal"
        )

    async def _read_end(self, bucket: int) -> int:
        generation = self._generation
        try:
            await self._fresh_table()
            return await self._high_watermark(bucket)
        except BaseException:
            self._invalidate(generation)
            raise

    def _open_reader_soon(self) -> asyncio.Task[tuple[Any, Any]]:
        """Opening the read connection: under way, done, or started now (after a failure too).

        Opening the store starts it, and a read that finds it dropped starts it again before
        its offset probes: the connection and its table handle took ~8 ms of a ~70 ms
        recovery read.
        """
        if self._reader_opening is None or _failed(self._reader_opening):
            self._reader_opening = _started(self._open_reader())
        return self._reader_opening

    async def _open_reader(self) -> tuple[Any, Any]:
        conn = await fluss.FlussConnection.create(self._reader_config)
        try:
            return conn, await conn.get_table(self._path)
        except BaseException:
            await _close_quietly(conn, self.name)
            raise

    async def _reader_table(self) -> Any:
        if self._reader is None:
            try:
                self._reader = await self._open_reader_soon()
            finally:
                self._reader_opening = None
        return self._reader[1]

    async def _drop_reader(self) -> None:
        """Reopen the read connection for the next read (its handles may be stale)."""
        opening, self._reader_opening = self._reader_opening, None
        if opening is not None:  # its connection must be closed too (see _close_open_stores)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                self._reader = self._reader or await asyncio.wait_for(opening, 5)
        if self._reader is not None:
            conn, self._reader = self._reader[0], None
            await _close_quietly(conn, self.name)

    async def _subscribe(self, bucket: int, start: int) -> Any:
        table = await self._reader_table()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(bucket, start)
        return scanner

    @staticmethod
    async def _poll(scanner: Any, end: int) -> list[tuple[int, pa.RecordBatch]]:
        """Batches of ``scanner`` up to offset ``end`` (or more), in one trip to the loop:
        polls until one reaches ``end`` or comes back empty, for up to ``_POLL_FOR_S``.

        A trip to the loop and back is two thread switches; one per poll made them most of
        a recovery read's time on a loaded machine (the raw scan makes none).
        """
        polled: list[tuple[int, pa.RecordBatch]] = []
        deadline = time.monotonic() + _POLL_FOR_S
        while True:
            batches = await scanner.poll_record_batch(_POLL_MS)
            polled += [(int(b.base_offset), b.batch) for b in batches]
            if not batches or polled[-1][0] + polled[-1][1].num_rows >= end:
                return polled
            if time.monotonic() > deadline:
                return polled

    def earliest_position(self, key_id: str) -> int:
        return self._earliest_of(self.partition_of(key_id), _EARLIEST_TTL_S)

    def _earliest_of(self, bucket: int, max_age: float) -> int:
        """The bucket's first retained offset; all buckets are asked at once and reused briefly."""
        if self._earliest_stale(bucket, max_age):
            timeout = self.config.request_timeout_s
            what = "reading the earliest offsets"
            self._earliest = self._call(self._list_earliest(max_age), timeout, what)
        return self._earliest[1][bucket]

    def _earliest_stale(self, bucket: int, max_age: float) -> bool:
        at, offsets = self._earliest
        return time.monotonic() - at > max_age or bucket not in offsets

    async def _list_earliest(self, max_age: float) -> tuple[float, dict[int, int]]:
        """The earliest offsets of all buckets, and when they were asked for."""
        asked, query = self._earliest_asked(max_age)
        return asked, await asyncio.shield(query)

    def _earliest_asked(self, max_age: float) -> tuple[float, asyncio.Task[dict[int, int]]]:
        """A query of the earliest offsets asked at most ``max_age`` seconds ago (one the
        store's opening, or a wave's first read beside its end-offset probe, started: see
        :meth:`_probe_end`), or a new one.

        Either saves a round trip (3-8 ms, up to 20 on a new table) of the wave's first read.
        """
        earlier = self._earliest_query
        if (
            earlier is not None
            and time.monotonic() - earlier[0] <= max_age
            and not _failed(earlier[1])
        ):
            return earlier

        async def ask() -> dict[int, int]:
            admin = self._conn.get_admin()
            buckets = list(range(self.config.buckets))
            offsets: dict[int, int] = await _riding_failovers(
                lambda: admin.list_offsets(self._path, buckets, fluss.OffsetSpec.earliest()),
                self.config.request_timeout_s,
            )
            return offsets

        self._earliest_query = (time.monotonic(), _started(ask()))
        return self._earliest_query

    # -- closing -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.call(self._shutdown(), 15)
        except Exception as exc:  # closing must not fail the job's shutdown
            log.warning("closing the Fluss store of table %s: %s", self.name, exc)
        finally:
            self._loop.stop()
            _open_stores.discard(self)

    async def _shutdown(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
        if self._servers_conn is not None:  # it never wrote: safe to close (see _parked)
            await _close_quietly(self._servers_conn, self.name)
            self._servers_conn = None
        await self._drop_reader()
        if self._earliest_query is not None:  # no pyfluss future left pending (see above)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._earliest_query[1]), 5)
        if self._conn is not None:
            if self._generation > 0:  # writes were abandoned on it: see _parked
                _parked.append(self._conn)
            else:
                await _close_quietly(self._conn, self.name)
        self._conn = self._table = self._writer = None


class _RefusedForNow(Exception):
    """An append refused while its bucket's leader moves: sent again from the store's loop."""


async def _riding_failovers(ask: Callable[[], Coroutine[Any, Any, T]], timeout: float) -> T:
    """``ask()``, again for up to ``timeout`` seconds while a tablet server is lost and its
    buckets get new leaders ("Connection refused" from a dead one for seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await ask()
        except fluss.FlussError as exc:
            moving = not_ready(exc) or exc.error_code in NO_TABLET_SERVER or unreachable(exc)
            if not moving or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


def _started(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``coro`` as a task whose failure is not logged as never retrieved: whoever awaits it
    gets it, and no one may."""
    task = asyncio.ensure_future(coro)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task


def _failed(task: asyncio.Task[Any]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def _close_quietly(conn: Any, name: str) -> None:
    try:
        await asyncio.wait_for(conn.close(), 5)
    except (TimeoutError, fluss.FlussError) as exc:
        log.warning("closing a Fluss connection of table %s: %s", name, exc)


"""The store's name before stores were named by backend: kept for users."""
