"""The Fluss action state store: one log table, all records of a key in one bucket.

Settings: :class:`~actionjournal.stores.fluss_config.FlussStoreConfig`; see docs/fluss.md.

The table has four columns, ``key_id`` (the bucket key), ``namespace``, ``operator_uid``
and ``record`` (the encoded journal record). Do not point the store at a table it did not
create: an existing table must have exactly this schema and bucket key.

Guarantees and why they hold:

* **An append returns only once acknowledged** (``acks=all``, idempotent writer, so retries
  never duplicate or reorder). Every client error, and no
  acknowledgement within ``ack_timeout_s`` (the client itself retries forever while a
  tablet server is down), raises :class:`JournalWriteError` naming table, bucket and key.
  After a failure the store writes through a freshly opened table handle: the old one can
  stay stuck after a tablet server restart (pyfluss 1.0 then never completes its acks).
* **Markers carry bucket and offset although the client reports neither.** The bucket is
  computed here with Fluss's own bucketing function (the one the client uses for the
  ``key_id`` bucket key; see :func:`fluss_bucket`), so a marker names its bucket without a
  round trip. Only one marker per run is kept (keyed state takes the one of the run's last
  record, ``RunCompleted``), so only that record pays for an exact offset: the bucket's high
  watermark minus one, read right after the acknowledgement with a one-record limit scan
  (one round trip to the bucket leader; ``list_offsets`` costs a metadata refresh on the
  coordinator on top). It is at least the record's own offset and below the offset of the
  key's next record, since a key's runs append one after the other; concurrent
  acknowledgements of one bucket share one probe. Every other record (calls, actions, control
  records: most appends) returns at once with a bound below it instead: the bucket's end as
  this store last saw it before sending the record, minus one (forgotten after a failed
  append, as the server may have lost records). Nothing keeps such a marker; one kept would
  make recovery re-read records of runs the state already reflects, which replay skips.
* **Recreated tables are detected.** The store identity carries the Fluss table id, so a
  marker taken before the table was dropped and recreated is refused.
* **Lost acknowledged records are detected where possible.** A marker at or past the
  bucket's current end means records it covered are gone (a tablet server crash with
  replication factor 1 loses recent acknowledged appends, see docs/fluss.md); the read
  raises :class:`DataLossError` instead of treating later records at reused offsets as new.
* **Recovery reads each bucket range once.** ``read_key`` reads a key's bucket from its
  marker to the bucket's end and keeps the records of the same namespace/operator for other
  keys of that bucket (filtered in Arrow, never decoded for other namespaces), so recovering
  many keys costs one pass per bucket. The end is read once per recovery wave: reads that
  begin within ``_WAVE_S`` (1 s) of a bucket's end probe reuse it, as the Kafka store does
  (see its docstring for why): a key's records are appended only by the subtask that owns
  it, after its recovery, so an end captured before its first read misses none of them; a
  key read again by the same store gets a fresh end.
* **Sync and thread-safe over an asyncio client.** pyfluss is asyncio-only: the store runs
  a private event loop in a background thread and every call hops onto it, except the
  appends that need no probe: they wait for their acknowledgement on an event loop of the
  calling thread (kept per thread), like a plain pyfluss caller. Reads use their own
  connection: a fetch parked at the end of a bucket would delay appends on a shared one.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import logging
import threading
import time
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import fluss
import pyarrow as pa
import pyarrow.compute as pc

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import DataLossError, JournalWriteError, StoreError
from actionjournal.durable.records import JournalRecord, Marker, RunCompleted, StoreIdentity
from actionjournal.stores.base import ActionStateStore, RecentProbes, decode_range
from actionjournal.stores.fluss_config import FlussStoreConfig

__all__ = ["FlussActionStateStore", "FlussStoreConfig", "fluss_bucket"]

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA = pa.schema(
    [
        ("key_id", pa.string()),
        ("namespace", pa.string()),
        ("operator_uid", pa.string()),
        ("record", pa.binary()),
    ]
)
_BUCKET_KEY = "key_id"
_KEY, _NAMESPACE, _UID, _RECORD = range(4)
# Past the store's own timeouts (enforced on the loop), how long a caller waits for the loop.
_LOOP_MARGIN_S = 5.0
_ENTRY_OVERHEAD = 100  # rough Python cost of one cached (offset, bytes) pair
_EARLIEST_TTL_S = 1.0  # a recovery burst shares one earliest-offset query
_WAVE_S = 1.0  # ... and one end-offset probe per bucket (see "Recovery reads ...")
_POLL_MS = 100
# Client settings of the store's own, unless client_config says otherwise: no batching delay
# for a lone append (p50 ~0.8 ms vs ~100 ms with the default 100 ms), short fetch waits for
# reads (the first fetch of a subscription waits this long even when data is there).
_WRITER_DEFAULTS = {"writer.batch-timeout-ms": "0"}
_READER_DEFAULTS = {
    "scanner.log.fetch.wait-max-time-ms": "10",
    "scanner.log.max-poll-records": "5000",
}


# -- bucketing ---------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def _mix_k(k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    return (k * 0x1B873593) & _M32


def _mix_h(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M32
    return (h * 5 + 0xE6546B64) & _M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _signed(h: int) -> int:
    return h - (1 << 32) if h >= 1 << 31 else h


def _murmur_bytes(data: bytes) -> int:
    """Fluss's MurmurHash3 of bytes (seed 42, tail bytes mixed one by one)."""
    h = 42
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):
        h = _mix_h(h, _mix_k(int.from_bytes(data[i : i + 4], "little")))
    for byte in data[whole:]:
        h = _mix_h(h, _mix_k(byte))
    return _signed(_fmix(h ^ len(data)))


def _murmur_int(value: int) -> int:
    """Fluss's rehash of an int, made non-negative."""
    out = _signed(_fmix(_mix_h(0, _mix_k(value & _M32)) ^ 4))
    return 0 if out == -(1 << 31) else abs(out)


@functools.lru_cache(maxsize=1 << 16)
def fluss_bucket(key_id: str, buckets: int) -> int:
    """The bucket Fluss puts a row with bucket key ``key_id`` in (default bucketing).

    The key is encoded as Fluss's compacted key encoder writes a STRING (unsigned varint
    length, then UTF-8), hashed with Fluss's MurmurHash3 variant, rehashed as an int and
    taken modulo ``buckets``: what pyfluss 1.0 (and the Java client) compute for tables
    without a data lake format. Tests check it against where the server put rows.
    """
    raw = key_id.encode()
    length = len(raw)
    prefix = bytearray()
    while length >= 0x80:
        prefix.append((length & 0x7F) | 0x80)
        length >>= 7
    prefix.append(length)
    return _murmur_int(_murmur_bytes(bytes(prefix) + raw)) % buckets


# -- the event loop thread ---------------------------------------------------------------------


class _Loop:
    """A private asyncio loop in a daemon thread; sync callers run coroutines on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


_open_stores: weakref.WeakSet[FlussActionStateStore] = weakref.WeakSet()
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


_threads = threading.local()


def _own_loop() -> asyncio.AbstractEventLoop | None:
    """The calling thread's event loop for waiting on appends; None if one runs here already."""
    try:
        asyncio.get_running_loop()
        return None
    except RuntimeError:
        pass
    loop: asyncio.AbstractEventLoop | None = getattr(_threads, "loop", None)
    if loop is None:
        loop = _threads.loop = asyncio.new_event_loop()
    return loop


async def _acknowledged(writer: Any, row: tuple[str, str, str, bytes], timeout: float) -> None:
    async with asyncio.timeout(timeout):  # pyfluss binds the wait to the running loop
        await writer.append(row).wait()


# -- recovery cache ----------------------------------------------------------------------------


@dataclass
class _Window:
    """Records of one namespace/operator in one bucket, offsets ``[start, end)``, by key.

    A key's entries are handed out once and dropped (``served``), so memory only holds keys
    that have not recovered yet; a served key asked for again is read from Fluss afresh.
    """

    start: int
    end: int
    keys: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    served: set[str] = field(default_factory=set)
    size: int = 0
    costs: dict[str, int] = field(default_factory=dict)  # each key's share of size

    def merge(self, found: dict[str, list[tuple[int, bytes]]], earlier: bool) -> None:
        for key_id, entries in found.items():
            if key_id not in self.served:
                cost = _cost(entries)
                self.size += cost
                self.costs[key_id] = self.costs.get(key_id, 0) + cost
                have = self.keys.get(key_id, [])
                self.keys[key_id] = entries + have if earlier else have + entries

    def take(self, key_id: str) -> list[tuple[int, bytes]]:
        self.served.add(key_id)
        self.size -= self.costs.pop(key_id, 0)
        return self.keys.pop(key_id, [])


def _cost(entries: list[tuple[int, bytes]]) -> int:
    return sum(len(data) for _, data in entries) + _ENTRY_OVERHEAD * len(entries)


# -- the store ---------------------------------------------------------------------------------


class FlussActionStateStore(ActionStateStore):
    """Journal in a Fluss log table. Thread-safe; one instance per process is enough."""

    def __init__(self, config: FlussStoreConfig, codec: RecordCodec | None = None) -> None:
        self.config = config
        self.codec = codec or RecordCodec()
        self.name = f"{config.database}.{config.table}"
        self._path = fluss.TablePath(config.database, config.table)
        self._writer_config = self._client_config(_WRITER_DEFAULTS)
        self._reader_config = self._client_config(_READER_DEFAULTS)
        self._closed = False
        self._loop = _Loop(f"actionjournal-fluss-{self.name}")
        # Loop-thread state: connections, the current table handle and writer, probes.
        self._conn: Any = None
        self._reader: Any = None  # (connection, table) for reads, opened on first read
        self._table: Any = None
        self._writer: Any = None
        self._generation = 0
        self._reopen: asyncio.Lock | None = None
        self._probes: dict[int, asyncio.Future[int]] = {}
        self._ends: dict[int, int] = {}  # each bucket's end offset as last seen, for markers
        try:
            self.table_id = self._call(self._open(), config.request_timeout_s, "opening")
        except BaseException:
            self.close()
            raise
        self.identity = StoreIdentity("fluss", self.name, str(self.table_id))
        self._read_lock = threading.Lock()
        self._windows: dict[tuple[int, str, str], _Window] = {}
        self._wave_ends: RecentProbes[int] = RecentProbes()  # see _end_of
        self._served: set[tuple[str, str, str]] = set()  # (namespace, uid, key) read so far
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
            admin = self._conn.get_admin()
            info = await self._table_info(admin)
            if info is None:
                if not cfg.create_table:
                    raise StoreError(
                        f"Fluss table {self.name} does not exist on {cfg.bootstrap_servers} and "
                        "create_table is false: create it, or set create_table=true"
                    )
                info = await self._create_table(admin)
            self._check_table(info)
            self.table_id = int(info.table_id)  # _wait_ready scans its buckets
            await self._wait_ready()
        except fluss.FlussError as exc:
            raise StoreError(
                f"opening Fluss table {self.name} on {cfg.bootstrap_servers} failed: "
                f"{_describe(exc)}. Check that the cluster is up and the client_config security "
                "settings"
            ) from None
        return int(info.table_id)

    async def _table_info(self, admin: Any) -> Any:
        try:
            return await admin.get_table_info(self._path)
        except fluss.FlussError as exc:
            if exc.error_code in (_codes.TABLE_NOT_EXIST, _codes.DATABASE_NOT_EXIST):
                return None
            raise

    async def _create_table(self, admin: Any) -> Any:
        cfg = self.config
        await admin.create_database(cfg.database, ignore_if_exists=True)
        descriptor = fluss.TableDescriptor(
            fluss.Schema(SCHEMA),
            bucket_count=cfg.buckets,
            bucket_keys=[_BUCKET_KEY],
            properties={
                "table.replication.factor": str(cfg.replication_factor),
                **cfg.table_properties,
            },
        )
        # ignore_if_exists: another subtask may create it at the same time.
        await admin.create_table(self._path, descriptor, ignore_if_exists=True)
        return await admin.get_table_info(self._path)

    def _check_table(self, info: Any) -> None:
        cfg = self.config
        columns = info.get_schema().get_columns()
        expected = [("key_id", "STRING"), ("namespace", "STRING")]
        expected += [("operator_uid", "STRING"), ("record", "BYTES")]
        if [(n, t.split(" ")[0].upper()) for n, t in columns] != expected:
            raise StoreError(
                f"Fluss table {self.name} has columns {columns}, not the journal's {expected}: "
                "it is not a table this store created. Configure another table"
            )
        if info.has_primary_key() or info.is_partitioned() or info.get_bucket_keys() != ["key_id"]:
            raise StoreError(
                f"Fluss table {self.name} is not a log table bucketed by key_id (primary key "
                f"{info.get_primary_keys()}, partitions {info.get_partition_keys()}, bucket keys "
                f"{info.get_bucket_keys()}). Configure another table"
            )
        if info.num_buckets != cfg.buckets:
            raise StoreError(
                f"Fluss table {self.name} has {info.num_buckets} buckets but buckets="
                f"{cfg.buckets}: keys would be looked for in the wrong buckets. Set "
                f"buckets={info.num_buckets} (a table's bucket count is fixed; a recreated "
                "table is a new journal: restore with journal.upgrade='fresh')"
            )
        lake = info.get_properties().get("table.datalake.format")
        if lake or info.get_properties().get("table.datalake.enabled") == "true":
            raise StoreError(
                f"Fluss table {self.name} has a data lake format ({lake or 'enabled'}): rows are "
                "then bucketed by the lake's function, which this store does not compute. Use a "
                "table without data lake tiering"
            )

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
                self._writer = self._table.new_append().create_writer()
                return
            except fluss.FlussError as exc:
                if not _not_ready(exc) and exc.error_code not in _NO_TABLET_SERVER:
                    raise
            await asyncio.sleep(0.1)

    # -- appends ---------------------------------------------------------------------------------

    def partition_of(self, key_id: str) -> int:
        """Stable forever: the bucket Fluss puts the key's rows in."""
        return fluss_bucket(key_id, self.config.buckets)

    def append(self, record: JournalRecord) -> Marker:
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
        here = None if exact else _own_loop()
        try:
            if here is not None and (writer := self._writer) is not None:
                position = self._append_here(here, writer, row, bucket)
            else:
                position = self._loop.call(
                    self._append(row, bucket, exact), timeout + _LOOP_MARGIN_S
                )
        except TimeoutError:
            raise JournalWriteError(
                f"{what}: no acknowledgement within ack_timeout_s={timeout:g}; the record may or "
                f"may not have been written and counts as not written. {self._diagnose(bucket)}"
            ) from None
        except fluss.FlussError as exc:
            raise JournalWriteError(
                f"{what} failed: {_describe(exc)}; the record counts as not written. "
                f"{self._advice(exc, bucket)}"
            ) from None
        return self.marker(record.key_id, position, record.epoch)

    async def _append(self, row: tuple[str, str, str, bytes], bucket: int, exact: bool) -> int:
        """Append ``row``; its marker position: exact (one probe) or a bound below the row.

        The bound is the bucket's end as seen before the row was sent, minus one: every
        offset the row, or anything later, can get is past it.
        """
        generation = self._generation
        try:
            async with asyncio.timeout(self.config.ack_timeout_s):
                if self._writer is None:
                    await self._fresh_table()
                below = self._ends.get(bucket, 0) - 1
                await self._writer.append(row).wait()
                return await self._end_offset(bucket) - 1 if exact else below
        except BaseException:
            self._invalidate(generation)
            raise

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
            here.run_until_complete(_acknowledged(writer, row, self.config.ack_timeout_s))
        except BaseException:
            with contextlib.suppress(RuntimeError):  # the store was closed meanwhile
                self._loop.loop.call_soon_threadsafe(self._invalidate, generation)
            raise
        return below

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
                        _codes.TABLE_NOT_EXIST,
                    )
                self._table = table
                self._writer = table.new_append().create_writer()
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
                if not _not_ready(exc):
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

    async def _ask_cluster(self, bucket: int | None) -> str:
        admin = self._conn.get_admin()
        try:
            nodes = await asyncio.wait_for(admin.get_server_nodes(), 3)
            if not any(n.server_type == "TabletServer" for n in nodes):
                return (
                    f"No TabletServer is registered with the coordinator at "
                    f"{self.config.bootstrap_servers}: start the tablet servers"
                )
            info = await asyncio.wait_for(admin.get_table_info(self._path), 3)
        except fluss.FlussError as exc:
            if exc.error_code in (_codes.TABLE_NOT_EXIST, _codes.DATABASE_NOT_EXIST):
                return (
                    f"The table {self.name} was dropped: restart the job with "
                    "journal.upgrade='fresh' to start a new journal"
                )
            return (
                f"Asking the cluster about the table failed too ({_describe(exc)}): a server is "
                "down, stopping or unreachable. Check the tablet servers and the coordinator"
            )
        except TimeoutError:
            return f"The coordinator at {self.config.bootstrap_servers} does not answer"
        if info.table_id != self.table_id:
            return (
                f"The table {self.name} was dropped and recreated (id {self.table_id}, now "
                f"{info.table_id}): restart the job with journal.upgrade='fresh'"
            )
        servers = sum(n.server_type == "TabletServer" for n in nodes)
        which = "its buckets" if bucket is None else f"bucket {bucket}"
        # pyfluss reports a bucket without a reachable leader as "Table not found".
        return (
            f"The table exists (id {self.table_id}) and {servers} tablet server(s) are "
            f"registered, but {which} had no reachable leader: a tablet server is stopping, "
            "restarting or unreachable at its advertised address. Check the tablet servers"
        )

    def _advice(self, exc: fluss.FlussError, bucket: int) -> str:
        code = exc.error_code
        if code == _codes.RECORD_TOO_LARGE_EXCEPTION:
            return "Lower journal.max_payload_bytes, or raise the cluster's request size limits"
        if code in (_codes.AUTHENTICATE_EXCEPTION, _codes.AUTHORIZATION_EXCEPTION):
            return "Check the security.* settings in client_config and the table's ACLs"
        return self._diagnose(bucket)

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
                f"{doing} of Fluss table {self.name} failed: {_describe(exc)}. {self._diagnose()}"
            ) from None

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        bucket = self.partition_of(key_id)
        where = f"table {self.name} bucket {bucket}"
        with self._read_lock:
            again = (namespace, operator_uid, key_id) in self._served
            self._served.add((namespace, operator_uid, key_id))
            high = self._end_of(bucket, 0.0 if again else _WAVE_S)
            if after is not None and after.position >= high:
                raise DataLossError(
                    f"the recovery marker of key {key_id} is at offset {after.position} but "
                    f"{where} now ends at offset {high}: acknowledged records were lost (e.g. a "
                    "tablet server crashed with replication factor 1, see docs/fluss.md). Restore "
                    "with journal.upgrade='fresh' to start a new journal"
                )
            if after is not None:
                start = after.position + 1
            else:  # all retained records; retention may move the start meanwhile (see _scan)
                start = self._earliest_of(bucket, _EARLIEST_TTL_S)
            if start >= high:
                return []
            entries = self._entries(
                bucket, namespace, operator_uid, key_id, start, high, after is None
            )
        return decode_range(self.codec, entries, start, high, where)

    def _end_of(self, bucket: int, max_age: float) -> int:
        """The bucket's end offset, probed at most ``max_age`` seconds ago."""
        timeout = self.config.request_timeout_s
        what = f"reading the end of bucket {bucket}"
        return self._wave_ends.get(
            bucket, max_age, lambda: self._call(self._read_end(bucket), timeout, what)
        )

    def _entries(
        self,
        bucket: int,
        namespace: str,
        uid: str,
        key_id: str,
        start: int,
        high: int,
        everything: bool,
    ) -> list[tuple[int, bytes]]:
        budget = self.config.recovery_cache_bytes
        window = self._windows.get((bucket, namespace, uid))
        if budget == 0 or (window is not None and key_id in window.served):
            found = self._scan(bucket, start, high, namespace, uid, key_id, skip_deleted=everything)
            return found.get(key_id, [])
        if window is None:
            window = self._windows[bucket, namespace, uid] = _Window(start, start)
        if start < window.start:
            found = self._scan(bucket, start, window.start, namespace, uid, skip_deleted=everything)
            window.merge(found, earlier=True)
            window.start = start
        if window.end < high:
            found = self._scan(bucket, window.end, high, namespace, uid)
            window.merge(found, earlier=False)
            window.end = high
        entries = window.take(key_id)
        if sum(w.size for w in self._windows.values()) > budget:
            # Over budget: drop everything; keys not yet recovered read their bucket again.
            self._windows.clear()
        return entries

    def _scan(
        self,
        bucket: int,
        start: int,
        end: int,
        namespace: str,
        uid: str,
        key_id: str = "",
        skip_deleted: bool = False,
    ) -> dict[str, list[tuple[int, bytes]]]:
        """Rows of ``namespace``/``uid`` (and ``key_id`` if given) at offsets ``[start, end)``.

        Offsets retention deleted meanwhile are a DataLossError, or skipped with
        ``skip_deleted`` (a read of everything retained). pyfluss returns nothing at all for
        a subscription below the bucket's start, so a stalled read checks that start.
        """
        where = f"table {self.name} bucket {bucket}"
        timeout = self.config.request_timeout_s
        doing = f"reading bucket {bucket}"
        scanner = self._call(self._subscribe(bucket, start), timeout, doing)
        found: dict[str, list[tuple[int, bytes]]] = {}
        position = start
        progress = time.monotonic()
        while position < end:
            batches = self._call(self._poll(scanner), timeout, doing)
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
                _collect(batch, position - batch.num_rows, namespace, uid, key_id, found)
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

    async def _reader_table(self) -> Any:
        if self._reader is None:
            conn = await fluss.FlussConnection.create(self._reader_config)
            self._reader = (conn, await conn.get_table(self._path))
        return self._reader[1]

    async def _drop_reader(self) -> None:
        """Reopen the read connection for the next read (its handles may be stale)."""
        if self._reader is not None:
            conn, self._reader = self._reader[0], None
            await _close_quietly(conn, self.name)

    async def _subscribe(self, bucket: int, start: int) -> Any:
        table = await self._reader_table()
        scanner = await table.new_scan().create_record_batch_log_scanner()
        scanner.subscribe(bucket, start)
        return scanner

    @staticmethod
    async def _poll(scanner: Any) -> list[tuple[int, pa.RecordBatch]]:
        batches = await scanner.poll_record_batch(_POLL_MS)
        return [(int(b.base_offset), b.batch) for b in batches]

    def earliest_position(self, key_id: str) -> int:
        return self._earliest_of(self.partition_of(key_id), _EARLIEST_TTL_S)

    def _earliest_of(self, bucket: int, max_age: float) -> int:
        """The bucket's first retained offset; all buckets are asked at once and reused briefly."""
        at, offsets = self._earliest
        if time.monotonic() - at > max_age or bucket not in offsets:
            timeout = self.config.request_timeout_s
            offsets = self._call(self._list_earliest(), timeout, "reading the earliest offsets")
            self._earliest = (time.monotonic(), offsets)
        return offsets[bucket]

    async def _list_earliest(self) -> dict[int, int]:
        admin = self._conn.get_admin()
        buckets = list(range(self.config.buckets))
        return await admin.list_offsets(self._path, buckets, fluss.OffsetSpec.earliest())

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
        await self._drop_reader()
        if self._conn is not None:
            if self._generation > 0:  # writes were abandoned on it: see _parked
                _parked.append(self._conn)
            else:
                await _close_quietly(self._conn, self.name)
        self._conn = self._table = self._writer = None


async def _close_quietly(conn: Any, name: str) -> None:
    try:
        await asyncio.wait_for(conn.close(), 5)
    except (TimeoutError, fluss.FlussError) as exc:
        log.warning("closing a Fluss connection of table %s: %s", name, exc)


def _collect(
    batch: pa.RecordBatch,
    base: int,
    namespace: str,
    uid: str,
    key_id: str,
    found: dict[str, list[tuple[int, bytes]]],
) -> None:
    """Add the rows of ``batch`` (first offset ``base``) of one namespace/operator to ``found``.

    Filtering and grouping by key happen in Arrow, so rows of other namespaces are never
    turned into Python objects, let alone decoded, and the Python work per key is one slice
    rather than a dictionary lookup per row (recovery spent most of its time here).
    """
    mask = pc.and_(pc.equal(batch.column(_NAMESPACE), namespace), pc.equal(batch.column(_UID), uid))
    if key_id:
        mask = pc.and_(mask, pc.equal(batch.column(_KEY), key_id))
    rows = pc.indices_nonzero(mask)
    if len(rows) == 0:
        return
    keys = batch.column(_KEY).take(rows).dictionary_encode()
    by_key = pc.sort_indices(keys.indices)  # stable: each key's rows stay in offset order
    runs = pc.run_end_encode(keys.indices.take(by_key))
    rows = rows.take(by_key)
    offsets = pc.add(rows, base).to_pylist()
    entries = list(zip(offsets, batch.column(_RECORD).take(rows).to_pylist(), strict=True))
    names = keys.dictionary.to_pylist()
    start = 0
    for code, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True):
        found.setdefault(names[code], []).extend(entries[start:end])
        start = end


_codes = fluss.ErrorCode
# Seen for a moment after a table is created or a tablet server restarts; worth a retry.
_NOT_READY = {
    _codes.NOT_LEADER_OR_FOLLOWER,
    _codes.LEADER_NOT_AVAILABLE_EXCEPTION,
    _codes.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
}


# What pyfluss says about a table that exists while no tablet server serves it (yet).
_NO_TABLET_SERVER = {
    _codes.TABLE_NOT_EXIST,
    _codes.INVALID_TABLE_EXCEPTION,  # "Table info not found"
    _codes.NETWORK_EXCEPTION,
}


def _not_ready(exc: fluss.FlussError) -> bool:
    # pyfluss reports a bucket without a leader yet as a client-side error.
    return exc.error_code in _NOT_READY or (
        exc.error_code == _codes.CLIENT_ERROR and "No leader found" in str(exc.message)
    )


def _describe(exc: fluss.FlussError) -> str:
    message = str(exc.message).split("\n\tat ", 1)[0]  # no Java stack trace
    return f"{message} (Fluss error code {exc.error_code})"
