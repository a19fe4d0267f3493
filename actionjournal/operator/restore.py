"""Whether restored state may be used with the configured journal, checked before it is.

Restored state refers to a journal: the job's binding (which journal, namespace and epoch
its state was written against) and each key's recovery marker. Used against another
journal, its completed work would run again; so each check raises an error that says what
differs and what to do, or, in upgrade mode, skips the old journal with one log line and
one audit record. And a key's read journal is checked against cleanup boundaries and
retention: records a pending run needs must still be there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    CleanupBoundaryError,
    DataLossError,
    MarkerMismatchError,
    RecoveryError,
    StoreRecreatedError,
    UnsupportedFormatError,
)
from actionjournal.durable.records import (
    CONTROL_KEY,
    FORMAT_VERSION,
    JournalBinding,
    Marker,
    StoreIdentity,
    UpgradeSkipped,
    record_time,
)
from actionjournal.durable.replay import KeyJournal
from actionjournal.durable.store import Store
from actionjournal.operator.markers import Journals

log = logging.getLogger("actionjournal.operator.engine")
# Why restored state cannot be used with the configured journal: the error a restore
# raises, what is wrong, and what to do (upgrade mode logs and audits only what is wrong).
Mismatch = tuple[type[RecoveryError], str, str]
MAX_HISTORY = 16  # older journals a job remembers for its markers (one per upgrade)


class RestoreChecks:
    """The checks of one operator's restored state against its configured journal."""

    def __init__(self, store: Store, config: JournalConfig, operator_uid: str) -> None:
        self.store = store
        self.config = config
        self.operator_uid = operator_uid
        self._audited: set[tuple[StoreIdentity, int]] = set()
        self.journals = Journals()  # what keys' compact markers may reference
        self.journals.add(store.identity, config.epoch)
        self.history: list[JournalBinding] = []
        """The bindings restored state was written against besides :attr:`binding`, oldest
        first: keys that have not run since may still hold markers into them. A job keeps
        them with its binding, so that such a marker is refused naming its journal."""

    @property
    def binding(self) -> JournalBinding:
        """The journal, namespace and epoch this job's state is written against from now on."""
        return JournalBinding(self.store.identity, self.config.epoch, self.config.namespace)

    def bind(
        self,
        restored: Iterable[JournalBinding],
        *,
        audit: bool = True,
        history: Iterable[JournalBinding] = (),
    ) -> JournalBinding:
        """Refuse restored state written against another journal, before any key runs.

        ``restored`` are the bindings checkpointed with the state (a Flink job keeps one per
        subtask; they are normally equal). Per-key markers catch the same mismatch only when
        a key with a marker runs, after keys without one may have run against the wrong
        journal, and not at all for another namespace (markers do not name it). In upgrade
        mode a binding of another journal, namespace or an older epoch is skipped, with one
        log line and one audit record per skipped journal when ``audit`` (one subtask of a
        job audits for all). Returns the binding to checkpoint from now on.

        ``history``: the older bindings checkpointed with the state (:attr:`history`), which
        keys' markers may still reference.
        """
        restored = list(dict.fromkeys(restored))
        known = [b for b in dict.fromkeys([*history, *restored]) if b != self.binding]
        for old in known:
            self.journals.add(old.store, old.epoch)
        self.history = known[-MAX_HISTORY:]
        subject = "the restored state"
        for old in restored:
            if not self._usable(old.store, old.epoch, old.format_version, subject, "", audit):
                continue
            ours = self.config.namespace
            if old.namespace != ours:
                why = (
                    MarkerMismatchError,
                    f"{subject} was written in namespace {old.namespace!r} of "
                    f"{old.store.backend} journal {old.store.name!r}, but journal.namespace is "
                    f"{ours!r}: its records are not visible there, so finished calls would run "
                    "again",
                    f"Configure journal.namespace={old.namespace!r}, or set "
                    f"journal.upgrade='fresh' to start namespace {ours!r} without them",
                )
                self._skip(why, old.store, old.epoch, audit)
        return self.binding

    def validate_marker(self, key_id: str, marker: Marker | None) -> Marker | None:
        """The key's marker if it belongs to the configured journal; raises when it cannot.

        In upgrade mode a marker of another journal or an older epoch is skipped
        (``None``): the key reads the current journal, of the current epoch, from its start.
        """
        if marker is None:
            return None
        subject = f"recovery marker of key {key_id}"
        at = f"{_where(marker)}, position {marker.position}"
        if self._usable(marker.store, marker.epoch, marker.format_version, subject, at):
            return marker
        return None

    def _usable(
        self,
        store: StoreIdentity,
        epoch: int,
        format_version: int,
        subject: str,
        at: str,
        audit: bool = True,
    ) -> bool:
        """Whether state that refers to ``store`` in ``epoch`` may be used with the configured
        journal: raises when it may not, returns False when upgrade mode skips it."""
        if not self.store.durable:
            # NoStore (durability off) has no journal to validate the state against:
            # it is ignored and the key's actions run again (docs/upgrade.md).
            return False
        if format_version > FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"{subject} has format version {format_version}, newer than this code's "
                f"{FORMAT_VERSION}; run the newer release or restore in upgrade mode",
                at or f"{store.backend} {store.name}",
            )
        if epoch > self.config.epoch:
            raise MarkerMismatchError(
                f"{subject} is from journal epoch {epoch}, newer than journal.epoch="
                f"{self.config.epoch}: this state was written by a later deployment; set "
                "journal.epoch to at least that"
            )
        return self._skip(self._foreign(store, epoch, subject, at), store, epoch, audit)

    def _skip(
        self, why: Mismatch | None, store: StoreIdentity, epoch: int, audit: bool = True
    ) -> bool:
        """True when there is nothing to skip; raises ``why`` with its advice, or skips the
        journal in upgrade mode, saying what was skipped (its advice is what is set)."""
        if why is None:
            return True
        error, problem, advice = why
        if self.config.upgrade != "fresh":
            raise error(f"{problem}. {advice}")
        self._audit_skip(store, epoch, problem, audit)
        return False

    def _foreign(self, store: StoreIdentity, epoch: int, subject: str, at: str) -> Mismatch | None:
        """Why state referring to ``store`` in ``epoch`` does not belong to the configured
        journal; ``at`` is the position it refers to ("" for a job's binding)."""
        ours = self.store.identity
        if (store.backend, store.name) != (ours.backend, ours.name):
            return (
                MarkerMismatchError,
                f"{subject} references {store.backend} journal {store.name!r} "
                f"({at or f'id {store.uid}, epoch {epoch}'}), but the configured store is "
                f"{ours.backend} {ours.name!r}",
                "Configure the journal the checkpoint was taken with, or set "
                "journal.upgrade='fresh' to start a new journal",
            )
        if store.uid != ours.uid:
            gone = f"after {at}" if at else "the state was written with"
            return (
                StoreRecreatedError,
                f"{subject} references {ours.backend} journal {ours.name!r} with id "
                f"{store.uid}, but the journal now has id {ours.uid}: it was deleted and "
                f"recreated, and the records {gone} are gone",
                "Set journal.upgrade='fresh' to start a new journal",
            )
        if epoch < self.config.epoch:
            return (
                MarkerMismatchError,
                f"{subject} is from journal epoch {epoch} but journal.epoch is {self.config.epoch}",
                "Set journal.upgrade='fresh' to skip the old epoch's journal",
            )
        return None

    def _audit_skip(self, store: StoreIdentity, epoch: int, reason: str, audit: bool) -> None:
        """One log line and one audit record per skipped journal, not per key."""
        source = (store, epoch)
        if source in self._audited:
            return
        self._audited.add(source)
        if not audit:
            return
        log.warning(
            "upgrade mode: %s; its journal is skipped, epoch %d begins", reason, self.config.epoch
        )
        record = UpgradeSkipped(
            namespace=self.config.namespace,
            operator_uid=self.operator_uid,
            epoch=self.config.epoch,
            key_id=CONTROL_KEY,
            seq=0,
            old_backend=store.backend,
            old_name=store.name,
            old_uid=store.uid,
            old_epoch=epoch,
            reason=reason,
            at=time.time(),
        )
        self.store.append(record)

    def current(self, marker: Marker) -> bool:
        """Whether ``marker`` points into the configured journal and epoch (not one that
        upgrade mode skipped)."""
        return self._foreign(marker.store, marker.epoch, "", "") is None

    def check_read(
        self,
        key_id: str,
        restored: Marker | None,
        marker: Marker | None,
        earliest: int | None,
        journal: KeyJournal,
        pending: bool,
    ) -> None:
        """What a key's recovery read found must not be older than a cleanup, nor miss
        records a pending run needs. ``restored``: the key's marker as restored; ``marker``:
        it once validated; ``earliest``: where its partition starts now, when that is past
        the marker (retention deleted records after it)."""
        if marker is None and restored is None:
            self._check_unknown_key(key_id, journal)
        if marker is None:
            return
        self._check_boundaries(key_id, marker, journal)
        if earliest is not None and pending:
            raise DataLossError(
                f"key {key_id} has a pending run whose journal starts after position "
                f"{marker.position}, but {_where(marker)} now starts at position {earliest}: "
                f"records {marker.position + 1}..{earliest - 1} were deleted (retention). "
                "Restore a newer checkpoint, or restore with journal.upgrade='fresh' and a "
                "new journal.epoch to re-run its actions"
            )
        # An idle key can only have records written after its checkpoint: what is left is
        # all it needs (a marker is a lower bound, not an obligation).

    def _check_boundaries(self, key_id: str, marker: Marker, journal: KeyJournal) -> None:
        """Restoring state older than a cleanup would silently re-run deleted work: refuse."""
        for boundary in journal.boundaries:
            if boundary.partition == marker.partition and marker.position + 1 < boundary.position:
                raise CleanupBoundaryError(
                    f"key {key_id}: the restored state needs journal records from "
                    f"{_where(marker)} position {marker.position + 1}, but cleanup deleted "
                    f"that partition's records below position {boundary.position} at "
                    f"{record_time(boundary.at)}. "
                    "Restore the checkpoint the cleanup was planned for or a newer one; to "
                    "re-run instead, restore with journal.upgrade='fresh' and a new journal.epoch"
                )

    def _check_unknown_key(self, key_id: str, journal: KeyJournal) -> None:
        """A key the restored state never saw complete a run, but whose records cleanup
        deleted: the state is older than the cleanup, and the key's work would re-run."""
        for boundary in journal.boundaries:
            if boundary.epoch == self.config.epoch and boundary.deleted(key_id):
                raise CleanupBoundaryError(
                    f"key {key_id}: cleanup deleted its journal records below position "
                    f"{boundary.position} of {self.store.identity.backend} "
                    f"{self.store.identity.name} partition {boundary.partition} at "
                    f"{record_time(boundary.at)}, but "
                    "the restored state does not know the key's completed runs: it is older "
                    "than the state the cleanup was planned for, and the key's actions would "
                    "run again. Restore that checkpoint or a newer one; to re-run instead, "
                    "restore with journal.upgrade='fresh' and a new journal.epoch"
                )


def _where(marker: Marker) -> str:
    return f"{marker.store.backend} {marker.store.name} partition {marker.partition}"
