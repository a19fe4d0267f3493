"""Restoring golden state with the current code: shared by generate.py (which records what a
restore gave when the files were made) and test_compat.py (which checks it still does).

A golden job directory holds the state (a LocalRunner snapshot or a Flink
savepoint), the SQLite journal it refers to (``journal.db``), what the counting
service had executed when the state was taken (``service.json``: the external
system remembers its calls, and reconcilers ask it) and ``expected.json``.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actionjournal import LocalRunner
from actionjournal.testing.service import CountingService
from tests.compat.agents import CompatAgent, RelocatedSqliteStore, read_lines


@dataclass
class Restored:
    calls: dict[str, int]
    """Calls executed during the restore, by name."""
    outputs: list[dict[str, Any]]
    """Outputs of the restored job, deduplicated, sorted by input number."""
    totals: dict[str, int] = field(repr=False)
    """Executions per call id over the golden's life: before the state was taken and after."""
    engine: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"calls": self.calls, "outputs": self.outputs}


def load_expected(golden: Path) -> dict[str, Any]:
    return json.loads((golden / "expected.json").read_text())


def seeded_service(golden: Path) -> CountingService:
    """A counting service that remembers what the golden run's service executed."""
    service = CountingService()
    for call_id, entry in json.loads((golden / "service.json").read_text()).items():
        service.counts[call_id] = entry["count"]
        service.responses[call_id] = entry["response"]
    return service


def dump_service(service: CountingService, path: Path) -> None:
    with service._lock:
        data = {
            cid: {"count": n, "response": service.responses[cid]}
            for cid, n in sorted(service.counts.items())
        }
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def _executed(service: CountingService, seeded: dict[str, int]) -> dict[str, int]:
    by_name: Counter[str] = Counter()
    with service._lock:
        for cid, n in service.counts.items():
            if n > seeded.get(cid, 0):
                by_name[service.responses[cid]["name"]] += n - seeded.get(cid, 0)
    return dict(sorted(by_name.items()))


def _outputs(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    unique = {json.dumps(v, sort_keys=True): v for v in values}
    return sorted(unique.values(), key=lambda v: v["i"])


def restore_local(golden: Path, work: Path) -> Restored:
    """Restore ``golden/snapshot`` on a copy of its journal, resubmit the source, run to the end."""
    expected = load_expected(golden)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(golden / "journal.db", work / "journal.db")
    service = seeded_service(golden)
    seeded = dict(service.counts)
    with service:
        store = RelocatedSqliteStore(work / "journal.db", expected["journal_name"])
        source = [tuple(item) for item in expected["source"]]

        async def go() -> LocalRunner:
            runner = LocalRunner.restore(golden / "snapshot", CompatAgent(service.url), store)
            await runner.run_source(source)
            return runner

        try:
            runner = asyncio.run(go())
        finally:
            store.close()
        service.wait_idle(quiet=0.05)
        outputs = [event.attributes["output"] for _, event in runner.outputs]
        return Restored(
            _executed(service, seeded), _outputs(outputs), dict(service.counts), runner.counts
        )


def build_flink_job(env: Any, url: str, source: list[str], rate: float, store_factory: Any, sink):
    """The golden job's topology; its uids must match the savepoint's."""
    from actionjournal.flink import AgentsConfig
    from actionjournal.flink.function import AgentsExecutionEnvironment
    from actionjournal.testing.flink import paced_source
    from tests.compat.agents import key_of

    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig())
    stream = paced_source(env, source, rate)
    job = agents.from_datastream(stream, key_selector=key_of)
    out = job.apply(CompatAgent(url), store_factory=store_factory).to_datastream()
    return out.map(sink).uid("sink").name("sink")


def restore_flink(golden: Path, work: Path, parallelism: int = 2) -> Restored:
    """Restore ``golden/savepoint`` in a new PyFlink job on a copy of its journal."""
    from actionjournal.testing.flink import local_env
    from tests.compat.agents import AppendTo, relocated

    expected = load_expected(golden)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(golden / "journal.db", work / "journal.db")
    shutil.copytree(golden / "savepoint", work / "savepoint")
    sink = work / "outputs.jsonl"
    service = seeded_service(golden)
    seeded = dict(service.counts)
    with service:
        env = local_env(
            work / "checkpoints",
            parallelism=parallelism,
            restore_from=str((work / "savepoint").resolve()),
        )
        factory = functools.partial(relocated, str(work / "journal.db"), expected["journal_name"])
        build_flink_job(
            env, service.url, expected["source"], expected["rate"], factory, AppendTo(str(sink))
        )
        env.execute("compat-restore")
        service.wait_idle(quiet=0.2)
        outputs = _outputs(read_lines(sink))
        return Restored(_executed(service, seeded), outputs, dict(service.counts))


def describe(value: Any) -> Any:
    """A JSON-able description of a decoded value (models with their type, bytes in base64)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        name = f"{type(value).__module__}.{type(value).__qualname__}"
        return {"model": name, "fields": value.model_dump(mode="json")}
    if isinstance(value, bytes):
        return {"bytes": b64(value)}
    if isinstance(value, dict):
        return {"dict": [[describe(k), describe(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [describe(v) for v in value]
    assert value is None or isinstance(value, (str, int, float, bool)), type(value)
    return value


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)
