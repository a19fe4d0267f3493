"""Chat messages as Flink Agents writes them: a role, content, tool calls, extra args."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, field_serializer, field_validator

from actionjournal.durable.values import loaded_type, type_name

_MODEL = "__pydantic_model__"


class MessageRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ChatMessage(BaseModel):
    """One message. ``tool_calls`` are ``{"id", "type": "function", "function": {"name",
    "arguments"}, "original_id"}``; ``extra_args`` may hold pydantic models (a structured
    output), which keep their class through the journal."""

    role: MessageRole = MessageRole.USER
    content: str = Field(default_factory=str)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    extra_args: dict[str, Any] = Field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.role.value}: {self.content}"

    @field_serializer("extra_args")
    def _tag_models(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            k: {_MODEL: type_name(type(v)), "data": v.model_dump(mode="json")}
            if isinstance(v, BaseModel)
            else v
            for k, v in extra.items()
        }

    @field_validator("extra_args", mode="before")
    @classmethod
    def _rebuild_models(cls, extra: Any) -> Any:
        if not isinstance(extra, dict):
            return extra
        return {k: _rebuilt(v) for k, v in extra.items()}


def _rebuilt(value: Any) -> Any:
    """A tagged model back as its class, found among loaded modules (never imported)."""
    if isinstance(value, dict) and set(value) == {_MODEL, "data"}:
        model = loaded_type(value[_MODEL])
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(value["data"])
    return value


def find_first_system_message(messages: list[ChatMessage]) -> int:
    """Index of the first system message, or -1."""
    return next((i for i, m in enumerate(messages) if m.role == MessageRole.SYSTEM), -1)
