"""Chat model calls as durable calls, against the local model server over real HTTP."""

from __future__ import annotations

import asyncio
import json
import pickle
import re
import socket
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from actionjournal import (
    ActionFailedError,
    Agent,
    Event,
    InputEvent,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.chat import (
    ChatAgent,
    ChatRequestEvent,
    ChatResponse,
    ChatResponseError,
    ChatResponseEvent,
    ChatTimeoutError,
    ChatUnreachableError,
    OllamaChat,
    OpenAIChat,
    StructuredOutputError,
)
from actionjournal.durable.errors import ConfigurationError, DivergenceError
from actionjournal.stores import SqliteStore
from actionjournal.testing.model_server import ModelServer


class Mood(BaseModel):
    mood: Literal["happy", "sad"]
    score: int = Field(ge=1, le=5)


def run(agent, store, inputs):
    runner = LocalRunner(agent, store)
    asyncio.run(runner.run(inputs))
    return runner


def outputs(runner):
    return [event.output for _, event in runner.outputs]


class TwoQuestions(Agent):
    """Asks twice in one action; ``fail_between`` fails the action after the first answer."""

    uid = "two-questions"

    def __init__(self, url, protocol=OllamaChat, timeout=5.0, fail_between=False):
        self.chat_models = {"judge": protocol(endpoint=url, model="judge-1", timeout=timeout)}
        self.fail_between = fail_between

    @action(InputEvent)
    def ask(self, event, ctx):
        first = ctx.chat("judge", f"how is {event.input}?", schema=Mood)
        if self.fail_between:
            raise RuntimeError("injected failure between the two chat calls")
        second = ctx.chat("judge", [{"role": "user", "content": f"say more on {first.mood}"}])
        ctx.send_event(OutputEvent({"mood": first.mood, "more": second.content}))


@pytest.mark.parametrize("protocol", [OllamaChat, OpenAIChat])
def test_recorded_responses_replay_without_a_new_request(tmp_path, protocol):
    store = SqliteStore(tmp_path / "j.db")
    with ModelServer() as server:
        with pytest.raises(ActionFailedError, match="injected failure"):
            run(TwoQuestions(server.url, protocol, fail_between=True), store, [("k", "tea")])
        assert server.count() == 1
        runner = run(TwoQuestions(server.url, protocol), store, [("k", "tea")])
        assert server.count() == 2 and not server.repeated(), "the first answer was asked again"
        assert runner.counts["replayed"] == 1
        (out,) = outputs(runner)
        first, second = server.requests
        assert out == {
            "mood": Mood.model_validate_json(server.reply(first)).mood,
            "more": server.reply(second),
        }
        # A finished run replays whole: no request at all.
        run(TwoQuestions(server.url, protocol), store, [("k", "tea")])
        assert server.count() == 2


class Parallel(Agent):
    uid = "parallel"

    def __init__(self, url, fail_after=False):
        self.chat_models = {
            "slow": OllamaChat(endpoint=url, model="slow"),
            "fast": OpenAIChat(endpoint=url + "/v1", model="fast"),
        }
        self.fail_after = fail_after

    @action(InputEvent)
    async def ask(self, event, ctx):
        slow, fast = await asyncio.gather(
            ctx.chat_async("slow", f"slow {event.input}"),
            ctx.chat_async("fast", f"fast {event.input}", schema=Mood),
        )
        if self.fail_after:
            raise RuntimeError("injected failure after both answers")
        ctx.send_event(OutputEvent({"slow": slow.content, "fast": fast.model_dump()}))


def test_gathered_chats_replay_by_position_not_by_finishing_order(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    with ModelServer(latency={"slow": 0.3, "fast": 0.0}) as server:
        # The fast answer is journaled first, yet each replays at its own position.
        with pytest.raises(ActionFailedError, match="injected"):
            run(Parallel(server.url, fail_after=True), store, [("k", 1)])
        runner = run(Parallel(server.url), store, [("k", 1)])
        assert runner.counts["replayed"] == 2
        assert server.count() == 2 and not server.repeated()
        slow, fast = sorted(server.requests, key=lambda r: r.model != "slow")
        (out,) = outputs(runner)
        assert out == {"slow": server.reply(slow), "fast": json.loads(server.reply(fast))}


def test_invalid_structured_output_is_a_clear_error_and_stays_journaled(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    with ModelServer(invalid_json={"judge-1"}) as server:
        with pytest.raises(ActionFailedError) as failed:
            run(TwoQuestions(server.url), store, [("k", "tea")])
        error = failed.value.__cause__
        assert isinstance(error, StructuredOutputError)
        text = str(error)
        assert "chat model 'judge'" in text and "judge-1" in text  # the name and the model
        assert "does not validate as Mood" in text and "Invalid JSON" in text  # schema, reason
        assert re.search(r"answered call [0-9a-f]{32} ", text)  # and the call: its stable id
        # The reply was journaled: a retry fails the same way without asking again.
        with pytest.raises(ActionFailedError) as again:
            run(TwoQuestions(server.url), store, [("k", "tea")])
        assert str(again.value.__cause__) == text
        assert server.count() == 1


def test_model_timeout_is_a_clear_error_and_keeps_earlier_answers(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    with ModelServer() as server:
        server.hold("judge-1")
        server.latency["judge-1"] = 0.0

        class Slow(TwoQuestions):
            @action(InputEvent)
            def ask(self, event, ctx):
                ctx.chat("fast", "first")
                ctx.chat("judge", "second")
                ctx.send_event(OutputEvent("done"))

        def agent(timeout):
            a = Slow(server.url, timeout=timeout)
            a.chat_models = {**a.chat_models, "fast": OllamaChat(endpoint=server.url, model="f")}
            return a

        with pytest.raises(ActionFailedError) as failed:
            run(agent(0.3), store, [("k", 1)])
        error = failed.value.__cause__
        assert isinstance(error, ChatTimeoutError)
        assert "chat model 'judge'" in str(error) and "within 0.3 s" in str(error)
        assert "Nothing is journaled for this attempt: the call's retry policy" in str(error)
        server.release("judge-1")
        runner = run(agent(5.0), store, [("k", 1)])
        assert outputs(runner) == ["done"]
        assert server.count(model="f") == 1, "the answer before the timeout was asked again"
        # Three attempts (journal.retry: a timeout is retried), then asked again by the rerun.
        assert server.count(model="judge-1") == 4


def test_unreachable_endpoint_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    agent = TwoQuestions(f"127.0.0.1:{port}")
    agent.chat_models["judge"].config = agent.chat_models["judge"].config.model_copy(
        update={"retries": 1, "retry_delay": 0.01}
    )
    with pytest.raises(ActionFailedError) as failed:
        run(agent, SqliteStore(tmp_path / "j.db"), [("k", 1)])
    error = failed.value.__cause__
    assert isinstance(error, ChatUnreachableError)
    assert f"http://127.0.0.1:{port}/api/chat" in str(error) and "after 2 attempts" in str(error)


def test_http_errors_and_unknown_names_are_clear(tmp_path):
    with ModelServer(models={"other"}) as server:
        with pytest.raises(ActionFailedError) as failed:
            run(TwoQuestions(server.url), SqliteStore(tmp_path / "a.db"), [("k", 1)])
        assert isinstance(failed.value.__cause__, ChatResponseError)
        assert "HTTP 404" in str(failed.value.__cause__) and "ollama pull" in str(
            failed.value.__cause__
        )

        class Misnamed(TwoQuestions):
            @action(InputEvent)
            def ask(self, event, ctx):
                ctx.chat("jugde", "hi")

        with pytest.raises(ActionFailedError) as failed:
            run(Misnamed(server.url), SqliteStore(tmp_path / "b.db"), [("k", 1)])
        assert isinstance(failed.value.__cause__, ConfigurationError)
        assert "no chat model named 'jugde'" in str(failed.value.__cause__)
        assert "['judge']" in str(failed.value.__cause__)


def test_blocking_chat_in_an_async_action_is_refused(tmp_path):
    class Blocking(TwoQuestions):
        @action(InputEvent)
        async def ask(self, event, ctx):
            ctx.chat("judge", "hi")

    with ModelServer() as server, pytest.raises(ActionFailedError, match="chat_async"):
        run(Blocking(server.url), SqliteStore(tmp_path / "j.db"), [("k", 1)])
    assert server.count() == 0


class Collector(ChatAgent):
    """Three requests at once; responses are told apart by their request id."""

    uid = "collector"

    def __init__(self, url):
        self.chat_models = {"m": OpenAIChat(endpoint=url, model="m")}

    @action(InputEvent)
    def ask(self, event, ctx):
        ctx.send_event(ChatRequestEvent("m", "a?", schema=Mood, request_id="a"))
        ctx.send_event(ChatRequestEvent("m", "b?", request_id="b"))
        ctx.send_event(ChatRequestEvent("m", "c?"))  # answered with this event's own id

    @action(ChatResponseEvent)
    async def collect(self, event, ctx):
        ctx.sensory_memory.set(f"got.{event.request_id}", event.response)
        got = ctx.sensory_memory.get("got")
        if len(got) == 3:
            ctx.send_event(Event("all", {"got": got}))
            ctx.send_event(OutputEvent({k: v.content for k, v in sorted(got.items())}))
        if event.request_id == "a":
            assert isinstance(event.parsed, Mood)
        else:
            assert event.parsed is None


def test_chat_response_event_carries_the_request_id(tmp_path):
    with ModelServer() as server:
        runner = run(Collector(server.url), SqliteStore(tmp_path / "j.db"), [("k", 1)])
        (out,) = outputs(runner)
        assert set(out) - {"a", "b"} and {"a", "b"} <= set(out)
        (own,) = set(out) - {"a", "b"}
        assert len(own) == 32  # the request event's id: stable across replays
        assert out["b"].endswith("to: b?")
        assert Mood.model_validate_json(out["a"])
        assert server.count() == 3


def test_connections_pickle_without_their_client_and_validate_settings():
    model = OllamaChat(endpoint="localhost:11434", model="qwen3", timeout=3)
    model._http()
    copy = pickle.loads(pickle.dumps(model))
    assert copy.config == model.config and copy._client is None
    assert copy.url() == "http://localhost:11434/api/chat"
    assert OpenAIChat(endpoint="https://x/v1", model="m").url() == "https://x/v1/chat/completions"
    with pytest.raises(ConfigurationError, match="timeout"):
        OllamaChat(endpoint="x", model="m", timeout=0)
    assert ChatResponse(call_id="c", name="n", model="m", content="{}")


def test_a_changed_prompt_is_a_divergence_not_a_replay(tmp_path):
    class Reworded(TwoQuestions):
        @action(InputEvent)
        def ask(self, event, ctx):
            ctx.chat("judge", f"how, really, is {event.input}?", schema=Mood)

    store = SqliteStore(tmp_path / "j.db")
    with ModelServer() as server:
        with pytest.raises(ActionFailedError, match="injected failure"):
            run(TwoQuestions(server.url, fail_between=True), store, [("k", "tea")])
        with pytest.raises(ActionFailedError) as failed:
            run(Reworded(server.url), store, [("k", "tea")])
        assert isinstance(failed.value.__cause__, DivergenceError)
        assert server.count() == 1


# -- tool calling (issue 18: what the Flink Agents face's tool actions need)

ADD = {
    "name": "add",
    "description": "Adds two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


@pytest.mark.parametrize("protocol", [OllamaChat, OpenAIChat])
def test_a_model_asks_for_tools_and_answers_with_their_results(protocol):
    plan = {"calc": [[{"name": "add", "arguments": {"a": 1, "b": 2}}]]}
    with ModelServer(tool_calls=plan) as server:
        model = protocol(endpoint=server.url, model="calc")
        question = [{"role": "user", "content": "what is 1 + 2?"}]
        first = model.request("calc", question, tools=[ADD])
        ((call,),) = [first.tool_calls]
        assert (call.name, call.arguments) == ("add", {"a": 1, "b": 2}) and call.id
        result = {"role": "tool", "content": "3", "tool_call_id": call.id, "name": "add"}
        asked = {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]}
        second = model.request("calc", [*question, asked, result], tools=[ADD])
        assert second.tool_calls == [] and second.content.endswith("to: 3")
        assert server.requests[0].tools == ("add",) and server.count() == 2


def test_a_tool_result_that_answers_no_call_is_refused_as_a_real_server_does():
    with ModelServer() as server:
        model = OpenAIChat(endpoint=server.url, model="calc", retries=0)
        stray = {"role": "tool", "content": "3", "tool_call_id": "call_nobody"}
        with pytest.raises(ChatResponseError, match="HTTP 400.*answers no tool call"):
            model.request("calc", [{"role": "user", "content": "hi"}, stray])
