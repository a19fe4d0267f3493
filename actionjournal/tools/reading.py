"""Reading a partition for the tools: a record that cannot be read is reported and skipped.

A store's scan stops at a record it cannot decode (corrupt bytes, a newer format, a bad
signature). The tools must go on past it and say where it was, so inspect still shows
the rest and cleanup can refuse to delete past it.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from actionjournal.durable.errors import RecordError
from actionjournal.stores.base import MaintenanceStore, Progress, ScannedRecord

# A namespace no record has: a scan for it yields every record undecoded (``foreign``).
_NO_NAMESPACE = "\x00"


class Unreadable(msgspec.Struct):
    """A record the tools skipped: where it is and why it could not be read."""

    partition: int
    position: int
    error: str


def scan(
    store: MaintenanceStore,
    partition: int,
    namespace: str,
    operator_uid: str | None,
    skipped: list[Unreadable],
    *,
    start: int | None = None,
    end: int | None = None,
    progress: Progress | None = None,
) -> Iterator[ScannedRecord]:
    """Every record of ``[start, end)`` (default: what the partition retains), in order.

    Records of ``namespace`` (and ``operator_uid``) are decoded; others come undecoded
    (``record`` is ``None``). An unreadable record is appended to ``skipped`` and passed.
    """
    position, end = store.scan_bounds(partition, start, end)
    while position < end:
        try:
            for item in store.scan(
                partition,
                namespace,
                operator_uid,
                start=position,
                end=end,
                foreign=True,
                progress=progress,
            ):
                position = item.position + 1
                yield item
            return
        except RecordError as exc:
            # Every record before it was yielded, so it is the first one from ``position``.
            bad = _first_position(store, partition, position, end)
            skipped.append(Unreadable(partition, bad, str(exc)))
            position = bad + 1


def _first_position(store: MaintenanceStore, partition: int, start: int, end: int) -> int:
    try:
        for item in store.scan(partition, _NO_NAMESPACE, start=start, end=end, foreign=True):
            return item.position
    except RecordError:  # not even its namespace can be read: it is the very first record
        pass
    return start
