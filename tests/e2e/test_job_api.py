"""The job API's errors, without starting a job."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from pyflink.common import Configuration

from actionjournal import Agent, InputEvent, action
from actionjournal.durable.errors import ConfigurationError
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.testing.flink import local_env

pytestmark = pytest.mark.flink


class Echo(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        pass


def test_unkeyed_stream_without_key_selector_is_refused():
    env = local_env()
    agents = AgentsExecutionEnvironment.get_execution_environment(env)
    stream = env.from_collection([1, 2])
    with pytest.raises(ConfigurationError, match="keyed stream or key_selector"):
        agents.from_datastream(stream)
    job = agents.from_datastream(stream.key_by(lambda x: x))
    with pytest.raises(ConfigurationError, match=r"apply\(agent\)"):
        job.to_datastream()


def test_bad_settings_fail_with_their_name():
    with pytest.raises(ValidationError, match="store.sqlite.path"):
        AgentsConfig.model_validate({"store": {"backend": "sqlite", "path": 3}})
    with pytest.raises(ValidationError, match="'sqlite' or 'kafka'|sqlite', 'kafka'"):
        AgentsConfig.model_validate({"store": {"backend": "mysql"}})
    with pytest.raises(ValidationError, match="poll_interval_ms"):
        AgentsConfig(poll_interval_ms=0)
    with pytest.raises(ValidationError, match="allow_pickle requires journal.signing_key"):
        AgentsConfig.model_validate({"journal": {"allow_pickle": True}})


def test_operator_uid_comes_from_the_agent():
    env = local_env()
    agents = AgentsExecutionEnvironment.get_execution_environment(env)

    class Named(Echo):
        uid = "support-triage-v1"

    out = agents.from_datastream(env.from_collection([1]), key_selector=str).apply(Named())
    stream = out.to_datastream()
    assert stream._j_data_stream.getTransformation().getUid() == "support-triage-v1"


def test_a_bundle_size_that_would_lose_timers_is_refused():
    env = local_env()
    config = AgentsConfig(checkpoint_timers="bundle-of-one")
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    settings = Configuration()
    settings.set_string("python.fn-execution.bundle.size", "1000")
    env.configure(settings)  # after the binding set it to 1
    job = agents.from_datastream(env.from_collection([1]), key_selector=str).apply(Echo())
    with pytest.raises(ConfigurationError, match=r"bundle.size is 1000, but without"):
        job.to_datastream()


def test_without_a_jdk_the_operator_falls_back_to_bundles_of_one(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("ACTIONJOURNAL_CACHE", str(tmp_path))  # nothing compiled yet
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no javac
    env = local_env()
    with pytest.raises(ConfigurationError, match="checkpoint_timers='drain': .* no javac"):
        AgentsExecutionEnvironment.get_execution_environment(
            env, AgentsConfig(checkpoint_timers="drain")
        )
    agents = AgentsExecutionEnvironment.get_execution_environment(env)
    assert agents.operator_jar is None
    assert "falling back to one element per bundle" in caplog.text
    settings = env._j_stream_execution_environment.getConfiguration().toMap()
    assert settings.get("python.fn-execution.bundle.size") == "1"


def test_the_agent_runs_in_the_draining_operator():
    env = local_env()
    agents = AgentsExecutionEnvironment.get_execution_environment(env)
    assert agents.operator_jar is not None, "this machine has a JDK: the operator must build"
    stream = agents.from_datastream(env.from_collection([1]), key_selector=str)
    out = stream.apply(Echo()).to_datastream()
    operator = out._j_data_stream.getTransformation().getOperatorFactory().getOperator()
    assert operator.getClass().getName() == "io.actionjournal.flink.DrainingKeyedProcessOperator"
