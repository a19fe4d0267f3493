"""Ollama chat models in Flink Agents' resource style, over actionjournal's ``OllamaChat``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from actionjournal.chat.models import ChatModel, OllamaChat
from actionjournal.flink_agents.api.chat_message import ChatMessage
from actionjournal.flink_agents.api.chat_models.chat_model import (
    BaseChatModelConnection,
    BaseChatModelSetup,
)
from actionjournal.flink_agents.api.tools.tool import Tool
from actionjournal.flink_agents.integrations.chat_models.chat_model_utils import (
    Clients,
    from_response,
    to_messages,
    tool_specs,
)

DEFAULT_CONTEXT_WINDOW = 2048
DEFAULT_REQUEST_TIMEOUT = 30.0
_CLIENT_SIDE = ("keep_alive", "think", "extract_reasoning")
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


class OllamaChatModelConnection(BaseChatModelConnection):
    """An Ollama server at ``base_url`` (``POST /api/chat``, non-streaming)."""

    base_url: str = "http://localhost:11434"
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    _clients: Clients = PrivateAttr(default_factory=Clients)

    def chat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        model = kwargs.pop("model")
        options = {k: v for k, v in kwargs.items() if k not in _CLIENT_SIDE and v is not None}
        client = self._client(model, options)
        reply = from_response(client.request(model, to_messages(messages), tools=tool_specs(tools)))
        if kwargs.get("extract_reasoning") and reply.content:
            thoughts = [t.strip() for t in _THINK.findall(reply.content) if t.strip()]
            if thoughts:
                reply.content = _THINK.sub("", reply.content).strip()
                reply.extra_args["reasoning"] = "\n\n".join(thoughts)
        return reply

    def close(self) -> None:
        self._clients.close()

    def _client(self, model: str, options: dict[str, Any]) -> ChatModel:
        return self._clients.get(
            model,
            options,
            lambda: OllamaChat(
                endpoint=self.base_url, model=model, timeout=self.request_timeout, options=options
            ),
        )


class OllamaChatModelSetup(BaseChatModelSetup):
    """A model on an Ollama connection; ``temperature``, ``num_ctx`` and
    ``additional_kwargs`` go to the server as options."""

    temperature: float = Field(default=0.75, ge=0.0, le=1.0)
    num_ctx: int = Field(default=DEFAULT_CONTEXT_WINDOW, gt=0)
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    keep_alive: float | str | None = "5m"
    extract_reasoning: bool = True
    think: bool | Literal["low", "medium", "high"] = True

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": self.temperature,
            "num_ctx": self.num_ctx,
            "keep_alive": self.keep_alive,
            "think": self.think,
            "extract_reasoning": self.extract_reasoning,
            **self.additional_kwargs,
        }
