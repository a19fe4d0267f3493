"""Planning: per partition, the first record that must stay, and what lies below it.

What must stay (docs/operations.md, "The rule"):

* the first record of a run the restorable state does not contain (in flight in it,
  started after it, or never completed);
* the recovery marker of every key of that state (the engine refuses to restore a key
  whose marker lies below a cleanup boundary, so a key idle since long pins its partition
  at its last completed run; the marker's own record is kept);
* on a backend whose deletes cut every namespace at once (Kafka ``delete_records``), the
  first record of any other namespace or operator: their needs are unknown here;
* a record that cannot be read: nothing proves it may go;
* the records of a run that asked for a timer or a signal still pending in that state
  (:mod:`actionjournal.tools.cleanup.waits`).

``apply`` runs the same computation again below each boundary before deleting anything.
"""

from __future__ import annotations

import base64
import bisect
import time
from array import array
from dataclasses import dataclass, field
from typing import Any

from actionjournal.durable.records import (
    CONTROL_KEY,
    JournalRecord,
    Quarantined,
    ends_run,
    key_digest,
)
from actionjournal.durable.store import Cleanable
from actionjournal.tools import reading
from actionjournal.tools.cleanup.document import (
    PLAN_FORMAT,
    PLAN_VERSION,
    Blocker,
    CleanupPlan,
    PlanPartition,
    PlanStore,
    PlanTotals,
    seal,
)
from actionjournal.tools.cleanup.state import RestorableState, WrongJobError
from actionjournal.tools.cleanup.waits import JournaledWaits, blocker
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.store_options import ToolStoreConfig, describe, location
from actionjournal.tools.toolkit import ProgressBar, ToolError, fmt_time


@dataclass
class _OperatorScan:
    """What one partition holds for one operator uid of the namespace."""

    positions: array = field(default_factory=lambda: array("q"))
    sizes: array = field(default_factory=lambda: array("q"))
    completions: array = field(default_factory=lambda: array("q"))  # RunCompleted positions
    key_first: dict[str, int] = field(default_factory=dict)
    first_needed: Blocker | None = None
    open_runs: dict[tuple[str, int, int], int] = field(default_factory=dict)  # time mode
    last_contained: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (pos, seq)
    epochs: set[int] = field(default_factory=set)
    signed: bool = False
    oldest_at: float | None = None
    waits: JournaledWaits | None = None  # time mode: timers and signals left pending

    def need(self, blocker: Blocker) -> None:
        if self.first_needed is None or blocker.position < self.first_needed.position:
            self.first_needed = blocker


@dataclass
class PartitionScan:
    """One pass over ``[low, high)`` of a partition: per operator uid of the namespace, what
    is needed; and what else is there."""

    partition: int
    low: int
    high: int
    operators: dict[str, _OperatorScan] = field(default_factory=dict)
    foreign_seen: dict[str, int] = field(default_factory=dict)
    foreign_first: Blocker | None = None
    unreadable: list[Unreadable] = field(default_factory=list)


def _short(key_id: str) -> str:
    return key_id if len(key_id) <= 12 else key_id[:12] + "…"


def scan_partition(
    store: Cleanable,
    partition: int,
    namespace: str,
    state: RestorableState,
    low: int,
    high: int,
    progress: Any = None,
) -> PartitionScan:
    found = PartitionScan(partition, low, high)
    keys = state.keys
    cutoff = state.cutoff
    items = reading.scan(
        store, partition, namespace, None, found.unreadable, start=low, end=high, progress=progress
    )
    for item in items:
        record = item.record
        if record is None:
            label = f"{item.namespace}/{item.operator_uid}"
            found.foreign_seen[label] = found.foreign_seen.get(label, 0) + 1
            if found.foreign_first is None:
                found.foreign_first = Blocker(
                    "other_namespace",
                    item.position,
                    f"records of namespace {item.namespace!r} (operator {item.operator_uid!r}) "
                    "start here, and this store's deletes remove every namespace's records",
                    namespace=item.namespace,
                    operator_uid=item.operator_uid,
                )
            continue
        scan = found.operators.get(item.operator_uid)
        if scan is None:
            waits = JournaledWaits(cutoff) if cutoff is not None else None
            scan = found.operators[item.operator_uid] = _OperatorScan(waits=waits)
        scan.positions.append(item.position)
        scan.sizes.append(item.size)
        scan.signed = scan.signed or item.signed
        at = _timestamp(record)
        if at is not None and (scan.oldest_at is None or at < scan.oldest_at):
            scan.oldest_at = at
        key = record.key_id
        if key == CONTROL_KEY or isinstance(record, Quarantined):
            continue  # boundaries and audits of earlier operations: not needed
        scan.epochs.add(record.epoch)
        scan.key_first.setdefault(key, item.position)
        if ends_run(record):  # completed, or dead-lettered
            scan.completions.append(item.position)
        if keys is not None:
            if scan.first_needed is None:  # only the first needed record of the partition
                _check_snapshot_run(scan, keys, item.position, record)
            continue
        # Time mode: a run is contained when its RunCompleted came before the cutoff.
        assert scan.waits is not None
        scan.waits.see(item.position, record)
        run = (key, record.epoch, record.seq)
        first = scan.open_runs.setdefault(run, item.position)
        if ends_run(record):
            del scan.open_runs[run]
            assert cutoff is not None
            if record.at < cutoff:
                scan.last_contained[key] = (item.position, record.seq)
            else:
                scan.need(
                    Blocker(
                        "completed_after_cutoff",
                        first,
                        f"run key={_short(key)} seq={record.seq} completed at "
                        f"{fmt_time(record.at)}, after the cutoff {fmt_time(cutoff)}",
                        key_id=key,
                        seq=record.seq,
                        completed_at=record.at,
                    )
                )
    for scan in found.operators.values():
        for (key, _, seq), first in scan.open_runs.items():
            scan.need(
                Blocker(
                    "not_completed",
                    first,
                    f"run key={_short(key)} seq={seq} has not completed (in flight, or failed)",
                    key_id=key,
                    seq=seq,
                )
            )
        scan.open_runs.clear()
        if scan.waits is not None:
            for pending in scan.waits.blockers():
                scan.need(pending)
    return found


def _timestamp(record: JournalRecord) -> float | None:
    return getattr(record, "at", None)


def _check_snapshot_run(
    scan: _OperatorScan, keys: dict[str, Any], position: int, record: JournalRecord
) -> None:
    key = record.key_id
    needs = keys.get(key)
    asked = needs.wait_seq if needs is not None else None
    if asked is not None and needs is not None and asked <= record.seq < needs.min_seq:
        scan.need(blocker(key, asked, position, "a timer or signal"))
        return
    if needs is None:
        scan.need(
            Blocker(
                "not_in_state",
                position,
                f"run key={_short(key)} seq={record.seq} belongs to a key the restorable state "
                "does not hold (its runs started after the state)",
                key_id=key,
                seq=record.seq,
            )
        )
    elif record.seq >= needs.min_seq:
        in_flight = record.seq in needs.pending
        scan.need(
            Blocker(
                "in_flight" if in_flight else "after_state",
                position,
                f"run key={_short(key)} seq={record.seq} "
                + (
                    "is still in flight in the restorable state"
                    if in_flight
                    else "started after the restorable state was taken"
                ),
                key_id=key,
                seq=record.seq,
            )
        )


def first_kept(
    store: Cleanable, found: PartitionScan, operator_uid: str, state: RestorableState
) -> Blocker:
    """The first record of the partition that must stay (``end`` when none must)."""
    p, high = found.partition, found.high
    scan = found.operators.get(operator_uid) or _OperatorScan()
    blockers = [Blocker("end", high, "every retained record up to the end of the partition may go")]
    if scan.first_needed is not None:
        blockers.append(scan.first_needed)
    # A quarantined record is skipped by recovery: deleting it loses nothing more.
    unreadable = [bad for bad in found.unreadable if bad.kind == "corrupt"]
    if unreadable:
        bad = unreadable[0]
        blockers.append(
            Blocker(
                "unreadable",
                bad.position,
                f"the record at position {bad.position} cannot be read ({bad.error}), and "
                "cleanup never deletes past a record it cannot read",
            )
        )
    foreign = [bad for bad in found.unreadable if bad.kind == "foreign"]
    if foreign and store.shared_deletes:
        blockers.append(
            Blocker(
                "foreign",
                foreign[0].position,
                f"a record actionjournal did not write is at position {foreign[0].position}, "
                "and this store's deletes would remove it too",
            )
        )
    if state.keys is not None:
        for key, needs in state.keys.items():
            if needs.marker_partition == p and needs.marker_position is not None:
                blockers.append(_marker(key, needs.marker_position, needs.next_seq))
    else:
        for key, (position, seq) in scan.last_contained.items():
            blockers.append(_marker(key, position, seq + 1, estimated=True))
    if store.shared_deletes:
        if found.foreign_first is not None:
            blockers.append(found.foreign_first)
        for uid, other in found.operators.items():
            if uid != operator_uid and other.positions:
                blockers.append(
                    Blocker(
                        "other_operator",
                        other.positions[0],
                        f"records of operator {uid!r} of the same namespace start here, and "
                        "this store's deletes remove every operator's records",
                        operator_uid=uid,
                    )
                )
    return min(blockers, key=lambda b: b.position)


def _marker(key: str, position: int, next_seq: int, estimated: bool = False) -> Blocker:
    what = "estimated recovery marker" if estimated else "recovery marker"
    return Blocker(
        "marker",
        position,
        f"key={_short(key)} has its {what} here (last completed run seq={next_seq - 1}); a "
        "restore refuses a key whose marker is below a cleanup boundary, so records from the "
        "marker on stay",
        key_id=key,
        seq=next_seq - 1,
        estimated=estimated,
    )


def make_plan(
    store: Cleanable,
    config: ToolStoreConfig,
    namespace: str,
    operator_uid: str | None,
    state: RestorableState,
    progress_enabled: bool | None = None,
) -> CleanupPlan:
    """Scan every partition and compute what may go; returns the sealed plan."""
    created = time.time()
    partitions = store.partitions()
    found_all: list[PartitionScan] = []
    for p in partitions:
        low, high = store.position_range(p)
        bar = ProgressBar(f"scanning partition {p}", progress_enabled)
        try:
            found_all.append(scan_partition(store, p, namespace, state, low, high, bar))
        finally:
            bar.close()
    uids = {uid for found in found_all for uid in found.operators}
    other_namespaces: dict[str, int] = {}
    for found in found_all:
        for label, n in found.foreign_seen.items():
            other_namespaces[label] = other_namespaces.get(label, 0) + n
    operator_uid = _choose_operator(namespace, operator_uid, uids, other_namespaces, config)
    epochs: set[int] = set()
    signed = False
    totals = PlanTotals()
    entries = []
    for found in found_all:
        scan = found.operators.get(operator_uid) or _OperatorScan()
        epochs |= scan.epochs
        signed = signed or scan.signed
        entry = _entry(store, found, scan, first_kept(store, found, operator_uid, state))
        entries.append(entry)
        totals.records_deleted += entry.records_deleted
        totals.bytes_deleted += entry.bytes_deleted
        totals.runs_deleted += entry.runs_deleted
        totals.records_kept += entry.records_kept
    identity = store.identity
    plan = CleanupPlan(
        format=PLAN_FORMAT,
        version=PLAN_VERSION,
        digest="",
        created_at=created,
        created=fmt_time(created),
        store=PlanStore(
            identity.backend, identity.name, identity.uid, len(partitions), store.shared_deletes
        ),
        location=location(config, store),
        namespace=namespace,
        operator_uid=operator_uid,
        epoch=max(epochs) if epochs else 0,
        signed=signed,
        state=state.info,
        other_namespaces=other_namespaces,
        unreadable=[bad for found in found_all for bad in found.unreadable],
        partitions=entries,
        totals=totals,
    )
    return seal(plan)


def _choose_operator(
    namespace: str,
    operator_uid: str | None,
    uids: set[str],
    other_namespaces: dict[str, int],
    config: ToolStoreConfig,
) -> str:
    if not uids:
        found = sorted({label.split("/")[0] for label in other_namespaces})
        raise ToolError(
            f"namespace {namespace!r} has no records in {describe(config)}"
            + (f"; namespaces found: {', '.join(found)}" if found else "; the journal is empty")
            + ". Check --namespace (journal.namespace of the job)"
        )
    if operator_uid is None:
        if len(uids) > 1:
            raise WrongJobError(
                f"namespace {namespace!r} holds records of several operators "
                f"({', '.join(sorted(uids))}): pass --operator-uid"
            )
        return next(iter(uids))
    if operator_uid not in uids:
        raise ToolError(
            f"namespace {namespace!r} has no records of operator {operator_uid!r}; "
            f"operators found: {', '.join(sorted(uids))}"
        )
    return operator_uid


def _entry(
    store: Cleanable, found: PartitionScan, scan: _OperatorScan, blocker: Blocker
) -> PlanPartition:
    p, low, high = found.partition, found.low, found.high
    boundary = max(low, min(blocker.position, high))
    cut = bisect.bisect_left(scan.positions, boundary)
    goes = boundary > low and cut > 0
    touched = sorted(key_digest(k) for k, first in scan.key_first.items() if first < boundary)
    return PlanPartition(
        partition=p,
        low=low,
        high=high,
        delete_below=boundary if goes else None,
        keep_from=boundary,
        keep_first_exists=blocker.kind != "end" and boundary < high,
        records_deleted=cut if goes else 0,
        bytes_deleted=sum(scan.sizes[:cut]) if goes else 0,
        runs_deleted=bisect.bisect_left(scan.completions, boundary) if goes else 0,
        keys_with_records_deleted=len(touched) if goes else 0,
        deleted_keys=base64.b64encode(b"".join(touched)).decode() if goes else "",
        records_kept=len(scan.positions) - (cut if goes else 0),
        bytes_kept=sum(scan.sizes[cut:] if goes else scan.sizes),
        oldest_record_at=scan.oldest_at,
        blocker=blocker,
        reason=_reason(store, p, boundary, low, high, blocker, cut if goes else 0),
    )


def _reason(
    store: Cleanable,
    p: int,
    boundary: int,
    low: int,
    high: int,
    blocker: Blocker,
    deleted: int,
) -> str:
    unit = "offset" if store.identity.backend == "kafka" else "position"
    where = f"partition {p}" if len(store.partitions()) > 1 else "the journal"
    if low >= high:
        return f"{where} is empty"
    if blocker.kind == "end":
        return f"{where}: all {deleted} records of the namespace below {unit} {high} may go"
    if not deleted:
        return f"{where} keeps everything: it stops at {unit} {boundary}: {blocker.reason}"
    return f"{where} stops at {unit} {boundary}: {blocker.reason}"
