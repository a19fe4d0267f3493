"""The agent and process driver of the remote-job crash tests (a child process that gets killed).

python tests/remote_job_agent.py STATE_DIR SERVICE_URL N_INPUTS
    [--crash before:CallStarted:1 | ...]   SIGKILL at a journal append (CrashingStore)
    [--kill-after-post]                    SIGKILL right after the first POST was answered
    [--kill-on-progress]                   SIGKILL at the first progress event of a stream
    [--job '{"message_field": "input"}']   RemoteAgentJob options, as JSON, for the service's shape

Each input asks the remote agent one question through ``RemoteAgentJob``; inputs go to
different keys, so several remote runs are in flight when the process dies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from actionjournal import Agent, Event, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.reconcilers import RemoteAgentJob
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore, kill_now

AGENT = "researcher"


class KillingJob(RemoteAgentJob):
    """Dies for real in the windows no journal append marks."""

    def __init__(self, url: str, after_post: bool, on_progress: bool, **options: Any) -> None:
        super().__init__(url, AGENT, poll_interval=0.1, on_event=self._event, **options)
        self.after_post = after_post
        self.on_progress = on_progress

    async def _submit(self, client: httpx.AsyncClient, agent: str, thread: str, message: Any):
        await super()._submit(client, agent, thread, message)
        if self.after_post:
            kill_now()  # the service started the run; the journal has no outcome

    def _event(self, thread: str, event: str, data: Any) -> None:
        if self.on_progress and event == "progress":
            kill_now()  # mid-stream: the run goes on without us


class Researcher(Agent):
    uid = "researcher"

    def __init__(self, job: RemoteAgentJob) -> None:
        self.job = job

    @action(InputEvent)
    async def ask(self, event: Event, ctx: Any) -> None:
        question = event.input
        answer = await self.job.run(ctx, question["text"])
        answers = ctx.short_term_memory.get("answers", [])
        ctx.short_term_memory.set("answers", [*answers, answer])
        ctx.send_event(OutputEvent({"id": question["id"], "answer": answer}))


def inputs(n: int) -> list[tuple[str, dict[str, Any]]]:
    return [(f"user_{i}", {"id": i, "text": f"question {i}"}) for i in range(n)]


async def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("state_dir", type=Path)
    p.add_argument("url")
    p.add_argument("n", type=int)
    p.add_argument("--crash")
    p.add_argument("--kill-after-post", action="store_true")
    p.add_argument("--kill-on-progress", action="store_true")
    p.add_argument("--job", type=json.loads, default={})
    args = p.parse_args(argv)
    store = SqliteStore(args.state_dir / "journal.db")
    job = KillingJob(args.url, args.kill_after_post, args.kill_on_progress, **args.job)
    agent = Researcher(job)
    crash_store = CrashingStore(store, args.crash)
    snapshot = args.state_dir / "snapshot"
    with open(args.state_dir / "outputs.jsonl", "a") as sink:

        def emit(key: Any, event: Event) -> None:
            sink.write(json.dumps([key, event.id, event.output]) + "\n")
            sink.flush()

        if snapshot.exists():
            runner = LocalRunner.restore(snapshot, agent, crash_store, on_output=emit)
        else:
            runner = LocalRunner(agent, crash_store, on_output=emit)
        await runner.run_source(inputs(args.n), snapshot_path=snapshot, snapshot_every=1, pace=0.01)
    runner.snapshot(args.state_dir / "final")
    store.close()
    print(json.dumps(runner.counts))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
