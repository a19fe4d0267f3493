"""Example 2 as a PyFlink job: ``python examples/ticket_triage/job.py``.

Chat models: the local test model server unless ``OLLAMA_HOST`` is set (then model
``OLLAMA_MODEL``, default ``qwen3:8b``). Remote investigator agent: the local remote
agent service (:mod:`actionjournal.testing.remote_agents`) unless ``REMOTE_AGENTS_URL``
names a real one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make `examples` importable here...
    sys.path.insert(0, str(ROOT))
# ...and in the Flink Python workers, which unpickle the agent by module name.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
)

from examples.ticket_triage.agent import (  # noqa: E402
    TEST_LATENCY,
    TICKETS,
    TicketTriage,
    chat_models,
    customer_of,
    investigator,
)


def run_job(
    tickets: Sequence[dict[str, Any]], agent: TicketTriage, directory: Path
) -> list[dict[str, Any]]:
    """Run the agent over ``tickets`` in a PyFlink job with checkpoints; its outputs."""
    from pyflink.common import Types

    from actionjournal.flink import AgentsConfig, AgentsExecutionEnvironment
    from actionjournal.stores import SqliteStoreConfig
    from actionjournal.testing import local_env, paced_source

    env = local_env(directory / "checkpoints", checkpoint_interval_ms=300, restarts=2)
    config = AgentsConfig(store=SqliteStoreConfig(path=str(directory / "journal.db")))
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    source = paced_source(env, [json.dumps(t) for t in tickets], per_second=20)
    parsed = source.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
    job = agents.from_datastream(parsed, key_selector=customer_of).apply(agent)
    with job.to_datastream().execute_and_collect("ticket-triage") as results:
        return list(results)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--dir", type=Path, help="keep checkpoints and journal here (default: a temp dir, deleted)"
    )
    args = p.parse_args(argv)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        directory = args.dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="ticket-triage-"))
        )
        directory.mkdir(parents=True, exist_ok=True)
        host, remote = os.environ.get("OLLAMA_HOST"), os.environ.get("REMOTE_AGENTS_URL")
        if host:
            model = os.environ.get("OLLAMA_MODEL", "qwen3:8b")
            print(f"asking Ollama at {host}, model {model}")
            models = chat_models(host, model)
        else:
            from actionjournal.testing import ModelServer

            server = stack.enter_context(ModelServer(latency=TEST_LATENCY))
            print(f"asking the local test model server at {server.url} (set OLLAMA_HOST)")
            models = chat_models(server.url)
        if not remote:
            from actionjournal.testing import RemoteAgentService

            service = stack.enter_context(RemoteAgentService(run_seconds=0.5))
            remote = service.url
            print(f"remote investigator: the local service at {remote} (set REMOTE_AGENTS_URL)")
        outputs = run_job(TICKETS, TicketTriage(models, investigator(remote)), directory)
    for out in sorted({o["id"]: o for o in outputs}.values(), key=lambda o: o["id"]):
        triage = out["triage"]
        print(
            f"ticket {out['id']} ({out['customer']}, {out['plan']}): {triage['category']}, "
            f"{triage['urgency']} urgency"
            + (f"; investigator: {out['finding']}" if out["escalated"] else "")
            + f"\n  reply: {out['reply']}"
        )
    print(f"{len(outputs)} tickets in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
