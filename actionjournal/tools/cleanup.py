"""``actionjournal cleanup plan`` and ``actionjournal cleanup apply``.

The rule (docs/operations.md, DESIGN "Cleanup"): a run's records may be deleted once the
oldest state that may still be restored already contains the run's completion. Per
partition the plan finds the first position that must stay; everything below it goes:

* the first record of a run the restorable state does not contain (in flight in it,
  started after it, or never completed);
* the recovery marker of every key of that state (the engine refuses to restore a key
  whose marker lies below a cleanup boundary, so a key idle since long pins its partition
  at its last completed run; the marker's own record is kept);
* on a backend whose deletes cut every namespace at once (Kafka ``delete_records``), the
  first record of any other namespace or operator: their needs are unknown here.

``apply`` journals a ``CleanupBoundary`` into each partition first, then deletes below it.
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import re
import sys
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from actionjournal.durable.errors import ActionJournalError
from actionjournal.durable.records import (
    CONTROL_KEY,
    DIGEST_SIZE,
    CleanupBoundary,
    JournalRecord,
    RunCompleted,
    StoreIdentity,
    key_digest,
)
from actionjournal.stores.base import ActionStateStore
from actionjournal.tools.toolkit import (
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_REFUSED,
    ArgumentParser,
    ProgressBar,
    ToolError,
    UsageError,
    add_namespace_args,
    add_progress_args,
    add_store_args,
    describe_location,
    fmt_bytes,
    fmt_time,
    open_store,
    record_codec,
    run_tool,
    store_location,
)

PLAN_FORMAT = "actionjournal.cleanup-plan"
PLAN_VERSION = 2  # 2: partitions carry deleted_keys
_DIGESTS_PER_RECORD = 50_000  # 400 KB per boundary record, under Kafka's default 1 MB
DEFAULT_MARGIN_S = 600.0
DEFAULT_MAX_AGE_S = 3600.0
FLINK_METADATA_MAGIC = 0x4960672D  # first 4 bytes of a Flink checkpoint/savepoint _metadata

# -- the restorable state --------------------------------------------------------------------


@dataclass(frozen=True)
class KeyNeeds:
    """What restoring the state needs of one key: its runs from ``min_seq`` on."""

    min_seq: int
    next_seq: int
    pending: tuple[int, ...]
    marker_partition: int | None  # None: no marker in this store
    marker_position: int | None


@dataclass
class RestorableState:
    """The oldest state that may be restored: exact per-key needs, or a time cutoff."""

    kind: str  # "snapshot" | "checkpoint" | "time"
    info: dict[str, Any]
    keys: dict[str, KeyNeeds] | None = None
    cutoff: float | None = None  # runs completed before this are in the state


def load_snapshot(path: str | Path, store: ActionStateStore) -> RestorableState:
    """A LocalRunner snapshot: exact, it holds every key's sequence numbers and marker."""
    from actionjournal.operator.local import Snapshot

    path = Path(path)
    if not path.is_file():
        raise ToolError(f"snapshot {path} does not exist")
    data = path.read_bytes()
    try:
        snap = msgspec.msgpack.decode(data, type=Snapshot)
    except msgspec.DecodeError as exc:
        raise ToolError(f"{path} is not a LocalRunner snapshot: {exc}") from None
    ours = store.identity
    keys: dict[str, KeyNeeds] = {}
    foreign_markers: set[str] = set()
    for k in snap.keys:
        state = k.state
        pending = tuple(p.seq for p in state.pending)
        marker = state.marker
        partition = position = None
        if marker is not None:
            if (marker.store.backend, marker.store.name, marker.store.uid) == (
                ours.backend,
                ours.name,
                ours.uid,
            ):
                partition, position = marker.partition, marker.position
            else:
                foreign_markers.add(
                    f"{marker.store.backend} {marker.store.name} ({marker.store.uid})"
                )
        keys[k.key_id] = KeyNeeds(
            min_seq=pending[0] if pending else state.next_seq,
            next_seq=state.next_seq,
            pending=pending,
            marker_partition=partition,
            marker_position=position,
        )
    with_marker = sum(1 for k in keys.values() if k.marker_position is not None)
    if foreign_markers and not with_marker:
        raise ToolError(
            f"snapshot {path} was taken with another journal ({', '.join(sorted(foreign_markers))}"
            f"), not {ours.backend} {ours.name} ({ours.uid}): plan against the journal its job "
            "uses"
        )
    import hashlib

    return RestorableState(
        "snapshot",
        {
            "kind": "snapshot",
            "path": str(path.resolve()),
            "sha256": hashlib.sha256(data).hexdigest(),
            "keys": len(keys),
            "keys_with_marker": with_marker,
            "inputs_consumed": snap.inputs_consumed,
            "modified_at": path.stat().st_mtime,
        },
        keys=keys,
    )


def find_checkpoint_metadata(path: str | Path) -> tuple[Path, list[str]]:
    """The ``_metadata`` of a checkpoint/savepoint path; in a directory of retained
    checkpoints (``chk-N``), the oldest one. Returns it and the candidates seen."""
    path = Path(path)
    if not path.exists():
        raise ToolError(f"checkpoint path {path} does not exist")
    if path.is_file():
        if path.name != "_metadata":
            raise ToolError(f"{path} is a file but not a Flink checkpoint's _metadata")
        return path, [str(path)]
    if (path / "_metadata").is_file():
        return path / "_metadata", [str(path / "_metadata")]
    found = [p for p in path.glob("chk-*/_metadata")] + [p for p in path.glob("*/chk-*/_metadata")]
    if not found:
        raise ToolError(
            f"no Flink checkpoint under {path}: expected a _metadata file, a checkpoint or "
            "savepoint directory holding one, or a directory of chk-N checkpoints"
        )

    def number(p: Path) -> int:
        match = re.match(r"chk-(\d+)$", p.parent.name)
        return int(match.group(1)) if match else 0

    found.sort(key=lambda p: (number(p), p.stat().st_mtime))
    return found[0], [str(p) for p in found]


def load_checkpoint(path: str | Path, margin_s: float) -> RestorableState:
    """A Flink checkpoint or savepoint, judged by when its metadata was written.

    Our keyed state cannot be read from Python today (docs/operations.md says why), so a
    checkpoint stands for a time: runs whose ``RunCompleted`` was journaled more than
    ``margin_s`` before its ``_metadata`` was written count as contained in it.
    """
    metadata, candidates = find_checkpoint_metadata(path)
    head = metadata.read_bytes()[:4]
    if len(head) < 4 or int.from_bytes(head, "big") != FLINK_METADATA_MAGIC:
        raise ToolError(f"{metadata} is not a Flink checkpoint metadata file (bad magic number)")
    written = metadata.stat().st_mtime
    return RestorableState(
        "checkpoint",
        {
            "kind": "checkpoint",
            "path": str(Path(path).resolve()),
            "metadata": str(metadata.resolve()),
            "candidates": candidates,
            "metadata_written_at": written,
            "safety_margin_s": margin_s,
            "cutoff": written - margin_s,
        },
        cutoff=written - margin_s,
    )


def parse_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--before {text!r}: give seconds since the epoch or an ISO 8601 time, "
            "e.g. 2026-01-31T12:00:00+00:00"
        ) from None
    return moment.timestamp()


def time_state(moment: float, margin_s: float) -> RestorableState:
    return RestorableState(
        "time",
        {
            "kind": "time",
            "taken_at": moment,
            "safety_margin_s": margin_s,
            "cutoff": moment - margin_s,
        },
        cutoff=moment - margin_s,
    )


# -- planning --------------------------------------------------------------------------------


@dataclass
class _Blocker:
    position: int
    kind: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class _OperatorScan:
    """What one partition holds for one operator uid of the namespace."""

    positions: array = field(default_factory=lambda: array("q"))
    sizes: array = field(default_factory=lambda: array("q"))
    completions: array = field(default_factory=lambda: array("q"))  # RunCompleted positions
    key_first: dict[str, int] = field(default_factory=dict)
    first_needed: _Blocker | None = None
    open_runs: dict[tuple[str, int, int], int] = field(default_factory=dict)  # time mode
    last_contained: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (pos, seq)
    epochs: set[int] = field(default_factory=set)
    signed: bool = False
    oldest_at: float | None = None

    def need(self, blocker: _Blocker) -> None:
        if self.first_needed is None or blocker.position < self.first_needed.position:
            self.first_needed = blocker


def _short(key_id: str) -> str:
    return key_id if len(key_id) <= 12 else key_id[:12] + "…"


def _timestamp(record: JournalRecord) -> float | None:
    return getattr(record, "at", None)


def _scan_partition(
    store: ActionStateStore,
    partition: int,
    namespace: str,
    operator_uid: str | None,
    state: RestorableState,
    low: int,
    high: int,
    progress: Any,
) -> tuple[dict[str, _OperatorScan], dict[str, int], _Blocker | None]:
    """One pass over the partition: per operator uid, what is needed and what is not."""
    scans: dict[str, _OperatorScan] = {}
    foreign_first: _Blocker | None = None
    foreign_seen: dict[str, int] = {}
    keys = state.keys
    cutoff = state.cutoff
    for item in store.scan(
        partition, namespace, None, start=low, end=high, foreign=True, progress=progress
    ):
        record = item.record
        if record is None:
            label = f"{item.namespace}/{item.operator_uid}"
            foreign_seen[label] = foreign_seen.get(label, 0) + 1
            if foreign_first is None:
                foreign_first = _Blocker(
                    item.position,
                    "other_namespace",
                    f"records of namespace {item.namespace!r} (operator {item.operator_uid!r}) "
                    "start here, and this store's deletes remove every namespace's records",
                    {"namespace": item.namespace, "operator_uid": item.operator_uid},
                )
            continue
        scan = scans.get(item.operator_uid)
        if scan is None:
            scan = scans[item.operator_uid] = _OperatorScan()
        scan.positions.append(item.position)
        scan.sizes.append(item.size)
        scan.signed = scan.signed or item.signed
        at = _timestamp(record)
        if at is not None and (scan.oldest_at is None or at < scan.oldest_at):
            scan.oldest_at = at
        key = record.key_id
        if key == CONTROL_KEY:  # boundaries and audits of earlier operations: not needed
            continue
        scan.epochs.add(record.epoch)
        scan.key_first.setdefault(key, item.position)
        if isinstance(record, RunCompleted):
            scan.completions.append(item.position)
        if keys is not None:
            if scan.first_needed is not None:
                continue  # only the first needed record of the partition matters
            needs = keys.get(key)
            if needs is None:
                scan.need(
                    _Blocker(
                        item.position,
                        "not_in_state",
                        f"run key={_short(key)} seq={record.seq} belongs to a key the "
                        "restorable state does not hold (its runs started after the state)",
                        {"key_id": key, "seq": record.seq},
                    )
                )
            elif record.seq >= needs.min_seq:
                in_flight = record.seq in needs.pending
                scan.need(
                    _Blocker(
                        item.position,
                        "in_flight" if in_flight else "after_state",
                        f"run key={_short(key)} seq={record.seq} "
                        + (
                            "is still in flight in the restorable state"
                            if in_flight
                            else "started after the restorable state was taken"
                        ),
                        {"key_id": key, "seq": record.seq},
                    )
                )
            continue
        # Time mode: a run is contained when its RunCompleted came before the cutoff.
        run = (key, record.epoch, record.seq)
        first = scan.open_runs.setdefault(run, item.position)
        if isinstance(record, RunCompleted):
            del scan.open_runs[run]
            assert cutoff is not None
            if record.at < cutoff:
                scan.last_contained[key] = (item.position, record.seq)
            else:
                scan.need(
                    _Blocker(
                        first,
                        "completed_after_cutoff",
                        f"run key={_short(key)} seq={record.seq} completed at "
                        f"{fmt_time(record.at)}, after the cutoff {fmt_time(cutoff)}",
                        {"key_id": key, "seq": record.seq, "completed_at": record.at},
                    )
                )
    for scan in scans.values():
        for (key, _, seq), first in scan.open_runs.items():
            scan.need(
                _Blocker(
                    first,
                    "not_completed",
                    f"run key={_short(key)} seq={seq} has not completed (in flight, or failed)",
                    {"key_id": key, "seq": seq},
                )
            )
        scan.open_runs.clear()
    return scans, foreign_seen, foreign_first


def make_plan(
    store: ActionStateStore,
    location: dict[str, Any],
    namespace: str,
    operator_uid: str | None,
    state: RestorableState,
    progress_enabled: bool | None = None,
) -> dict[str, Any]:
    """Scan every partition and compute what may go; returns the plan document."""
    created = time.time()
    partitions = store.partitions()
    per_partition = []
    uids: set[str] = set()
    other_namespaces: dict[str, int] = {}
    scanned: list[tuple[int, int, int, dict[str, _OperatorScan], _Blocker | None]] = []
    for p in partitions:
        low, high = store.position_range(p)
        bar = ProgressBar(f"scanning partition {p}", progress_enabled)
        try:
            scans, foreign_seen, foreign_first = _scan_partition(
                store, p, namespace, operator_uid, state, low, high, bar
            )
        finally:
            bar.close()
        uids.update(scans)
        for label, n in foreign_seen.items():
            other_namespaces[label] = other_namespaces.get(label, 0) + n
        scanned.append((p, low, high, scans, foreign_first))
    if not uids:
        found = sorted({label.split("/")[0] for label in other_namespaces})
        raise ToolError(
            f"namespace {namespace!r} has no records in {describe_location(location)}"
            + (f"; namespaces found: {', '.join(found)}" if found else "; the journal is empty")
            + ". Check --namespace (journal.namespace of the job)"
        )
    if operator_uid is None:
        if len(uids) > 1:
            raise ToolError(
                f"namespace {namespace!r} holds records of several operators "
                f"({', '.join(sorted(uids))}): pass --operator-uid"
            )
        operator_uid = next(iter(uids))
    elif operator_uid not in uids:
        raise ToolError(
            f"namespace {namespace!r} has no records of operator {operator_uid!r}; "
            f"operators found: {', '.join(sorted(uids))}"
        )
    epochs: set[int] = set()
    signed = False
    totals = {"records_deleted": 0, "bytes_deleted": 0, "runs_deleted": 0, "records_kept": 0}
    for p, low, high, scans, foreign_first in scanned:
        scan = scans.get(operator_uid) or _OperatorScan()
        epochs |= scan.epochs
        signed = signed or scan.signed
        blockers: list[_Blocker] = [
            _Blocker(high, "end", "every retained record up to the end of the partition may go")
        ]
        if scan.first_needed is not None:
            blockers.append(scan.first_needed)
        if state.keys is not None:
            for key, needs in state.keys.items():
                if needs.marker_partition == p and needs.marker_position is not None:
                    blockers.append(_marker_blocker(key, needs.marker_position, needs.next_seq))
        else:
            for key, (position, seq) in scan.last_contained.items():
                blockers.append(_marker_blocker(key, position, seq + 1, estimated=True))
        if store.shared_deletes:
            if foreign_first is not None:
                blockers.append(foreign_first)
            for uid, other in scans.items():
                if uid != operator_uid and other.positions:
                    blockers.append(
                        _Blocker(
                            other.positions[0],
                            "other_operator",
                            f"records of operator {uid!r} of the same namespace start here, and "
                            "this store's deletes remove every operator's records",
                            {"operator_uid": uid},
                        )
                    )
        blocker = min(blockers, key=lambda b: b.position)
        boundary = max(low, min(blocker.position, high))
        cut = bisect.bisect_left(scan.positions, boundary)
        deleted = cut
        deleted_bytes = sum(scan.sizes[:cut])
        runs = bisect.bisect_left(scan.completions, boundary)
        touched = sorted(key_digest(k) for k, first in scan.key_first.items() if first < boundary)
        entry = {
            "partition": p,
            "low": low,
            "high": high,
            "delete_below": boundary if boundary > low and deleted else None,
            "keep_from": boundary,
            "keep_first_exists": blocker.kind not in ("end",) and boundary < high,
            "records_deleted": deleted,
            "bytes_deleted": deleted_bytes,
            "runs_deleted": runs,
            "keys_with_records_deleted": len(touched),
            "deleted_keys": base64.b64encode(b"".join(touched)).decode(),
            "records_kept": len(scan.positions) - deleted,
            "bytes_kept": sum(scan.sizes[cut:]),
            "oldest_record_at": scan.oldest_at,
            "blocker": {"kind": blocker.kind, "position": blocker.position, **blocker.detail},
            "reason": _reason(store, p, boundary, low, high, blocker, deleted),
        }
        if entry["delete_below"] is None:
            entry["records_deleted"] = entry["bytes_deleted"] = entry["runs_deleted"] = 0
            entry["keys_with_records_deleted"], entry["deleted_keys"] = 0, ""
            entry["records_kept"] = len(scan.positions)
            entry["bytes_kept"] = sum(scan.sizes)
        per_partition.append(entry)
        totals["records_deleted"] += entry["records_deleted"]
        totals["bytes_deleted"] += entry["bytes_deleted"]
        totals["runs_deleted"] += entry["runs_deleted"]
        totals["records_kept"] += entry["records_kept"]
    identity = store.identity
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "created_at": created,
        "created": fmt_time(created),
        "store": {
            "backend": identity.backend,
            "name": identity.name,
            "uid": identity.uid,
            "partitions": len(partitions),
            "shared_deletes": store.shared_deletes,
        },
        "location": {k: v for k, v in location.items() if k != "client_config"},
        "namespace": namespace,
        "operator_uid": operator_uid,
        "epoch": max(epochs) if epochs else 0,
        "signed": signed,
        "state": state.info,
        "other_namespaces": other_namespaces,
        "partitions": per_partition,
        "totals": totals,
    }


def _marker_blocker(key: str, position: int, next_seq: int, estimated: bool = False) -> _Blocker:
    what = "estimated recovery marker" if estimated else "recovery marker"
    return _Blocker(
        position,
        "marker",
        f"key={_short(key)} has its {what} here (last completed run seq={next_seq - 1}); a "
        "restore refuses a key whose marker is below a cleanup boundary, so records from the "
        "marker on stay",
        {"key_id": key, "seq": next_seq - 1, "estimated": estimated},
    )


def _reason(
    store: ActionStateStore,
    p: int,
    boundary: int,
    low: int,
    high: int,
    blocker: _Blocker,
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


# -- applying --------------------------------------------------------------------------------


def load_plan(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read plan file {path}: {exc.strerror}") from None
    try:
        plan = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"{path} is not a cleanup plan (invalid JSON: {exc})") from None
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT:
        raise ToolError(f"{path} is not an actionjournal cleanup plan")
    if plan.get("version") != PLAN_VERSION:
        raise ToolError(
            f"{path} is a version {plan.get('version')} plan; this release applies version "
            f"{PLAN_VERSION}: plan again with this release"
        )
    return plan


def check_plan(
    plan: dict[str, Any],
    store: ActionStateStore,
    location: dict[str, Any],
    max_age_s: float,
    now: float | None = None,
) -> None:
    """Refuse a plan that does not fit this store any more, naming why."""
    now = time.time() if now is None else now
    expected = plan["store"]
    identity: StoreIdentity = store.identity
    if (expected["backend"], expected["name"]) != (identity.backend, identity.name):
        raise ToolError(
            f"the plan is for {expected['backend']} journal {expected['name']!r}, not "
            f"{identity.backend} {identity.name!r} ({describe_location(location)}): refusing"
        )
    if expected["uid"] != identity.uid:
        raise ToolError(
            f"the plan is for {expected['backend']} journal {expected['name']!r} with id "
            f"{expected['uid']}, but it now has id {identity.uid}: it was deleted and recreated "
            "since the plan was made. Plan again"
        )
    if expected["partitions"] != len(store.partitions()):
        raise ToolError(
            f"the plan was made for {expected['partitions']} partitions; the journal now has "
            f"{len(store.partitions())}. Plan again"
        )
    age = now - float(plan["created_at"])
    if max_age_s > 0 and age > max_age_s:
        raise ToolError(
            f"the plan is {age:.0f} s old, older than --max-age {max_age_s:g} s: the oldest "
            "restorable checkpoint may have changed since. Plan again (or raise --max-age)"
        )
    if age < -300:
        raise ToolError("the plan was created in the future (clock skew?); plan again")


def apply_plan(
    plan: dict[str, Any],
    store: ActionStateStore,
    progress_enabled: bool | None = None,
    out: Any = None,
) -> dict[str, Any]:
    """Journal the boundaries, then delete. Raises ToolError (nothing deleted) on refusal."""
    out = out or sys.stdout
    namespace, uid, epoch = plan["namespace"], plan["operator_uid"], plan["epoch"]
    codec = getattr(store, "codec", None)
    if plan.get("signed") and not (codec is not None and codec.signed):
        raise ToolError(
            "the journal's records are signed: pass --signing-key-env VAR with the job's "
            "journal.signing_key, or the boundary records would be refused on recovery"
        )
    todo: list[tuple[int, int, bytes]] = []
    skipped: list[int] = []
    for entry in plan["partitions"]:
        boundary = entry.get("delete_below")
        if boundary is None:
            continue
        p = entry["partition"]
        low, high = store.position_range(p)
        if high < entry["high"]:
            raise ToolError(
                f"partition {p} now ends at {high}, before the plan's end {entry['high']}: the "
                "journal was truncated or recreated. Plan again"
            )
        if low > boundary and entry.get("keep_first_exists"):
            raise ToolError(
                f"partition {p} now starts at {low}, past the plan's boundary {boundary}: "
                "records the plan keeps were deleted by something else (retention, another "
                "cleanup). Plan again"
            )
        if low >= boundary:
            skipped.append(p)  # applied before: the boundary was journaled before the delete
            continue
        todo.append((p, boundary, base64.b64decode(entry["deleted_keys"])))
    # 1. Journal every boundary before deleting anything.
    now = time.time()
    for p, boundary, digests in todo:
        chunks = range(0, max(len(digests), 1), _DIGESTS_PER_RECORD * DIGEST_SIZE)
        for start in chunks:
            record = CleanupBoundary(
                namespace=namespace,
                operator_uid=uid,
                epoch=epoch,
                key_id=CONTROL_KEY,
                seq=0,
                partition=p,
                position=boundary,
                at=now,
                deleted_keys=digests[start : start + _DIGESTS_PER_RECORD * DIGEST_SIZE],
            )
            try:
                store.append_control(record, p)
            except ActionJournalError as exc:
                raise ToolError(
                    f"could not journal the cleanup boundary of partition {p}: {exc}; nothing "
                    "was deleted"
                ) from None
    # 2. Delete below each boundary; never at or above it.
    deleted: dict[int, int | None] = {}
    failures: list[str] = []
    for p, boundary, _ in todo:
        bar = ProgressBar(f"deleting partition {p} below {boundary}", progress_enabled)
        try:
            deleted[p] = store.delete_below(namespace, uid, p, boundary, bar)
        except (ActionJournalError, OSError) as exc:
            failures.append(f"partition {p}: {exc}")
        finally:
            bar.close()
    result = {
        "applied": [p for p, _, _ in todo if p in deleted],
        "already_applied": skipped,
        "deleted": deleted,
        "failures": failures,
    }
    if failures:
        raise ToolError(
            "boundaries were journaled but some deletions failed: "
            + "; ".join(failures)
            + ". Run the same apply again to finish",
            EXIT_PARTIAL,
        )
    return result


# -- command line ----------------------------------------------------------------------------


def _plan_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal cleanup plan",
        description="Compute what may be deleted from the journal and write a plan file.",
    )
    add_store_args(p)
    add_namespace_args(p)
    which = p.add_argument_group("the oldest state that may still be restored (one of)")
    which.add_argument("--snapshot", help="a LocalRunner snapshot file (exact)")
    which.add_argument(
        "--checkpoint",
        help="a Flink checkpoint or savepoint directory, its _metadata, or a directory of "
        "retained chk-N checkpoints (the oldest is used); judged by time, see --safety-margin",
    )
    which.add_argument(
        "--before", help="a time (epoch seconds or ISO 8601): the oldest restorable state's"
    )
    p.add_argument(
        "--safety-margin",
        type=float,
        default=DEFAULT_MARGIN_S,
        metavar="SECONDS",
        help=f"with --checkpoint/--before: runs must have completed this long before "
        f"(default {DEFAULT_MARGIN_S:g})",
    )
    p.add_argument("--out", default="actionjournal-cleanup-plan.json", help="the plan file")
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    add_progress_args(p)
    return p


def plan_main(argv: list[str]) -> int:
    args = _plan_parser().parse_args(argv)
    location = store_location(args)
    assert location is not None
    chosen = [x for x in (args.snapshot, args.checkpoint, args.before) if x is not None]
    if len(chosen) != 1:
        raise UsageError(
            "say which state is the oldest that may be restored: exactly one of --snapshot, "
            "--checkpoint, --before"
        )
    if not math.isfinite(args.safety_margin) or args.safety_margin < 0:
        raise UsageError("--safety-margin must be a number of seconds, at least 0")
    if args.checkpoint is not None:  # before opening anything: a typo fails fast
        state = load_checkpoint(args.checkpoint, args.safety_margin)
    elif args.before is not None:
        state = time_state(parse_time(args.before), args.safety_margin)
    if args.snapshot is not None and not Path(args.snapshot).is_file():
        raise ToolError(f"snapshot {args.snapshot} does not exist")
    store = open_store(location, record_codec(args))
    try:
        if args.snapshot is not None:
            state = load_snapshot(args.snapshot, store)
        plan = make_plan(store, location, args.namespace, args.operator_uid, state, args.progress)
    finally:
        store.close()
    Path(args.out).write_text(json.dumps(plan, indent=2) + "\n")
    if args.json:
        print(json.dumps(plan, indent=2))
    else:
        print_plan(plan)
        print(
            f"plan written to {args.out}; apply it with: "
            f"actionjournal cleanup apply --plan {args.out}"
        )
    return EXIT_OK


def print_plan(plan: dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    store = plan["store"]
    state = plan["state"]
    print(
        f"cleanup plan for namespace {plan['namespace']!r}, operator {plan['operator_uid']!r} in "
        f"{store['backend']} {store['name']} (id {store['uid']})",
        file=out,
    )
    if state["kind"] == "snapshot":
        print(f"oldest restorable state: snapshot {state['path']} ({state['keys']} keys)", file=out)
    else:
        print(
            f"oldest restorable state: {state['kind']} "
            f"{state.get('metadata') or fmt_time(state.get('taken_at'))}; runs completed before "
            f"{fmt_time(state['cutoff'])} (safety margin {state['safety_margin_s']:g} s) count "
            "as contained",
            file=out,
        )
    for entry in plan["partitions"]:
        if entry["low"] >= entry["high"] and entry["delete_below"] is None:
            continue
        goes = (
            f"deletes {entry['records_deleted']} records ({fmt_bytes(entry['bytes_deleted'])}, "
            f"{entry['runs_deleted']} runs)"
            if entry["delete_below"] is not None
            else "deletes nothing"
        )
        print(f"  {entry['reason']}; {goes}, keeps {entry['records_kept']}", file=out)
    totals = plan["totals"]
    print(
        f"total: {totals['records_deleted']} records ({fmt_bytes(totals['bytes_deleted'])}, "
        f"{totals['runs_deleted']} runs) may go; {totals['records_kept']} stay",
        file=out,
    )
    if plan.get("other_namespaces") and store.get("shared_deletes"):
        print(
            "  other namespaces share this topic and bound what may go: "
            + ", ".join(f"{k} ({v} records)" for k, v in sorted(plan["other_namespaces"].items())),
            file=out,
        )


def _apply_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal cleanup apply",
        description="Journal the plan's cleanup boundaries, then delete below them.",
    )
    p.add_argument("--plan", required=True, help="a plan file from `actionjournal cleanup plan`")
    add_store_args(p, required=False)
    p.add_argument(
        "--max-age",
        type=float,
        default=DEFAULT_MAX_AGE_S,
        metavar="SECONDS",
        help=f"refuse a plan older than this (default {DEFAULT_MAX_AGE_S:g}; 0: no limit)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    add_progress_args(p)
    return p


def apply_main(argv: list[str]) -> int:
    args = _apply_parser().parse_args(argv)
    plan = load_plan(args.plan)
    given = store_location(args)
    planned = plan.get("location") or {}
    if given is None:
        if not planned:
            raise UsageError("the plan names no store location: pass --store ...")
        location = dict(planned)
    else:
        location = given
        _same_location(planned, given)
    codec = record_codec(args)
    store = open_store(location, codec)
    try:
        check_plan(plan, store, location, args.max_age)
        result = apply_plan(plan, store, args.progress)
    finally:
        store.close()
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        for p in result["applied"]:
            n = result["deleted"].get(p)
            what = "records" if plan["store"]["backend"] != "kafka" else "offsets"
            print(
                f"partition {p}: boundary journaled, {n if n is not None else '?'} {what} deleted"
            )
        for p in result["already_applied"]:
            print(f"partition {p}: already applied")
        if not result["applied"] and not result["already_applied"]:
            print("the plan deletes nothing")
    return EXIT_OK


def _same_location(planned: dict[str, Any], given: dict[str, Any]) -> None:
    if not planned:
        return
    if planned.get("backend") != given["backend"]:
        raise ToolError(
            f"the plan is for a {planned.get('backend')} journal, not {given['backend']}: refusing"
        )
    if given["backend"] == "kafka" and planned.get("topic") != given["topic"]:
        raise ToolError(
            f"the plan is for Kafka topic {planned.get('topic')!r}, not {given['topic']!r}: "
            "refusing; plan for that topic first"
        )
    if given["backend"] == "sqlite" and planned.get("path") != given["path"]:
        raise ToolError(
            f"the plan is for SQLite journal {planned.get('path')}, not {given['path']}: refusing"
        )


USAGE = """usage: actionjournal cleanup plan|apply ...

  plan   compute what may be deleted and write a plan file (see --help)
  apply  journal the plan's boundaries, then delete (see --help)
"""


def main(argv: list[str]) -> int:
    if argv[:1] == ["plan"]:
        return run_tool(plan_main, argv[1:])
    if argv[:1] == ["apply"]:
        return run_tool(apply_main, argv[1:])
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return EXIT_OK
    print(USAGE, file=sys.stderr)
    return 2


__all__ = [
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_REFUSED",
    "RestorableState",
    "apply_plan",
    "check_plan",
    "load_checkpoint",
    "load_plan",
    "load_snapshot",
    "main",
    "make_plan",
    "time_state",
]
