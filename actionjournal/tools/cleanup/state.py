"""The oldest state that may still be restored, which cleanup must keep every record for.

Three ways to name it: a LocalRunner snapshot (exact: every key's sequence numbers and
recovery marker), a Flink checkpoint or savepoint (judged by when its metadata was
written, docs/operations.md says why), or a time. The ``*State`` structs are what a plan
records about it.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from actionjournal.durable.store import Cleanable
from actionjournal.operator.local import Snapshot
from actionjournal.tools.toolkit import ToolError

DEFAULT_MARGIN_S = 600.0
FLINK_METADATA_MAGIC = 0x4960672D  # first 4 bytes of a Flink checkpoint/savepoint _metadata


class WrongJobError(ToolError):
    """The state (or the options) name another job than the journal holds: another journal,
    namespace or operator. No later attempt can pass, so ``cleanup run`` stops at it."""


class NoCheckpointYet(ToolError):
    """A checkpoint location exists and holds no completed checkpoint or savepoint yet."""


class SnapshotState(msgspec.Struct, tag="snapshot", tag_field="kind"):
    """A LocalRunner snapshot file, identified by its content."""

    path: str
    sha256: str
    namespace: str
    operator_uid: str
    keys: int
    keys_with_marker: int
    inputs_consumed: int
    modified_at: float


class CheckpointState(msgspec.Struct, tag="checkpoint", tag_field="kind"):
    """A Flink checkpoint or savepoint: runs completed ``safety_margin_s`` before its
    metadata was written count as contained."""

    path: str
    metadata: str
    candidates: list[str]
    metadata_written_at: float
    safety_margin_s: float
    cutoff: float


class TimeState(msgspec.Struct, tag="time", tag_field="kind"):
    """A state taken at ``taken_at``: runs completed before ``cutoff`` count as contained."""

    taken_at: float
    safety_margin_s: float
    cutoff: float


StateInfo = SnapshotState | CheckpointState | TimeState


@dataclass(frozen=True)
class KeyNeeds:
    """What restoring the state needs of one key: its runs from ``min_seq`` on."""

    min_seq: int
    next_seq: int
    pending: tuple[int, ...]
    marker_partition: int | None  # None: no marker in this store
    marker_position: int | None
    wait_seq: int | None = None  # the first run that asked for a timer or signal still pending


@dataclass
class RestorableState:
    """The state as the planner uses it: exact per-key needs, or a time cutoff."""

    info: StateInfo
    keys: dict[str, KeyNeeds] | None = None

    @property
    def cutoff(self) -> float | None:
        return None if isinstance(self.info, SnapshotState) else self.info.cutoff


def load_snapshot(
    path: str | Path,
    store: Cleanable,
    namespace: str | None = None,
    operator_uid: str | None = None,
    sha256: str | None = None,
) -> RestorableState:
    """A LocalRunner snapshot of ``namespace``/``operator_uid`` (when given) for ``store``.

    ``sha256``: the content the snapshot must still have (``apply`` re-reading a plan's).
    """
    path = Path(path)
    if not path.is_file():
        raise ToolError(f"snapshot {path} does not exist")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ToolError(
            f"snapshot {path} changed since the plan was made (sha256 {digest[:12]}…, the plan "
            f"says {sha256[:12]}…): plan again against the snapshot you may restore"
        )
    try:
        snap = msgspec.msgpack.decode(data, type=Snapshot)
    except msgspec.DecodeError as exc:
        raise ToolError(f"{path} is not a LocalRunner snapshot: {exc}") from None
    if not snap.namespace:
        raise WrongJobError(
            f"snapshot {path} does not say which namespace and operator it belongs to (written "
            "by an older release): take a new snapshot, or plan with --before"
        )
    whose = f"namespace {snap.namespace!r}, operator {snap.operator_uid!r}"
    if namespace is not None and snap.namespace != namespace:
        raise WrongJobError(
            f"snapshot {path} is of {whose}, not of namespace {namespace!r}: pass the snapshot "
            "of the job whose records you clean up (or --namespace to match it)"
        )
    if operator_uid is not None and snap.operator_uid != operator_uid:
        raise WrongJobError(
            f"snapshot {path} is of {whose}, not of operator {operator_uid!r}: its keys say "
            "nothing about that operator's records"
        )
    ours = store.identity
    keys: dict[str, KeyNeeds] = {}
    foreign_markers: set[str] = set()
    journals = snap.journals()
    for k in snap.keys:
        state = k.state
        pending = tuple(p.seq for p in state.pending)
        marker = journals.marker_of(state.marker, state.at)
        partition = position = None
        if marker is not None:
            theirs = marker.store
            if (theirs.backend, theirs.name, theirs.uid) == (ours.backend, ours.name, ours.uid):
                partition, position = marker.partition, marker.position
            else:
                foreign_markers.add(f"{theirs.backend} {theirs.name} ({theirs.uid})")
        asked = [t.seq for t in state.timers] + [s.seq for s in state.signals]
        asked = [seq for seq in asked if seq >= 0]
        keys[k.key_id] = KeyNeeds(
            min_seq=pending[0] if pending else state.next_seq,
            next_seq=state.next_seq,
            pending=pending,
            marker_partition=partition,
            marker_position=position,
            wait_seq=min(asked) if asked else None,
        )
    with_marker = sum(1 for k in keys.values() if k.marker_position is not None)
    if foreign_markers and not with_marker:
        raise WrongJobError(
            f"snapshot {path} was taken with another journal ({', '.join(sorted(foreign_markers))}"
            f"), not {ours.backend} {ours.name} ({ours.uid}): plan against the journal its job "
            "uses"
        )
    info = SnapshotState(
        path=str(path.resolve()),
        sha256=digest,
        namespace=snap.namespace,
        operator_uid=snap.operator_uid,
        keys=len(keys),
        keys_with_marker=with_marker,
        inputs_consumed=snap.inputs_consumed,
        modified_at=path.stat().st_mtime,
    )
    return RestorableState(info, keys)


def local_path(path: str | Path) -> Path:
    """A path as Flink prints it (``file:/...``, ``file:///...``, as ``flink stop`` says where
    its savepoint is) or a plain one; a remote file system is an error saying what to do."""
    text = str(path)
    scheme = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*):", text)
    if scheme is None or len(scheme.group(1)) == 1:  # no scheme (or a Windows drive letter)
        return Path(text)
    url = urllib.parse.urlsplit(text)
    if url.scheme.lower() == "file" and url.netloc in ("", "localhost"):
        return Path(urllib.parse.unquote(url.path))
    raise ToolError(
        f"checkpoint path {text}: cleanup reads checkpoints on this machine's file system "
        "(a plain path or file:/...); copy the checkpoint's _metadata file here and give its path"
    )


def find_checkpoint_metadata(path: str | Path) -> tuple[Path, list[str]]:
    """The ``_metadata`` of a checkpoint/savepoint path; in a directory of retained
    checkpoints (``chk-N``) or savepoints (``savepoint-*``), the oldest one. Returns it and
    the candidates seen."""
    path = local_path(path)
    if not path.exists():
        raise ToolError(f"checkpoint path {path} does not exist")
    if path.is_file():
        if path.name != "_metadata":
            raise ToolError(f"{path} is a file but not a Flink checkpoint's _metadata")
        return path, [str(path)]
    if (path / "_metadata").is_file():
        return path / "_metadata", [str(path / "_metadata")]
    found = [
        *path.glob("chk-*/_metadata"),
        *path.glob("*/chk-*/_metadata"),
        *path.glob("savepoint-*/_metadata"),
    ]
    if not found:
        raise NoCheckpointYet(
            f"no Flink checkpoint under {path}: expected a _metadata file, a checkpoint or "
            "savepoint directory holding one, or a directory of chk-N checkpoints or "
            "savepoint-* savepoints"
        )

    def number(p: Path) -> int:
        match = re.match(r"chk-(\d+)$", p.parent.name)
        return int(match.group(1)) if match else 0

    found.sort(key=lambda p: (number(p), p.stat().st_mtime))
    return found[0], [str(p) for p in found]


def load_checkpoint(
    path: str | Path | Sequence[str | Path], margin_s: float, *, skip_empty: bool = False
) -> RestorableState:
    """A Flink checkpoint or savepoint, judged by when its metadata was written; of several
    locations (checkpoints and savepoints kept for rollbacks), the oldest.

    Our keyed state cannot be read from Python today (docs/operations.md says why), so a
    checkpoint stands for a time: runs whose ``RunCompleted`` was journaled more than
    ``margin_s`` before its ``_metadata`` was written count as contained in it.
    ``skip_empty``: a location holding no checkpoint yet restores nothing and is left out
    (:class:`NoCheckpointYet` when none holds one).
    """
    locations = [path] if isinstance(path, (str, Path)) else list(path)
    found: list[tuple[float, Path, Path, list[str]]] = []
    for location in locations:
        try:
            metadata, seen = find_checkpoint_metadata(location)
        except NoCheckpointYet:
            if not skip_empty:
                raise
            continue
        found.append((metadata.stat().st_mtime, metadata, local_path(location), seen))
    if not found:
        raise NoCheckpointYet(
            f"no completed Flink checkpoint or savepoint under {', '.join(map(str, locations))} yet"
        )
    _, metadata, where, _ = min(found, key=lambda item: item[0])
    candidates = [seen for *_, each in found for seen in each]
    head = metadata.read_bytes()[:4]
    if len(head) < 4 or int.from_bytes(head, "big") != FLINK_METADATA_MAGIC:
        raise ToolError(f"{metadata} is not a Flink checkpoint metadata file (bad magic number)")
    written = metadata.stat().st_mtime
    info = CheckpointState(
        path=str(where.resolve()),
        metadata=str(metadata.resolve()),
        candidates=candidates,
        metadata_written_at=written,
        safety_margin_s=margin_s,
        cutoff=written - margin_s,
    )
    return RestorableState(info)


def time_state(moment: float, margin_s: float) -> RestorableState:
    return RestorableState(TimeState(moment, margin_s, moment - margin_s))


def reload(info: StateInfo, store: Cleanable) -> RestorableState:
    """The state a plan was made for, as ``apply`` re-checks against it."""
    if isinstance(info, SnapshotState):
        return load_snapshot(info.path, store, info.namespace, info.operator_uid, info.sha256)
    return RestorableState(info)
