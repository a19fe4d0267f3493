"""The restore-scenario harness: run an agent, checkpoint, crash, restore, count.

A :class:`RestoreScenario` drives one agent the way a job's life does: inputs
arrive from a source, checkpoints are taken, the process fails at a named
point, the job is restored from a checkpoint, possibly against another journal
or in upgrade mode, and the source is replayed from the checkpoint's offset.
What ran is counted by a real HTTP service (:class:`CountingService`), not by
the engine's own bookkeeping: each execution of a durable call made through
:func:`call_service`, and each execution of an action body.

::

    from actionjournal.testing.harness import RestoreMode, call_service

    class Checkout(Agent):
        uid = "checkout"

        def __init__(self, url):          # the scenario passes its service's URL
            self.url = url

        @action(InputEvent)
        def pay(self, event, ctx):
            receipt = ctx.durable_execute(call_service, self.url, "charge", event.input)
            ctx.send_event(OutputEvent(receipt))

    def test_upgrade_reruns_only_what_the_old_journal_had(restore_scenario, aj_sqlite):
        sc = restore_scenario(Checkout, aj_sqlite)
        sc.run([("alice", 30)])
        cp = sc.checkpoint()
        sc.run([("alice", 40)])                         # finished after the checkpoint
        step = sc.restore(cp, RestoreMode.UPGRADE_NEW)  # new journal: the old one is skipped
        assert step.calls == {"charge": 1}              # input 40 is charged again
        step = sc.restore(cp)                           # a failure before the next checkpoint
        assert step.calls == {}                         # replayed from the new journal

Steps run **in this process** (fast; used for claims about restore modes,
replay and upgrade) unless they are given a crash point: then they run in a
**child process that is SIGKILLed** at that point (``before:<Record>:<n>`` or
``after:<Record>:<n>``, see :mod:`actionjournal.testing.crash`). Claims about
crashes need the real kill; :meth:`RestoreScenario.abandon` drops the
in-process job between steps, when nothing is in flight, and is only a
stand-in for a failure at a quiet moment.

Agents for crash steps are built in the child from the factory you gave, so
the factory must be picklable: a class or function defined at module level in
an importable module (a test module collected by pytest is fine), or a
``functools.partial`` of one.

See docs/testing.md for the guide.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import inspect
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import msgspec

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.outcomes import CallInfo, NotStarted, Recovered
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, UpgradeSkipped
from actionjournal.operator.agent import Agent
from actionjournal.operator.events import Event
from actionjournal.operator.local import LocalRunner, Snapshot
from actionjournal.stores.base import ActionStateStore
from actionjournal.testing.crash import CrashingStore
from actionjournal.testing.service import CountingService

__all__ = [
    "Checkpoint",
    "CrashNotReachedError",
    "FlussBackend",
    "HarnessError",
    "JournalBackend",
    "KafkaBackend",
    "Output",
    "RestoreMode",
    "RestoreScenario",
    "SqliteBackend",
    "Step",
    "call_service",
    "service_reconciler",
]

AgentFactory = Callable[..., Agent]


class HarnessError(AssertionError):
    """A scenario was driven wrongly, or a child step failed in an unexpected way."""


class CrashNotReachedError(HarnessError):
    """A step with a crash point finished without reaching it: the crash proved nothing."""


# -- what agents under test call -----------------------------------------------------------

_client: httpx.Client | None = None
_client_pid = 0
_client_lock = threading.Lock()


def _http() -> httpx.Client:
    """One client per process (making one per request costs more than the request)."""
    global _client, _client_pid
    with _client_lock:
        if _client is None or _client_pid != os.getpid():
            _client, _client_pid = httpx.Client(timeout=60), os.getpid()
        return _client


def call_service(url: str, name: str, value: Any = None) -> Any:
    """A remote call counted by the scenario's service; returns ``value`` back.

    Use it as the function of a durable call (``ctx.durable_execute(call_service,
    url, "charge", order)``): the service counts it under ``name`` and keeps its
    response under the call's stable ``call_id``, which :func:`service_reconciler`
    asks for. Called outside a durable call it is counted too, under a fresh id.
    """
    from actionjournal.durable.calls import current_call

    call = current_call()
    call_id = call.call_id if call is not None else f"plain:{uuid.uuid4().hex}"
    reply = _http().post(f"{url}/calls/{name}", json={"call_id": call_id, "value": value})
    reply.raise_for_status()
    return reply.json()["value"]


def service_reconciler(url: str) -> Callable[[CallInfo], Recovered | NotStarted]:
    """A reconciler for :func:`call_service` calls: asks the service instead of calling again."""

    def reconcile(info: CallInfo) -> Recovered | NotStarted:
        reply = _http().get(f"{url}/calls/{info.call_id}")
        if reply.status_code == 200:
            return Recovered(reply.json()["value"])
        return NotStarted()

    return reconcile


# -- journals ------------------------------------------------------------------------------


class JournalBackend:
    """Opens journals of one backend by name, and makes new, deleted and recreated ones.

    A *journal* is what a recovery marker points into: a SQLite file, a Kafka
    topic, a Fluss table. Backends are pickled into crash steps' child processes,
    so they hold settings, not connections.
    """

    kind: str = "?"

    def new_name(self) -> str:
        """The name of a journal no one has used yet."""
        raise NotImplementedError

    def open(self, name: str, codec: RecordCodec) -> ActionStateStore:
        """A store on journal ``name``, created when missing."""
        raise NotImplementedError

    def delete(self, name: str) -> None:
        """Delete journal ``name`` and everything in it (stores on it must be closed)."""
        raise NotImplementedError

    def recreate(self, name: str) -> None:
        """Delete journal ``name`` and create an empty one with the same name."""
        self.delete(name)
        self.open(name, RecordCodec()).close()

    def describe(self, name: str) -> str:
        return f"{self.kind} journal {name}"

    def close(self) -> None:
        """Release what the backend created (best effort)."""


class SqliteBackend(JournalBackend):
    """Journals are SQLite files in ``directory``; the marker names a file's absolute path."""

    kind = "sqlite"

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._prefix = f"journal-{uuid.uuid4().hex[:6]}"
        self._n = 0

    def new_name(self) -> str:
        self._n += 1
        return f"{self._prefix}-{self._n}.db"

    def path(self, name: str) -> Path:
        return self.directory / name

    def open(self, name: str, codec: RecordCodec) -> ActionStateStore:
        from actionjournal.stores.sqlite import SqliteStore

        return SqliteStore(self.path(name), codec)

    def delete(self, name: str) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path(name)}{suffix}")

    def describe(self, name: str) -> str:
        return f"sqlite file {self.path(name)}"


class KafkaBackend(JournalBackend):
    """Journals are topics (``partitions`` each) on a real broker; the ones it made are deleted
    at :meth:`close`."""

    kind = "kafka"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        partitions: int = 4,
        prefix: str = "aj-scenario",
        client_config: dict[str, str] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.partitions = partitions
        self.client_config = dict(client_config or {})
        self._prefix = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self._n = 0
        self._made: list[str] = []

    def new_name(self) -> str:
        self._n += 1
        name = f"{self._prefix}-{self._n}"
        self._made.append(name)
        return name

    def open(self, name: str, codec: RecordCodec) -> ActionStateStore:
        from actionjournal.stores.kafka import KafkaActionStateStore, KafkaStoreConfig

        config = KafkaStoreConfig(
            bootstrap_servers=self.bootstrap_servers,
            topic=name,
            partitions=self.partitions,
            client_config=self.client_config,
        )
        return KafkaActionStateStore(config, codec)

    def _admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers, **self.client_config})

    def delete(self, name: str, timeout: float = 60.0) -> None:
        from confluent_kafka import KafkaError, KafkaException

        admin = self._admin()
        try:
            admin.delete_topics([name], operation_timeout=30)[name].result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
        deadline = time.monotonic() + timeout
        while name in admin.list_topics(timeout=10).topics:  # deletion completes asynchronously
            if time.monotonic() > deadline:
                raise HarnessError(f"Kafka topic {name} still exists {timeout:.0f}s after delete")
            time.sleep(0.2)

    def describe(self, name: str) -> str:
        return f"kafka topic {name}"

    def close(self) -> None:
        if not self._made:
            return
        with contextlib.suppress(Exception):
            admin = self._admin()
            for future in admin.delete_topics(self._made, operation_timeout=30).values():
                with contextlib.suppress(Exception):
                    future.result()
        self._made = []

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_made": []}  # a child process never deletes our topics


class FlussBackend(JournalBackend):
    """Journals are log tables (``buckets`` each) in ``database`` on a real Fluss cluster; the
    ones it made are dropped at :meth:`close`."""

    kind = "fluss"

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        buckets: int = 4,
        database: str = "actionjournal",
        prefix: str = "aj_scenario",
        client_config: dict[str, str] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.buckets = buckets
        self.database = database
        self.client_config = dict(client_config or {})
        self._prefix = f"{prefix}_{uuid.uuid4().hex[:8]}"
        self._n = 0
        self._made: list[str] = []

    def new_name(self) -> str:
        self._n += 1
        name = f"{self._prefix}_{self._n}"
        self._made.append(name)
        return name

    def open(self, name: str, codec: RecordCodec) -> ActionStateStore:
        from actionjournal.stores.fluss import FlussActionStateStore, FlussStoreConfig

        config = FlussStoreConfig(
            bootstrap_servers=self.bootstrap_servers,
            database=self.database,
            table=name,
            buckets=self.buckets,
            client_config=self.client_config,
        )
        return FlussActionStateStore(config, codec)

    def _drop(self, names: Sequence[str]) -> None:
        import fluss

        async def drop() -> None:
            settings = {**self.client_config, "bootstrap.servers": self.bootstrap_servers}
            config = fluss.Config(settings)
            conn = await fluss.FlussConnection.create(config)
            try:
                admin = conn.get_admin()
                for name in names:
                    path = fluss.TablePath(self.database, name)
                    await admin.drop_table(path, ignore_if_not_exists=True)
            finally:
                await conn.close()

        asyncio.run(drop())

    def delete(self, name: str) -> None:
        self._drop([name])

    def describe(self, name: str) -> str:
        return f"fluss table {self.database}.{name}"

    def close(self) -> None:
        if self._made:
            with contextlib.suppress(Exception):
                self._drop(self._made)
        self._made = []

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_made": []}  # a child process never drops our tables


def _open_none(codec: RecordCodec) -> ActionStateStore:
    from actionjournal.stores.none import NoStore

    return NoStore(codec)


# -- scenario vocabulary -------------------------------------------------------------------


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
    journal: str | None  # None: taken with no store
    config: JournalConfig
    inputs_consumed: int
    pending: int  # inputs accepted but not finished when it was taken (runs in flight)

    def markers(self) -> dict[Any, Marker]:
        """The recovery marker of every key that has one, by key."""
        snap = msgspec.msgpack.decode(self.path.read_bytes(), type=Snapshot)
        values = self.config.value_codec()
        return {values.decode(k.key): k.state.marker for k in snap.keys if k.state.marker}


class Output(NamedTuple):
    key: Any
    id: str | None
    value: Any


@dataclasses.dataclass
class Step:
    """What one step did, as seen from outside."""

    kind: str  # "run", "crash" or the restore mode
    journal: str | None
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
    store: ActionStateStore


@dataclasses.dataclass
class _ChildSpec:
    agent: AgentFactory
    url: str
    backend: JournalBackend
    journal: str | None
    config: JournalConfig
    start: Path | None
    source: list[tuple[Any, Any]]
    crash_at: str | None
    checkpoint_every: int
    checkpoint_path: Path
    pace: float
    outputs_path: Path
    result_path: Path


# -- the scenario --------------------------------------------------------------------------


class RestoreScenario:
    """One agent, one source of inputs, one journal backend; steps that run, crash and restore.

    ``agent`` builds the agent; it is called with the URL of the scenario's
    counting service when it takes an argument. ``backend`` defaults to SQLite
    files in ``directory``. ``config`` is the journal configuration of the first
    deployment. The scenario is a context manager; :meth:`close` stops its
    service and deletes the Kafka topics it made.
    """

    def __init__(
        self,
        agent: AgentFactory,
        backend: JournalBackend | None = None,
        *,
        directory: str | Path,
        config: JournalConfig | None = None,
        service: CountingService | None = None,
        child_timeout: float = 180.0,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.agent_factory = agent
        self.backend = backend or SqliteBackend(self.directory / "journals")
        self.config = config or JournalConfig()
        """The journal settings of the current deployment."""
        self._own_service = service is None
        self.service = service or CountingService()
        self.child_timeout = child_timeout
        self.journal: str | None = self.backend.new_name()
        """The journal of the current deployment (``None``: no store)."""
        self.source: list[tuple[Any, Any]] = []
        """Every input so far, in order: a restore replays it from the checkpoint's offset."""
        self.outputs: list[Output] = []
        """Every output of every step."""
        self.steps: list[Step] = []
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
        self.backend.close()

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
        if mode is RestoreMode.SAME:
            self.config = base
        elif mode in (RestoreMode.NEW, RestoreMode.UPGRADE_NEW):
            self.journal = self.backend.new_name()
            self.config = base
        elif mode is RestoreMode.RECREATED:
            if self.journal is None:
                raise HarnessError("the current deployment has no store: nothing to recreate")
            self.backend.recreate(self.journal)
            self.config = base
        elif mode is RestoreMode.NO_STORE:
            self.journal = None
            self.config = base
        if mode is RestoreMode.UPGRADE_NEW:
            self.config = base.model_copy(update={"upgrade": "fresh"})
        elif mode is RestoreMode.UPGRADE_SAME:
            if self.journal is None:
                raise HarnessError("the current deployment has no store: nothing to upgrade")
            self.config = base.model_copy(update={"upgrade": "fresh", "epoch": base.epoch + 1})
        start = checkpoint.path if checkpoint is not None else None
        if crash_at is not None:
            return self._child_step(mode.value, start, crash_at, checkpoint_every, pace)
        self._live = self._open_live(start)
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

    def records(self, key: Any = None, journal: str | None = None) -> list[JournalRecord]:
        """Records of ``key`` (control records if ``None``) of the job's namespace and operator,
        every epoch, in ``journal`` (default: the current one), read with a store of its own."""
        from actionjournal.durable.identity import key_id

        name = journal or self.journal
        if name is None:
            return []
        store = self.backend.open(name, self.config.record_codec())
        try:
            kid = CONTROL_KEY if key is None else key_id(key)
            uid = self._agent().operator_uid
            return store.read_key(self.config.namespace, uid, kid, None)
        finally:
            store.close()

    def audit_records(self, journal: str | None = None) -> list[UpgradeSkipped]:
        """Upgrade-mode audit records (one per skipped journal and restore) in ``journal``."""
        return [r for r in self.records(None, journal) if isinstance(r, UpgradeSkipped)]

    # -- internals

    def _path(self, stem: str) -> Path:
        self._n += 1
        return self.directory / f"{stem}-{self._n}"

    def _agent(self) -> Agent:
        return _make_agent(self.agent_factory, self.url)

    def _open_store(self) -> ActionStateStore:
        codec = self.config.record_codec()
        if self.journal is None:
            return _open_none(codec)
        return self.backend.open(self.journal, codec)

    def _open_live(self, start: Path | None) -> _Live:
        store = self._open_store()
        agent = _instrument(self._agent(), self.url)
        if start is None:
            runner = LocalRunner(agent, store, self.config)
        else:
            runner = LocalRunner.restore(start, agent, store, self.config)
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
        spec = _ChildSpec(
            agent=self.agent_factory,
            url=self.url,
            backend=self.backend,
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
        proc = subprocess.run(
            [sys.executable, "-m", "actionjournal.testing.harness", str(spec_path)],
            capture_output=True,
            text=True,
            timeout=self.child_timeout,
            env=_child_env(),
            cwd=self.directory,
        )
        outputs = _read_outputs(spec.outputs_path, self.config)
        if proc.returncode == -signal.SIGKILL:
            return self._record(kind, calls, actions, outputs, {}, crashed=True)
        result = _read_result(spec.result_path)
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


# -- helpers -------------------------------------------------------------------------------


def _check_crash_point(crash_at: str | None) -> None:
    """A malformed crash point fails here, not in the child (ValueError from CrashingStore)."""
    if crash_at is not None:
        CrashingStore(None, crash_at)


def _make_agent(factory: AgentFactory, url: str) -> Agent:
    try:
        inspect.signature(factory).bind(url)
    except TypeError:
        return factory()
    except ValueError:  # builtins without a signature
        pass
    return factory(url)


def _instrument(agent: Agent, url: str) -> Agent:
    """Report every execution of an action body to the service (replays are not executions)."""
    wrapped: dict[str, Any] = {}
    by_type = {}
    for event_type, specs in agent.actions().items():
        by_type[event_type] = [
            wrapped.setdefault(
                s.name, dataclasses.replace(s, fn=_counting(s.fn, s.name, url, s.is_async))
            )
            for s in specs
        ]
    agent.actions = lambda: by_type  # type: ignore[method-assign] - this instance only
    return agent


def _report(url: str, name: str) -> None:
    _http().post(f"{url}/actions/{name}").raise_for_status()


def _counting(fn: Callable[..., Any], name: str, url: str, is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def counted_async(event: Event, ctx: Any) -> Any:
            await asyncio.to_thread(_report, url, name)
            return await fn(event, ctx)

        return counted_async

    def counted(event: Event, ctx: Any) -> Any:
        _report(url, name)
        return fn(event, ctx)

    return counted


def _child_env() -> dict[str, str]:
    """The child imports what this process imports: test modules and helpers on sys.path."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    extra = [
        p
        for p in sys.path
        if p and os.path.isdir(p) and not any(p.startswith(prefix) for prefix in prefixes)
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _read_outputs(path: Path, config: JournalConfig) -> list[Output]:
    if not path.exists():
        return []
    values = config.value_codec()
    data, outputs = path.read_bytes(), []
    while len(data) >= 4:
        size = int.from_bytes(data[:4], "big")
        if len(data) < 4 + size:
            break  # the last write was cut by the kill
        key, event_id, value = values.decode(data[4 : 4 + size])
        outputs.append(Output(key, event_id, value))
        data = data[4 + size :]
    return outputs


def _read_result(path: Path) -> dict[str, Any]:
    try:
        return pickle.loads(path.read_bytes())
    except Exception:
        return {}


# -- the child process of a crash step -----------------------------------------------------


async def _child_run(spec: _ChildSpec) -> dict[str, int]:
    codec = spec.config.record_codec()
    store = _open_none(codec) if spec.journal is None else spec.backend.open(spec.journal, codec)
    crashing = CrashingStore(store, spec.crash_at)
    agent = _instrument(_make_agent(spec.agent, spec.url), spec.url)
    values = spec.config.value_codec()
    fd = os.open(spec.outputs_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def emit(key: Any, event: Event) -> None:
        frame = values.encode([key, event.id, event.attributes.get("output")])
        os.write(fd, len(frame).to_bytes(4, "big") + frame)

    try:
        if spec.start is None:
            runner = LocalRunner(agent, crashing, spec.config, on_output=emit)
        else:
            runner = LocalRunner.restore(spec.start, agent, crashing, spec.config, on_output=emit)
        await runner.run_source(
            spec.source,
            snapshot_path=spec.checkpoint_path,
            snapshot_every=spec.checkpoint_every,
            pace=spec.pace,
        )
        return dict(runner.counts)
    finally:
        os.close(fd)
        store.close()


def _child_main(spec_path: str) -> int:
    spec: _ChildSpec = pickle.loads(Path(spec_path).read_bytes())
    try:
        engine = asyncio.run(_child_run(spec))
    except BaseException as exc:
        result: dict[str, Any] = {"trace": traceback.format_exc()}
        try:
            pickle.loads(pickle.dumps(exc))
            result["error"] = exc
        except Exception:
            result["error"] = None
        spec.result_path.write_bytes(pickle.dumps(result))
        return 1
    spec.result_path.write_bytes(pickle.dumps({"engine": engine}))
    return 0


def _main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m actionjournal.testing.harness SPEC (started by RestoreScenario)")
        return 2
    return _child_main(argv[0])


if __name__ == "__main__":
    from actionjournal.testing.harness import _main as main  # the importable copy, not __main__

    sys.exit(main(sys.argv[1:]))
