"""Applying a plan: check it still fits, re-check every boundary, journal them, then delete.

Nothing is deleted unless every affected partition passed its re-check: the records below
its boundary are read again and judged against the plan's restorable state (a snapshot is
re-read and must have the content the plan recorded), exactly as planning did. A boundary
past a record that must stay (a recovery marker, a run in flight, another namespace's
record where deletes are shared) is refused, whoever wrote the plan.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from actionjournal.durable.errors import ActionJournalError
from actionjournal.durable.records import (
    CONTROL_KEY,
    DIGEST_SIZE,
    CleanupBoundary,
    StoreIdentity,
    key_digest,
)
from actionjournal.durable.store import Cleanable
from actionjournal.tools.cleanup.document import CleanupPlan, PlanPartition, deleted_keys
from actionjournal.tools.cleanup.plan import first_kept, scan_partition
from actionjournal.tools.cleanup.state import RestorableState, reload
from actionjournal.tools.store_options import (
    ToolStoreConfig,
    config_from_location,
    describe,
)
from actionjournal.tools.toolkit import EXIT_PARTIAL, ProgressBar, ToolError, UsageError

DIGESTS_PER_RECORD = 50_000  # 400 KB per boundary record, under Kafka's default 1 MB
CLOCK_SKEW_S = 300.0


@dataclass
class ApplyResult:
    applied: list[int] = field(default_factory=list)
    already_applied: list[int] = field(default_factory=list)
    nothing_left: list[int] = field(default_factory=list)
    """Partitions holding none of the namespace's records below the boundary: applied before
    where deletes keep other namespaces' records (SQLite), or nothing to do; no boundary is
    journaled there."""
    deleted: dict[int, int | None] = field(default_factory=dict)


def check_location(plan: CleanupPlan, given: ToolStoreConfig) -> None:
    """Refuse ``--store ...`` options that name another journal than the plan's."""
    planned = config_from_location(plan.location)
    if planned.backend != given.backend:
        raise ToolError(
            f"the plan is for a {planned.backend} journal, not {given.backend}: refusing"
        )
    if describe(planned).split(" on ")[0] != describe(given).split(" on ")[0]:
        raise ToolError(
            f"the plan is for {describe(planned)}, not {describe(given)}: refusing; plan for "
            "that journal first"
        )


def check_plan(
    plan: CleanupPlan,
    store: Cleanable,
    config: ToolStoreConfig,
    max_age_s: float,
    now: float | None = None,
) -> None:
    """Refuse a plan that does not fit this store any more, naming why."""
    now = time.time() if now is None else now
    expected = plan.store
    identity: StoreIdentity = store.identity
    if (expected.backend, expected.name) != (identity.backend, identity.name):
        raise ToolError(
            f"the plan is for {expected.backend} journal {expected.name!r}, not "
            f"{identity.backend} {identity.name!r} ({describe(config)}): refusing"
        )
    if expected.uid != identity.uid:
        raise ToolError(
            f"the plan is for {expected.backend} journal {expected.name!r} with id "
            f"{expected.uid}, but it now has id {identity.uid}: it was deleted and recreated "
            "since the plan was made. Plan again"
        )
    if expected.partitions != len(store.partitions()):
        raise ToolError(
            f"the plan was made for {expected.partitions} partitions; the journal now has "
            f"{len(store.partitions())}. Plan again"
        )
    age = now - plan.created_at
    if max_age_s > 0 and age > max_age_s:
        raise ToolError(
            f"the plan is {age:.0f} s old, older than --max-age {max_age_s:g} s: the oldest "
            "restorable checkpoint may have changed since. Plan again (or raise --max-age)"
        )
    if age < -CLOCK_SKEW_S:
        raise ToolError("the plan was created in the future (clock skew?); plan again")


def apply_plan(
    plan: CleanupPlan,
    store: Cleanable,
    progress_enabled: bool | None = None,
    state: RestorableState | None = None,
) -> ApplyResult:
    """Re-check, journal the boundaries, then delete. A ToolError before the boundaries are
    journaled means nothing was deleted.

    ``state``: the plan's state as already read (``cleanup run`` plans and applies in one
    go, from the same snapshot bytes, while the job may rewrite the file); else it is read
    again and must be what the plan recorded."""
    codec = getattr(store, "codec", None)
    if plan.signed and not (codec is not None and codec.signed):
        raise UsageError(
            "the journal's records are signed: pass --signing-key-env VAR with the job's "
            "journal.signing_key, or the boundary records would be refused on recovery"
        )
    result = ApplyResult()
    todo: list[PlanPartition] = []
    for entry in plan.partitions:
        boundary = entry.delete_below
        if boundary is None:
            continue
        p = entry.partition
        low, high = store.position_range(p)
        if high < entry.high:
            raise ToolError(
                f"partition {p} now ends at {high}, before the plan's end {entry.high}: the "
                "journal was truncated or recreated. Plan again"
            )
        if low > boundary and entry.keep_first_exists:
            raise ToolError(
                f"partition {p} now starts at {low}, past the plan's boundary {boundary}: "
                "records the plan keeps were deleted by something else (retention, another "
                "cleanup). Plan again"
            )
        if low >= boundary:
            result.already_applied.append(p)  # the boundary was journaled before the delete
            continue
        todo.append(entry)
    if todo and state is None:
        state = reload(plan.state, store)
    for entry in todo:
        assert state is not None
        if not _recheck(plan, store, state, entry, progress_enabled):
            result.nothing_left.append(entry.partition)
    todo = [entry for entry in todo if entry.partition not in result.nothing_left]
    # 1. Journal every boundary before deleting anything.
    now = time.time()
    for entry in todo:
        _journal_boundary(plan, store, entry, now)
    # 2. Delete below each boundary; never at or above it.
    failures: list[str] = []
    for entry in todo:
        p, boundary = entry.partition, entry.delete_below
        assert boundary is not None
        bar = ProgressBar(f"deleting partition {p} below {boundary}", progress_enabled)
        try:
            result.deleted[p] = store.delete_below(
                plan.namespace, plan.operator_uid, p, boundary, bar
            )
            result.applied.append(p)
        except (ActionJournalError, OSError) as exc:
            failures.append(f"partition {p}: {exc}")
        finally:
            bar.close()
    if failures:
        raise ToolError(
            "boundaries were journaled but some deletions failed: "
            + "; ".join(failures)
            + ". Run the same apply again to finish",
            EXIT_PARTIAL,
        )
    return result


def _recheck(
    plan: CleanupPlan,
    store: Cleanable,
    state: RestorableState,
    entry: PlanPartition,
    progress_enabled: bool | None,
) -> int:
    """Judge the records below the boundary again, as planning did; returns how many of the
    plan's namespace and operator lie below it. Raises when the boundary is not safe."""
    p, boundary = entry.partition, entry.delete_below
    assert boundary is not None
    bar = ProgressBar(f"checking partition {p} below {boundary}", progress_enabled)
    try:
        low = store.position_range(p)[0]
        found = scan_partition(store, p, plan.namespace, state, low, entry.high, bar)
    finally:
        bar.close()
    blocker = first_kept(store, found, plan.operator_uid, state)
    if boundary > blocker.position:
        raise ToolError(
            f"partition {p}: the plan deletes below {boundary}, but position {blocker.position} "
            f"must stay ({blocker.reason}): the plan does not match the journal and state it "
            "names. Nothing was deleted; plan again"
        )
    scan = found.operators.get(plan.operator_uid)
    if scan is None:
        return 0
    below = bisect.bisect_left(scan.positions, boundary)
    if below > entry.records_deleted:
        raise ToolError(
            f"partition {p}: {below} records lie below {boundary}, more than the "
            f"{entry.records_deleted} the plan says it deletes. Nothing was deleted; plan again"
        )
    touched = {key_digest(k) for k, first in scan.key_first.items() if first < boundary}
    listed = deleted_keys(entry)
    known = {listed[i : i + DIGEST_SIZE] for i in range(0, len(listed), DIGEST_SIZE)}
    if not touched <= known:
        raise ToolError(
            f"partition {p}: {len(touched - known)} keys with records below {boundary} are "
            "missing from the plan's deleted_keys, so a restore could not refuse them after the "
            "cleanup. Nothing was deleted; plan again"
        )
    return below


def _journal_boundary(
    plan: CleanupPlan, store: Cleanable, entry: PlanPartition, now: float
) -> None:
    p, boundary = entry.partition, entry.delete_below
    assert boundary is not None
    digests = deleted_keys(entry)
    step = DIGESTS_PER_RECORD * DIGEST_SIZE
    for start in range(0, max(len(digests), 1), step):
        record = CleanupBoundary(
            namespace=plan.namespace,
            operator_uid=plan.operator_uid,
            epoch=plan.epoch,
            key_id=CONTROL_KEY,
            seq=0,
            partition=p,
            position=boundary,
            at=now,
            deleted_keys=digests[start : start + step],
        )
        try:
            store.append_control(record, p)
        except ActionJournalError as exc:
            raise ToolError(
                f"could not journal the cleanup boundary of partition {p}: {exc}; nothing was "
                "deleted"
            ) from None
