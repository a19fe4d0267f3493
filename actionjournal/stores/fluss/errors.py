"""What a Fluss error means for the journal: its name, whether to wait, what the cluster says."""

from __future__ import annotations

import asyncio
from typing import Any

import fluss

from actionjournal.stores.fluss.config import FlussStoreConfig

codes = fluss.ErrorCode
# Seen for a moment after a table is created or a tablet server restarts; worth a retry.
NOT_READY = {
    codes.NOT_LEADER_OR_FOLLOWER,
    codes.LEADER_NOT_AVAILABLE_EXCEPTION,
    codes.UNKNOWN_TABLE_OR_BUCKET_EXCEPTION,
}


# What pyfluss says about a table that exists while no tablet server serves it (yet).
NO_TABLET_SERVER = {
    codes.TABLE_NOT_EXIST,
    codes.INVALID_TABLE_EXCEPTION,  # "Table info not found"
    codes.NETWORK_EXCEPTION,
}


def not_ready(exc: fluss.FlussError) -> bool:
    # pyfluss reports a bucket without a leader yet as a client-side error.
    return exc.error_code in NOT_READY or (
        exc.error_code == codes.CLIENT_ERROR and "No leader found" in str(exc.message)
    )


def refused_for_now(exc: fluss.FlussError) -> bool:
    """The server refused the record, or was not reached at all, because a bucket's leader
    is moving (a tablet server lost or restarting): nothing was written, so the record may
    be sent again, to the new leader. pyfluss says "Table not found" of a bucket without a
    reachable leader; a table really dropped fails when the table is opened again."""
    return (
        not_ready(exc)
        or exc.error_code in (codes.TABLE_NOT_EXIST, codes.INVALID_TABLE_EXCEPTION)
        or unreachable(exc)
    )


def unreachable(exc: fluss.FlussError) -> bool:
    """A server refused the connection: a tablet server just lost, until the metadata names
    the bucket's new leader."""
    return exc.error_code == codes.NETWORK_EXCEPTION and "Connection refused" in str(exc.message)


def describe(exc: fluss.FlussError) -> str:
    message = str(exc.message).split("\n\tat ", 1)[0]  # no Java stack trace
    return f"{message} (Fluss error code {exc.error_code})"


async def ask_cluster(
    admin: Any, config: FlussStoreConfig, path: Any, table_id: int, bucket: int | None
) -> str:
    """What the cluster says about the table, for an error message."""
    name = f"{config.database}.{config.table}"
    try:
        nodes = await asyncio.wait_for(admin.get_server_nodes(), 3)
        if not any(n.server_type == "TabletServer" for n in nodes):
            return (
                f"No TabletServer is registered with the coordinator at "
                f"{config.bootstrap_servers}: start the tablet servers"
            )
        info = await asyncio.wait_for(admin.get_table_info(path), 3)
    except fluss.FlussError as exc:
        if exc.error_code in (codes.TABLE_NOT_EXIST, codes.DATABASE_NOT_EXIST):
            return (
                f"The table {name} was dropped: restart the job with "
                "journal.upgrade='fresh' to start a new journal"
            )
        return (
            f"Asking the cluster about the table failed too ({describe(exc)}): a server is "
            "down, stopping or unreachable. Check the tablet servers and the coordinator"
        )
    except TimeoutError:
        return f"The coordinator at {config.bootstrap_servers} does not answer"
    if info.table_id != table_id:
        return (
            f"The table {name} was dropped and recreated (id {table_id}, now "
            f"{info.table_id}): restart the job with journal.upgrade='fresh'"
        )
    servers = sum(n.server_type == "TabletServer" for n in nodes)
    which = "its buckets" if bucket is None else f"bucket {bucket}"
    # pyfluss reports a bucket without a reachable leader as "Table not found".
    return (
        f"The table exists (id {table_id}) and {servers} tablet server(s) are "
        f"registered, but {which} had no reachable leader: a tablet server is stopping, "
        "restarting or unreachable at its advertised address. Check the tablet servers"
    )
