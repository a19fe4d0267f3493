"""Chat models as durable calls: connections, ``ctx.chat``, and the event form.

See docs/chat-models.md. A model's response is journaled like any durable call
result, so after a failure it is replayed and the model is not asked again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.chat.agent import (
        ChatAgent as ChatAgent,
    )
    from actionjournal.chat.calls import (
        chat as chat,
    )
    from actionjournal.chat.calls import (
        chat_async as chat_async,
    )
    from actionjournal.chat.calls import (
        chat_response_async as chat_response_async,
    )
    from actionjournal.chat.calls import (
        parse as parse,
    )
    from actionjournal.chat.errors import (
        ChatError as ChatError,
    )
    from actionjournal.chat.errors import (
        ChatResponseError as ChatResponseError,
    )
    from actionjournal.chat.errors import (
        ChatTimeoutError as ChatTimeoutError,
    )
    from actionjournal.chat.errors import (
        ChatUnreachableError as ChatUnreachableError,
    )
    from actionjournal.chat.errors import (
        StructuredOutputError as StructuredOutputError,
    )
    from actionjournal.chat.events import (
        ChatRequestEvent as ChatRequestEvent,
    )
    from actionjournal.chat.events import (
        ChatResponseEvent as ChatResponseEvent,
    )
    from actionjournal.chat.models import (
        ChatModel as ChatModel,
    )
    from actionjournal.chat.models import (
        ChatModelConfig as ChatModelConfig,
    )
    from actionjournal.chat.models import (
        ChatResponse as ChatResponse,
    )
    from actionjournal.chat.models import (
        OllamaChat as OllamaChat,
    )
    from actionjournal.chat.models import (
        OpenAIChat as OpenAIChat,
    )
    from actionjournal.chat.models import (
        ToolCall as ToolCall,
    )

_LAZY = {
    "actionjournal.chat.agent": ("ChatAgent",),
    "actionjournal.chat.calls": ("chat", "chat_async", "chat_response_async", "parse"),
    "actionjournal.chat.errors": (
        "ChatError",
        "ChatResponseError",
        "ChatTimeoutError",
        "ChatUnreachableError",
        "StructuredOutputError",
    ),
    "actionjournal.chat.events": ("ChatRequestEvent", "ChatResponseEvent"),
    "actionjournal.chat.models": (
        "ChatModel",
        "ChatModelConfig",
        "ChatResponse",
        "OllamaChat",
        "OpenAIChat",
        "ToolCall",
    ),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
