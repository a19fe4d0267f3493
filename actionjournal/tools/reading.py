"""Reading a partition for the tools: a record that cannot be read is reported and skipped.

A store's scan stops at a record it cannot decode (corrupt bytes, a newer format, a bad
signature). The tools must go on past it and say where it was, so inspect still shows
the rest and cleanup can refuse to delete past it.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from actionjournal.durable.errors import RecordError
from actionjournal.durable.records import Quarantined
from actionjournal.durable.store import Inspectable, Progress, ScannedRecord

# A namespace no record has: a scan for it yields every record undecoded (``foreign``).
_NO_NAMESPACE = "\x00"


class Unreadable(msgspec.Struct):
    """A record the tools skipped: where it is and why it could not be read.

    ``kind``: ``corrupt`` (a record of the namespace that does not decode: recovery of its
    key stops at it), ``quarantined`` (such a record an operator quarantined: recovery skips
    it) or ``foreign`` (bytes actionjournal did not write: every reader skips them).
    """

    partition: int
    position: int
    error: str
    kind: str = "corrupt"
    key_id: str = ""  # whose record it is, when its place says (message key, key column)
    operator_uid: str = ""


def scan(
    store: Inspectable,
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
    first = len(skipped)
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
                if item.error:
                    kind = "foreign" if item.foreign else "corrupt"
                    bad = Unreadable(partition, item.position, item.error, kind, item.key_id)
                    bad.operator_uid = item.operator_uid
                    skipped.append(bad)
                    continue
                if isinstance(item.record, Quarantined) and item.record.partition == partition:
                    _mark_quarantined(skipped[first:], item.record.position)
                yield item
            return
        except RecordError as exc:
            # Every record before it was yielded, so it is the first one from ``position``.
            at = _first_position(store, partition, position, end)
            skipped.append(Unreadable(partition, at, str(exc)))
            position = at + 1


def describe(bad: Unreadable) -> str:
    """One line on a skipped record: where, what, and what recovery does about it."""
    where = f"partition {bad.partition} position {bad.position}"
    if bad.kind == "foreign":
        return f"a foreign record at {where}: {bad.error}; jobs skip it too"
    if bad.kind == "quarantined":
        return f"a quarantined record at {where}: {bad.error}; recovery skips it too"
    whose = f" of key {bad.key_id}" if bad.key_id else ""
    return (
        f"an unreadable record at {where}: {bad.error}; recovery of the key{whose} stops at it. "
        "If it cannot be repaired, `actionjournal journal quarantine` with this command's "
        f"store and namespace options and --partition {bad.partition} --position "
        f"{bad.position} skips it"
    )


def _mark_quarantined(skipped: list[Unreadable], position: int) -> None:
    for bad in skipped:
        if bad.position == position and bad.kind == "corrupt":
            bad.kind = "quarantined"


def _first_position(store: Inspectable, partition: int, start: int, end: int) -> int:
    try:
        for item in store.scan(partition, _NO_NAMESPACE, start=start, end=end, foreign=True):
            return item.position
    except RecordError:  # not even its namespace can be read: it is the very first record
        pass
    return start
