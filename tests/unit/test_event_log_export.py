"""``actionjournal journal events``: the journal's event lineage in Apache Flink Agents' Event
Log format (issue 35, item 4), read back as its trace-tree tool reads it: flat JSON lines,
input events as roots without upstream fields, every other event naming the event and the
action it came from."""

from __future__ import annotations

import asyncio
import json

from actionjournal import Agent, Event, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.stores import SqliteStore
from actionjournal.tools.cli import main as cli


class Chain(Agent):
    uid = "chain"

    @action(InputEvent)
    def first(self, event, ctx):
        ctx.send_event(Event("middle", {"order": event.input, "raw": b"\x01"}))

    @action("middle")
    def second(self, event, ctx):
        ctx.send_event(OutputEvent(f"done {event.attributes['order']}"))


def test_events_come_out_as_flink_agents_event_log_trees(tmp_path, capsys):
    db = tmp_path / "j.db"
    store = SqliteStore(db)
    runner = LocalRunner(Chain(), store)
    asyncio.run(runner.run([("alice", "o-1"), ("bob", "o-2")]))
    store.close()
    out = tmp_path / "log"
    assert (
        cli(["journal", "events", "--store", "sqlite", "--path", str(db), "--out", str(out)]) == 0
    )
    (path,) = out.iterdir()
    assert path.name == "events-default-all-0.log"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 6  # per run: the input, middle, the output
    for record in records:
        assert {"timestamp", "logLevel", "eventId", "eventType", "eventAttributes"} <= set(record)
    by_id = {r["eventId"]: r for r in records}
    roots = [r for r in records if r["eventType"] == "_input_event"]
    assert len(roots) == 2 and all("upstreamEventId" not in r for r in roots)
    outputs = [r for r in records if r["eventType"] == OutputEvent.TYPE]
    chains = []
    for output in outputs:  # walk up as the trace tree does
        middle = by_id[output["upstreamEventId"]]
        assert output["upstreamActionName"] == "second"
        assert middle["eventType"] == "middle" and middle["upstreamActionName"] == "first"
        root = by_id[middle["upstreamEventId"]]
        assert root in roots
        chains.append((root["eventId"], middle["eventAttributes"]["order"], output))
    assert sorted(order for _, order, _ in chains) == ["o-1", "o-2"]
    assert len({root for root, _, _ in chains}) == 2
    # The same lines on stdout.
    assert cli(["journal", "events", "--store", "sqlite", "--path", str(db)]) == 0
    assert capsys.readouterr().out.splitlines() == path.read_text().splitlines()
