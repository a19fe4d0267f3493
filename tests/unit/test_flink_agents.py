"""The Flink Agents face (issue 18): agents in upstream's style, imports only from
actionjournal.flink_agents, run on the local environment with a real SQLite journal."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from actionjournal.durable.errors import ActionFailedError, ConfigurationError
from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
)
from actionjournal.flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentExecutionOptions,
    ErrorHandlingStrategy,
)
from actionjournal.flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    tool,
    vector_store,
)
from actionjournal.flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from actionjournal.flink_agents.api.events.event import Event, InputEvent, OutputEvent
from actionjournal.flink_agents.api.execution_environment import AgentsExecutionEnvironment
from actionjournal.flink_agents.api.memory_object import MemoryObject
from actionjournal.flink_agents.api.memory_reference import MemoryRef
from actionjournal.flink_agents.api.resource import ResourceDescriptor, ResourceType
from actionjournal.flink_agents.api.runner_context import RunnerContext
from actionjournal.flink_agents.runtime import events as face_events
from actionjournal.flink_agents.runtime.configuration import journal_config, store_config
from actionjournal.flink_agents.runtime.local_execution_environment import position_key
from actionjournal.flink_agents.runtime.remote_execution_environment import (
    RemoteExecutionEnvironment,
)
from actionjournal.stores import KafkaStoreConfig, NoStoreConfig, SqliteStoreConfig
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.service import CountingService
from tests.docs import docs_sample
from tests.porting_agents import (
    SCORED,
    TOOL_PLAN,
    ReviewFanOut,
    SupportTools,
    UnifiedEventAgent,
    Verdict,
    model_server_connection,
    support_agent,
)


def run(agent: Agent, inputs: list[dict[str, Any]], journal, configure=None) -> list[dict]:
    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(journal))
    if configure is not None:
        configure(env)
    outputs = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    return outputs


# -- events ------------------------------------------------------------------------------


class Shipped(Event):
    EVENT_TYPE: ClassVar[str] = "shipped"

    def __init__(self, order: str) -> None:
        super().__init__(type=Shipped.EVENT_TYPE, attributes={"order": order})


def test_events_have_upstreams_api_and_types():
    event = Event(type="MyEvent", attributes={"field1": "test", "field2": 42})
    assert (event.get_type(), event.get_attr("field2"), event.get_attr("missing")) == (
        "MyEvent",
        42,
        None,
    )
    event.set_attr("k", "v")
    assert event.attributes == {"field1": "test", "field2": 42, "k": "v"}
    assert (InputEvent.EVENT_TYPE, OutputEvent.EVENT_TYPE) == ("_input_event", "_output_event")
    assert InputEvent(input="hi").get_type() == "_input_event" and OutputEvent(42).output == 42
    base = Event(type="_input_event", attributes={"input": "data"})
    typed = InputEvent.from_event(base)
    assert isinstance(typed, InputEvent) and typed.input == "data" and typed.id == base.id
    parsed = Event.from_json(json.dumps({"type": "MyEvent", "attributes": {"x": 1}}))
    assert (parsed.type, parsed.attributes) == ("MyEvent", {"x": 1})
    with pytest.raises(ValueError, match="type"):
        Event.from_json(json.dumps({"attributes": {}}))
    with pytest.raises(ValueError):
        Event(a=1)  # a type is required


def test_an_event_is_journaled_whole_and_received_as_its_class():
    sent = Event(type="shipped", attributes={"order": "o-1"}, carrier="dhl")  # an extra field
    received = face_events.to_face(face_events.to_engine(sent))
    assert isinstance(received, Shipped)  # the class registered for its type
    assert received.attributes == {"order": "o-1"} and received.carrier == "dhl"


def test_action_listens_on_type_strings_or_event_classes():
    class Listener(Agent):
        @action(InputEvent)
        @staticmethod
        def by_class(event, ctx): ...

        @staticmethod
        @action(InputEvent.EVENT_TYPE, "shipped")
        def by_name(event, ctx): ...

    from actionjournal.flink_agents.runtime.configuration import AgentConfiguration
    from actionjournal.flink_agents.runtime.plan import EngineAgent

    actions = EngineAgent(Listener(), AgentConfiguration(), {}).actions()
    assert [s.name for s in actions["_input_event"]] == ["by_class", "by_name"]
    assert [s.name for s in actions["shipped"]] == ["by_name"]
    with pytest.raises(TypeError, match="event type strings or Event classes"):
        action(42)
    with pytest.raises(NotImplementedError, match="vector stores are not supported"):
        vector_store(lambda: None)


# -- workflows on the local environment ----------------------------------------------------


def test_a_unified_event_workflow(tmp_path):
    outputs = run(UnifiedEventAgent(), [{"key": "alice", "value": "hello"}], tmp_path / "j.db")
    assert outputs == [{"alice": "processed:hello"}]


REVIEWS = [
    {"key": "chez-a", "value": {"id": "r1", "text": "great food, slow waiter"}},
    {"key": "chez-b", "value": {"id": "r2", "text": "cheap and cheerful"}},
    {"key": "chez-a", "value": {"id": "r3", "text": "too salty"}},
]


def test_typed_events_fan_out_and_are_aggregated_in_short_term_memory(tmp_path):
    SCORED.clear()
    outputs = run(ReviewFanOut(), REVIEWS, tmp_path / "j.db")
    assert [list(o) for o in outputs] == [["chez-a"], ["chez-b"], ["chez-a"]]  # input order
    verdicts = [v for o in outputs for v in o.values()]
    assert all(isinstance(v, Verdict) for v in verdicts)  # pydantic outputs stay models
    assert [set(v.scores) for v in verdicts] == [set(ReviewFanOut.ASPECTS)] * 3
    r1, _, r3 = verdicts
    expected = (sum(r1.scores.values()) + sum(r3.scores.values())) / 2 / 3
    assert r3.restaurant_average == pytest.approx(expected)  # the key's tally, across runs
    assert SCORED == {a: 3 for a in ReviewFanOut.ASPECTS}
    # The same script run again on its journal replays: the same outputs, nothing scored.
    assert run(ReviewFanOut(), REVIEWS, tmp_path / "j.db") == outputs
    assert SCORED == {a: 3 for a in ReviewFanOut.ASPECTS}


def test_from_list_to_list_and_execute_behave_as_upstreams(tmp_path):
    env = AgentsExecutionEnvironment.get_execution_environment(journal=str(tmp_path / "j.db"))
    inputs: list[dict] = []
    outputs = env.from_list(inputs).apply(UnifiedEventAgent()).to_list()
    inputs += [{"key": "bob", "value": 1}, {"k": "john", "v": 2}]  # read at execute()
    with pytest.raises(RuntimeError, match="from_list multiple times"):
        env.from_list([])
    env.execute()
    assert outputs == [{"bob": "processed:1"}, {"john": "processed:2"}]
    with pytest.raises(RuntimeError, match="execute multiple times"):
        env.execute()
    builder = AgentsExecutionEnvironment.get_execution_environment().from_list([])
    builder.apply(UnifiedEventAgent())
    with pytest.raises(RuntimeError, match="apply multiple agents"):
        builder.apply(UnifiedEventAgent())
    with pytest.raises(NotImplementedError, match="StreamExecutionEnvironment"):
        builder.to_datastream()


def test_an_input_without_a_key_gets_one_from_its_position_and_replays(tmp_path):
    SCORED.clear()
    reviews = [{"value": {"id": "r1", "text": "fine"}}, {"value": {"id": "r2", "text": "ok"}}]
    outputs = run(ReviewFanOut(), reviews, tmp_path / "j.db")
    keys = [next(iter(o)) for o in outputs]
    assert keys == [position_key(0), position_key(1)] and len(set(keys)) == 2
    assert str(uuid.UUID(keys[0])) == keys[0]  # a UUID, as upstream's (random) key is
    assert sum(SCORED.values()) == 6
    assert run(ReviewFanOut(), reviews, tmp_path / "j.db") == outputs  # the same keys replay
    assert sum(SCORED.values()) == 6


def test_every_input_needs_a_value(tmp_path):
    with pytest.raises(RuntimeError, match="must be a dict with a 'value'"):
        run(UnifiedEventAgent(), [{"key": "a"}], tmp_path / "j2.db")


def test_the_journal_is_the_given_path_else_the_environment_variable_else_the_default(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACTIONJOURNAL_JOURNAL", raising=False)
    assert AgentsExecutionEnvironment.get_execution_environment().journal == "actionjournal.db"
    monkeypatch.setenv("ACTIONJOURNAL_JOURNAL", str(tmp_path / "from-env.db"))
    env = AgentsExecutionEnvironment.get_execution_environment()
    assert env.journal == str(tmp_path / "from-env.db")
    assert AgentsExecutionEnvironment.get_execution_environment(journal="x.db").journal == "x.db"
    env.from_list([{"key": "a", "value": 1}]).apply(UnifiedEventAgent())
    env.execute()
    assert (tmp_path / "from-env.db").exists() and not (tmp_path / "actionjournal.db").exists()


# -- memory ----------------------------------------------------------------------------------

SEEN: list[Any] = []


class Notes(Agent):
    """Memory as upstream's API shapes it; ``SEEN`` records what the actions observed."""

    @action(InputEvent)
    @staticmethod
    def write(event: Event, ctx: RunnerContext) -> None:
        step = InputEvent.from_event(event).input
        memory = ctx.short_term_memory
        if step == "build":
            user = memory.new_object("user")
            user.set("name", "ada")
            prefs = user.new_object("prefs")
            prefs.set("lang", "en")
            ref = memory.set("last", {"at": 1})  # a dict value, not an object
            ctx.send_event(Event(type="noted", attributes={"ref": ref}))
        elif step == "update":
            memory.get("user").get("prefs").set("lang", "fr")  # through live handles
        else:
            user = memory.get("user")
            SEEN.append(
                (
                    memory.is_exist("user.prefs.lang"),
                    memory.is_exist("user.age"),
                    user.get_field_names(),
                    user.get_fields(),
                    memory.get("user.prefs.lang"),
                    memory.get("last"),
                    isinstance(user.get("prefs"), MemoryObject),
                )
            )

    @action("noted")
    @staticmethod
    def read_ref(event: Event, ctx: RunnerContext) -> None:
        ref = event.get_attr("ref")
        SEEN.append((type(ref), ref.path, ctx.short_term_memory.get(ref), ref.resolve(ctx)))


def test_memory_objects_handles_refs_and_their_journal(tmp_path):
    SEEN.clear()
    inputs = [{"key": "k", "value": step} for step in ("build", "update", "read")]
    run(Notes(), inputs, tmp_path / "j.db")
    assert SEEN == [
        (MemoryRef, "last", {"at": 1}, {"at": 1}),
        (
            True,
            False,
            ["name", "prefs"],
            {"name": "ada", "prefs": "NestedObject"},
            "fr",
            {"at": 1},
            True,
        ),
    ]
    SEEN.clear()  # a rerun replays the three runs (memory rebuilt), then reads anew
    run(Notes(), [*inputs, {"key": "k", "value": "read"}], tmp_path / "j.db")
    assert len(SEEN) == 1 and SEEN[0][3:6] == (
        {"name": "ada", "prefs": "NestedObject"},
        "fr",
        {"at": 1},
    )


class Overwrites(Agent):
    @action(InputEvent)
    @staticmethod
    def act(event: Event, ctx: RunnerContext) -> None:
        memory = ctx.short_term_memory
        memory.new_object("obj").set("a", 1)
        memory.set("val", 1)
        memory.set("d", {"x": 1})
        memory.set("d", 2)  # a dict value may become another value
        errors = []
        for attempt in (
            lambda: memory.set("obj", 5),
            lambda: memory.new_object("val"),
            lambda: memory.set("d.y", 1) if memory.set("d", {"x": 1}) else None,
        ):
            try:
                attempt()
            except ValueError as exc:
                errors.append(str(exc))
        memory.new_object("val", overwrite=True)
        memory.new_object("obj").set("b", 2)  # an existing object is kept
        ctx.send_event(OutputEvent({"errors": errors, "obj": memory.get("obj").get_fields()}))


def test_memory_refuses_what_upstream_refuses(tmp_path):
    ((out,),) = [o.values() for o in run(Overwrites(), [{"key": "k", "value": 0}], tmp_path / "j")]
    first, second, third = out["errors"]
    assert "Cannot overwrite object field 'obj' with primitive" in first
    assert "Field 'val' exists but is not an object" in second
    assert "goes through 'd', which holds a value" in third
    assert out["obj"] == {"a": 1, "b": 2}


# -- configuration ---------------------------------------------------------------------------


def test_upstream_options_map_to_actionjournal_settings():
    env = AgentsExecutionEnvironment.get_execution_environment()
    conf = env.get_config()
    assert conf.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) == ErrorHandlingStrategy.FAIL
    conf.set_str("error-handling-strategy", "retry")
    assert conf.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) == ErrorHandlingStrategy.RETRY
    assert store_config(conf, "j.db") == SqliteStoreConfig(path="j.db")  # durable by default
    conf.set(AgentConfigOptions.ACTION_STATE_STORE_BACKEND, "kafka")
    conf.set(AgentConfigOptions.KAFKA_BOOTSTRAP_SERVERS, "broker:9092")
    conf.set(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC, "agents-journal")
    kafka = store_config(conf, "j.db")
    assert isinstance(kafka, KafkaStoreConfig)
    assert (kafka.bootstrap_servers, kafka.topic, kafka.partitions) == (
        "broker:9092",
        "agents-journal",
        64,
    )
    conf.set_str("actionStateStoreBackend", "none")  # upstream without a store: no journal
    assert isinstance(store_config(conf, "j.db"), NoStoreConfig)
    conf.set_str("actionStateStoreBackend", "redis")
    with pytest.raises(ConfigurationError, match="actionStateStoreBackend='redis'"):
        store_config(conf, "j.db")
    conf.set_str("journal.on_divergence", "rerun")  # upstream's silent clearing
    assert journal_config(conf).on_divergence == "rerun"
    conf.set_str("journal.on_divergence", "sometimes")
    with pytest.raises(ConfigurationError, match="on_divergence"):
        journal_config(conf)


def test_the_flink_environment_maps_options_to_its_job_config():
    env = RemoteExecutionEnvironment(object(), None, "/tmp/journal.db")
    env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 3)
    config = env.agents_config()
    assert config.max_concurrent_runs == 3 and config.store == SqliteStoreConfig(
        path="/tmp/journal.db"
    )


# -- chat models, tools, built-in actions -------------------------------------------------


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_a_react_agent_calls_its_tools_as_durable_calls(tmp_path, protocol):
    def configure(env):
        env.add_resource("model_server", ResourceType.CHAT_MODEL_CONNECTION, connection)
        SupportTools(tools_service.url).register(env)

    inputs = [{"key": "customer-1", "value": "refund my order o-1"}]
    with (
        ModelServer(tool_calls={"support": TOOL_PLAN}) as server,
        CountingService() as tools_service,
    ):
        connection = model_server_connection(protocol, server.url)
        (out,) = run(support_agent(protocol), inputs, tmp_path / "j.db", configure)
        assert out["customer-1"].startswith("[support] reply")
        assert tools_service.calls_by_name() == {"lookup_order": 1, "refund": 1}
        assert server.count() == 2 and not server.repeated()
        assert sorted(server.requests[0].tools) == ["lookup_order", "refund"]
        # Run again on the journal: the answer is replayed, nothing is asked or called again.
        assert run(support_agent(protocol), inputs, tmp_path / "j.db", configure) == [out]
        assert server.count() == 2 and tools_service.executions() == 2


class EchoConnection(BaseChatModelConnection):
    """A connection of the user's own: asks for ``add`` once, then echoes the result."""

    def chat(self, messages, tools=None, **kwargs):
        last = messages[-1]
        if last.role == MessageRole.TOOL:
            return ChatMessage(
                role=MessageRole.ASSISTANT, content=json.dumps({"sum": int(last.content)})
            )
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


class EchoSetup(BaseChatModelSetup):
    @property
    def model_kwargs(self):
        return {"model": self.model}


ADDED: Counter[tuple[int, int]] = Counter()


class Sum(BaseModel):
    sum: int


class Calculator(Agent):
    """Upstream's resource style: connection and setup declared by decorated methods."""

    @chat_model_connection
    @staticmethod
    def echo() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=f"{__name__}.EchoConnection")

    @chat_model_setup
    @staticmethod
    def calc() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=EchoSetup, connection="echo", model="m", tools=["add"])

    @tool
    @staticmethod
    def add(a: int, b: int) -> int:
        """Return the sum of a and b."""
        ADDED[(a, b)] += 1
        return a + b

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        message = ChatMessage(role=MessageRole.USER, content=InputEvent.from_event(event).input)
        ctx.send_event(ChatRequestEvent(model="calc", messages=[message], output_schema=Sum))

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: Event, ctx: RunnerContext) -> None:
        response = ChatResponseEvent.from_event(event).response
        ctx.send_event(OutputEvent(output=response.extra_args["structured_output"]))


def test_decorated_resources_a_users_connection_tools_and_structured_output(tmp_path):
    ADDED.clear()
    outputs = run(Calculator(), [{"key": "k", "value": "1 + 2?"}], tmp_path / "j.db")
    assert outputs == [{"k": Sum(sum=3)}] and ADDED == {(1, 2): 1}


class Flaky(BaseChatModelConnection):
    def chat(self, messages, tools=None, **kwargs):
        raise ConnectionError("model down")


class Asker(Agent):
    @chat_model_connection
    @staticmethod
    def flaky() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=Flaky)

    @chat_model_setup
    @staticmethod
    def model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=EchoSetup, connection="flaky", model="m")

    @action(InputEvent)
    @staticmethod
    def ask(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(ChatRequestEvent("model", [ChatMessage(content="hi")]))


def test_the_error_handling_strategy_applies_to_chat_requests(tmp_path):
    def strategy(name):
        return lambda env: env.get_config().set_str("error-handling-strategy", name)

    assert run(Asker(), [{"key": "k", "value": 1}], tmp_path / "a", strategy("ignore")) == []
    with pytest.raises(ActionFailedError, match="model down"):
        run(Asker(), [{"key": "k", "value": 1}], tmp_path / "b", strategy("fail"))

    def retry(env):
        strategy("retry")(env)
        env.get_config().set(AgentExecutionOptions.MAX_RETRIES, 1)
        env.get_config().set(AgentExecutionOptions.RETRY_WAIT_INTERVAL, 0)

    with pytest.raises(ActionFailedError, match="model down"):
        run(Asker(), [{"key": "k", "value": 1}], tmp_path / "c", retry)


def test_a_missing_resource_is_a_key_error_naming_what_is_declared(tmp_path):
    class Lost(Agent):
        @action(InputEvent)
        @staticmethod
        def ask(event, ctx):
            ctx.get_resource("nope", ResourceType.CHAT_MODEL)

    with pytest.raises(ActionFailedError, match="Resource not found: 'nope'"):
        run(Lost(), [{"key": "k", "value": 1}], tmp_path / "j")


def test_upstream_class_names_in_descriptors_mean_ours():
    descriptor = ResourceDescriptor(
        clazz="flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelConnection"
    )
    assert descriptor.clazz.__module__.startswith("actionjournal.flink_agents.")


BLOCKING_CALLS: Counter[str] = Counter()


def blocking_add(a: int, b: int) -> int:
    BLOCKING_CALLS[f"{a}+{b}"] += 1
    return a + b


class Blocking(Agent):
    """Upstream's drop-in: a plain durable_execute in an async action, between async calls."""

    @action(InputEvent)
    @staticmethod
    async def act(event: Event, ctx: RunnerContext) -> None:
        n = InputEvent.from_event(event).input
        early = ctx.durable_execute_async(blocking_add, n, 1)  # position 0, awaited later
        middle = ctx.durable_execute(blocking_add, n, 2)  # blocks; position 1
        ctx.send_event(Event(type="again", attributes={"sum": middle + await early}))

    @action("again")
    @staticmethod
    async def again(event: Event, ctx: RunnerContext) -> None:
        total = ctx.durable_execute(blocking_add, event.get_attr("sum"), 0)
        ctx.send_event(OutputEvent(output=total))


def test_a_blocking_durable_call_in_an_async_action_runs_warns_once_and_replays(tmp_path, caplog):
    BLOCKING_CALLS.clear()
    inputs = [{"key": "a", "value": 1}, {"key": "b", "value": 10}]
    with caplog.at_level("WARNING", logger="actionjournal.flink_agents.runtime.plan"):
        assert run(Blocking(), inputs, tmp_path / "j") == [{"a": 5}, {"b": 23}]
    warnings = [r.getMessage() for r in caplog.records if "blocking" in r.getMessage()]
    assert len(warnings) == 2  # one per action, not per run
    assert "action act" in warnings[0] and "action again" in warnings[1]
    assert all("await ctx.durable_execute_async(...)" in w for w in warnings)
    assert "every other async action and run on that loop stalls" in warnings[0]
    assert sum(BLOCKING_CALLS.values()) == 6
    assert run(Blocking(), inputs, tmp_path / "j") == [{"a": 5}, {"b": 23}]
    assert sum(BLOCKING_CALLS.values()) == 6  # replayed from the journal: same positions


# -- docs/porting.md -------------------------------------------------------------------------


def test_the_porting_docs_samples_run_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    first: dict[str, Any] = {"__name__": "porting_docs"}
    exec(docs_sample("porting.md", "class Checkout(Agent)"), first)
    assert first["outputs"] == [{"alice": {"order": "o-1", "charged": 30}}]
    assert first["CHARGED"] == ["o-1"] and (tmp_path / "checkout.db").exists()
    again: dict[str, Any] = {"__name__": "porting_docs"}
    exec(docs_sample("porting.md", "class Checkout(Agent)"), again)  # the script run again
    assert again["outputs"] == first["outputs"] and again["CHARGED"] == []
    assert capsys.readouterr().out.splitlines() == [str(first["outputs"])] * 2
    configured: dict[str, Any] = {"AgentsExecutionEnvironment": AgentsExecutionEnvironment}
    exec(docs_sample("porting.md", "ACTION_STATE_STORE_BACKEND"), configured)
    conf = configured["config"]
    assert store_config(conf, "j.db") == KafkaStoreConfig(bootstrap_servers="localhost:9092")
    assert journal_config(conf).on_divergence == "rerun"


class Forgets(Agent):
    @action(InputEvent)
    @staticmethod
    def act(event: Event, ctx: RunnerContext) -> None:
        step = InputEvent.from_event(event).input
        memory = ctx.short_term_memory
        if step == "write":
            memory.new_object("user").set("name", "ada")
            memory.set("token", "t-1")
            ctx.sensory_memory.set("scratch", 1)
            deleted = (ctx.sensory_memory.delete("scratch"), ctx.sensory_memory.is_exist("scratch"))
            ctx.send_event(OutputEvent(output=deleted))
        elif step == "forget":
            gone = (memory.delete("user"), memory.delete("token"), memory.delete("never"))
            ctx.send_event(OutputEvent(output=gone))
        else:
            ctx.send_event(OutputEvent(output=(memory.is_exist("user"), memory.get("token"))))


def test_memory_delete_removes_values_and_objects_and_is_journaled(tmp_path):
    inputs = [{"key": "k", "value": s} for s in ("write", "forget", "read")]
    expected = [{"k": (True, False)}, {"k": (True, True, False)}, {"k": (False, None)}]
    assert run(Forgets(), inputs, tmp_path / "j") == expected
    again = [*inputs, {"key": "k", "value": "read"}]  # replayed, memory rebuilt with deletes
    assert run(Forgets(), again, tmp_path / "j") == [*expected, {"k": (False, None)}]
