"""The Fluss journal as the operator tools read it: its bucket count as found, and a scan of
a bucket's records in offset order.

Only the reading half applies to a Fluss log table (:class:`~actionjournal.durable.store.
Inspectable`): it cannot delete below an offset (its records go with the table's TTL,
``table.log.ttl``) and a control record cannot be put into a chosen bucket (rows are
bucketed by key id), so a Fluss journal is no ``Cleanable`` and ``actionjournal cleanup``
refuses it before it reads anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import fluss

from actionjournal.durable.codec import FLAG_SIGNED
from actionjournal.durable.errors import RecordError, StoreError
from actionjournal.durable.store import Progress, ScanFilter, ScannedRecord
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.fluss.errors import describe
from actionjournal.stores.fluss.table import KEY, NAMESPACE, RECORD, UID, table_info

if TYPE_CHECKING:
    from actionjournal.stores.fluss.store import FlussStore


def as_found(config: FlussStoreConfig) -> FlussStoreConfig:
    """``config`` for the existing table it names, with the bucket count the table has;
    never created (the tools are told a table, not how it was configured)."""
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
    return config.model_copy(update=update)


def scan_bucket(
    store: FlussStore,
    partition: int,
    start: int,
    end: int,
    wanted: ScanFilter,
    progress: Progress | None,
) -> Iterator[ScannedRecord]:
    """:meth:`~actionjournal.durable.store.Inspectable.scan_range` of a Fluss journal."""
    timeout = store.config.request_timeout_s
    doing = f"reading bucket {partition}"
    scanner = store._call(store._subscribe(partition, start), timeout, doing)
    position, moved = start, time.monotonic()
    while position < end:
        batches = store._call(store._poll(scanner, end), timeout, doing)
        if not batches:
            if time.monotonic() - moved > timeout:
                raise StoreError(
                    f"reading table {store.name} bucket {partition} from offset {position} "
                    f"to {end} made no progress for {timeout:g} s (request_timeout_s)"
                )
            if position < store._earliest_of(partition, 0.0):  # retention got there first
                position = store._earliest_of(partition, 0.0)
                scanner = store._call(store._subscribe(partition, position), timeout, doing)
            continue
        moved = time.monotonic()
        for base, batch in batches:
            rows = batch.slice(max(position - base, 0), max(end - max(position, base), 0))
            offset = max(position, base)
            columns = [rows.column(i).to_pylist() for i in (NAMESPACE, UID, KEY, RECORD)]
            for ns, uid, key, data in zip(*columns, strict=True):
                if wanted.ours(ns, uid):
                    where = f"table {store.name} bucket {partition} offset {offset}"
                    try:
                        record = store.codec.decode(data, where)
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
