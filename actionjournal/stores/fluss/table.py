"""The journal table: its schema, creating it, and refusing a table the store did not create."""

from __future__ import annotations

from typing import Any

import fluss
import pyarrow as pa

from actionjournal.durable.errors import StoreError
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.fluss.errors import codes
from actionjournal.stores.replication import insync_replicas

SCHEMA = pa.schema(
    [
        ("key_id", pa.string()),
        ("namespace", pa.string()),
        ("operator_uid", pa.string()),
        ("record", pa.binary()),
    ]
)
BUCKET_KEY = "key_id"
KEY, NAMESPACE, UID, RECORD = range(4)


async def table_info(admin: Any, path: Any) -> Any:
    """The table's info, None if it does not exist."""
    try:
        return await admin.get_table_info(path)
    except fluss.FlussError as exc:
        if exc.error_code in (codes.TABLE_NOT_EXIST, codes.DATABASE_NOT_EXIST):
            return None
        raise


async def create_table(admin: Any, path: Any, cfg: FlussStoreConfig) -> Any:
    """Create the database and table (if nobody did meanwhile); its info."""
    await admin.create_database(cfg.database, ignore_if_exists=True)
    descriptor = fluss.TableDescriptor(
        fluss.Schema(SCHEMA),
        bucket_count=cfg.buckets,
        bucket_keys=[BUCKET_KEY],
        properties={
            "table.replication.factor": str(cfg.replication_factor),
            **cfg.table_properties,
        },
    )
    # ignore_if_exists: another subtask may create it at the same time.
    await admin.create_table(path, descriptor, ignore_if_exists=True)
    return await admin.get_table_info(path)


def check_table(info: Any, cfg: FlussStoreConfig) -> None:
    """Refuse a table this store did not create, or with another bucket count."""
    name = f"{cfg.database}.{cfg.table}"
    columns = info.get_schema().get_columns()
    expected = [("key_id", "STRING"), ("namespace", "STRING")]
    expected += [("operator_uid", "STRING"), ("record", "BYTES")]
    if [(n, t.split(" ")[0].upper()) for n, t in columns] != expected:
        raise StoreError(
            f"Fluss table {name} has columns {columns}, not the journal's {expected}: "
            "it is not a table this store created. Configure another table"
        )
    if info.has_primary_key() or info.is_partitioned() or info.get_bucket_keys() != ["key_id"]:
        raise StoreError(
            f"Fluss table {name} is not a log table bucketed by key_id (primary key "
            f"{info.get_primary_keys()}, partitions {info.get_partition_keys()}, bucket keys "
            f"{info.get_bucket_keys()}). Configure another table"
        )
    if info.num_buckets != cfg.buckets:
        raise StoreError(
            f"Fluss table {name} has {info.num_buckets} buckets but buckets="
            f"{cfg.buckets}: keys would be looked for in the wrong buckets. Set "
            f"buckets={info.num_buckets} (a table's bucket count is fixed; a recreated "
            "table is a new journal: restore with journal.upgrade='fresh')"
        )
    lake = info.get_properties().get("table.datalake.format")
    if lake or info.get_properties().get("table.datalake.enabled") == "true":
        raise StoreError(
            f"Fluss table {name} has a data lake format ({lake or 'enabled'}): rows are "
            "then bucketed by the lake's function, which this store does not compute. Use a "
            "table without data lake tiering"
        )


def check_replication(info: Any, tablet_servers: int, cfg: FlussStoreConfig) -> str | None:
    """What falls short of the configured replication: the table's replicas, or the tablet
    servers registered for ``min_insync_replicas`` copies; None when nothing does."""
    name = f"{cfg.database}.{cfg.table}"
    found = []
    try:
        replicas = int(info.get_properties().get("table.replication.factor", ""))
    except ValueError:
        replicas = None  # the cluster's default.replication.factor: not known to clients
    if replicas is not None and replicas < cfg.replication_factor:
        found.append(
            f"Fluss table {name} has replication factor {replicas}, below the configured "
            f"replication_factor={cfg.replication_factor} (use a new table, or set "
            f"replication_factor={replicas})"
        )
    wanted = insync_replicas(cfg.replication_factor, cfg.min_insync_replicas)
    if tablet_servers < wanted:
        found.append(
            f"the cluster at {cfg.bootstrap_servers} has {tablet_servers} tablet server(s) "
            f"registered, below the configured min_insync_replicas={wanted}: an "
            "append could not be kept on that many copies (start the tablet servers)"
        )
    return "; and ".join(found) or None
