"""The restore scenario: one agent, one source of inputs, a journal; steps that run, crash
and restore, with what ran counted by the scenario's service."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import pickle
import shutil
import signal
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from actionjournal.durable.agent import Agent
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, UpgradeSkipped
from actionjournal.durable.store import Store
from actionjournal.operator.local import LocalRunner, Snapshot
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.crash import crash_point
from actionjournal.testing.harness import child, journals
from actionjournal.testing.harness.agents import AgentFactory, instrument, make_agent
from actionjournal.testing.harness.errors import CrashNotReachedError, HarnessError
from actionjournal.testing.harness.journals import Journal
from actionjournal.testing.service import CountingService


class RestoreMode(enum.StrEnum):
    """Which journal and settings a restored job uses."""

    SAME = "same"
    """The journal and settings of the scenario's last deployment."""
    NEW = "new"
    """A new, empty journal (new file, topic or table); upgrade mode off."""
    RECREATED = "recreated"
    """The same journal name, deleted and created again (a new topic id / store id)."""
    NO_STORE = "none"
    """No journal at all (:class:`~actionjournal.stores.none.NoStore`): durability off."""
    UPGRADE_NEW = "upgrade-new"
    """A new journal with ``journal.upgrade='fresh'``."""
    UPGRADE_SAME = "upgrade-same"
    """The same journal with ``journal.upgrade='fresh'`` and ``journal.epoch`` one higher."""


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A snapshot of all keyed state and the source offset, taken by the scenario."""

    path: Path
    journal: Journal | None  # None: taken with no store
    config: JournalConfig
    inputs_consumed: int
    pending: int  # inputs accepted but not finished when it was taken (runs in flight)

    def markers(self) -> dict[Any, Marker]:
        """The recovery marker of every key that has one, by key."""
        snap = msgspec.msgpack.decode(self.path.read_bytes(), type=Snapshot)
        values, journals = self.config.value_codec(), snap.journals()
        markers = {k.key: journals.marker_of(k.state.marker, k.state.at) for k in snap.keys}
        return {values.decode(key): m for key, m in markers.items() if m is not None}


class Output(NamedTuple):
    key: Any
    id: str | None
    value: Any


@dataclasses.dataclass
class Step:
    """What one step did, as seen from outside."""

    kind: str  # "run", "crash" or the restore mode
    journal: Journal | None
    calls: Counter[str]
    """Executions of :func:`call_service` calls during the step, by call name (service-counted)."""
    actions: Counter[str]
    """Executions of action bodies during the step, by action name (service-counted)."""
    outputs: list[Output]
    """Outputs emitted during the step (after a restore, replayed runs emit again)."""
    engine: dict[str, int]
    """The engine's own counts (executed, replayed, ...); empty for a killed child."""
    crashed: bool = False


@dataclasses.dataclass
class _Live:
    runner: LocalRunner
    store: Store


class RestoreScenario:
    """One agent, one source of inputs, one journal at a time; steps that run, crash, restore.

    ``agent`` builds the agent; it is called with the URL of the scenario's counting
    service when it takes an argument. ``store`` is the store config of the first
    deployment's journal (the job's own ``SqliteStoreConfig``, ``KafkaStoreConfig`` or
    ``FlussStoreConfig``; default: a SQLite file in ``directory``); new journals are made
    next to it (``journal-2.db``, ``<topic>-2``, ``<table>_2``). ``config`` is the journal
    configuration of the first deployment. The scenario is a context manager;
    :meth:`close` stops its service and deletes the journals it made (not ``store``'s own).
    """

    def __init__(
        self,
        agent: AgentFactory,
        store: Journal | None = None,
        *,
        directory: str | Path,
        config: JournalConfig | None = None,
        service: CountingService | None = None,
        child_timeout: float = 180.0,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.agent_factory = agent
        self.store = store or SqliteStoreConfig(
            path=str(self.directory / "journals" / "journal.db")
        )
        """The first deployment's journal; the others are derived from it."""
        self.config = config or JournalConfig()
        """The journal settings of the current deployment."""
        self._own_service = service is None
        self.service = service or CountingService()
        self.child_timeout = child_timeout
        self.journal: Journal | None = self.store
        """The journal of the current deployment (``None``: no store)."""
        self.source: list[tuple[Any, Any]] = []
        """Every input so far, in order: a restore replays it from the checkpoint's offset."""
        self.outputs: list[Output] = []
        """Every output of every step."""
        self.steps: list[Step] = []
        self._journals = 1
        self._live: _Live | None = None
        self._started = False
        self._n = 0

    # -- lifecycle

    def start(self) -> RestoreScenario:
        if not self._started:
            if self._own_service:
                self.service.start()
            self._started = True
        return self

    def close(self) -> None:
        self._drop_live()
        if self._started and self._own_service:
            self.service.stop()
        self._started = False
        made = [journals.derive(self.store, n) for n in range(2, self._journals + 1)]
        self._journals = 1
        if made and not isinstance(self.store, SqliteStoreConfig):  # files go with the dir
            journals.delete(made)

    def __enter__(self) -> RestoreScenario:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The counting service's URL (what the agent factory is given)."""
        return self.service.url

    @property
    def running(self) -> bool:
        """Whether a job is running in this process (none after a crash or a failed restore)."""
        return self._live is not None

    # -- steps

    def run(
        self,
        inputs: Iterable[tuple[Any, Any]] = (),
        *,
        crash_at: str | None = None,
        checkpoint_every: int = 0,
        pace: float = 0.0,
    ) -> Step:
        """Append ``inputs`` to the source and run the job until every input has run.

        The first step starts the job; later steps continue it. With ``crash_at``
        the job continues in a child process that is SIGKILLed at that crash
        point (the step then has ``crashed=True``, and no job runs afterwards:
        restore a checkpoint). ``checkpoint_every=n`` snapshots every ``n``
        inputs while earlier runs are still in flight: see :meth:`last_checkpoint`.
        """
        self.start()
        _check_crash_point(crash_at)
        if self._live is None and self.steps:
            raise HarnessError("no job is running (it crashed or failed): restore first")
        self.source.extend(inputs)
        if crash_at is not None:
            start = None
            if self._live is not None:
                start = self._path("handover")
                self._live.runner.snapshot(start)
                self._drop_live()
            return self._child_step("crash", start, crash_at, checkpoint_every, pace)
        if self._live is None:
            self._live = self._open_live(None)
        return self._step("run", self._live, checkpoint_every, pace)

    def crash(
        self,
        inputs: Iterable[tuple[Any, Any]] = (),
        *,
        at: str,
        checkpoint_every: int = 0,
        pace: float = 0.0,
    ) -> Step:
        """:meth:`run` in a child process that is SIGKILLed at crash point ``at``."""
        return self.run(inputs, crash_at=at, checkpoint_every=checkpoint_every, pace=pace)

    def abandon(self) -> None:
        """Drop the in-process job as if its process died now, between steps.

        Nothing is in flight between steps, so this is a failure at a quiet
        moment: for claims about crashes use a crash point instead.
        """
        self._drop_live()

    def checkpoint(self) -> Checkpoint:
        """Snapshot the running job's keyed state and source offset."""
        if self._live is None:
            raise HarnessError("no job is running: nothing to checkpoint")
        path = self._path("checkpoint")
        self._live.runner.snapshot(path)
        return self._checkpoint_at(path)

    def last_checkpoint(self) -> Checkpoint:
        """The latest periodic checkpoint (``checkpoint_every``) of the steps so far."""
        latest = self.directory / "periodic-checkpoint"
        if not latest.exists():
            raise HarnessError("no periodic checkpoint was taken: pass checkpoint_every=n")
        path = self._path("checkpoint")
        shutil.copyfile(latest, path)
        return self._checkpoint_at(path)

    def restore(
        self,
        checkpoint: Checkpoint | None,
        mode: RestoreMode | str = RestoreMode.SAME,
        *,
        inputs: Iterable[tuple[Any, Any]] = (),
        config: JournalConfig | None = None,
        agent: AgentFactory | None = None,
        crash_at: str | None = None,
        checkpoint_every: int = 0,
        pace: float = 0.0,
    ) -> Step:
        """Restore ``checkpoint`` (``None``: start over without state) in ``mode``, resubmit
        the source from the checkpoint's offset (plus ``inputs``) and run until done.

        The mode's journal and settings become the current deployment's, even
        when the restore fails (a later ``RestoreMode.SAME`` means "as last
        deployed"). ``config`` replaces the settings the mode starts from;
        ``agent`` deploys other code (a new agent factory, e.g. with an action
        renamed), which stays the scenario's agent from then on.
        Restore errors (``MarkerMismatchError``, ``StoreRecreatedError``, ...)
        propagate; no job runs after one. With ``crash_at`` the restored job
        runs in a child process that is killed at that point.
        """
        self.start()
        _check_crash_point(crash_at)
        mode = RestoreMode(mode)
        self._drop_live()
        self.source.extend(inputs)
        if agent is not None:
            self.agent_factory = agent
        base = config or self.config
        self.config = base
        if mode in (RestoreMode.NEW, RestoreMode.UPGRADE_NEW):
            self._journals += 1
            self.journal = journals.derive(self.store, self._journals)
        elif mode is RestoreMode.RECREATED:
            if self.journal is None:
                raise HarnessError("the current deployment has no store: nothing to recreate")
            journals.recreate(self.journal)
        elif mode is RestoreMode.NO_STORE:
            self.journal = None
        if mode is RestoreMode.UPGRADE_NEW:
            self.config = base.model_copy(update={"upgrade": "fresh"})
        elif mode is RestoreMode.UPGRADE_SAME:
            if self.journal is None:
                raise HarnessError("the current deployment has no store: nothing to upgrade")
            self.config = base.model_copy(update={"upgrade": "fresh", "epoch": base.epoch + 1})
        start = checkpoint.path if checkpoint is not None else None
        if crash_at is not None:
            return self._child_step(mode.value, start, crash_at, checkpoint_every, pace)
        calls, actions = self._counted()
        try:
            self._live = self._open_live(start)
        except BaseException:  # refused before anything ran (another journal, ...)
            self._record(mode.value, calls, actions, [], {})
            raise
        return self._step(mode.value, self._live, checkpoint_every, pace)

    # -- what happened

    def calls(self) -> Counter[str]:
        """Executions of :func:`call_service` calls so far, by call name."""
        return Counter(self.service.calls_by_name())

    def actions(self) -> Counter[str]:
        """Executions of action bodies so far, by action name."""
        return Counter(self.service.actions_by_name())

    def duplicates(self) -> dict[str, int]:
        """Call ids the service executed more than once (a durable call that ran twice)."""
        with self.service._lock:
            return {call_id: n for call_id, n in self.service.counts.items() if n > 1}

    def records(self, key: Any = None, journal: Journal | None = None) -> list[JournalRecord]:
        """Records of ``key`` (control records if ``None``) of the job's namespace and operator,
        every epoch, in ``journal`` (default: the current one), read with a store of its own."""
        from actionjournal.durable.identity import key_id

        journal = journal or self.journal
        if journal is None:
            return []
        store = journals.open_journal(journal, self.config.record_codec())
        try:
            kid = CONTROL_KEY if key is None else key_id(key)
            uid = self._agent().operator_uid
            return store.read_key(self.config.namespace, uid, kid, None)
        finally:
            store.close()

    def audit_records(self, journal: Journal | None = None) -> list[UpgradeSkipped]:
        """Upgrade-mode audit records (one per skipped journal and restore) in ``journal``."""
        return [r for r in self.records(None, journal) if isinstance(r, UpgradeSkipped)]

    # -- internals

    def _path(self, stem: str) -> Path:
        self._n += 1
        return self.directory / f"{stem}-{self._n}"

    def _agent(self) -> Agent:
        return make_agent(self.agent_factory, self.url)

    def _open_live(self, start: Path | None) -> _Live:
        store = journals.open_journal(self.journal, self.config.record_codec())
        agent = instrument(self._agent(), self.url)
        try:
            if start is None:
                runner = LocalRunner(agent, store, self.config)
            else:
                runner = LocalRunner.restore(start, agent, store, self.config)
        except BaseException:
            store.close()
            raise
        return _Live(runner, store)

    def _drop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.store.close()

    def _checkpoint_at(self, path: Path) -> Checkpoint:
        snap = msgspec.msgpack.decode(path.read_bytes(), type=Snapshot)
        pending = sum(len(k.state.pending) for k in snap.keys)
        return Checkpoint(path, self.journal, self.config, snap.inputs_consumed, pending)

    def _counted(self) -> tuple[Counter[str], Counter[str]]:
        self.service.wait_idle(quiet=0.05)
        return self.calls(), self.actions()

    def _step(self, kind: str, live: _Live, checkpoint_every: int, pace: float) -> Step:
        calls, actions = self._counted()
        runner = live.runner
        first_output, before = len(runner.outputs), dict(runner.counts)

        async def go() -> None:
            await runner.run_source(
                self.source,
                snapshot_path=self.directory / "periodic-checkpoint",
                snapshot_every=checkpoint_every,
                pace=pace,
            )

        try:
            asyncio.run(go())
        except BaseException:
            self._drop_live()  # a failed job is gone; restore to go on
            self._record(kind, calls, actions, [], {})
            raise
        outputs = [
            Output(key, event.id, event.attributes.get("output"))
            for key, event in runner.outputs[first_output:]
        ]
        after = dict(runner.counts)
        engine = {name: n - before.get(name, 0) for name, n in after.items()}
        return self._record(kind, calls, actions, outputs, engine)

    def _record(
        self,
        kind: str,
        calls: Counter[str],
        actions: Counter[str],
        outputs: list[Output],
        engine: dict[str, int],
        crashed: bool = False,
    ) -> Step:
        now_calls, now_actions = self._counted()
        step = Step(
            kind, self.journal, now_calls - calls, now_actions - actions, outputs, engine, crashed
        )
        self.outputs.extend(outputs)
        self.steps.append(step)
        return step

    def _child_step(
        self, kind: str, start: Path | None, crash_at: str, checkpoint_every: int, pace: float
    ) -> Step:
        calls, actions = self._counted()
        spec = child.ChildSpec(
            agent=self.agent_factory,
            url=self.url,
            journal=self.journal,
            config=self.config,
            start=start,
            source=list(self.source),
            crash_at=crash_at,
            checkpoint_every=checkpoint_every,
            checkpoint_path=self.directory / "periodic-checkpoint",
            pace=pace,
            outputs_path=self._path("outputs"),
            result_path=self._path("result"),
        )
        spec_path = self._path("spec")
        try:
            spec_path.write_bytes(pickle.dumps(spec))
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise HarnessError(
                f"a crash step runs the agent in a child process, so the agent factory "
                f"{self.agent_factory!r} must be picklable (a module-level class or function, "
                f"or a functools.partial of one): {exc}"
            ) from exc
        proc = child.run(spec, spec_path, self.child_timeout)
        outputs = [Output(*o) for o in child.read_outputs(spec.outputs_path, self.config)]
        if proc.returncode == -signal.SIGKILL:
            return self._record(kind, calls, actions, outputs, {}, crashed=True)
        result = child.read_result(spec.result_path)
        self._record(kind, calls, actions, outputs, result.get("engine", {}))
        if proc.returncode == 0:
            raise CrashNotReachedError(
                f"crash point {crash_at!r} was never reached: the child process ran every "
                f"input and exited normally. Pick a point the step reaches (fewer records of "
                f"that type were written). Child stderr:\n{proc.stderr[-2000:]}"
            )
        error = result.get("error")
        if isinstance(error, BaseException):
            error.add_note(f"raised in the child process of step {kind!r}:\n{result['trace']}")
            raise error
        raise HarnessError(
            f"the child process of step {kind!r} failed with exit code {proc.returncode}:\n"
            f"{result.get('trace') or proc.stderr[-4000:]}"
        )


def _check_crash_point(crash_at: str | None) -> None:
    """A malformed crash point fails here, not in the child (ValueError)."""
    crash_point(crash_at)
