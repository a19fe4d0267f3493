"""OpenAI-compatible chat models in Flink Agents' resource style, over ``OpenAIChat``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from actionjournal.chat.models import ChatModel, OpenAIChat
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

DEFAULT_OPENAI_API_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-3.5-turbo"
DEFAULT_TEMPERATURE = 0.1


class OpenAIChatModelConnection(BaseChatModelConnection):
    """An OpenAI-compatible endpoint (``POST {api_base_url}/chat/completions``).

    ``api_key`` and ``api_base_url`` default to ``OPENAI_API_KEY`` and
    ``OPENAI_API_BASE_URL``; ``max_retries`` are extra attempts on 429/5xx and
    connection failures.
    """

    api_key: str | None = Field(default=None, repr=False)
    api_base_url: str | None = None
    max_retries: int = Field(default=3, ge=0)
    timeout: float = Field(default=60.0, gt=0)
    default_headers: dict[str, str] | None = None
    reuse_client: bool = True  # accepted; clients are always reused (one per model)
    _clients: Clients = PrivateAttr(default_factory=Clients)

    @model_validator(mode="after")
    def _from_environment(self) -> OpenAIChatModelConnection:
        self.api_key = self.api_key or os.environ.get("OPENAI_API_KEY") or None
        base = self.api_base_url or os.environ.get("OPENAI_API_BASE_URL")
        self.api_base_url = base or DEFAULT_OPENAI_API_BASE_URL
        return self

    def chat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        model = kwargs.pop("model")
        kwargs.pop("strict", None)
        options = {k: v for k, v in kwargs.items() if v is not None}
        client = self._client(model, options)
        return from_response(client.request(model, to_messages(messages), tools=tool_specs(tools)))

    def close(self) -> None:
        self._clients.close()

    def _client(self, model: str, options: dict[str, Any]) -> ChatModel:
        return self._clients.get(
            model,
            options,
            lambda: OpenAIChat(
                endpoint=str(self.api_base_url),
                model=model,
                timeout=self.timeout,
                retries=self.max_retries,
                api_key=self.api_key,
                headers=self.default_headers or {},
                options=options,
            ),
        )


class OpenAIChatModelSetup(BaseChatModelSetup):
    """A model on an OpenAI-compatible connection; settings go into the request body."""

    model: str = DEFAULT_OPENAI_MODEL
    temperature: float = Field(default=DEFAULT_TEMPERATURE, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    logprobs: bool | None = None
    top_logprobs: int = Field(default=0, ge=0, le=20)
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)
    strict: bool = False
    reasoning_effort: Literal["low", "medium", "high"] | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.logprobs:
            kwargs.update(logprobs=True, top_logprobs=self.top_logprobs)
        if self.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.reasoning_effort
        return {**kwargs, **self.additional_kwargs}
