"""``ChatAgent``: an agent with named chat models and the built-in chat action."""

from __future__ import annotations

from collections.abc import Mapping

from actionjournal.chat.calls import chat_response_async, parse
from actionjournal.chat.events import ChatRequestEvent, ChatResponseEvent
from actionjournal.chat.models import ChatModel
from actionjournal.durable.agent import Agent, action
from actionjournal.durable.context import CallContext


class ChatAgent(Agent):
    """Subclass it, set ``chat_models`` (class attribute or in ``__init__``), and send
    :class:`ChatRequestEvent` from actions; answers arrive as :class:`ChatResponseEvent`.

    The built-in action is ``async``, so requests sent together run concurrently.
    ``ctx.chat(...)`` works in its actions too (any agent with ``chat_models`` can use it).
    """

    chat_models: Mapping[str, ChatModel] = {}

    @action(ChatRequestEvent)
    async def chat_request(self, event: ChatRequestEvent, ctx: CallContext) -> None:
        """Built-in: one durable chat call per request event."""
        schema = event.schema()
        response = await chat_response_async(ctx, event.model, event.messages, schema)
        parsed = parse(response, schema) if schema is not None else None
        ctx.send_event(ChatResponseEvent(event.request_id, event.model, response, parsed))
