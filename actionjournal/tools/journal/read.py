"""Reading the documents of ``journal inspect`` and ``journal keys`` from a store.

Every read goes through :func:`actionjournal.tools.reading.scan`: a record that cannot be
read is listed in the document's ``unreadable`` with its position, and the read goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from actionjournal.durable.records import (
    CONTROL_KEY,
    CleanupBoundary,
    JournalRecord,
    Quarantined,
    UpgradeSkipped,
    ends_run,
)
from actionjournal.durable.store import Inspectable, ScannedRecord
from actionjournal.durable.values import ValueCodec
from actionjournal.tools import reading
from actionjournal.tools.journal.documents import (
    ControlDoc,
    KeyDoc,
    KeyEntry,
    KeysDoc,
    PartitionSummary,
    StoreDoc,
    SummaryDoc,
    SummaryTotals,
)
from actionjournal.tools.journal.keys import journaled_key
from actionjournal.tools.journal.runs import build_runs, run_doc, start_time
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.toolkit import ProgressBar, fmt_time

FULL_ID = 32  # hex characters of a key, action or call id


def store_doc(store: Inspectable) -> StoreDoc:
    i = store.identity
    return StoreDoc(i.backend, i.name, i.uid)


def _records(
    store: Inspectable,
    partition: int,
    namespace: str,
    skipped: list[Unreadable],
    progress: bool | None,
    label: str,
) -> Iterator[ScannedRecord]:
    """Every record of the partition (other namespaces undecoded), with a progress bar."""
    bar = ProgressBar(f"{label} partition {partition}", progress)
    try:
        yield from reading.scan(store, partition, namespace, None, skipped, progress=bar)
    finally:
        bar.close()


def _control(item: ScannedRecord) -> ControlDoc | None:
    record = item.record
    if isinstance(record, CleanupBoundary):
        return ControlDoc(
            type="cleanup_boundary",
            position=item.position,
            at=record.at,
            partition=record.partition,
            boundary=record.position,
            text=f"cleanup boundary at position {item.position}: partition "
            f"{record.partition} deleted below {record.position} at {fmt_time(record.at)}",
        )
    if isinstance(record, Quarantined):
        return ControlDoc(
            type="quarantined",
            position=item.position,
            at=record.at,
            partition=record.partition,
            boundary=record.position,
            text=f"quarantine at position {item.position}, {fmt_time(record.at)}: recovery "
            f"skips the unreadable record at partition {record.partition} position "
            f"{record.position} ({record.size} bytes): {record.reason}",
        )
    if isinstance(record, UpgradeSkipped):
        return ControlDoc(
            type="upgrade_skipped",
            position=item.position,
            at=record.at,
            old_journal=f"{record.old_backend} {record.old_name}",
            old_epoch=record.old_epoch,
            text=f"upgrade at position {item.position}, {fmt_time(record.at)}: skipped "
            f"{record.old_backend} {record.old_name} epoch {record.old_epoch}",
        )
    return None


def key_document(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    key_id: str,
    *,
    limit: int = 0,
    since: float | None = None,
    progress: bool | None = None,
) -> KeyDoc:
    """The key's runs (the last ``limit`` of those active since ``since``; 0: all)."""
    partition = store.partition_of(key_id)
    skipped: list[Unreadable] = []
    items: list[ScannedRecord] = []
    control: list[ControlDoc] = []
    uids: set[str] = set()
    key: str | None = None
    for item in _records(store, partition, namespace, skipped, progress, "reading"):
        record = item.record
        if record is None:
            continue
        quarantine = isinstance(record, Quarantined)  # of the key: shown with control records
        if record.key_id == key_id and not quarantine:
            key = key or journaled_key(record)
            uids.add(item.operator_uid)
            if operator_uid in (None, item.operator_uid):
                items.append(item)
        elif record.key_id in (CONTROL_KEY, key_id) and operator_uid in (None, item.operator_uid):
            entry = _control(item)
            if entry is not None:
                control.append(entry)
    runs = build_runs(partition, items)
    if since is not None:
        runs = [r for r in runs if (r.last_at if r.last_at is not None else 0.0) >= since]
    total = len(runs)
    shown = runs[-limit:] if limit else runs
    values = ValueCodec(allow_pickle=False)
    docs = [run_doc(run, values) for run in shown]
    return KeyDoc(
        store=store_doc(store),
        namespace=namespace,
        key_id=key_id,
        partition=partition,
        operator_uids=sorted(uids),
        runs_total=total,
        records=sum(r.records for r in docs),
        bytes=sum(r.bytes for r in docs),
        runs=docs,
        control=control,
        unreadable=skipped,
        key=key,
    )


def find_ids(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    attribute: str,
    prefix: str,
    progress: bool | None = None,
) -> tuple[dict[str, JournalRecord], list[Unreadable]]:
    """Records whose ``attribute`` (``action_id``, ``call_id``) starts with ``prefix``: the
    first record of each matching id. A full id stops at its first record."""
    found: dict[str, JournalRecord] = {}
    skipped: list[Unreadable] = []
    for p in store.partitions():
        for item in _records(store, p, namespace, skipped, progress, "searching"):
            record = item.record
            if record is None or operator_uid not in (None, item.operator_uid):
                continue
            value = getattr(record, attribute, None)
            if isinstance(value, str) and value.startswith(prefix):
                found.setdefault(value, record)
                if len(prefix) >= FULL_ID:
                    return found, skipped
    return found, skipped


@dataclass
class _KeyTally:
    partition: int
    uids: set[str] = field(default_factory=set)
    runs: set[tuple[str, int, int]] = field(default_factory=set)
    finished: set[tuple[str, int, int]] = field(default_factory=set)
    records: int = 0
    size: int = 0
    first_at: float | None = None
    last_at: float | None = None
    key: str | None = None


def keys_document(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    *,
    limit: int = 0,
    since: float | None = None,
    progress: bool | None = None,
) -> KeysDoc:
    """Keys of the namespace, the most recently active first (the first ``limit``; 0: all)."""
    tallies: dict[str, _KeyTally] = {}
    skipped: list[Unreadable] = []
    for p in store.partitions():
        for item in _records(store, p, namespace, skipped, progress, "scanning"):
            record = item.record
            if record is None or record.key_id == CONTROL_KEY or isinstance(record, Quarantined):
                continue
            if operator_uid not in (None, item.operator_uid):
                continue
            tally = tallies.get(record.key_id)
            if tally is None:
                tally = tallies[record.key_id] = _KeyTally(p)
            tally.uids.add(item.operator_uid)
            run = (item.operator_uid, record.epoch, record.seq)
            tally.runs.add(run)
            if ends_run(record):
                tally.finished.add(run)
            tally.records += 1
            tally.size += item.size
            tally.key = tally.key or journaled_key(record)
            started, at = start_time(record), getattr(record, "at", None)
            if started is not None:
                tally.first_at = started if tally.first_at is None else min(tally.first_at, started)
            if at is not None:
                tally.last_at = at if tally.last_at is None else max(tally.last_at, at)
    entries = [
        KeyEntry(
            key_id=key,
            partition=t.partition,
            operator_uids=sorted(t.uids),
            runs=len(t.runs),
            runs_in_flight=len(t.runs - t.finished),
            records=t.records,
            bytes=t.size,
            first_at=t.first_at,
            last_at=t.last_at,
            key=t.key,
        )
        for key, t in tallies.items()
        if since is None or (t.last_at is not None and t.last_at >= since)
    ]
    entries.sort(key=lambda e: (-(e.last_at or 0.0), e.key_id))
    return KeysDoc(
        store=store_doc(store),
        namespace=namespace,
        operator_uid=operator_uid,
        keys_total=len(entries),
        since=since,
        keys=entries[:limit] if limit else entries,
        unreadable=skipped,
    )


def summary_document(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    *,
    all_partitions: bool = False,
    progress: bool | None = None,
) -> SummaryDoc:
    partitions = []
    other: dict[str, int] = {}
    uids: dict[str, int] = {}
    skipped: list[Unreadable] = []
    oldest_at: float | None = None
    totals = SummaryTotals()
    for p in store.partitions():
        low, high = store.position_range(p)
        keys: set[str] = set()
        runs: set[tuple[str, str, int, int]] = set()
        finished: set[tuple[str, str, int, int]] = set()
        records = size = 0
        first_at: float | None = None
        first_position: int | None = None
        boundaries = []
        for item in _records(store, p, namespace, skipped, progress, "scanning"):
            record = item.record
            if record is None:
                label = f"{item.namespace}/{item.operator_uid}"
                other[label] = other.get(label, 0) + 1
                continue
            uids[item.operator_uid] = uids.get(item.operator_uid, 0) + 1
            if operator_uid not in (None, item.operator_uid):
                continue
            records += 1
            size += item.size
            if first_position is None:
                first_position = item.position
            at = start_time(record)
            if at is not None and (first_at is None or at < first_at):
                first_at = at
            if record.key_id == CONTROL_KEY or isinstance(record, Quarantined):
                if isinstance(record, CleanupBoundary):
                    boundaries.append(
                        {"position": record.position, "at": record.at, "stored_at": item.position}
                    )
                continue
            keys.add(record.key_id)
            run = (item.operator_uid, record.key_id, record.epoch, record.seq)
            runs.add(run)
            if ends_run(record):
                finished.add(run)
        summary = PartitionSummary(
            partition=p,
            low=low,
            high=high,
            records=records,
            bytes=size,
            keys=len(keys),
            runs=len(runs),
            runs_finished=len(finished),
            runs_in_flight=len(runs - finished),
            oldest_position=first_position,
            oldest_record_at=first_at,
            cleanup_boundaries=boundaries,
        )
        totals.records += records
        totals.bytes += size
        totals.keys += len(keys)
        totals.runs += len(runs)
        totals.runs_finished += len(finished)
        totals.runs_in_flight += len(runs - finished)
        if first_at is not None and (oldest_at is None or first_at < oldest_at):
            oldest_at = first_at
        if records or all_partitions:
            partitions.append(summary)
    return SummaryDoc(
        store=store_doc(store),
        namespace=namespace,
        operator_uid=operator_uid,
        operator_uids=uids,
        partitions=partitions,
        partitions_total=len(store.partitions()),
        totals=totals,
        oldest_record_at=oldest_at,
        other_namespaces=other,
        unreadable=skipped,
    )
