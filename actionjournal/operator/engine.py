"""The keyed operator loop shared by the local runner and the PyFlink binding.

Per key it holds what Flink keyed state holds: the next input sequence number,
pending inputs, short-term memory and the recovery marker. The first time a
key is touched after a (re)start, its journal is read once from its marker and
validated; its runs then replay what the journal recorded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import msgspec

from actionjournal.durable.agent import Agent
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    CleanupBoundaryError,
    ConfigurationError,
    DataLossError,
    MarkerMismatchError,
    RecoveryError,
    RedriveError,
    StoreRecreatedError,
    UnsupportedFormatError,
)
from actionjournal.durable.identity import key_id as make_key_id
from actionjournal.durable.records import (
    CONTROL_KEY,
    FORMAT_VERSION,
    JournalBinding,
    Marker,
    StoreIdentity,
    UpgradeSkipped,
    record_time,
)
from actionjournal.durable.replay import KeyJournal, RecordedRun
from actionjournal.durable.stats import JournalMetrics, reading
from actionjournal.durable.values import ValueCodec
from actionjournal.operator.config import RunFailurePolicy
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.failures import RunFailures, redrive_check
from actionjournal.operator.markers import Journals, KeyMarker
from actionjournal.operator.recovered import Recovered
from actionjournal.operator.run import Run, RunEnv, RunResult
from actionjournal.stores.base import JournalStore

log = logging.getLogger(__name__)
# Why restored state cannot be used with the configured journal: the error a restore
# raises, what is wrong, and what to do (upgrade mode logs and audits only what is wrong).
Mismatch = tuple[type[RecoveryError], str, str]

MAX_HISTORY = 16  # older journals a job remembers for its markers (one per upgrade)
RECORD_HEADROOM = 4096
"""Bytes of a record besides its value (identities, digests, timestamps, signature)."""


class PendingInput(msgspec.Struct, array_like=True):
    seq: int
    input: bytes  # ValueCodec bytes
    redrive: int = 0  # re-drives the run's dead letter number ``redrive`` (0: a new input)


class KeyState(msgspec.Struct, array_like=True):
    """Everything a key needs to resume; Flink checkpoints it as keyed state.

    The recovery marker is one of ``marker`` (the whole store identity; state written by
    older releases, or where no operator keeps the job's journals) and ``at`` (a reference
    to a journal the job keeps, :mod:`~actionjournal.operator.markers`); read it with
    :meth:`AgentEngine.marker_of`.
    """

    next_seq: int = 0
    pending: list[PendingInput] = []
    memory: bytes | None = None  # ValueCodec bytes of short-term memory
    marker: Marker | None = None
    at: KeyMarker | None = None


class AgentEngine:
    """Runs keys' inputs through an agent; a run that fails goes where ``on_run_failure``
    says (see :class:`~actionjournal.operator.config.AgentsConfig`)."""

    def __init__(
        self,
        agent: Agent,
        store: JournalStore,
        config: JournalConfig | None = None,
        on_run_failure: RunFailurePolicy = "fail",
        run_failure_restarts: int = 3,
    ) -> None:
        self.config = config or JournalConfig()
        agent.actions()  # an agent without actions fails here, not inside its first run
        use_configured_codec(store, self.config)
        self.store = store
        self.counts = JournalMetrics()  # this engine's own registry (docs/operations.md)
        values = self.config.value_codec()
        values.observer = self.counts  # payload guard hits
        _limit_payloads(values, store)
        self.env = RunEnv(agent, store, self.config, values, self.counts)
        self.failures = RunFailures(self.env, on_run_failure, run_failure_restarts)
        self._journals: dict[str, KeyJournal] = {}  # keys with recorded runs still to replay
        self._recovered = Recovered(store.identity, self.config.epoch)
        self._audited: set[tuple[StoreIdentity, int]] = set()
        self.journals = Journals()  # what compact markers may reference
        self.journals.add(store.identity, self.config.epoch)
        self._history: list[JournalBinding] = []  # restored bindings other than ours
        self.compact_markers = False
        """Keep markers as references (``KeyState.at``): set where the job keeps
        :attr:`history` and its binding once, beside the keys' state."""

    @property
    def agent(self) -> Agent:
        return self.env.agent

    @staticmethod
    def key_id(key: Any) -> str:
        return make_key_id(key)

    def accept(self, state: KeyState, value: Any, key_id: str | None = None) -> KeyState:
        """Give an input its sequence number and queue it. Encodes now, so bad input fails here.

        A :class:`DeadLetter` of the key (``key_id``) re-drives its run: it is queued with
        the run's own sequence number, so the run replays its journal.
        """
        if isinstance(value, DeadLetter):
            redrive_check(value, key_id, state.next_seq)
            data = self.env.values.encode(value.input, "re-driven input")
            pending = PendingInput(value.seq, data, value.number)
            return msgspec.structs.replace(state, pending=[*state.pending, pending])
        data = self.env.values.encode(value, "agent input")
        pending = PendingInput(state.next_seq, data)
        return msgspec.structs.replace(
            state, next_seq=state.next_seq + 1, pending=[*state.pending, pending]
        )

    async def run_next(self, key: Any, key_id: str, state: KeyState) -> RunResult:
        """Execute the key's oldest pending input. Does not change ``state``.

        A run that fails is handed to the run failure policy: it raises (the task fails)
        or returns a result with the run's dead letter.
        """
        pending = state.pending[0]
        if pending.redrive:
            self.validate_marker(key_id, state)  # the journal the key's state was written to
            try:
                recorded = self.failures.redriven_run(key_id, pending.seq, pending.redrive)
            except RedriveError as exc:
                return self.failures.refused(key, key_id, pending.seq, pending.input, exc)
        else:
            recorded = self._recorded_run(key_id, state)
        if recorded.dead_letters > pending.redrive:  # dead-lettered before a restart
            return self.failures.replayed(key, key_id, pending.input, recorded)
        memory = self.env.values.decode(state.memory) if state.memory else {}
        marker = self.marker_of(state)
        stale = marker is not None and self._foreign(marker.store, marker.epoch, "", "") is not None
        consequence = self.failures.consequence(recorded)
        run = Run(
            self.env,
            key,
            key_id,
            pending.seq,
            pending.input,
            memory,
            recorded,
            stale,
            consequence,
            pending.redrive,
        )
        try:
            return await run.execute()
        except Exception as exc:
            return await self.failures.failed(run, recorded, exc)

    def complete(self, state: KeyState, result: RunResult, key_id: str) -> KeyState:
        """The key's state after its oldest pending run finished with ``result`` (a dead
        letter keeps the memory the key had before the run)."""
        memory = (
            state.memory
            if result.dead_letter is not None
            else self.env.values.encode(result.memory, "short-term memory")
        )
        marker, at = state.marker, state.at
        if result.marker is not None:
            self._recovered.wrote(key_id, result.marker, key_id in self._journals)
            if self.compact_markers:
                marker, at = None, self.journals.compact(result.marker)
            else:
                marker, at = result.marker, None
        return KeyState(state.next_seq, state.pending[1:], memory, marker, at)

    def marker_of(self, state: KeyState) -> Marker | None:
        """The key's recovery marker, with the journal it points into."""
        return self.journals.marker_of(state.marker, state.at)

    # -- recovery ---------------------------------------------------------------

    def _recorded_run(self, key_id: str, state: KeyState) -> RecordedRun:
        seq = state.pending[0].seq
        if self._recovered.needs_read(key_id, self.marker_of(state)):
            recovered = self.recover(key_id, state)  # raises again if asked again after failing
            self._recovered.read(key_id)
            if recovered.runs or recovered.uncertain:
                self._journals[key_id] = recovered
        journal = self._journals.get(key_id)
        if journal is None:
            return RecordedRun(seq)
        run = journal.runs.pop(seq, None) or journal.run(seq)
        journal.uncertain = [(low, high) for low, high in journal.uncertain if (high or 0) > seq]
        if not journal.runs and not journal.uncertain:
            del self._journals[key_id]
        return run

    def recover(self, key_id: str, state: KeyState) -> KeyJournal:
        """Read and index the key's records written after its marker, validating the marker."""
        marker = self.validate_marker(key_id, state)
        after = marker
        earliest = self.store.earliest_position(key_id) if marker is not None else 0
        if marker is not None and marker.position + 1 < earliest:
            after = None  # records after the marker are gone: read what is left, then judge
        started = time.perf_counter()
        token = reading.set(self.counts)
        try:
            records = self.store.read_key(
                self.config.namespace, self.agent.operator_uid, key_id, after
            )
        finally:
            reading.reset(token)
        min_seq = state.pending[0].seq if state.pending else state.next_seq
        journal = KeyJournal.build(records, self.config.epoch, min_seq)
        if journal.quarantined:
            # The pending runs a skipped record may have belonged to (to the last one if no
            # record of the key follows it).
            last = state.next_seq - 1
            journal.uncertain = [
                (max(low, min_seq), last if high is None else min(high, last))
                for low, high in journal.uncertain
                if low <= last and (high is None or high >= min_seq)
            ]
            self._report_quarantined(key_id, journal)
        self.counts.recovered(
            self.store.identity.backend,
            time.perf_counter() - started,
            len(records),
            journal.records,
        )
        if marker is None and self.marker_of(state) is None:
            self._check_unknown_key(key_id, journal)
        if marker is not None:
            self._check_boundaries(key_id, marker, journal)
            if after is None and state.pending:
                raise DataLossError(
                    f"key {key_id} has a pending run whose journal starts after position "
                    f"{marker.position}, but {_where(marker)} now starts at position {earliest}: "
                    f"records {marker.position + 1}..{earliest - 1} were deleted (retention). "
                    "Restore a newer checkpoint, or restore with journal.upgrade='fresh' and a "
                    "new journal.epoch to re-run its actions"
                )
            # An idle key can only have records written after its checkpoint: what is left
            # is all it needs (a marker is a lower bound, not an obligation).
        if journal.records:
            log.info(
                "key %s: recovered %d journal records of %d runs",
                key_id,
                journal.records,
                len(journal.runs),
            )
        return journal

    def _report_quarantined(self, key_id: str, journal: KeyJournal) -> None:
        skipped = ", ".join(
            f"partition {q.partition} position {q.position} (quarantined "
            f"{time.strftime('%Y-%m-%d %H:%M:%S %z', time.localtime(q.at))}: {q.reason})"
            for q in journal.quarantined
            if q.key_id == key_id
        )
        runs = ", ".join(
            f"{low}" if low == high else f"{low}..{high}" for low, high in journal.uncertain
        )
        consequence = (
            f"in pending runs {runs}, durable calls without a record may have started and "
            "follow their on_unknown policy"
            if runs
            else "no pending run can have held it"
        )
        log.warning(
            "key %s: recovery skipped quarantined journal records at %s; %s",
            key_id or "(control)",
            skipped or "control records",
            consequence,
        )

    @property
    def binding(self) -> JournalBinding:
        """The journal, namespace and epoch this job's state is written against from now on."""
        return JournalBinding(self.store.identity, self.config.epoch, self.config.namespace)

    @property
    def history(self) -> list[JournalBinding]:
        """The bindings restored state was written against besides :attr:`binding`, oldest
        first: keys that have not run since may still hold markers into them. A job keeps
        them with its binding, so that such a marker is refused naming its journal."""
        return list(self._history)

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
        self._history = known[-MAX_HISTORY:]
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

    def validate_marker(self, key_id: str, state: KeyState) -> Marker | None:
        """The key's marker if it belongs to the configured journal; raises when it cannot.

        In upgrade mode a marker of another journal or an older epoch is skipped
        (``None``): the key reads the current journal, of the current epoch, from its start.
        """
        marker = self.marker_of(state)
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
        if self.store.identity.backend == "none":
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
            operator_uid=self.agent.operator_uid,
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


def _limit_payloads(values: ValueCodec, store: JournalStore) -> None:
    """A value must fit the records the store takes: the effective limit is the smaller of
    ``journal.max_payload_bytes`` and the store's record limit, less room for the rest of
    the record. So a result too large is refused before it is journaled, and journaled as
    the call's failure (a record the store refuses would leave the call without outcome)."""
    limit = getattr(store, "max_record_bytes", None)
    configured = values.max_payload_bytes
    if limit is None or configured is None or limit - RECORD_HEADROOM >= configured:
        return
    values.max_payload_bytes = max(limit - RECORD_HEADROOM, 1)
    identity = store.identity
    values.limit_reason = (
        f"{values.max_payload_bytes} bytes, the most {identity.backend} journal "
        f"{identity.name} takes in one record ({limit} bytes) less {RECORD_HEADROOM} for the "
        f"record's other fields (journal.max_payload_bytes={configured} is higher)"
    )
    log.info("payload limit: %s", values.limit_reason)


def use_configured_codec(store: Any, config: JournalConfig) -> None:
    """Make ``store`` sign and verify records with ``journal.signing_key``.

    However the store was opened (by the user, a store factory, a test), the engine
    that runs on it decides the codec: a store with an unsigned codec gets the
    configured one installed; a store that already signs must use the configured key.
    Without a configured key the store is left as it is (one that signs is stricter).
    """
    wanted = config.record_codec()
    if not wanted.signed:
        return
    current = getattr(store, "codec", None)
    if current is None:
        raise ConfigurationError(
            f"journal.signing_key is set, but the store {type(store).__name__} has no `codec` "
            "attribute, so its records would not be signed. Give the store a codec attribute "
            "(a RecordCodec it encodes and decodes with), opened with config.record_codec()"
        )
    if not current.signed:
        store.codec = wanted
    elif not current.same_key(wanted):
        raise ConfigurationError(
            f"the store {type(store).__name__} was opened with a signing key other than "
            "journal.signing_key; open it with config.record_codec(), or without a codec"
        )


def _where(marker: Marker) -> str:
    return f"{marker.store.backend} {marker.store.name} partition {marker.partition}"
