"""``ReActAgent``: an agent that answers with a chat model which may call tools first.

The input becomes a chat request (through the prompt, if one is given); the built-in
chat and tool actions run the model's tool calls, each a durable call, until it
answers; the answer (parsed into ``output_schema`` if given) is the output.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from actionjournal.flink_agents.api.agents.agent import STRUCTURED_OUTPUT, Agent
from actionjournal.flink_agents.api.agents.budget import LoopBudget
from actionjournal.flink_agents.api.agents.types import OutputSchema
from actionjournal.flink_agents.api.chat_message import (
    ChatMessage,
    MessageRole,
    find_first_system_message,
)
from actionjournal.flink_agents.api.decorators import action
from actionjournal.flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from actionjournal.flink_agents.api.events.event import Event, InputEvent, OutputEvent
from actionjournal.flink_agents.api.prompts.prompt import Prompt
from actionjournal.flink_agents.api.resource import ResourceDescriptor, ResourceType
from actionjournal.flink_agents.api.runner_context import RunnerContext

_DEFAULT_CHAT_MODEL = "_default_chat_model"
_DEFAULT_SCHEMA_PROMPT = "_default_schema_prompt"
_DEFAULT_USER_PROMPT = "_default_user_prompt"


class ReActAgent(Agent):
    """``chat_model``: the setup's descriptor (its ``tools`` are what the model may call);
    ``prompt``: fills the user message from the input (required for non-primitive input);
    ``output_schema``: a pydantic model the final answer is parsed into; ``budget``: the
    loop's limits (rounds, tokens, wall time), journaled (docs/chat.md)."""

    def __init__(
        self,
        *,
        chat_model: ResourceDescriptor,
        prompt: Prompt | None = None,
        output_schema: type[BaseModel] | None = None,
        budget: LoopBudget | None = None,
    ) -> None:
        super().__init__()
        self.add_resource(_DEFAULT_CHAT_MODEL, ResourceType.CHAT_MODEL, chat_model)
        schema = None
        if output_schema is not None:
            if not (isinstance(output_schema, type) and issubclass(output_schema, BaseModel)):
                raise TypeError(
                    f"Output schema {output_schema!r} is not supported: use a pydantic model "
                    "class (RowTypeInfo schemas are not supported, see docs/porting.md)"
                )
            schema = OutputSchema(output_schema=output_schema)
            text = (
                "The final response should be json format, and match the schema "
                f"{output_schema.model_json_schema()}."
            )
            self.add_resource(_DEFAULT_SCHEMA_PROMPT, ResourceType.PROMPT, Prompt.from_text(text))
        if prompt is not None:
            self.add_resource(_DEFAULT_USER_PROMPT, ResourceType.PROMPT, prompt)
        self.add_action(
            "start_action",
            [InputEvent.EVENT_TYPE],
            self.start_action,
            output_schema=schema,
            budget=budget,
        )

    @staticmethod
    def start_action(event: Event, ctx: RunnerContext) -> None:
        """The input as a chat request to the agent's model."""
        user_input = InputEvent.from_event(event).input
        prompt = _prompt(ctx, _DEFAULT_USER_PROMPT)
        if user_input is None or isinstance(user_input, bool | str | int | float):
            text = str(user_input)
            messages = (
                prompt.format_messages(role=MessageRole.USER, input=text)
                if prompt
                else [ChatMessage(role=MessageRole.USER, content=text)]
            )
        else:
            if prompt is None:
                raise RuntimeError(
                    f"Input type is {type(user_input)}, which is not primitive types. User "
                    "should provide prompt to help convert it to ChatMessage."
                )
            fields = {k: str(v) for k, v in _fields_of(user_input).items()}
            messages = prompt.format_messages(role=MessageRole.USER, **fields)
        schema_prompt = _prompt(ctx, _DEFAULT_SCHEMA_PROMPT)
        if schema_prompt is not None:
            at = find_first_system_message(messages) + 1
            messages = [*messages[:at], *schema_prompt.format_messages(), *messages[at:]]
        output_schema = ctx.get_action_config_value("output_schema")
        budget = ctx.get_action_config_value("budget")
        ctx.send_event(
            ChatRequestEvent(
                _DEFAULT_CHAT_MODEL, messages, output_schema=output_schema, budget=budget
            )
        )

    @action(ChatResponseEvent.EVENT_TYPE)
    @staticmethod
    def stop_action(event: Event, ctx: RunnerContext) -> None:
        """The model's final answer as the output."""
        response = ChatResponseEvent.from_event(event).response
        output = response.extra_args.get(STRUCTURED_OUTPUT, response.content)
        ctx.send_event(OutputEvent(output))


def _prompt(ctx: RunnerContext, name: str) -> Prompt | None:
    try:
        found = ctx.get_resource(name, ResourceType.PROMPT)
    except KeyError:
        return None
    return found if isinstance(found, Prompt) else None


def _fields_of(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump()
    as_dict = getattr(value, "as_dict", None)  # a PyFlink Row
    return as_dict(recursive=True) if callable(as_dict) else dict(vars(value))
