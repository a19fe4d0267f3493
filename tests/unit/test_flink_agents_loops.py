"""Agent loops of the Flink Agents face (issue 35): budgets kept in the journal, and user
context handed back on responses, against a local model server that counts requests."""

from __future__ import annotations

from typing import Any

import pytest

from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.agents.budget import LoopBudget
from actionjournal.flink_agents.api.agents.react_agent import ReActAgent
from actionjournal.flink_agents.api.chat_message import ChatMessage
from actionjournal.flink_agents.api.decorators import action
from actionjournal.flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from actionjournal.flink_agents.api.events.event import Event, InputEvent, OutputEvent
from actionjournal.flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from actionjournal.flink_agents.api.execution_environment import AgentsExecutionEnvironment
from actionjournal.flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from actionjournal.flink_agents.api.runner_context import RunnerContext
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.service import CountingService
from tests.porting_agents import SupportTools, model_server_connection

LOOKUP = [{"name": "lookup_order", "arguments": {"order_id": "o-1"}}]
ENDLESS = {"support": [LOOKUP] * 20}  # a model that would call tools for 20 rounds


def setup_descriptor() -> ResourceDescriptor:
    return ResourceDescriptor(
        clazz=ResourceName.ChatModel.OLLAMA_SETUP,
        connection="model_server",
        model="support",
        tools=["lookup_order", "refund"],
    )


class Asks(Agent):
    """Sends one chat request with a budget and a context; outputs the whole response."""

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        budget, context = InputEvent.from_event(event).input
        message = ChatMessage(content="refund my order o-1")
        request = ChatRequestEvent("support", [message], context=context, budget=budget)
        ctx.send_event(request)
        ctx.short_term_memory.set("request_id", str(request.id))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        response = ChatResponseEvent.from_event(event)
        assert str(response.request_id) == ctx.short_term_memory.get("request_id")
        ctx.send_event(
            OutputEvent(
                output={
                    "context": response.context,
                    "content": response.response.content,
                    "extra": {
                        k: v
                        for k, v in response.response.extra_args.items()
                        if k.startswith("budget")
                    },
                }
            )
        )


def run_loop(
    server: ModelServer, tools: CountingService, journal, budget: LoopBudget | None, context=None
) -> tuple[dict[str, Any], Any]:
    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(journal))
    env.add_resource(
        "model_server",
        ResourceType.CHAT_MODEL_CONNECTION,
        model_server_connection("ollama", server.url),
    )
    env.add_resource("support", ResourceType.CHAT_MODEL, setup_descriptor())
    SupportTools(tools.url).register(env)
    outputs = env.from_list([{"key": "c-1", "value": (budget, context)}]).apply(Asks()).to_list()
    env.execute()
    ((out,),) = [o.values() for o in outputs]
    return out, env.metrics


def reported_tokens(server: ModelServer) -> int:
    """Tokens the model server reported over every request it answered (words, its unit)."""
    total = 0
    for request in server.requests:
        calls = server.tool_round(request)
        reply = "" if calls else server.reply(request)
        total += len(request.prompt.split()) + len(reply.split())
    return total


def test_a_round_budget_stops_the_loop_at_once(tmp_path):
    with ModelServer(tool_calls=ENDLESS) as server, CountingService() as tools:
        budget = LoopBudget(rounds=3)
        out, metrics = run_loop(server, tools, tmp_path / "j.db", budget)
        assert server.count() == 3 and tools.executions() == 3
        assert out["extra"] == {
            "budget_exhausted": "rounds",
            "budget_spent": {"rounds": 3, "tokens": reported_tokens(server)},
        }
        assert metrics.value("actionjournal_budget_exhausted_total", resource="rounds") == 1
        assert metrics.value("actionjournal_budget_spent_total", resource="rounds") == 3
        spent_tokens = metrics.value("actionjournal_budget_spent_total", resource="tokens")
        assert spent_tokens == reported_tokens(server) > 0
        # Run again on the journal: replayed, nothing asked, nothing counted as spent anew.
        again, metrics = run_loop(server, tools, tmp_path / "j.db", budget)
        assert again == out and server.count() == 3 and tools.executions() == 3
        assert metrics.value("actionjournal_budget_spent_total", resource="rounds") == 0


def test_a_token_budget_counts_the_models_reported_usage(tmp_path):
    with ModelServer(tool_calls=ENDLESS) as server, CountingService() as tools:
        out, _ = run_loop(server, tools, tmp_path / "j.db", LoopBudget(tokens=100))
        spent = out["extra"]["budget_spent"]
        assert out["extra"]["budget_exhausted"] == "tokens"
        assert spent["tokens"] == reported_tokens(server) >= 100
        assert spent["rounds"] == server.count() >= 2
        # No round started once the budget was reached: without the last, it was below.
        last = server.requests[-1]
        assert spent["tokens"] - len(last.prompt.split()) < 100


def test_a_final_round_asks_once_more_without_tools(tmp_path):
    with ModelServer(tool_calls=ENDLESS) as server, CountingService() as tools:
        budget = LoopBudget(rounds=2, on_exhausted="final_round")
        out, metrics = run_loop(server, tools, tmp_path / "j.db", budget)
        assert server.count() == 3 and tools.executions() == 2  # 2 rounds, 1 wrap-up
        assert "budget of this conversation is exhausted (rounds)" in server.requests[-1].prompt
        assert out["extra"]["budget_exhausted"] == "rounds"
        assert out["extra"]["budget_spent"]["rounds"] == 3
        assert metrics.value("actionjournal_budget_exhausted_total", resource="rounds") == 1


def test_a_wall_time_budget_is_a_deadline_from_the_first_round(tmp_path):
    with (
        ModelServer(latency=0.3, tool_calls=ENDLESS) as server,
        CountingService() as tools,
    ):
        out, _ = run_loop(server, tools, tmp_path / "j.db", LoopBudget(wall_time=0.5))
        assert out["extra"]["budget_exhausted"] == "wall_time"
        assert 1 <= server.count() <= 2  # 0.3 s a round: past 0.5 s after one or two
        again, _ = run_loop(server, tools, tmp_path / "j.db", LoopBudget(wall_time=0.5))
        assert again == out  # the clock readings are journaled: the replay decides the same


def test_a_react_agent_takes_a_budget(tmp_path):
    with ModelServer(tool_calls=ENDLESS) as server, CountingService() as tools:
        env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j"))
        connection = model_server_connection("ollama", server.url)
        env.add_resource("model_server", ResourceType.CHAT_MODEL_CONNECTION, connection)
        SupportTools(tools.url).register(env)
        agent = ReActAgent(chat_model=setup_descriptor(), budget=LoopBudget(rounds=2))
        outputs = env.from_list([{"key": "c", "value": "refund o-1"}]).apply(agent).to_list()
        env.execute()
        assert outputs == [{"c": ""}]  # stopped while the model was still calling tools
        assert server.count() == 2 and tools.executions() == 2


def test_a_budget_is_checked_when_made():
    with pytest.raises(ValueError, match="rounds"):
        LoopBudget(rounds=0)
    with pytest.raises(ValueError, match="on_exhausted"):
        LoopBudget(on_exhausted="later")


# -- correlation -------------------------------------------------------------------------


def test_a_chat_requests_context_comes_back_on_its_response_through_tool_rounds(tmp_path):
    with ModelServer(tool_calls={"support": [LOOKUP] * 2}) as server, CountingService() as tools:
        context = {"ticket": 42, "tags": ["refund"]}
        out, _ = run_loop(server, tools, tmp_path / "j.db", None, context)
        assert out["context"] == context and server.count() == 3
        again, _ = run_loop(server, tools, tmp_path / "j.db", None, context)
        assert again == out and server.count() == 3  # replayed, the same context


SEEN: list[Any] = []


class ToolCaller(Agent):
    """Sends its own tool request with a context; records the response's."""

    @action(InputEvent)
    @staticmethod
    def call(event: Event, ctx: RunnerContext) -> None:
        calls = [
            {
                "id": "t-1",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": {"order_id": "o-9"}},
            }
        ]
        ctx.send_event(ToolRequestEvent("none", calls, context=InputEvent.from_event(event).input))

    @action(ToolResponseEvent)
    @staticmethod
    def done(event: Event, ctx: RunnerContext) -> None:
        response = ToolResponseEvent.from_event(event)
        SEEN.append((response.context, response.responses))
        ctx.send_event(OutputEvent(output=response.context))


def test_a_tool_requests_context_comes_back_on_its_response(tmp_path):
    SEEN.clear()
    with CountingService() as tools:
        env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j"))
        SupportTools(tools.url).register(env)
        outputs = env.from_list([{"key": "k", "value": ["a", 1]}]).apply(ToolCaller()).to_list()
        env.execute()
        assert outputs == [{"k": ["a", 1]}] and SEEN[0][0] == ["a", 1]
        assert tools.executions() == 1


# -- lineage -----------------------------------------------------------------------------

LINEAGE: list[tuple[str, Any, Any, Any]] = []


class Chain(Agent):
    """input -> first -> middle -> second -> output; each action notes what it received."""

    @action(InputEvent)
    @staticmethod
    def first(event: Event, ctx: RunnerContext) -> None:
        LINEAGE.append(("first", event.id, event.upstream_event_id, event.upstream_action))
        ctx.send_event(Event(type="middle", attributes={"n": InputEvent.from_event(event).input}))

    @action("middle")
    @staticmethod
    def second(event: Event, ctx: RunnerContext) -> None:
        LINEAGE.append(("second", event.id, event.upstream_event_id, event.upstream_action))
        ctx.send_event(OutputEvent(output=event.get_attr("n")))


def test_every_event_records_the_event_and_action_it_came_from_and_replays_it(tmp_path, capsys):
    from actionjournal.tools.cli import main as cli

    LINEAGE.clear()
    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j.db"))
    env.from_list([{"key": "k", "value": 1}]).apply(Chain()).to_list()
    env.execute()
    (_, input_id, no_event, no_action), (_, middle_id, upstream, via) = LINEAGE
    assert (no_event, no_action) == (None, None)  # the run's input has no upstream
    assert (upstream, via) == (input_id, "first")
    # Run again with one more input: the journaled run replays (no action runs again), the
    # new one runs, its lineage as the first run's.
    LINEAGE.clear()
    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j.db"))
    env.from_list([{"key": "k", "value": 1}, {"key": "k", "value": 2}]).apply(Chain()).to_list()
    env.execute()
    assert [entry[0] for entry in LINEAGE] == ["first", "second"]  # only the new input ran
    assert LINEAGE[1][3] == "first" and LINEAGE[1][2] == LINEAGE[0][1]
    capsys.readouterr()
    cli(["journal", "inspect", "--store", "sqlite", "--path", str(tmp_path / "j.db"), "--key", "k"])
    text = capsys.readouterr().out
    assert f"on {input_id.hex[:12]} -> middle {middle_id.hex[:12]}" in text
    assert f"on {middle_id.hex[:12]} -> _output_event" in text
