"""The keyed operator loop shared by the local runner and the PyFlink binding.

Per key it holds what Flink keyed state holds: the next input sequence number,
pending inputs, short-term memory, the recovery marker, and the key's pending timers and
expected signals. The first time a key is touched after a (re)start, its journal is read
once from its marker and validated (:mod:`actionjournal.operator.restore`); its runs then
replay what the journal recorded. Which input takes the key's next sequence number (an
input of the job's stream, a due timer, a passed deadline) is decided by
:mod:`actionjournal.operator.sequence`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import msgspec

from actionjournal.durable.agent import Agent
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    ConfigurationError,
    RedriveError,
)
from actionjournal.durable.identity import event_id
from actionjournal.durable.identity import key_id as make_key_id
from actionjournal.durable.records import (
    Marker,
)
from actionjournal.durable.replay import KeyJournal, RecordedRun
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.store import Store
from actionjournal.durable.waits import SignalInput
from actionjournal.durable.writer import JournalHealth
from actionjournal.operator.config import RunFailurePolicy
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.failures import RunFailures, redrive_check
from actionjournal.operator.markers import KeyMarker
from actionjournal.operator.recovered import Recovered
from actionjournal.operator.restore import RestoreChecks
from actionjournal.operator.run import RunEnv, RunExecution, RunResult
from actionjournal.operator.sequence import REDELIVERY_WAIT_S, Journaled, sequenced
from actionjournal.operator.waits import (
    Clock,
    Delivery,
    Origin,
    RunWaits,
    SignalWait,
    Timer,
    applied,
    next_due,
)

log = logging.getLogger(__name__)


class PendingInput(msgspec.Struct, array_like=True):
    seq: int
    input: bytes  # ValueCodec bytes (a timer's: its event's attributes; an answer's: its value)
    redrive: int = 0  # re-drives the run's dead letter number ``redrive`` (0: a new input)
    origin: Origin | None = None  # a timer, deadline or signal answer (None: a stream input)


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
    timers: list[Timer] = []  # pending timers, earliest due first
    signals: list[SignalWait] = []  # expected signals, earliest deadline first
    # Inputs that wait for a sequence number: after a restore, until the journal's order of
    # the key's timers and inputs is restored (actionjournal.operator.sequence).
    held: list[PendingInput] = []
    at: KeyMarker | None = None  # the marker as a reference (see above); appended last


class AgentEngine:
    """Runs keys' inputs through an agent; a run that fails goes where ``on_run_failure``
    says (see :class:`~actionjournal.operator.config.AgentsConfig`)."""

    def __init__(
        self,
        agent: Agent,
        store: Store,
        config: JournalConfig | None = None,
        on_run_failure: RunFailurePolicy = "fail",
        run_failure_restarts: int = 3,
        clock: Clock = time.time,
    ) -> None:
        self.config = config or JournalConfig()
        self.clock = clock
        agent.actions()  # an agent without actions fails here, not inside its first run
        use_configured_codec(store, self.config)
        self.store = store
        self.metrics = JournalMetrics()  # this engine's own registry (docs/operations.md)
        store.observer = self.metrics  # the store reports to the runner that uses it
        identity = store.identity
        values = self.config.value_codec(
            self.metrics, store.max_record_bytes, f"{identity.backend} journal {identity.name}"
        )
        self.env = RunEnv(agent, store, self.config, values, self.metrics, JournalHealth())
        self.failures = RunFailures(self.env, on_run_failure, run_failure_restarts)
        self._journals: dict[str, KeyJournal] = {}  # keys with recorded runs still to replay
        self._recovered = Recovered(store.identity, self.config.epoch)
        self._reading = threading.Lock()  # a key's journal is read by one thread, once
        self.restore = RestoreChecks(store, self.config, agent.operator_uid)
        self.compact_markers = False
        """Keep markers as references (``KeyState.at``): set where the job keeps its
        binding and :attr:`RestoreChecks.history` once, beside the keys' state."""
        self.restored = False
        """The keyed state was restored (a snapshot, a checkpoint): a key's journal may
        then hold runs its state does not reflect, whose order of inputs and timers the
        key's next runs keep (set by the bindings)."""
        self._journaled: dict[str, Journaled] = {}  # such runs, per key, until sequenced

    @property
    def agent(self) -> Agent:
        return self.env.agent

    @staticmethod
    def key_id(key: Any) -> str:
        return make_key_id(key)

    def accept(self, state: KeyState, value: Any, key_id: str | None = None) -> KeyState:
        """Give an input its sequence number and queue it. Encodes now, so bad input fails here.

        A :class:`DeadLetter` of the key (``key_id``) re-drives its run: it is queued with
        the run's own sequence number, so the run replays its journal. A
        :class:`~actionjournal.SignalInput` answers a signal the key expects. Timers of the
        key due by now are queued first (:meth:`fire_due`).
        """
        if isinstance(value, DeadLetter):
            redrive_check(value, key_id, state.next_seq)
            data = self.env.values.encode(value.input, "re-driven input")
            pending = PendingInput(value.seq, data, value.number)
            return msgspec.structs.replace(state, pending=[*state.pending, pending])
        if isinstance(value, SignalInput):
            data = self.env.values.encode(value.value, f"answer to signal {value.signal_id}")
            arrived = PendingInput(-1, data, origin=Origin("answer", value.signal_id))
        else:
            arrived = PendingInput(-1, self.env.values.encode(value, "agent input"))
        return self._sequence(key_id, state, arrived)

    def fire_due(self, state: KeyState, key_id: str) -> KeyState:
        """Queue a run for each of the key's timers and signal deadlines due by now (by the
        engine's clock), in due order; the state is returned as it is when none is due."""
        return self._sequence(key_id, state, None)

    def _sequence(
        self, key_id: str | None, state: KeyState, arrived: PendingInput | None
    ) -> KeyState:
        journaled = self._journaled_runs(key_id, state)
        if (
            arrived is not None
            and journaled is None
            and not (state.timers or state.signals or state.held)
        ):
            # The common case: nothing waits, the input takes the next number.
            pending = msgspec.structs.replace(arrived, seq=state.next_seq)
            return msgspec.structs.replace(
                state, next_seq=state.next_seq + 1, pending=[*state.pending, pending]
            )
        order = sequenced(
            state.next_seq,
            bool(state.pending),
            [*state.held, arrived] if arrived is not None else state.held,
            state.timers,
            state.signals,
            self.clock(),
            journaled,
            lambda seq, data, origin: PendingInput(seq, data, origin=origin),
            lambda held, seq: msgspec.structs.replace(held, seq=seq),
        )
        if journaled is not None and not journaled.origins:
            assert key_id is not None
            self._journaled.pop(key_id, None)
        if order is None:
            if arrived is not None:  # held until its turn
                return msgspec.structs.replace(state, held=[*state.held, arrived])
            return state
        next_seq, queued, held, timers, signals = order
        return msgspec.structs.replace(
            state,
            next_seq=next_seq,
            pending=[*state.pending, *queued],
            held=held,
            timers=timers,
            signals=signals,
        )

    def _journaled_runs(self, key_id: str | None, state: KeyState) -> Journaled | None:
        """The runs the key's journal holds beyond its restored state, if any (reads the
        journal now, once, when the key's order can depend on it)."""
        if key_id is None or not self.restored:
            return None
        if (state.pending or state.timers or state.signals or state.held) and (
            self._recovered.needs_read(key_id, self.marker_of(state))
        ):
            self._ensure_recovered(key_id, state)
        return self._journaled.get(key_id)

    def wake_at(self, state: KeyState, key_id: str) -> float | None:
        """When :meth:`fire_due` has something to do for the key next (epoch seconds by
        the engine's clock; ``None``: nothing is pending)."""
        due = next_due(state.timers, state.signals)
        journaled = self._journaled.get(key_id)
        if due is None or journaled is None or not journaled.waiting_for_source(state.next_seq):
            return due
        # Due timers wait for an input the journal shows first, for a while (sequence.py).
        return max(due, journaled.since + REDELIVERY_WAIT_S)

    async def run_next(self, key: Any, key_id: str, state: KeyState) -> RunResult:
        """Execute the key's oldest pending input. Does not change ``state``.

        A run that fails is handed to the run failure policy: it raises (the task fails)
        or returns a result with the run's dead letter.
        """
        pending = state.pending[0]
        self.env.health.check(f"run seq {pending.seq} of key id {key_id}")
        if pending.redrive:
            self.restore.validate_marker(key_id, self.marker_of(state))  # its journal
            try:
                recorded = self.failures.redriven_run(key_id, pending.seq, pending.redrive)
            except RedriveError as exc:
                return self.failures.refused(key, key_id, pending.seq, pending.input, exc)
        else:
            recorded = self._recorded_run(key_id, state)
        values = self.env.values
        waits = RunWaits(
            state.timers,
            state.signals,
            self.agent.operator_uid,
            key_id,
            values,
            self.clock,
            self.metrics if recorded.completed is None else None,
        )
        delivery: Delivery | None = None
        started = recorded.input if pending.redrive else None  # a re-driven timer's or signal's
        if pending.origin is not None or (started is not None and started.delivered):
            trigger = event_id(self.agent.operator_uid, key_id, "input", pending.seq)
            if pending.origin is not None:
                delivery = waits.deliver(pending.origin, pending.input, trigger)
            elif started is not None:
                delivery = waits.redeliver(started, pending.input, trigger)
        consumed = delivery.consumed if delivery is not None else None
        if recorded.dead_letters > pending.redrive:  # dead-lettered before a restart
            result = self.failures.replayed(key, key_id, pending.input, recorded)
            result.consumed = consumed
            return result
        memory = values.decode(state.memory) if state.memory else {}
        marker = self.marker_of(state)
        stale = marker is not None and not self.restore.current(marker)
        consequence = self.failures.consequence(recorded)
        run = RunExecution(
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
            waits=waits,
            delivery=delivery,
        )
        try:
            result = await run.execute()
        except Exception as exc:
            result = await self.failures.failed(run, recorded, exc)
        result.consumed = consumed
        return result

    def complete(self, state: KeyState, result: RunResult, key_id: str) -> KeyState:
        """The key's state after its oldest pending run finished with ``result`` (a dead
        letter keeps the memory, timers and signals the key had before the run; the timer
        or signal that started it is used up all the same)."""
        failed = result.dead_letter is not None
        memory = (
            state.memory if failed else self.env.values.encode(result.memory, "short-term memory")
        )
        timers, signals = state.timers, state.signals
        ops = [] if failed else result.waits
        if result.consumed is not None or ops:
            seq = state.pending[0].seq
            timers, signals = applied(timers, signals, result.consumed, ops, seq)
        marker, at = state.marker, state.at
        if result.marker is not None:
            self._recovered.wrote(key_id, result.marker, key_id in self._journals)
            if self.compact_markers:
                marker, at = None, self.restore.journals.compact(result.marker)
            else:
                marker, at = result.marker, None
        return msgspec.structs.replace(
            state,
            pending=state.pending[1:],
            memory=memory,
            marker=marker,
            at=at,
            timers=timers,
            signals=signals,
        )

    def marker_of(self, state: KeyState) -> Marker | None:
        """The key's recovery marker, with the journal it points into."""
        return self.restore.journals.marker_of(state.marker, state.at)

    # -- recovery ---------------------------------------------------------------

    def _ensure_recovered(self, key_id: str, state: KeyState) -> None:
        with self._reading:
            if not self._recovered.needs_read(key_id, self.marker_of(state)):
                return
            recovered = self.recover(key_id, state)  # raises again if asked again after failing
            self._recovered.read(key_id)
            if recovered.runs or recovered.uncertain:
                self._journals[key_id] = recovered
            if self.restored and recovered.runs:
                self._journaled[key_id] = Journaled.of(recovered, self.clock())

    def _recorded_run(self, key_id: str, state: KeyState) -> RecordedRun:
        seq = state.pending[0].seq
        if self._recovered.needs_read(key_id, self.marker_of(state)):
            self._ensure_recovered(key_id, state)
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
        restored = self.marker_of(state)
        marker = self.restore.validate_marker(key_id, restored)
        after = marker
        earliest = self.store.earliest_position(key_id) if marker is not None else 0
        if marker is not None and marker.position + 1 < earliest:
            after = None  # records after the marker are gone: read what is left, then judge
        started = time.perf_counter()
        records = self.store.read_key(self.config.namespace, self.agent.operator_uid, key_id, after)
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
        self.metrics.recovered(
            self.store.identity.backend,
            time.perf_counter() - started,
            len(records),
            journal.records,
        )
        gone_to = earliest if marker is not None and after is None else None
        self.restore.check_read(key_id, restored, marker, gone_to, journal, bool(state.pending))
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


def use_configured_codec(store: Store, config: JournalConfig) -> None:
    """Make ``store`` sign and verify records with ``journal.signing_key``.

    However the store was opened (by the user, a store factory, a test), the engine
    that runs on it decides the codec: a store with an unsigned codec gets the
    configured one installed; a store that already signs must use the configured key.
    Without a configured key the store is left as it is (one that signs is stricter).
    """
    wanted = config.record_codec()
    if not wanted.signed:
        return
    current = store.codec
    if not current.signed:
        store.codec = wanted
    elif not current.same_key(wanted):
        raise ConfigurationError(
            f"the store {type(store).__name__} was opened with a signing key other than "
            "journal.signing_key; open it with config.record_codec(), or without a codec"
        )
