"""The soak's run: start everything, load it steadily, inject the faults on schedule, drain,
count, report; stop everything on every way out.

Resumable: the run's state (settings, soak time done, faults done, job ids) is saved in
``state.json`` of the work directory as it goes, with the brokers' logs, the checkpoints and
the service's counts beside it. Started again on an unfinished run, it ends what the
interrupted one left running, starts the brokers, the service and the cluster again, restores
the job from its newest retained checkpoint and goes on where the soak time stood (the
faults already done are not repeated; the pause shows as a gap in the plots).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import msgspec

from benchmarks.soak import faults as faulting
from benchmarks.soak import load, report
from benchmarks.soak.processes import Processes, SoakError
from benchmarks.soak.sample import Sampler
from benchmarks.soak.settings import FaultRecord, Settings

ROUND = re.compile(r"round \d+:? (deleted|nothing|failed)")


class State(msgspec.Struct):
    settings: Settings
    started_at: float
    load_started_at: float | None = None
    """When the first orders were sent: soak time 0, the plots' origin."""
    elapsed_s: float = 0.0
    sessions: list[tuple[float, float]] = msgspec.field(default_factory=list)
    faults: list[FaultRecord] = msgspec.field(default_factory=list)
    job_ids: list[str] = msgspec.field(default_factory=list)
    phase: str = "load"  # load, drain, done
    finished: bool = False


class Soak:
    """One soak in ``workdir``; :meth:`run` returns the exit code."""

    def __init__(self, workdir: Path, state: State, results_dir: Path = report.RESULTS) -> None:
        self.workdir = workdir
        self.state = state
        self.settings = state.settings
        self.results_dir = results_dir
        self.processes = Processes(workdir, self.settings)
        self.orders: load.Orders | None = None
        self.watchers: dict[str, load.Watcher] = {}
        self.sampler: Sampler | None = None
        self.session_start = time.time()
        self.load_start: float | None = None
        self.load_before = _uptime()

    # -- state ---------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.workdir / "state.json"

    def save(self) -> None:
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_bytes(msgspec.json.encode(self.state))
        temporary.replace(self.state_path)

    def elapsed(self) -> float:
        if self.load_start is None:
            return self.state.elapsed_s
        return self.state.elapsed_s + time.time() - self.load_start

    # -- the run -------------------------------------------------------------------------

    def run(self) -> int:
        left = self.processes.end_leftovers()
        if left:
            print(f"soak: ended {len(left)} process(es) an interrupted soak left: {left}")
        try:
            self._start()
            self._load()
            return self._finish()
        finally:
            try:
                if self.load_start is not None and self.state.phase == "load":
                    self.state.elapsed_s = self.elapsed()
                self.state.sessions.append((self.session_start, time.time()))
                self.save()
                self._stop_threads()
            finally:
                self.processes.stop_all()

    def _start(self) -> None:
        s, p = self.settings, self.processes
        resuming = bool(self.state.job_ids)
        _say(f"Kafka: {3} brokers in {p.kafka.workdir}")
        bootstrap = p.start_kafka()
        load.create_topics(
            bootstrap,
            {
                s.input_topic: s.topic_partitions,
                s.output_topic: s.topic_partitions,
                s.journal_topic: s.journal_partitions,
            },
            s.journal_topic,
        )
        _say("the counting service")
        p.start_service()
        _say("Flink: a JobManager and 2 TaskManagers")
        p.start_flink()
        restore = _newest_checkpoint(p.flink.checkpoint_dir) if resuming else None
        if resuming and restore is None and self.state.phase != "done":
            raise SoakError(
                f"cannot resume: no retained checkpoint under {p.flink.checkpoint_dir}; "
                "start a fresh soak (--fresh)"
            )
        _say(f"submitting the job{f' from {restore}' if restore else ''}")
        self.state.job_ids.append(p.submit(restore))
        self.save()
        p.wait_running()
        _say(f"job {p.job_id} runs; continuous cleanup beside it")
        p.start_cleanup()
        first = load.last_id(bootstrap, s.input_topic) + 1 if resuming else 0
        self.watchers = {
            kind: load.Watcher(bootstrap, s.output_topic, isolation, self.workdir / f"{kind}.txt")
            for kind, isolation in (
                ("committed", "read_committed"),
                ("processed", "read_uncommitted"),
            )
        }
        for watcher in self.watchers.values():
            watcher.start()
        self.orders = load.Orders(bootstrap, s.input_topic, s.rate, s.keys, first)
        self.sampler = Sampler(p, self.workdir / "samples.jsonl", s.sample_every_s, self._status)
        self.sampler.start()
        if self.state.phase == "load":
            self.load_start = time.time()
            if self.state.load_started_at is None:
                self.state.load_started_at = self.load_start
            self.save()
            self.orders.start()

    def _status(self) -> dict[str, Any]:
        return {
            "elapsed_s": round(self.elapsed(), 1),
            "sent": self.orders.next_id if self.orders else None,
            "committed": len(self.watchers["committed"].arrivals) if self.watchers else None,
            "processed": len(self.watchers["processed"].arrivals) if self.watchers else None,
        }

    def _load(self) -> None:
        """Until the soak time is up: the faults when due, a progress line a minute."""
        s, p = self.settings, self.processes
        pending = [f for f in s.faults if f.at_s >= self._faults_done_until()]
        broker_back: tuple[float, FaultRecord] | None = None
        next_line = next_save = 0.0
        old_jobs_removed = len(self.state.job_ids) < 2
        while self.state.phase == "load" and self.elapsed() < s.seconds:
            now = self.elapsed()
            if pending and now >= pending[0].at_s:
                fault = pending.pop(0)
                _say(f"fault at {now:.0f} s: {fault.kind}")
                if fault.kind == "tm-kill":
                    record = faulting.kill_taskmanager(p, now)
                else:
                    record = faulting.kill_journal_leader(p, now)
                    broker_back = (time.monotonic() + s.broker_down_s, record)
                self.state.faults.append(record)
                self.save()
                _say(f"  {record.target} killed")
            if broker_back is not None and time.monotonic() >= broker_back[0]:
                _say(f"  starting broker {broker_back[1].node} again")
                faulting.restart_broker(p, broker_back[1])
                broker_back = None
                self.save()
            if not old_jobs_removed and _completed(self.sampler) > 0:
                old_jobs_removed = _remove_other_jobs(p.flink.checkpoint_dir, p.job_id)
            if now >= next_line:
                self._progress(now)
                next_line = now + 60
            if now >= next_save:  # a soak killed now resumes at most this far back
                # elapsed() again: a fault above may have taken its time since ``now``
                self.state.elapsed_s, self.load_start = self.elapsed(), time.time()
                self.save()
                next_save = now + 5
            time.sleep(1)
        if broker_back is not None:
            faulting.restart_broker(p, broker_back[1])
        self.state.elapsed_s = self.elapsed()
        self.load_start = None
        self.state.phase = "drain"
        self.save()

    def _faults_done_until(self) -> float:
        return max((f.at_s for f in self.state.faults), default=-1.0) + 1e-6

    def _progress(self, now: float) -> None:
        last = self.sampler.last if self.sampler else {}
        tms = " ".join(
            f"{name} {m['jvm_mb']:.0f}+{m['python_mb']:.0f} MB"
            for name, m in last.get("taskmanagers", {}).items()
        )
        _say(
            f"{now / 60:.1f} min: sent {self.orders.next_id if self.orders else 0}, committed "
            f"{len(self.watchers['committed'].arrivals)}, job {last.get('job', '?')}, "
            f"checkpoint {last.get('checkpoint', {}).get('state_bytes', 0) / 1e6:.1f} MB, "
            f"journal {last.get('journal', {}).get('disk_bytes', 0) / 1e6:.1f} MB, {tms}, "
            f"load {last.get('load1', '?')}"
        )

    def _finish(self) -> int:
        s, p = self.settings, self.processes
        if self.orders is not None and self.orders.is_alive():
            self.orders.stop()
        bootstrap = p.kafka.bootstrap
        sent = dict(load.read_all(bootstrap, s.input_topic, "read_uncommitted"))
        _say(f"draining: {len(sent)} orders sent, waiting for their committed results")
        committed = self.watchers["committed"]
        deadline = time.monotonic() + s.drain_timeout_s
        while time.monotonic() < deadline:
            missing = len(set(sent) - set(committed.arrivals))
            if not missing:
                break
            time.sleep(2)
        output_counts = Counter(
            i for i, _ in load.read_all(bootstrap, s.output_topic, "read_committed")
        )
        call_counts = httpx.get(f"{p.service_url}/counts", timeout=60).json()
        found = report.verdict(sent, output_counts, call_counts, s.keys)
        self._stop_threads()
        samples = _samples(self.workdir / "samples.jsonl")
        result = report.results(
            settings=s,
            load_started_at=self.state.load_started_at or self.state.started_at,
            ended_at=time.time(),
            sessions=[*self.state.sessions, (self.session_start, time.time())],
            found=found,
            sent=sent,
            committed=committed.arrivals,
            processed=self.watchers["processed"].arrivals,
            samples=samples,
            faults=self.state.faults,
            load={"before": self.load_before, "after": _uptime()},
            cleanup_rounds=_cleanup_rounds(self.workdir / "cleanup.log"),
        )
        written = report.write(result, self.results_dir)
        self.state.phase = "done"
        self.state.finished = True
        self.save()
        for path in written:
            print(f"wrote {path}")
        if found.lost:
            more = " ..." if len(found.lost) > 20 else ""
            print(f"lost (no committed result): {found.lost[:20]}{more}")
        if found.duplicated_outputs:
            print(f"results committed twice: {found.duplicated_outputs[:20]}")
        if found.duplicated_calls:
            print(f"calls executed twice: {found.duplicated_calls[:20]}")
        rising = report.climbing(result["summary"])
        if rising:
            print(
                f"RSS still climbs after warm-up on {rising} (limit {s.rss_slope_limit:g} MB/min)"
            )
        print(report.closing_line(found, result["summary"], s.minutes))
        return 1 if found.duplicated or found.lost or rising else 0

    def _stop_threads(self) -> None:
        if self.orders is not None and self.orders.is_alive():
            self.orders.stop()
        if self.sampler is not None and self.sampler.is_alive():
            self.sampler.stop()
        for watcher in self.watchers.values():
            if watcher.is_alive():
                watcher.stop()


def _completed(sampler: Sampler | None) -> int:
    return int((sampler.last if sampler else {}).get("checkpoint", {}).get("completed", 0))


def _newest_checkpoint(directory: Path) -> str | None:
    """The newest retained checkpoint (``chk-N`` with its ``_metadata``) of any job."""
    found = [m.parent for m in directory.glob("*/chk-*/_metadata")]
    if not found:
        return None
    return str(max(found, key=lambda c: c.stat().st_mtime))


def _remove_other_jobs(directory: Path, job_id: str | None) -> bool:
    """Delete the checkpoints of the jobs before the resumed one, once it has its own: the
    cleanup plans for the oldest retained checkpoint anywhere under the directory."""
    for other in directory.iterdir():
        if other.is_dir() and other.name != job_id:
            shutil.rmtree(other, ignore_errors=True)
    return True


def _samples(path: Path) -> list[dict[str, Any]]:
    with contextlib.suppress(FileNotFoundError):
        return [msgspec.json.decode(line) for line in path.read_bytes().splitlines() if line]
    return []


def _cleanup_rounds(path: Path) -> dict[str, int]:
    """Rounds of the continuous cleanup by result (deleted, nothing, failed), from its log."""
    rounds: Counter[str] = Counter()
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(errors="replace").splitlines():
            found = ROUND.search(line)
            if found:
                rounds[found.group(1)] += 1
    return dict(rounds)


def _uptime() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _say(text: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {text}", flush=True)


def on_signals() -> None:
    """SIGTERM and SIGHUP end the soak as Ctrl-C does: through every ``finally``."""

    def stop(signum: int, _: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
