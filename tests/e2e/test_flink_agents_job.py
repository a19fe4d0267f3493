"""The Flink Agents face in real PyFlink jobs on a local MiniCluster (issue 18): the agents
of the local tests, attached with ``from_datastream``/``from_table`` as upstream does."""

from __future__ import annotations

from collections import Counter

import pytest

from actionjournal.flink_agents.api.execution_environment import AgentsExecutionEnvironment
from actionjournal.flink_agents.api.resource import ResourceType
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.service import CountingService
from tests.docs import docs_sample
from tests.porting_agents import (
    TOOL_PLAN,
    RowUpper,
    SupportTools,
    model_server_connection,
    support_agent,
)

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def customer_of(line: str) -> str:
    return line.split("|")[0]


def test_a_react_agent_job_killed_between_two_tool_calls_repeats_nothing(tmp_path):
    # One customer's three requests: its runs go one after the other, so no other call is in
    # flight when the worker is killed (a call in flight then runs again after the restore,
    # unless a reconciler settles it; with a key per request, runs bunched up behind a slow
    # start overlapped the kill: lookup_order ran 4 times once, at load 5).
    lines = [f"customer-0|refund my order o-{i}" for i in range(3)]
    with (
        ModelServer(tool_calls={"support": TOOL_PLAN}) as server,
        CountingService() as service,
    ):
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300)
        agents_env = AgentsExecutionEnvironment.get_execution_environment(
            env, journal=str(tmp_path / "journal.db")
        )
        agents_env.add_resource(
            "model_server",
            ResourceType.CHAT_MODEL_CONNECTION,
            model_server_connection("openai", server.url),
        )
        # The Python worker SIGKILLs itself when the first refund is asked for: after the
        # lookup was made and journaled, before the refund reaches the service.
        SupportTools(service.url, kill_at="refund", marker=str(tmp_path / "killed")).register(
            agents_env
        )
        source = paced_source(env, lines, per_second=2)
        outputs = (
            agents_env.from_datastream(source, key_selector=customer_of)
            .apply(support_agent("openai"))
            .to_datastream()
        )
        sink = JsonLines(tmp_path / "outputs.jsonl")
        outputs.map(sink)
        agents_env.execute("flink-agents-react")
        calls = dict(service.counts)
        by_tool = service.calls_by_name()
    assert (tmp_path / "killed").exists(), "the worker was not killed"
    assert len(set(sink.read())) == 3 and all(o.startswith("[support] reply") for o in sink.read())
    assert by_tool == {"lookup_order": 3, "refund": 3}
    assert Counter(calls.values()) == {1: 6}, "a tool call ran twice"
    assert server.count() == 6 and not server.repeated(), "the model was asked twice"


def test_a_table_in_and_a_table_out(tmp_path):
    from pyflink.common import Row, Types
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment

    env = local_env()
    t_env = StreamTableEnvironment.create(env)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, t_env, journal=str(tmp_path / "journal.db")
    )
    table = t_env.from_elements(
        [Row(id=1, text="pasta"), Row(id=2, text="pizza")],
        DataTypes.ROW(
            [DataTypes.FIELD("id", DataTypes.BIGINT()), DataTypes.FIELD("text", DataTypes.STRING())]
        ),
    )
    output_type = Types.ROW_NAMED(["id", "text"], [Types.LONG(), Types.STRING()])
    schema = (
        Schema.new_builder()
        .column("id", DataTypes.BIGINT())
        .column("text", DataTypes.STRING())
        .build()
    )
    result = (
        agents_env.from_table(table, key_selector=lambda row: row.id)
        .apply(RowUpper())
        .to_table(schema, output_type)
    )
    with result.execute().collect() as rows:
        got = sorted((row[0], row[1]) for row in rows)
    assert got == [(1, "PASTA"), (2, "PIZZA")]


def test_the_porting_docs_flink_sample_runs_as_written(tmp_path, monkeypatch):
    from actionjournal.durable.identity import key_id
    from actionjournal.durable.records import RunCompleted
    from actionjournal.stores import SqliteStore

    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "porting_docs"}
    exec(docs_sample("porting.md", "class Checkout(Agent)"), namespace)
    exec(docs_sample("porting.md", "from_datastream"), namespace)
    store = SqliteStore(tmp_path / "checkout.db")
    try:
        records = store.read_key("default", "Checkout", key_id("o-2"), None)
    finally:
        store.close()
    assert any(isinstance(r, RunCompleted) for r in records), "the job journaled no run of o-2"
