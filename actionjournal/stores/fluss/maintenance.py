"""The Fluss journal as the operator tools read it: its buckets, their offsets, their records.

Only the reading half of :class:`~actionjournal.stores.base.MaintenanceStore` applies to a
Fluss log table: it cannot delete below an offset (its records go with the table's TTL,
``table.log.ttl``) and a control record cannot be put into a chosen bucket (rows are
bucketed by key id), so ``append_control`` and ``delete_below`` refuse, and
``actionjournal cleanup`` refuses Fluss journals before it reads anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import fluss

from actionjournal.durable.codec import FLAG_SIGNED, RecordCodec
from actionjournal.durable.errors import RecordError, StoreError
from actionjournal.durable.records import JournalRecord, Marker
from actionjournal.stores.base import MaintenanceStore, Progress, ScanFilter, ScannedRecord
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.fluss.errors import describe
from actionjournal.stores.fluss.store import FlussStore
from actionjournal.stores.fluss.table import KEY, NAMESPACE, RECORD, UID, table_info

NO_CLEANUP = (
    "a Fluss log table cannot delete below an offset nor take a control record into a chosen "
    "bucket; its records go with the table's TTL (table.log.ttl, see docs/fluss.md)"
)


class FlussMaintenanceStore(FlussStore, MaintenanceStore):
    """An existing Fluss journal opened for inspection (never created, any bucket count)."""

    @classmethod
    def open_existing(
        cls, config: FlussStoreConfig, codec: RecordCodec | None = None
    ) -> FlussMaintenanceStore:
        """Open the table ``config`` names with the bucket count it has; never creates it."""
        where = f"Fluss table {config.database}.{config.table} on {config.bootstrap_servers}"

        async def buckets() -> int:
            settings = {**config.client_config, "bootstrap.servers": config.bootstrap_servers}
            conn = await fluss.FlussConnection.create(fluss.Config(settings))
            try:
                path = fluss.TablePath(config.database, config.table)
                info = await table_info(conn.get_admin(), path)
            finally:
                await conn.close()
            if info is None:
                raise StoreError(f"{where} does not exist")
            return int(info.num_buckets)

        try:
            count = asyncio.run(asyncio.wait_for(buckets(), config.request_timeout_s))
        except TimeoutError:
            raise StoreError(
                f"{where}: no answer within {config.request_timeout_s:g} s; check that the "
                "cluster is up and reachable"
            ) from None
        except fluss.FlussError as exc:
            raise StoreError(f"cannot open {where}: {describe(exc)}") from None
        update = {"buckets": count, "create_table": False, "recovery_cache_bytes": 0}
        return cls(config.model_copy(update=update), codec)

    def partitions(self) -> list[int]:
        return list(range(self.config.buckets))

    def position_range(self, partition: int) -> tuple[int, int]:
        return self._earliest_of(partition, 0.0), self._end_of(partition, 0.0)

    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        timeout = self.config.request_timeout_s
        doing = f"reading bucket {partition}"
        scanner = self._call(self._subscribe(partition, start), timeout, doing)
        position, moved = start, time.monotonic()
        while position < end:
            batches = self._call(self._poll(scanner, end), timeout, doing)
            if not batches:
                if time.monotonic() - moved > timeout:
                    raise StoreError(
                        f"reading table {self.name} bucket {partition} from offset {position} "
                        f"to {end} made no progress for {timeout:g} s (request_timeout_s)"
                    )
                if position < self._earliest_of(partition, 0.0):  # retention got there first
                    position = self._earliest_of(partition, 0.0)
                    scanner = self._call(self._subscribe(partition, position), timeout, doing)
                continue
            moved = time.monotonic()
            for base, batch in batches:
                rows = batch.slice(max(position - base, 0), max(end - max(position, base), 0))
                offset = max(position, base)
                columns = [rows.column(i).to_pylist() for i in (NAMESPACE, UID, KEY, RECORD)]
                for ns, uid, key, data in zip(*columns, strict=True):
                    if wanted.ours(ns, uid):
                        where = f"table {self.name} bucket {partition} offset {offset}"
                        try:
                            record = self.codec.decode(data, where)
                        except RecordError as exc:
                            if not wanted.foreign:
                                raise
                            error = str(exc)
                            yield ScannedRecord(offset, len(data), ns, uid, None, False, key, error)
                        else:
                            signed = bool(data[4] & FLAG_SIGNED)
                            yield ScannedRecord(offset, len(data), ns, uid, record, signed, key)
                    elif wanted.foreign:
                        yield ScannedRecord(offset, len(data), ns, uid, None)
                    offset += 1
                position = max(position, offset)
            if progress is not None:
                progress(position - start, end - start)

    def append_control(self, record: JournalRecord, partition: int) -> Marker:
        raise StoreError(f"table {self.name}: {NO_CLEANUP}")

    def delete_below(
        self,
        namespace: str,
        operator_uid: str,
        partition: int,
        position: int,
        progress: Progress | None = None,
    ) -> int | None:
        raise StoreError(f"table {self.name}: {NO_CLEANUP}")
