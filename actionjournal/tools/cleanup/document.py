"""The plan file: what ``cleanup plan`` computed, sealed by a digest, as ``apply`` reads it.

The digest (sha256 of the plan's canonical JSON without it) covers everything ``apply``
acts on and everything the plan was computed from: the store's identity and location, the
namespace and operator, the restorable state (a snapshot's content hash, or a cutoff),
each partition's boundary and the keys it cleans. A hand-edited plan no longer matches
it and is refused; ``apply`` also re-checks every boundary against the journal itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path
from typing import Any

import msgspec

from actionjournal.durable.records import DIGEST_SIZE
from actionjournal.tools.cleanup.state import StateInfo
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.toolkit import ToolError, UsageError

PLAN_FORMAT = "actionjournal.cleanup-plan"
PLAN_VERSION = 3  # 2: partitions carry deleted_keys; 3: digest, typed, store config location


class Blocker(msgspec.Struct, omit_defaults=True):
    """Why a partition stops where it does: the first record that must stay."""

    kind: str
    """``in_flight``, ``after_state``, ``not_in_state``, ``not_completed``,
    ``completed_after_cutoff``, ``marker``, ``pending_wait``, ``other_namespace``,
    ``other_operator``, ``unreadable``, ``foreign`` or ``end``."""
    position: int
    reason: str
    key_id: str | None = None
    seq: int | None = None
    estimated: bool = False  # a marker estimated from a time-based state
    completed_at: float | None = None
    namespace: str | None = None
    operator_uid: str | None = None


class PlanStore(msgspec.Struct):
    backend: str
    name: str
    uid: str
    partitions: int
    shared_deletes: bool


class PlanPartition(msgspec.Struct):
    partition: int
    low: int
    high: int
    """``[low, high)``: what the partition held when it was scanned."""
    delete_below: int | None
    """Records of the namespace at positions below this go; ``None``: nothing goes."""
    keep_from: int
    keep_first_exists: bool
    records_deleted: int
    bytes_deleted: int
    runs_deleted: int
    keys_with_records_deleted: int
    deleted_keys: str
    """Base64 of the sorted 8-byte digests of the keys that lose records."""
    records_kept: int
    bytes_kept: int
    oldest_record_at: float | None
    blocker: Blocker
    reason: str


class PlanTotals(msgspec.Struct):
    records_deleted: int = 0
    bytes_deleted: int = 0
    runs_deleted: int = 0
    records_kept: int = 0


class CleanupPlan(msgspec.Struct):
    format: str
    version: int
    digest: str
    created_at: float
    created: str
    store: PlanStore
    location: dict[str, Any]
    """The store config the plan was made with (``stores.config``), client settings left out."""
    namespace: str
    operator_uid: str
    epoch: int
    signed: bool
    state: StateInfo
    other_namespaces: dict[str, int]
    unreadable: list[Unreadable]
    partitions: list[PlanPartition]
    totals: PlanTotals


class _Head(msgspec.Struct):
    format: str | None = None
    version: Any = None


def seal(plan: CleanupPlan) -> CleanupPlan:
    """The plan with its digest set."""
    plan.digest = compute_digest(plan)
    return plan


def compute_digest(plan: CleanupPlan) -> str:
    return hashlib.sha256(msgspec.json.encode(msgspec.structs.replace(plan, digest=""))).hexdigest()


def to_json(plan: CleanupPlan) -> bytes:
    return msgspec.json.format(msgspec.json.encode(plan), indent=2) + b"\n"


def load(path: str | Path) -> CleanupPlan:
    """Read and check a plan file; every way it can be wrong is one clear error."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read plan file {path}: {exc.strerror}") from None
    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.DecodeError as exc:
        raise ToolError(f"{path} is not a cleanup plan ({exc})") from None
    if head.format != PLAN_FORMAT:
        raise ToolError(f"{path} is not an actionjournal cleanup plan (no format {PLAN_FORMAT!r})")
    if head.version != PLAN_VERSION:
        raise ToolError(
            f"{path} is a version {head.version} plan; this release applies version "
            f"{PLAN_VERSION}: plan again with this release"
        )
    try:
        plan = msgspec.json.decode(data, type=CleanupPlan)
    except msgspec.DecodeError as exc:
        raise ToolError(f"{path} is not a valid cleanup plan: {exc}") from None
    if plan.digest != compute_digest(plan):
        raise ToolError(
            f"{path} was changed after it was made (its digest does not match its content): "
            "a plan is applied as computed or not at all. Plan again"
        )
    _check_consistent(plan, path)
    return plan


def deleted_keys(entry: PlanPartition) -> bytes:
    return base64.b64decode(entry.deleted_keys, validate=True)


def _check_consistent(plan: CleanupPlan, path: Path) -> None:
    """What the digest cannot vouch for: a plan that was written wrong in the first place."""
    seen: set[int] = set()
    for entry in plan.partitions:
        p = entry.partition
        if p in seen or not 0 <= p < max(plan.store.partitions, 1):
            raise ToolError(f"{path}: partition {p} is repeated or not in the store: plan again")
        seen.add(p)
        boundary = entry.delete_below
        if boundary is not None and not entry.low < boundary <= entry.high:
            raise ToolError(
                f"{path}: partition {p} deletes below {boundary}, outside what it held "
                f"[{entry.low}, {entry.high}): plan again"
            )
        try:
            digests = deleted_keys(entry)
        except (binascii.Error, ValueError):
            raise ToolError(
                f"{path}: partition {p} has malformed deleted_keys: plan again"
            ) from None
        if len(digests) % DIGEST_SIZE:
            raise ToolError(f"{path}: partition {p} has malformed deleted_keys: plan again")
