"""Flink Agents' chat messages and tools in the form actionjournal's chat models speak."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from actionjournal.chat.models import ChatModel, ChatResponse, Message
from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.tools.tool import Tool, ToolMetadata

MAX_DESCRIPTION = 1024


def to_openai_tool(*, metadata: ToolMetadata, skip_length_check: bool = False) -> dict[str, Any]:
    """A tool as the OpenAI and Ollama APIs describe it."""
    if not skip_length_check and len(metadata.description) > MAX_DESCRIPTION:
        raise ValueError(
            f"Tool description of {metadata.name!r} exceeds maximum length of "
            f"{MAX_DESCRIPTION} characters. Please shorten your description or move it to "
            "the prompt."
        )
    return {
        "type": "function",
        "function": {
            "name": metadata.name,
            "description": metadata.description,
            "parameters": metadata.get_parameters_dict(),
        },
    }


def tool_specs(tools: Sequence[Tool] | None) -> list[dict[str, Any]] | None:
    """``{"name", "description", "parameters"}`` of each tool (``ChatModel.request``'s form)."""
    if not tools:
        return None
    return [to_openai_tool(metadata=t.metadata)["function"] for t in tools if t.metadata]


def to_messages(messages: Sequence[ChatMessage]) -> list[Message]:
    """Messages as actionjournal's chat models send them; a tool result answers the call
    whose id its ``extra_args["external_id"]`` holds."""
    out: list[Message] = []
    for message in messages:
        item: Message = {"role": message.role.value, "content": message.content}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": str(c.get("original_id") or c["id"]),
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                for c in message.tool_calls
            ]
        if message.role == MessageRole.TOOL:
            item["tool_call_id"] = str(message.extra_args.get("external_id") or "")
        out.append(item)
    return out


def from_response(response: ChatResponse) -> ChatMessage:
    """The model's answer as a Flink Agents message (tool calls in upstream's form)."""
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
            "original_id": call.id,
        }
        for call in response.tool_calls
    ]
    extra: dict[str, Any] = {"model_name": response.model}
    if response.prompt_tokens is not None and response.completion_tokens is not None:
        extra.update(
            promptTokens=response.prompt_tokens, completionTokens=response.completion_tokens
        )
    return ChatMessage(
        role=MessageRole.ASSISTANT, content=response.content, tool_calls=calls, extra_args=extra
    )


class Clients:
    """A connection's clients, one per model and options: each keeps its HTTP connections
    open across requests, from any thread."""

    def __init__(self) -> None:
        self._clients: dict[str, ChatModel] = {}
        self._lock = threading.Lock()

    def get(self, model: str, options: dict[str, Any], make: Callable[[], ChatModel]) -> ChatModel:
        key = repr((model, sorted(options.items())))
        with self._lock:
            if key not in self._clients:
                self._clients[key] = make()
            return self._clients[key]

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return Clients, ()  # a copy (a pickled connection) opens its own

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
