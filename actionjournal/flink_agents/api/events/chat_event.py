"""Chat request and response events, answered by the built-in chat action."""

from __future__ import annotations

import builtins
from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel

from actionjournal.flink_agents.api.agents.budget import LoopBudget
from actionjournal.flink_agents.api.agents.types import OutputSchema
from actionjournal.flink_agents.api.chat_message import ChatMessage
from actionjournal.flink_agents.api.events.event import Event


class ChatRequestEvent(Event):
    """Ask the chat model setup named ``model``; the answer comes as a ChatResponseEvent
    whose ``request_id`` is this event's id (tools the model asks for run in between)."""

    EVENT_TYPE: ClassVar[str] = "_chat_request_event"

    def __init__(
        self,
        model: str,
        messages: list[ChatMessage],
        prompt_args: dict[str, Any] | None = None,
        output_schema: OutputSchema | builtins.type[BaseModel] | None = None,  # `type` is a field
        *,
        context: Any = None,
        budget: LoopBudget | None = None,
    ) -> None:
        """``context``: any journalable value, handed back on the ChatResponseEvent;
        ``budget``: limits of the loop this request starts (docs/chat.md)."""
        if isinstance(output_schema, type):
            output_schema = OutputSchema(output_schema=output_schema)
        attributes = {
            "model": model,
            "messages": list(messages),
            "prompt_args": dict(prompt_args or {}),
            "output_schema": output_schema,
        }
        if context is not None:
            attributes["context"] = context
        if budget is not None:
            attributes["budget"] = budget.model_dump()
        super().__init__(type=ChatRequestEvent.EVENT_TYPE, attributes=attributes)

    @classmethod
    def from_event(cls, event: Event) -> ChatRequestEvent:
        attributes = event.attributes
        messages = [
            ChatMessage.model_validate(m) if isinstance(m, dict) else m
            for m in attributes["messages"]
        ]
        schema = attributes.get("output_schema")
        if isinstance(schema, dict):
            schema = OutputSchema.model_validate(schema)
        budget = attributes.get("budget")
        result = ChatRequestEvent(
            attributes["model"],
            messages,
            attributes.get("prompt_args"),
            schema,
            context=attributes.get("context"),
            budget=LoopBudget.model_validate(budget) if budget is not None else None,
        )
        result.id = event.id
        return result

    @property
    def model(self) -> str:
        return self.get_attr("model")

    @property
    def messages(self) -> list[ChatMessage]:
        return self.get_attr("messages")

    @property
    def prompt_args(self) -> dict[str, Any]:
        return self.get_attr("prompt_args") or {}

    @property
    def output_schema(self) -> OutputSchema | None:
        return self.get_attr("output_schema")

    @property
    def context(self) -> Any:
        """The caller's value, handed back on the response (``None`` if none was given)."""
        return self.get_attr("context")

    @property
    def budget(self) -> LoopBudget | None:
        budget = self.get_attr("budget")
        return LoopBudget.model_validate(budget) if budget is not None else None


class ChatResponseEvent(Event):
    """The final answer to the request ``request_id``."""

    EVENT_TYPE: ClassVar[str] = "_chat_response_event"

    def __init__(
        self,
        request_id: UUID,
        response: ChatMessage,
        retry_count: int = 0,
        total_retry_wait_sec: int = 0,
        *,
        context: Any = None,
    ) -> None:
        """``context``: the request's ``context``, handed back."""
        attributes = {
            "request_id": request_id,
            "response": response,
            "retry_count": retry_count,
            "total_retry_wait_sec": total_retry_wait_sec,
        }
        if context is not None:
            attributes["context"] = context
        super().__init__(type=ChatResponseEvent.EVENT_TYPE, attributes=attributes)

    @classmethod
    def from_event(cls, event: Event) -> ChatResponseEvent:
        attributes = event.attributes
        response = attributes["response"]
        if isinstance(response, dict):
            response = ChatMessage.model_validate(response)
        result = ChatResponseEvent(
            attributes["request_id"],
            response,
            attributes.get("retry_count", 0),
            attributes.get("total_retry_wait_sec", 0),
            context=attributes.get("context"),
        )
        result.id = event.id
        return result

    @property
    def request_id(self) -> UUID:
        value = self.get_attr("request_id")
        return UUID(value) if isinstance(value, str) else value

    @property
    def response(self) -> ChatMessage:
        return self.get_attr("response")

    @property
    def retry_count(self) -> int:
        return self.get_attr("retry_count")

    @property
    def total_retry_wait_sec(self) -> int:
        return self.get_attr("total_retry_wait_sec")

    @property
    def context(self) -> Any:
        """The ``context`` of the request this answers (``None`` if it had none)."""
        return self.get_attr("context")
