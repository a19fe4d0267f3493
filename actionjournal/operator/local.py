"""The local runner: the keyed operator loop without Flink.

It does what a Flink job does for an agent operator, in one process: assigns
per-key sequence numbers, runs keys concurrently and each key's runs in order,
and takes snapshots of all keyed state (the local stand-in for a checkpoint).
Timers fire by the runner's clock (``clock=``, the wall clock by default; a test passes
one it moves, :class:`~actionjournal.testing.ManualClock`) whenever the runner drains.
A snapshot also records how many inputs were consumed, like a source offset:
:meth:`LocalRunner.run_source` feeds a restored runner its source from that
point, as a Flink source rewinds to its checkpointed offset, while
:meth:`LocalRunner.run` always takes its inputs as new ones.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pydantic

from actionjournal.durable.agent import Agent
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import (
    ActionJournalError,
    ConfigurationError,
    CorruptRecordError,
    UnsupportedFormatError,
)
from actionjournal.durable.events import Event
from actionjournal.durable.options import check_callable, checked
from actionjournal.durable.records import FORMAT_VERSION, JournalBinding
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.store import Store
from actionjournal.operator.clock import epoch_clock
from actionjournal.operator.config import RunFailureOptions, RunFailurePolicy
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.operator.markers import Journals

log = logging.getLogger(__name__)
NO_BINDING = (
    "snapshot %s names no journal (written by an older release): a restore against another "
    "journal is refused only when a key with a recovery marker runs, keys without one may "
    "run first, and another namespace is not detected; take a new snapshot to have it "
    "refused before any key runs"
)


class KeySnapshot(msgspec.Struct, array_like=True):
    key: bytes  # ValueCodec bytes of the key
    key_id: str
    state: KeyState


class Snapshot(msgspec.Struct):
    format_version: int
    inputs_consumed: int
    keys: list[KeySnapshot]
    # Whose state this is, so cleanup plans for another job's journal are refused ("": a
    # snapshot written before these fields existed).
    namespace: str = ""
    operator_uid: str = ""
    # The journal and epoch the state was written against (None: an older snapshot).
    binding: JournalBinding | None = None
    # Older journals keys' markers may reference (AgentEngine.history).
    history: list[JournalBinding] = []

    def journals(self) -> Journals:
        """The journals the keys' markers may reference (``Journals.marker_of``)."""
        journals = Journals()
        for binding in [*self.history, *([self.binding] if self.binding else [])]:
            journals.add(binding.store, binding.epoch)
        return journals


OutputSink = Callable[[Any, Event], None]
WAIT_CHECK_S = 1.0  # while runs go on, timers are looked at at least this often


class _FeedOptions(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True)

    snapshot_every: int = pydantic.Field(0, ge=0)
    """Snapshot every n inputs consumed (0: never)."""
    pace: float = pydantic.Field(0.0, ge=0)
    """Seconds between inputs."""


class LocalRunner:
    """Runs an agent over keyed inputs; outputs go to ``outputs`` and to ``on_output`` if given.

    Outputs are emitted when a run completes. After a restore, runs that finished
    after the snapshot emit again with the same event ids, as a Flink job without
    a transactional sink would: deduplicate by ``event.id`` downstream.

    ``store`` may be opened without a codec: the runner signs and verifies records
    with ``config``'s ``signing_key`` (see :func:`~actionjournal.operator.engine.
    use_configured_codec`). ``on_run_failure`` says what a run that fails does (see
    :class:`~actionjournal.operator.config.AgentsConfig`): with ``"fail"`` (the default) the
    runner stops at it, as a Flink task does (restore a snapshot to go on); a dead-lettered
    run goes to ``dead_letters`` (and ``on_dead_letter``) and its key moves on.

    ``clock``: what time it is for timers and signal deadlines, a callable returning epoch
    seconds or an aware datetime, or an object whose ``time()`` or ``now()`` does (default:
    the wall clock). Timers fire when the runner drains (:meth:`drain`, :meth:`run`): a
    test moves its clock and drains, without sleeping.
    """

    def __init__(
        self,
        agent: Agent,
        store: Store,
        config: JournalConfig | None = None,
        on_output: OutputSink | None = None,
        *,
        on_run_failure: RunFailurePolicy = "fail",
        run_failure_restarts: int = 3,
        on_dead_letter: Callable[[DeadLetter], None] | None = None,
        clock: Callable[[], float | datetime] | Any = None,
    ) -> None:
        owner = "LocalRunner"
        options = checked(
            owner,
            RunFailureOptions,
            on_run_failure=on_run_failure,
            run_failure_restarts=run_failure_restarts,
        )
        if config is not None and not isinstance(config, JournalConfig):
            raise ConfigurationError(
                f"{owner}: config={config!r} is not a JournalConfig: pass "
                "actionjournal.JournalConfig(...), or None for the defaults"
            )
        check_callable(owner, "on_output", on_output)
        check_callable(owner, "on_dead_letter", on_dead_letter)
        self.clock = epoch_clock(owner, clock)
        self.engine = AgentEngine(
            agent,
            store,
            config,
            options.on_run_failure,
            options.run_failure_restarts,
            self.clock,
        )
        self.engine.compact_markers = True  # snapshots keep the journals they reference
        self.on_output = on_output
        self.on_dead_letter = on_dead_letter
        self.states: dict[str, tuple[Any, KeyState]] = {}
        self.inputs_consumed = 0
        self.outputs: list[tuple[Any, Event]] = []
        self.dead_letters: list[DeadLetter] = []
        """Runs set aside by the run failure policy; submit one again to re-drive its run."""
        self._active: dict[str, asyncio.Task[None]] = {}
        self._waiting: set[str] = set()  # keys with timers, signals or held inputs
        self._failure: Exception | None = None

    @property
    def counts(self) -> dict[str, int]:
        return self.engine.metrics.as_dict()

    @property
    def metrics(self) -> JournalMetrics:
        """This runner's metrics (its own Prometheus registry); see docs/operations.md."""
        return self.engine.metrics

    def serve_metrics(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Serve the metrics at ``http://addr:port/metrics`` (0: a free port); returns the port."""
        return self.engine.metrics.serve(port, addr)

    def submit(self, key: Any, value: Any) -> None:
        """Accept one input for ``key``; it runs after the key's earlier inputs.

        A :class:`DeadLetter` of ``key`` re-drives its run (the same seq, its journal replays).
        """
        self._check_alive()
        key_id = self.engine.key_id(key)
        _, state = self.states.get(key_id, (key, KeyState()))
        self._keep(key_id, key, self.engine.accept(state, value, key_id))
        self.inputs_consumed += 1
        self._wake(key_id)

    async def drain(self) -> None:
        """Wait until every pending input has run, and the runs of timers and signal
        deadlines due by the runner's clock meanwhile; re-raise the first failure. Timers
        due later stay pending (drain again once they are due)."""
        while True:
            self._fire_due()
            if not self._active or self._failure is not None:
                break
            wake = self._wake_at()
            if wake is None:
                await asyncio.gather(*list(self._active.values()), return_exceptions=True)
            else:  # look at the timers again when the next is due (at least that often)
                timeout = min(max(wake - self.clock(), 0.0), WAIT_CHECK_S)
                await asyncio.wait(list(self._active.values()), timeout=timeout)
        while self._active:  # after a failure: the runs in flight end
            await asyncio.gather(*list(self._active.values()), return_exceptions=True)
        if self._failure is not None:
            raise self._failure

    def _fire_due(self) -> None:
        """Queue the runs of every key's timers and deadlines due by now."""
        if self._failure is not None:
            return
        for key_id in list(self._waiting):
            key, state = self.states[key_id]
            self._keep(key_id, key, self.engine.fire_due(state, key_id))
            self._wake(key_id)

    def _wake_at(self) -> float | None:
        """When the earliest timer or deadline of any key is due."""
        times = []
        for key_id in self._waiting:
            at = self.engine.wake_at(self.states[key_id][1], key_id)
            if at is not None:
                times.append(at)
        return min(times) if times else None

    def _keep(self, key_id: str, key: Any, state: KeyState) -> None:
        """The key's new state; keys with timers, signals or held inputs are looked at
        when the runner drains."""
        self.states[key_id] = (key, state)
        if state.timers or state.signals or state.held:
            self._waiting.add(key_id)
        else:
            self._waiting.discard(key_id)

    @property
    def timers(self) -> dict[Any, list[Any]]:
        """The pending timers of every key that has some (key: ``Timer`` objects with
        ``id`` and ``due``, earliest first); with :attr:`signals`, what waits."""
        return {key: list(state.timers) for key, state in self.states.values() if state.timers}

    @property
    def signals(self) -> dict[Any, list[Any]]:
        """The expected signals of every key that has some (key: objects with ``id``,
        ``name`` and ``deadline``, earliest deadline first)."""
        return {key: list(state.signals) for key, state in self.states.values() if state.signals}

    async def run(
        self,
        inputs: Iterable[tuple[Any, Any]],
        *,
        snapshot_path: str | Path | None = None,
        snapshot_every: int = 0,
        pace: float = 0.0,
    ) -> None:
        """Feed new ``(key, input)`` pairs and wait until every pending input has run.

        Every input given is new, on every call and after a restore. Restored pending
        runs start too. ``snapshot_every=n`` snapshots to ``snapshot_path`` every ``n``
        inputs consumed; ``pace`` waits that many seconds between inputs.
        """
        pairs = _pairs(inputs, "run")
        await self._feed(pairs, snapshot_path, snapshot_every, pace)

    async def run_source(
        self,
        source: Iterable[tuple[Any, Any]],
        *,
        snapshot_path: str | Path | None = None,
        snapshot_every: int = 0,
        pace: float = 0.0,
    ) -> None:
        """Feed ``source``, the whole input stream from its first input, from this
        runner's source position on, and wait until every pending input has run.

        The position is ``inputs_consumed``: after :meth:`restore`, the snapshot's, so
        the inputs consumed before the snapshot are skipped and the rest delivered
        again, as a Flink source rewinds to its checkpointed offset.
        """
        pairs = _pairs(source, "run_source")
        if len(pairs) < self.inputs_consumed:
            raise ValueError(
                f"run_source got {len(pairs)} inputs, but this runner's source position is "
                f"{self.inputs_consumed} (inputs consumed before its snapshot): pass the whole "
                "source from its first input, or feed new inputs with run()"
            )
        await self._feed(pairs[self.inputs_consumed :], snapshot_path, snapshot_every, pace)

    async def _feed(
        self,
        pairs: list[tuple[Any, Any]],
        snapshot_path: str | Path | None,
        snapshot_every: int,
        pace: float,
    ) -> None:
        self._check_alive()
        checked("LocalRunner", _FeedOptions, snapshot_every=snapshot_every, pace=pace)
        if snapshot_every and not snapshot_path:
            raise ConfigurationError(
                f"LocalRunner: snapshot_every={snapshot_every} needs snapshot_path=... (where "
                "to write the snapshots)"
            )
        self.resume()
        for key, value in pairs:
            self.submit(key, value)
            if snapshot_path and snapshot_every and self.inputs_consumed % snapshot_every == 0:
                self.snapshot(snapshot_path)
            await asyncio.sleep(pace)
            if self._failure is not None:
                break
        await self.drain()

    def _check_alive(self) -> None:
        if self._failure is not None:
            raise ActionJournalError(
                f"this LocalRunner stopped after a failure ({self._failure!r}) and takes no "
                "more input: restore a snapshot to go on"
            ) from self._failure

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
                state = self.engine.complete(state, result, key_id)
                if state.timers or state.signals or state.held:
                    state = self.engine.fire_due(state, key_id)
                self._keep(key_id, key, state)
                for event in result.outputs:
                    self.outputs.append((key, event))
                    if self.on_output is not None:
                        self.on_output(key, event)
                if result.dead_letter is not None:
                    self.dead_letters.append(result.dead_letter)
                    if self.on_dead_letter is not None:
                        self.on_dead_letter(result.dead_letter)
        except Exception as exc:  # kept, and raised once by drain(), not by this task
            if self._failure is None:
                self._failure = exc
            elif exc is not self._failure:
                self._failure.add_note(f"key {key!r} failed as well: {exc!r}")
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
            self.engine.config.namespace,
            self.engine.agent.operator_uid,
            self.engine.restore.binding,
            self.engine.restore.history,
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
        store: Store,
        config: JournalConfig | None = None,
        on_output: OutputSink | None = None,
        **options: Any,
    ) -> LocalRunner:
        """A runner with the snapshot's keyed state and source position; ``options`` are
        those of the constructor (``on_run_failure=...``).

        Feed it with :meth:`run_source` (the source again, from the snapshot's position)
        or :meth:`run` (new inputs); both start the snapshot's pending runs, as does
        :meth:`resume` (inside an event loop) for a runner fed with :meth:`submit`.
        """
        runner = cls(agent, store, config, on_output, **options)
        try:
            snap = msgspec.msgpack.decode(Path(path).read_bytes(), type=Snapshot)
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(f"snapshot does not decode: {exc}", str(path)) from None
        if snap.format_version > FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"snapshot format {snap.format_version} is newer than {FORMAT_VERSION}", str(path)
            )
        if snap.binding is None:
            log.warning(NO_BINDING, path)
        # Before any key runs.
        runner.engine.restore.bind([snap.binding] if snap.binding else [], history=snap.history)
        values = runner.engine.env.values
        runner.inputs_consumed = snap.inputs_consumed
        for k in snap.keys:
            runner._keep(k.key_id, values.decode(k.key), k.state)
        runner.engine.restored = True
        return runner

    def resume(self) -> None:
        """Start the runs that were pending when the snapshot was taken, and those of
        timers that came due meanwhile."""
        self._fire_due()
        for key_id in self.states:
            self._wake(key_id)


def _pairs(inputs: Any, method: str) -> list[tuple[Any, Any]]:
    """``inputs`` as a list of (key, input) pairs; anything else is refused, saying so."""
    shape = "a list of (key, input) pairs, e.g. [('alice', {'order': 1})]"
    if isinstance(inputs, Mapping):
        raise TypeError(
            f"LocalRunner.{method} takes {shape}, not a {type(inputs).__name__}; for a mapping "
            "of key to input pass list(inputs.items())"
        )
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Iterable):
        raise TypeError(f"LocalRunner.{method} takes {shape}, not {type(inputs).__name__}")
    pairs = list(inputs)
    for i, item in enumerate(pairs):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(
                f"LocalRunner.{method}: input #{i} is {item!r}, not a (key, input) pair; "
                f"pass {shape}"
            )
    return [(key, value) for key, value in pairs]
