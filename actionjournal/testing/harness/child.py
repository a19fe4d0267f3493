"""Crash steps: the job runs in a child process that is SIGKILLed at the crash point.

The parent writes a :class:`ChildSpec` (pickled: the agent factory, the journal's store
config, the settings, the source), runs ``python -m actionjournal.testing.harness.child
SPEC``, and reads back what the child emitted before it died (length-prefixed frames,
so a write cut by the kill is dropped) and, if it was not killed, its result or error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actionjournal.durable.config import JournalConfig
from actionjournal.durable.events import Event
from actionjournal.operator.local import LocalRunner
from actionjournal.testing.crash import CrashingStore
from actionjournal.testing.harness.agents import AgentFactory, instrument, make_agent
from actionjournal.testing.harness.journals import Journal, open_journal


@dataclasses.dataclass
class ChildSpec:
    agent: AgentFactory
    url: str
    journal: Journal | None
    config: JournalConfig
    start: Path | None
    source: list[tuple[Any, Any]]
    crash_at: str | None
    checkpoint_every: int
    checkpoint_path: Path
    pace: float
    outputs_path: Path
    result_path: Path


def run(spec: ChildSpec, spec_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run the child for ``spec`` (already pickled at ``spec_path``) to its end or its kill."""
    return subprocess.run(
        [sys.executable, "-m", "actionjournal.testing.harness.child", str(spec_path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_child_env(),
        cwd=spec_path.parent,
    )


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


def read_outputs(path: Path, config: JournalConfig) -> list[tuple[Any, str | None, Any]]:
    """``(key, event id, output)`` of every output the child emitted completely."""
    if not path.exists():
        return []
    values = config.value_codec()
    data, outputs = path.read_bytes(), []
    while len(data) >= 4:
        size = int.from_bytes(data[:4], "big")
        if len(data) < 4 + size:
            break  # the last write was cut by the kill
        key, event_id, value = values.decode(data[4 : 4 + size])
        outputs.append((key, event_id, value))
        data = data[4 + size :]
    return outputs


def read_result(path: Path) -> dict[str, Any]:
    try:
        result: dict[str, Any] = pickle.loads(path.read_bytes())
        return result
    except Exception:
        return {}


# -- in the child --------------------------------------------------------------------------


async def _run(spec: ChildSpec) -> dict[str, int]:
    codec = spec.config.record_codec()
    store = open_journal(spec.journal, codec)
    crashing = CrashingStore(store, spec.crash_at)
    agent = instrument(make_agent(spec.agent, spec.url), spec.url)
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
    spec: ChildSpec = pickle.loads(Path(spec_path).read_bytes())
    try:
        engine = asyncio.run(_run(spec))
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


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m actionjournal.testing.harness.child SPEC (run by RestoreScenario)")
        return 2
    return _child_main(argv[0])


if __name__ == "__main__":
    from actionjournal.testing.harness.child import main as importable  # not __main__'s copy

    sys.exit(importable(sys.argv[1:]))
