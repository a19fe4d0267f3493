"""The local runner: the keyed operator loop without Flink.

It does what a Flink job does for an agent operator, in one process: assigns
per-key sequence numbers, runs keys concurrently and each key's runs in order,
and takes snapshots of all keyed state (the local stand-in for a checkpoint).
A snapshot also records how many inputs were consumed, like a source offset,
so a restored runner is fed from the same point.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import CorruptRecordError, UnsupportedFormatError
from actionjournal.durable.records import FORMAT_VERSION
from actionjournal.durable.stats import JournalMetrics
from actionjournal.operator.agent import Agent
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.operator.events import Event
from actionjournal.stores.base import JournalStore


class KeySnapshot(msgspec.Struct, array_like=True):
    key: bytes  # ValueCodec bytes of the key
    key_id: str
    state: KeyState


class Snapshot(msgspec.Struct):
    format_version: int
    inputs_consumed: int
    keys: list[KeySnapshot]


OutputSink = Callable[[Any, Event], None]


class LocalRunner:
    """Runs an agent over keyed inputs; outputs go to ``outputs`` and to ``on_output`` if given.

    Outputs are emitted when a run completes. After a restore, runs that finished
    after the snapshot emit again with the same event ids, as a Flink job without
    a transactional sink would: deduplicate by ``event.id`` downstream.
    """

    def __init__(
        self,
        agent: Agent,
        store: JournalStore,
        config: JournalConfig | None = None,
        on_output: OutputSink | None = None,
    ) -> None:
        self.engine = AgentEngine(agent, store, config)
        self.on_output = on_output
        self.states: dict[str, tuple[Any, KeyState]] = {}
        self.inputs_consumed = 0
        self.outputs: list[tuple[Any, Event]] = []
        self._active: dict[str, asyncio.Task[None]] = {}
        self._failure: BaseException | None = None

    @property
    def counts(self) -> dict[str, int]:
        return self.engine.counts.as_dict()

    @property
    def metrics(self) -> JournalMetrics:
        """This runner's metrics (its own Prometheus registry); see docs/operations.md."""
        return self.engine.counts

    def serve_metrics(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve the metrics at ``http://addr:port/metrics`` (0: a free port); returns the port."""
        return self.engine.counts.serve(port, addr)

    def submit(self, key: Any, value: Any) -> None:
        """Accept one input for ``key``; it runs after the key's earlier inputs."""
        key_id = self.engine.key_id(key)
        _, state = self.states.get(key_id, (key, KeyState()))
        self.states[key_id] = (key, self.engine.accept(state, value))
        self.inputs_consumed += 1
        self._wake(key_id)

    async def drain(self) -> None:
        """Wait until every pending input has run; re-raise the first failure."""
        while self._active:
            await asyncio.gather(*list(self._active.values()), return_exceptions=True)
        if self._failure is not None:
            raise self._failure

    async def run(
        self,
        inputs: Sequence[tuple[Any, Any]],
        *,
        snapshot_path: str | Path | None = None,
        snapshot_every: int = 0,
        pace: float = 0.0,
    ) -> None:
        """Feed ``inputs`` from where the last snapshot left off, snapshotting every N inputs."""
        for key, value in inputs[self.inputs_consumed :]:
            self.submit(key, value)
            if snapshot_path and snapshot_every and self.inputs_consumed % snapshot_every == 0:
                self.snapshot(snapshot_path)
            await asyncio.sleep(pace)
            if self._failure is not None:
                break
        await self.drain()

    def _wake(self, key_id: str) -> None:
        if key_id not in self._active and self.states[key_id][1].pending:
            self._active[key_id] = asyncio.ensure_future(self._drive(key_id))

    async def _drive(self, key_id: str) -> None:
        try:
            while self._failure is None:
                key, state = self.states[key_id]
                if not state.pending:
                    break
                result = await self.engine.run_next(key, key_id, state)
                key, state = self.states[key_id]  # inputs may have arrived meanwhile
                self.states[key_id] = (key, self.engine.complete(state, result))
                for event in result.outputs:
                    self.outputs.append((key, event))
                    if self.on_output is not None:
                        self.on_output(key, event)
        except BaseException as exc:
            self._failure = self._failure or exc
            raise
        finally:
            del self._active[key_id]

    # -- snapshots ----------------------------------------------------------------

    def snapshot(self, path: str | Path) -> None:
        """Write all keyed state atomically; runs in flight stay pending in it."""
        values = self.engine.env.values
        snap = Snapshot(
            FORMAT_VERSION,
            self.inputs_consumed,
            [KeySnapshot(values.encode(k), kid, s) for kid, (k, s) in self.states.items()],
        )
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(msgspec.msgpack.encode(snap))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    @classmethod
    def restore(
        cls,
        path: str | Path,
        agent: Agent,
        store: JournalStore,
        config: JournalConfig | None = None,
        on_output: OutputSink | None = None,
    ) -> LocalRunner:
        """A runner with the snapshot's keyed state; call :meth:`resume` inside an event loop."""
        runner = cls(agent, store, config, on_output)
        try:
            snap = msgspec.msgpack.decode(Path(path).read_bytes(), type=Snapshot)
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(f"snapshot does not decode: {exc}", str(path)) from None
        if snap.format_version > FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"snapshot format {snap.format_version} is newer than {FORMAT_VERSION}", str(path)
            )
        values = runner.engine.env.values
        runner.inputs_consumed = snap.inputs_consumed
        runner.states = {k.key_id: (values.decode(k.key), k.state) for k in snap.keys}
        return runner

    def resume(self) -> None:
        """Start the runs that were pending when the snapshot was taken."""
        for key_id in self.states:
            self._wake(key_id)
