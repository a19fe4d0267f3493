"""The keyed operator loop shared by the local runner and the PyFlink binding.

Per key it holds what Flink keyed state holds: the next input sequence number,
pending inputs, short-term memory and the recovery marker. The first time a
key is touched after a (re)start, its journal is read once from its marker and
validated; its runs then replay what the journal recorded.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    DataLossError,
    MarkerMismatchError,
    StoreRecreatedError,
    UnsupportedFormatError,
)
from actionjournal.durable.identity import key_id as make_key_id
from actionjournal.durable.records import FORMAT_VERSION, Marker
from actionjournal.durable.replay import KeyJournal, RecordedRun
from actionjournal.durable.stats import CallCounts
from actionjournal.operator.agent import Agent
from actionjournal.operator.run import Run, RunEnv, RunResult

log = logging.getLogger(__name__)


class PendingInput(msgspec.Struct, array_like=True):
    seq: int
    input: bytes  # ValueCodec bytes


class KeyState(msgspec.Struct, array_like=True):
    """Everything a key needs to resume; Flink checkpoints it as keyed state."""

    next_seq: int = 0
    pending: list[PendingInput] = []
    memory: bytes | None = None  # ValueCodec bytes of short-term memory
    marker: Marker | None = None


class AgentEngine:
    def __init__(self, agent: Agent, store: Any, config: JournalConfig | None = None) -> None:
        self.config = config or JournalConfig()
        self.store = store
        self.counts = CallCounts()
        self.env = RunEnv(agent, store, self.config, self.config.value_codec(), self.counts)
        self._journals: dict[str, KeyJournal] = {}
        self._recovered: set[str] = set()

    @property
    def agent(self) -> Agent:
        return self.env.agent

    @staticmethod
    def key_id(key: Any) -> str:
        return make_key_id(key)

    def accept(self, state: KeyState, value: Any) -> KeyState:
        """Give an input its sequence number and queue it. Encodes now, so bad input fails here."""
        data = self.env.values.encode(value, "agent input")
        pending = PendingInput(state.next_seq, data)
        return msgspec.structs.replace(
            state, next_seq=state.next_seq + 1, pending=[*state.pending, pending]
        )

    async def run_next(self, key: Any, key_id: str, state: KeyState) -> RunResult:
        """Execute the key's oldest pending input. Does not change ``state``."""
        recorded = self._recorded_run(key_id, state)
        memory = self.env.values.decode(state.memory) if state.memory else {}
        pending = state.pending[0]
        run = Run(self.env, key, key_id, pending.seq, pending.input, memory, recorded)
        return await run.execute()

    def complete(self, state: KeyState, result: RunResult) -> KeyState:
        """The key's state after its oldest pending run finished with ``result``."""
        return KeyState(
            next_seq=state.next_seq,
            pending=state.pending[1:],
            memory=self.env.values.encode(result.memory, "short-term memory"),
            marker=result.marker or state.marker,
        )

    # -- recovery ---------------------------------------------------------------

    def _recorded_run(self, key_id: str, state: KeyState) -> RecordedRun:
        seq = state.pending[0].seq
        if key_id not in self._recovered:
            self._recovered.add(key_id)
            journal = self.recover(key_id, state)
            if journal.runs:
                self._journals[key_id] = journal
        journal = self._journals.get(key_id)
        if journal is None:
            return RecordedRun(seq)
        run = journal.runs.pop(seq, None) or RecordedRun(seq)
        if not journal.runs:
            del self._journals[key_id]
        return run

    def recover(self, key_id: str, state: KeyState) -> KeyJournal:
        """Read and index the key's records written after its marker, validating the marker."""
        after = self.validate_marker(key_id, state)
        records = self.store.read_key(self.config.namespace, self.agent.operator_uid, key_id, after)
        min_seq = state.pending[0].seq if state.pending else state.next_seq
        journal = KeyJournal.build(records, self.config.epoch, min_seq)
        if journal.records:
            log.info(
                "key %s: recovered %d journal records of %d runs", key_id, journal.records,
                len(journal.runs),
            )  # fmt: skip
        return journal

    def validate_marker(self, key_id: str, state: KeyState) -> Marker | None:
        """The position to read from; raises when the marker cannot be trusted."""
        marker = state.marker
        if marker is None:
            return None
        ours = self.store.identity
        where = f"{marker.store.backend} {marker.store.name} partition {marker.partition}"
        if marker.format_version > FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"recovery marker of key {key_id} has format version {marker.format_version}, "
                f"newer than this code's {FORMAT_VERSION}; run the newer release or restore in "
                "upgrade mode",
                where,
            )
        if (marker.store.backend, marker.store.name) != (ours.backend, ours.name):
            raise MarkerMismatchError(
                f"recovery marker of key {key_id} references {marker.store.backend} journal "
                f"{marker.store.name!r} (position {marker.position}), but the configured store "
                f"is {ours.backend} {ours.name!r}. Configure the journal the checkpoint was taken "
                "with, or restore in upgrade mode to start a new journal"
            )
        if marker.store.uid != ours.uid:
            raise StoreRecreatedError(
                f"recovery marker of key {key_id} references {ours.backend} journal "
                f"{ours.name!r} with id {marker.store.uid}, but the journal now has id "
                f"{ours.uid}: it was deleted and recreated, and the records after position "
                f"{marker.position} are gone. Restore in upgrade mode to start a new journal"
            )
        if marker.epoch != self.config.epoch:
            raise MarkerMismatchError(
                f"recovery marker of key {key_id} is from journal epoch {marker.epoch}, but "
                f"journal.epoch is {self.config.epoch}; restore in upgrade mode to start a new "
                "epoch"
            )
        earliest = self.store.earliest_position(key_id)
        if marker.position + 1 >= earliest:
            return marker
        if state.pending:
            raise DataLossError(
                f"key {key_id} has a pending run whose journal starts after position "
                f"{marker.position}, but {where} now starts at position {earliest}: records "
                f"{marker.position + 1}..{earliest - 1} were deleted (retention or cleanup). "
                "Restore a newer checkpoint, or restore in upgrade mode to re-run its actions"
            )
        # An idle key can only have records written after its checkpoint: read what is left.
        return None
