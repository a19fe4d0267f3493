"""PyFlink binding: an agent as a keyed operator in a real Flink job.

The operator keeps each key's :class:`~actionjournal.operator.engine.KeyState`
in Flink keyed state, so checkpoints and savepoints carry sequence numbers,
pending inputs, memory and recovery markers. PyFlink gives Python functions no
snapshot hooks, so nothing here waits for a checkpoint and a checkpoint never
waits for a run: runs execute on a background event loop (a key's queued inputs one
after another, see :mod:`~actionjournal.flink.key_runs`), and timers collect finished
runs on the element-processing thread, where state may be touched.

A finished run is pushed: its key goes to the draining operator over a loopback
socket (:mod:`~actionjournal.flink.wakeups`), which fires the key's timer at once.
A processing-time timer per busy key stays armed a second ahead all the same: Flink
checkpoints timers, so it fires after a restore and resumes the key's pending runs
through replay. Without the draining operator that timer also polls for finished
runs. An event-time timer at the end of time fires when a bounded input ends and
drains the key's remaining runs before the job finishes.

The key's own timers and signal deadlines (:mod:`actionjournal.operator.waits`) live in
its keyed state; the key keeps one processing-time timer for them and its runs together,
the earliest it needs. An idle key without timers of its own keeps no timer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import json
import logging
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgspec
from pyflink.common import Configuration, JobClient, Types
from pyflink.datastream import (
    DataStream,
    KeyedProcessFunction,
    KeyedStream,
    OutputTag,
    RuntimeContext,
    StreamExecutionEnvironment,
    TimeDomain,
)
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.java_gateway import get_gateway
from pyflink.version import __version__ as PYFLINK_VERSION

from actionjournal.dev.java import guard_gateway
from actionjournal.durable.agent import Agent
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import ConfigurationError, CorruptRecordError
from actionjournal.durable.records import JournalBinding
from actionjournal.durable.stats import MetricGroupMirror
from actionjournal.durable.store import Store
from actionjournal.durable.waits import SignalInput
from actionjournal.flink import draining, javac
from actionjournal.flink.config import AgentsConfig
from actionjournal.flink.key_runs import KeyRuns
from actionjournal.flink.wakeups import RunWakeups
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.stores.factory import open_store
from actionjournal.stores.seen import SeenKeys

END_OF_TIME = 2**63 - 1  # an event-time timer here fires when a bounded input ends
BUNDLE_SIZE = "python.fn-execution.bundle.size"
# No Java: creating the job's environment says so in one line (what to install or set).
guard_gateway()
log = logging.getLogger(__name__)
MAX_POLL_MS = 1000
StoreFactory = Callable[[RecordCodec], Store]
SUPPORTED_PYFLINK = "2.3"  # the draining operator builds on PyFlink 2.3's internals (pyproject)
DEAD_LETTERS = OutputTag("actionjournal-dead-letters", Types.PICKLED_BYTE_ARRAY())
"""The side output of dead-lettered runs (:class:`DeadLetter` objects); see
:meth:`AgentJob.dead_letters`."""
# Job parameters of the agent operator (DrainingKeyedProcessOperator.java): the journal
# binding it restored (the function reports its own over the wake-up socket), and whether
# the job consumes the dead letters.
RESTORED = "actionjournal.restored"
RESTORED_BINDINGS = "actionjournal.restored-bindings"
RESTORED_HISTORY = "actionjournal.restored-history"
DEAD_LETTERS_CONSUMED = "actionjournal.dead-letters"
NOT_KEPT = (
    "agent %s cannot reach its operator's wake-up socket, so the journal binding is not "
    "checkpointed: a restore from this job's checkpoints cannot tell which journal they "
    "were written against until a key with a recovery marker runs"
)
NO_BINDING = (
    "the restored state of agent %s names no journal (checkpointed by an older release, "
    "without actionjournal's operator, or before the agent's first input): a restore "
    "against another journal is refused only when a key with a recovery marker runs, keys "
    "without one may run first, and another namespace is not detected"
)


class AgentOutput(NamedTuple):
    """An output with the key whose run sent it and its event id (stable across replays)."""

    key: Any
    event_id: str
    output: Any


class AgentsExecutionEnvironment:
    """Entry point, shaped like Flink Agents': wrap a stream environment, attach agents."""

    def __init__(
        self, env: StreamExecutionEnvironment, config: AgentsConfig, operator_jar: Path | None
    ) -> None:
        self.env = env
        self.config = config
        self.operator_jar = operator_jar  # None: bundles of one element instead

    @classmethod
    def get_execution_environment(
        cls, env: StreamExecutionEnvironment | None = None, config: AgentsConfig | None = None
    ) -> AgentsExecutionEnvironment:
        if PYFLINK_VERSION.split(".")[:2] != SUPPORTED_PYFLINK.split("."):
            raise ConfigurationError(
                f"PyFlink {PYFLINK_VERSION} is installed, but actionjournal supports PyFlink "
                f"{SUPPORTED_PYFLINK}.x only: pip install 'apache-flink>={SUPPORTED_PYFLINK},<2.4'"
            )
        config = config or AgentsConfig()
        if env is None:
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_python_executable(sys.executable)
        # Checkpoints must hold the timers that resume pending runs (actionjournal.operator.
        # draining): with the draining operator any bundle size works, and short bundles keep
        # outputs close to the poll interval; without it, only bundles of one element do.
        jar = None
        if config.checkpoint_timers != "bundle-of-one":
            try:
                jar = draining.operator_jar()
            except javac.JavaUnavailable as exc:
                if config.checkpoint_timers == "drain":
                    raise ConfigurationError(
                        f"checkpoint_timers='drain': cannot build the agent operator: {exc}. "
                        "Install a JDK (javac), or use checkpoint_timers='bundle-of-one'"
                    ) from None
                log.warning(
                    "cannot build actionjournal's Flink operator (%s): falling back to one "
                    "element per bundle, which is correct but slower; see docs/flink.md",
                    exc,
                )
        settings = Configuration()
        if jar is None:
            settings.set_string(BUNDLE_SIZE, "1")
        else:
            settings.set_string("python.fn-execution.bundle.time", str(config.poll_interval_ms))
        env.configure(settings)
        return cls(env, config, jar)

    def from_datastream(
        self, stream: DataStream, key_selector: Callable[[Any], Any] | None = None
    ) -> AgentJob:
        """The agent's input: a keyed stream, or any stream with a ``key_selector``.

        With a ``key_selector``, :class:`DeadLetter` elements in the stream are keyed by
        their own key: they re-drive their runs (docs/guarantees.md).
        """
        if key_selector is not None:
            return AgentJob(self, stream.key_by(_RedriveAware(key_selector)))
        if isinstance(stream, KeyedStream):
            return AgentJob(self, stream)
        raise ConfigurationError(
            "from_datastream needs a keyed stream or key_selector=...: runs of one key are "
            "sequential and its journal is kept per key, so the agent must know the key"
        )


class AgentJob:
    def __init__(self, environment: AgentsExecutionEnvironment, keyed: KeyedStream) -> None:
        self._environment = environment
        self._keyed = keyed
        self._agent: Agent | None = None
        self._store_factory: StoreFactory | None = None
        self._stream: DataStream | None = None

    def apply(self, agent: Agent, store_factory: StoreFactory | None = None) -> AgentJob:
        """Attach the agent. ``store_factory`` replaces the configured store (tests, wrappers)."""
        self._agent = agent
        self._store_factory = store_factory
        return self

    @property
    def uid(self) -> str:
        """The agent's operator uid (see :attr:`Agent.uid`)."""
        if self._agent is None:
            raise ConfigurationError("call .apply(agent) first")
        return self._agent.operator_uid

    def to_datastream(self, with_ids: bool = False) -> DataStream:
        """The agent's outputs (each ``OutputEvent.output``) as a normal PyFlink stream.

        ``with_ids``: each as an :class:`AgentOutput` instead, with its key and event id.
        Outputs carry no event-time timestamp: they leave from timers, whose time is not
        theirs.
        """
        if self._agent is None:
            raise ConfigurationError("call .apply(agent) before .to_datastream()")
        environment = self._environment
        jar = environment.operator_jar
        if jar is None:
            settings = environment.env._j_stream_execution_environment.getConfiguration()
            size = settings.toMap().get(BUNDLE_SIZE)
            if size != "1":
                raise ConfigurationError(
                    f"{BUNDLE_SIZE} is {size}, but without actionjournal's operator the agent "
                    "needs 1: with larger bundles a checkpoint can miss the timers that resume a "
                    "key's pending runs after a restore (see docs/flink.md); leave it as "
                    "AgentsExecutionEnvironment.get_execution_environment set it"
                )
        uid = self._agent.operator_uid
        function = AgentFunction(self._agent, environment.config, self._store_factory, with_ids)
        stream = self._keyed.process(function, output_type=Types.PICKLED_BYTE_ARRAY())
        if jar is not None:
            draining.install(environment.env, self._keyed, stream, jar)
            # Outputs to an operator not chained with this one cross a network buffer that is
            # flushed every 100 ms by default (execution.buffer-timeout); a run's output
            # leaves at once instead.
            stream.set_buffer_timeout(0)
        self._stream = stream.uid(uid).name(f"agent {uid}")
        return self._stream

    def dead_letters(self) -> DataStream:
        """Runs dead-lettered by ``on_run_failure`` (:class:`DeadLetter` objects), a side
        output of the agent; e.g. ``.map(lambda d: d.to_json(), Types.STRING())`` into a
        Kafka sink. Call after :meth:`to_datastream`."""
        if self._stream is None:
            raise ConfigurationError("call .to_datastream() before .dead_letters()")
        return self._stream.get_side_output(DEAD_LETTERS)


class AgentFunction(KeyedProcessFunction):
    def __init__(
        self,
        agent: Agent,
        config: AgentsConfig,
        store_factory: StoreFactory | None = None,
        with_ids: bool = False,
    ) -> None:
        self.agent = agent
        self.config = config
        self.store_factory = store_factory
        self.with_ids = with_ids

    def open(self, runtime_context: RuntimeContext) -> None:
        # kafka_source's inputs are KafkaMessage objects. A restored worker resumes pending
        # runs before any element arrives, and their journaled inputs decode only if the
        # class is defined here: the value codec never imports a module for journal bytes.
        importlib.import_module("actionjournal.flink.kafka_io")
        self._state = runtime_context.get_state(
            ValueStateDescriptor("actionjournal.key_state", Types.PICKLED_BYTE_ARRAY())
        )
        codec = self.config.journal.record_codec()
        factory = self.store_factory or (lambda c: open_store(self.config.store, c))
        self.store = factory(codec)
        config = self.config
        self.engine = AgentEngine(
            self.agent,
            self.store,
            config.journal,
            config.on_run_failure,
            config.run_failure_restarts,
        )
        binding = self._bind(runtime_context)
        # Keys' journals may hold runs their state does not reflect (keeps their order).
        self.engine.restored = runtime_context.get_job_parameter(RESTORED, "") != "false"
        # Dead letters nobody reads are not yielded: were the agent chained with the Python
        # operator after it, they would reach that operator as elements.
        self._dead_letters = (
            runtime_context.get_job_parameter(DEAD_LETTERS_CONSUMED, "true") == "true"
        )
        # Calls are counted on worker threads; Flink counters are fed on this thread (sync).
        self._metrics = MetricGroupMirror(self.engine.metrics, runtime_context.get_metrics_group())
        self._loop = asyncio.new_event_loop()
        self._loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                self.config.max_concurrent_runs, thread_name_prefix="actionjournal-run"
            )
        )
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="actionjournal-loop", daemon=True
        )
        self._thread.start()
        self._runs: dict[str, KeyRuns] = {}  # busy keys
        self._started: dict[str, float] = {}  # when each busy key's current run started
        self._typical_s = self.config.poll_interval_ms / 1000  # recent run duration (EWMA)
        # PyFlink 2.3 internals: the keyed state backend knows the current key as Flink
        # serializes it, which is how the operator takes it back (RunWakeups.java).
        self._keys: Any = getattr(runtime_context, "_keyed_state_backend", None)
        self._wakeups = RunWakeups.connect(runtime_context) if self._keys is not None else None
        if binding is not None:
            if self._wakeups is None:
                log.warning(NOT_KEPT, self.agent.operator_uid)
            else:
                self._wakeups.send_binding(binding)
                # The operator keeps the journals, so keys keep references to them.
                self.engine.compact_markers = True
        self._resume_at: dict[str, int] = {}  # each key's processing-time timer, in ms
        self._wake_at: dict[str, int] = {}  # busy keys with timers: the next one due, in ms
        # Keys saved since the start, when it restored no state (else None; see _load).
        fresh = runtime_context.get_job_parameter(RESTORED, "") == "false"
        self._saved = SeenKeys() if fresh else None

    def _bind(self, runtime_context: RuntimeContext) -> str | None:
        """Refuse state written against another journal before any element or timer runs;
        the binding (JSON) to report to the agent operator (``None``: no operator keeps it)."""
        restored = runtime_context.get_job_parameter(RESTORED_BINDINGS, None)
        if restored is None:  # PyFlink's own operator (no JDK, or thread mode): per key only
            return None
        first = runtime_context.get_index_of_this_subtask() == 0
        bindings = self._restored(restored)
        history = self._restored(runtime_context.get_job_parameter(RESTORED_HISTORY, "[]"))
        if not bindings and runtime_context.get_job_parameter(RESTORED, "") == "true" and first:
            log.warning(NO_BINDING, self.agent.operator_uid)
        binding = self.engine.restore.bind(bindings, audit=first, history=history)  # one audits
        return msgspec.json.encode(binding).decode()

    def _restored(self, parameter: str) -> list[JournalBinding]:
        """Bindings the agent operator restored (a job parameter, JSON)."""
        try:
            return msgspec.json.decode(parameter, type=list[JournalBinding])
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(
                f"the journal binding restored with agent {self.agent.operator_uid}'s state "
                f"does not decode ({exc}): {parameter[:200]!r}; run the actionjournal release "
                "that took the checkpoint",
                f"operator state of {self.agent.operator_uid}",
            ) from None

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if self._wakeups is not None:
            self._wakeups.close()
        self.engine.env.health.close()
        self.store.close()
        if self.config.stats_file:
            counts = self.engine.metrics
            line = counts.as_dict() | {
                name: int(counts.value(f"actionjournal_{name}_total"))
                for name in ("run_wakeups", "run_polls")
            }
            with open(self.config.stats_file, "a") as f:
                f.write(json.dumps(line) + "\n")

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        key = ctx.get_current_key()
        key_id = self.engine.key_id(key)
        before = self._load(key_id)
        state = self.engine.accept(before, value, key_id)  # due timers of the key go first
        self._save(key_id, state)
        runs = self._runs.get(key_id)
        if runs is None and state.pending:
            self._start(key, key_id, state)
            self._arm(ctx, key_id, state)
        elif runs is None:  # held, or only a timer changed
            self._disarm(ctx, key_id, state)
        else:  # busy: its runs take the input, or if they just ran out, their timer starts it
            for pending in state.pending[len(before.pending) :]:
                runs.offer(pending)
        return iter(())

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterator[Any]:
        key = ctx.get_current_key()
        key_id = self.engine.key_id(key)
        # Not ``timestamp == END_OF_TIME``: the draining operator hands timers over without
        # their timestamp, so that outputs do not carry it (DrainingKeyedProcessOperator.java).
        drain = ctx.time_domain() == TimeDomain.EVENT_TIME
        runs = self._runs.get(key_id)
        now = ctx.timer_service().current_processing_time()
        due = self._wake_at.get(key_id, now + 1) <= now  # a timer of the key is due
        if runs is not None and not runs.has_results and not drain and not due:
            self.engine.metrics.run_polled()
            self._arm(ctx, key_id)  # still running: look again later, without touching state
            return
        state = self._load(key_id)
        if state.timers or state.signals or state.held:
            state = self._fire_due(key_id, state, runs)
        if runs is None and state.pending:
            runs = self._start(key, key_id, state)  # after a restore: resumes through replay
        while runs is not None:
            if drain:
                concurrent.futures.wait([runs.future])
            for result in runs.collect():
                state = self.engine.complete(state, result, key_id)
                self._save(key_id, state)
                for event in result.outputs:
                    output = event.attributes["output"]
                    # sent events carry their id (send_event set it)
                    yield AgentOutput(key, event.id, output) if self.with_ids else output  # type: ignore[arg-type]
                if result.dead_letter is not None and self._dead_letters:
                    yield DEAD_LETTERS, result.dead_letter
            if not runs.over:
                break
            runs.future.result()  # an agent failure fails the task; Flink restores
            del self._runs[key_id]
            self._started.pop(key_id, None)
            if state.timers or state.signals or state.held:  # its runs may have scheduled some
                state = self._fire_due(key_id, state, None)
            runs = self._start(key, key_id, state) if state.pending else None
        if runs is not None and (state.timers or state.signals or state.held):
            state = self._fire_due(key_id, state, runs)
        if state.pending:
            self._arm(ctx, key_id, state)
        else:
            self._disarm(ctx, key_id, state)
        self._metrics.sync()

    def _fire_due(self, key_id: str, state: KeyState, runs: KeyRuns | None) -> KeyState:
        """Queue runs for the key's timers and deadlines due now (handed to its runs, if
        it has some going); keeps when its next one is due."""
        fired = self.engine.fire_due(state, key_id)
        if fired is not state:
            self._save(key_id, fired)
            if runs is not None:
                for pending in fired.pending[len(state.pending) :]:
                    runs.offer(pending)
        return fired

    def _start(self, key: Any, key_id: str, state: KeyState) -> KeyRuns:
        """Run the key's pending inputs one after another (see :class:`KeyRuns`)."""
        key_bytes = self._keys._encoded_current_key if self._wakeups else b""
        self._started[key_id] = time.monotonic()

        def finished(wake: bool, ended: bool) -> None:  # on the loop thread, after each run
            now = time.monotonic()
            # Idle: no run left here (a key whose results wait for collection counts as busy).
            idle = ended and len(self._runs) <= 1
            self._finished(key_bytes, self._started.get(key_id, now), wake, idle)
            self._started[key_id] = now  # the next run starts now

        runs = KeyRuns(self.engine, self._loop, key, key_id, state, finished)
        self._runs[key_id] = runs
        return runs

    def _finished(self, key_bytes: bytes, started: float, wake: bool, idle: bool) -> None:
        """On the loop thread, after a run: push the key, learn how long runs take.

        One push covers every run of the key that finished before the timer it fires
        collects them: each push is a timer call into this worker, so a key whose runs
        finish faster than that round trip does not queue one call per run.
        """
        if self._wakeups is not None and self._wakeups.alive:
            if wake:
                self._wakeups.send(key_bytes, idle)
            self.engine.metrics.run_woken()  # reported: by its own push or one still out
        # A lost update between threads only blurs an estimate.
        self._typical_s += 0.2 * (time.monotonic() - started - self._typical_s)

    def _arm(self, ctx: Any, key_id: str, state: KeyState | None = None) -> None:
        """Keep a timer for a busy key: it resumes the key after a restore and, without
        wake-ups, looks for the finished run.

        With wake-ups the timer stays about a second ahead (one per key, re-armed when it
        fires). Without, every poll costs a round trip to this worker, so a poll that
        finds the run still going is pure cost: the first one waits for the typical run
        duration, later ones a quarter of the time the run has taken so far (at most 25%
        added latency, capped). A key's own timer due earlier takes its place: the key
        keeps one processing-time timer (``state``: its state, when it may have changed).
        """
        timers = ctx.timer_service()
        timers.register_event_time_timer(END_OF_TIME)
        now = timers.current_processing_time()
        if self._wakeups is not None and self._wakeups.alive:
            armed = self._resume_at.get(key_id, 0)
            at = armed if armed > now else now + MAX_POLL_MS  # none armed, or it has fired
        else:
            elapsed = time.monotonic() - self._started.get(key_id, time.monotonic())
            left = self._typical_s - elapsed
            delay_ms = 1000 * (left if left > 0 else elapsed / 4)
            at = now + int(min(max(delay_ms, self.config.poll_interval_ms), MAX_POLL_MS))
        self._keep_timer(timers, key_id, min(at, self._next_wake(key_id, state) or at), now)

    def _disarm(self, ctx: Any, key_id: str, state: KeyState | None = None) -> None:
        """The key is idle: its resume timer would only find nothing to do; a timer of its
        own keeps the key's one processing-time timer, at its due time. An idle key without
        one keeps no timer: one per key ever seen would grow Flink's state with the keys, and
        at the end of a bounded input every one of them would fire (docs/scale.md)."""
        timers = ctx.timer_service()
        now = timers.current_processing_time()
        wake = self._next_wake(key_id, state)
        self._wake_at.pop(key_id, None)  # kept for busy keys only (on_timer's fast path)
        if wake is not None:
            self._keep_timer(timers, key_id, wake, now, exact=True)
            return
        timers.delete_event_time_timer(END_OF_TIME)
        at = self._resume_at.pop(key_id, None)
        if at is not None and at > now:
            timers.delete_processing_time_timer(at)

    def _next_wake(self, key_id: str, state: KeyState | None) -> int | None:
        """When the key's next timer or deadline is due (ms), from ``state`` if given."""
        if state is not None:
            wake = self.engine.wake_at(state, key_id)
            if wake is None:
                self._wake_at.pop(key_id, None)
            else:
                self._wake_at[key_id] = math.ceil(wake * 1000)
        return self._wake_at.get(key_id)

    def _keep_timer(self, timers: Any, key_id: str, at: int, now: int, exact: bool = False) -> None:
        """The key's one processing-time timer, at ``at`` (or earlier, unless ``exact``)."""
        armed = self._resume_at.get(key_id)
        if armed is not None and now < armed <= at and (armed == at or not exact):
            return  # it fires first, and arms the next
        if armed is not None and armed > now:
            timers.delete_processing_time_timer(armed)
        timers.register_processing_time_timer(at)
        self._resume_at[key_id] = at

    def _load(self, key_id: str) -> KeyState:
        """The key's state. A job that restored no state has none for a key this function
        never saved: reading it would ask the Java side (about 3 ms a key on a MiniCluster),
        which a key's first input then paid every time. The keys saved are kept in fixed
        memory (:class:`SeenKeys`): a key taken for saved when it was not is read, as in a
        restored job."""
        if self._saved is not None and key_id not in self._saved:
            return KeyState()
        data = self._state.value()
        return msgspec.msgpack.decode(data, type=KeyState) if data else KeyState()

    def _save(self, key_id: str, state: KeyState) -> None:
        if self._saved is not None:
            self._saved.add(key_id)
        self._state.update(msgspec.msgpack.encode(state))


class _RedriveAware:
    """The user's key selector, except that a dead letter is keyed by its own key, and so is
    a signal's answer that names its key."""

    def __init__(self, key_selector: Callable[[Any], Any]) -> None:
        self.key_selector = key_selector

    def __call__(self, element: Any) -> Any:
        if isinstance(element, DeadLetter):
            return element.key
        if isinstance(element, SignalInput) and element.key is not None:
            return element.key
        return self.key_selector(element)


# -- the job from outside: savepoints, where Python runs, where PyFlink logs -----------------


def savepoint(job_client: JobClient, directory: str | Path) -> str:
    """Take a savepoint of a running job, which keeps running; returns the savepoint's path.

    PyFlink 2.3's ``JobClient.trigger_savepoint`` omits the Java method's format argument,
    so the Java client is called directly (as by :func:`stop_with_savepoint`).
    """
    fmt = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    target = Path(directory).resolve().as_uri()
    return str(job_client._j_job_client.triggerSavepoint(target, fmt).get())


def stop_with_savepoint(job_client: JobClient, directory: str | Path) -> str:
    """Stop a running job with a savepoint; returns the savepoint's path once it stopped.

    Runs in flight are not waited for: the savepoint holds them as pending, and a job
    restored from it resumes them through replay.
    """
    j_client = job_client._j_job_client
    result = j_client.getJobExecutionResult()
    fmt = get_gateway().jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    path = j_client.stopWithSavepoint(False, Path(directory).resolve().as_uri(), fmt).get()
    result.get()
    return str(path)


def set_python_worker_mode(mode: Literal["process", "loopback"]) -> None:
    """Where a local (MiniCluster) job runs its Python functions; call before executing.

    ``loopback`` (PyFlink's default for local jobs) runs them inside this process;
    ``process`` in worker processes that Flink starts, as on a cluster: then a test can
    kill a worker without killing itself. Jobs on a cluster always use processes.
    """
    if mode not in ("process", "loopback"):
        raise ConfigurationError(f"python worker mode {mode!r}: use 'process' or 'loopback'")
    os.environ["_python_worker_execution_mode"] = mode  # noqa: SIM112 - PyFlink's name


def set_log_dir(directory: str | Path) -> None:
    """Where PyFlink's JVM writes its log files (``FLINK_LOG_DIR``); default: inside the
    installed ``pyflink`` package. Call before the first PyFlink environment is created."""
    from pyflink import java_gateway

    if java_gateway._gateway is not None:
        raise ConfigurationError(
            "set_log_dir() after PyFlink's JVM started: its log file is already open; call "
            "it before the first StreamExecutionEnvironment is created"
        )
    path = Path(directory).resolve()
    path.mkdir(parents=True, exist_ok=True)
    os.environ["FLINK_LOG_DIR"] = str(path)
