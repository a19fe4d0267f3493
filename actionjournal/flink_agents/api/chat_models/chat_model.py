"""Chat models as Flink Agents declares them: a connection (where the model is) and a
setup (which model, its prompt, its tools, its settings), both resources of the agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, PrivateAttr

from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.prompts.prompt import Prompt
from actionjournal.flink_agents.api.resource import Resource, ResourceType
from actionjournal.flink_agents.api.tools.tool import Tool


class BaseChatModelConnection(Resource):
    """Talks to a model service; ``chat`` sends messages (and tools) and returns the reply."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION

    def chat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        raise NotImplementedError(f"{type(self).__name__} does not implement chat()")


class BaseChatModelSetup(Resource):
    """A model on a connection, with its prompt, tools and settings (``model_kwargs``).

    ``chat`` applies the prompt, offers the tools and asks the connection; the built-in
    chat action runs it as a durable call, so a journaled answer is not asked again.
    """

    connection: str = Field(description="The name of the connection resource.")
    model: str = Field(description="The model to use.")
    prompt: Prompt | str | None = None
    tools: list[str] | list[Tool] = Field(default_factory=list)
    _resolved_connection: BaseChatModelConnection | None = PrivateAttr(default=None)

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return {"model": self.model}

    def open(self) -> None:
        context = self.resource_context
        self._resolved_connection = context.get_resource(
            self.connection, ResourceType.CHAT_MODEL_CONNECTION
        )
        if isinstance(self.prompt, str):
            self.prompt = context.get_resource(self.prompt, ResourceType.PROMPT)
        self.tools = [
            t if isinstance(t, Tool) else context.get_resource(t, ResourceType.TOOL)
            for t in self.tools
        ]

    def chat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        if self._resolved_connection is None:
            raise TypeError(f"connection {self.connection!r} is not resolved: open() first")
        if isinstance(self.prompt, Prompt):
            args = {k: str(v) for k, v in (prompt_args or {}).items()}
            prompted = self.prompt.format_messages(**args)  # type: ignore[arg-type]
            kept = [m for m in messages if m.content or m.role == MessageRole.ASSISTANT]
            messages = [*prompted, *kept]
        tools = [t for t in self.tools if isinstance(t, Tool)]
        return self._resolved_connection.chat(
            messages, tools=tools, **{**self.model_kwargs, **kwargs}
        )
