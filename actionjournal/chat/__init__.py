"""Chat models as durable calls: connections, ``ctx.chat``, and the event form.

See docs/chat.md. A model's response is journaled like any durable call
result, so after a failure it is replayed and the model is not asked again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.chat.agent import ChatAgent
    from actionjournal.chat.calls import chat, chat_async, chat_response_async, parse
    from actionjournal.chat.events import ChatRequestEvent, ChatResponseEvent
    from actionjournal.chat.models import (
        ChatError,
        ChatModel,
        ChatModelConfig,
        ChatResponse,
        ChatResponseError,
        ChatTimeoutError,
        ChatUnreachableError,
        OllamaChat,
        OpenAIChat,
        StructuredOutputError,
        ToolCall,
    )

__all__ = [
    "ChatAgent",
    "ChatError",
    "ChatModel",
    "ChatModelConfig",
    "ChatRequestEvent",
    "ChatResponse",
    "ChatResponseError",
    "ChatResponseEvent",
    "ChatTimeoutError",
    "ChatUnreachableError",
    "OllamaChat",
    "OpenAIChat",
    "StructuredOutputError",
    "ToolCall",
    "chat",
    "chat_async",
    "chat_response_async",
    "parse",
]

_LAZY = {
    "actionjournal.chat.agent": ("ChatAgent",),
    "actionjournal.chat.calls": ("chat", "chat_async", "chat_response_async", "parse"),
    "actionjournal.chat.events": ("ChatRequestEvent", "ChatResponseEvent"),
    "actionjournal.chat.models": (
        "ChatError",
        "ChatModel",
        "ChatModelConfig",
        "ChatResponse",
        "ChatResponseError",
        "ChatTimeoutError",
        "ChatUnreachableError",
        "OllamaChat",
        "OpenAIChat",
        "StructuredOutputError",
        "ToolCall",
    ),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
