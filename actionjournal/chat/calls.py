"""``ctx.chat``: a chat model request as a durable call, with structured output.

The journaled value is the raw :class:`~actionjournal.chat.models.ChatResponse`;
validation against the schema happens after the call, on the first run and on every
replay alike. So an invalid reply fails the same way after a recovery, and fixing the
schema (not the prompt) lets the recorded reply validate without asking the model again.
"""

from __future__ import annotations

import re
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from actionjournal.chat.errors import StructuredOutputError
from actionjournal.chat.models import ChatModel, ChatResponse, Format, Message
from actionjournal.durable.context import CallContext
from actionjournal.durable.effects import refuse_on_loop
from actionjournal.durable.errors import ConfigurationError

S = TypeVar("S", bound=BaseModel)
Messages = str | Sequence[Mapping[str, Any] | BaseModel]
"""A single user message, or ``[{"role": ..., "content": ...}, ...]``."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def chat(
    ctx: CallContext,
    model: str,
    messages: Messages,
    schema: type[BaseModel] | None = None,
    *,
    durable_id: str | None = None,
) -> Any:
    """Ask the agent's chat model ``model``; the :class:`ChatResponse`, or with ``schema``
    the validated schema instance. A durable call: replayed, never re-requested."""
    refuse_on_loop("ctx.chat", "`await ctx.chat_async(...)`")
    connection, msgs, fmt = _prepare(ctx, model, messages, schema)
    response = ctx.durable_execute(
        connection.request, model, msgs, fmt, **_options(durable_id, connection)
    )
    return response if schema is None else parse(response, schema)


def chat_async(
    ctx: CallContext,
    model: str,
    messages: Messages,
    schema: type[BaseModel] | None = None,
    *,
    durable_id: str | None = None,
) -> Coroutine[Any, Any, Any]:
    """Awaitable form of :func:`chat`. Not ``async def``: the call's position is taken now,
    so ``asyncio.gather`` of several chats replays correctly."""
    call = chat_response_async(ctx, model, messages, schema, durable_id=durable_id)
    return _parsed(call, schema)


def chat_response_async(
    ctx: CallContext,
    model: str,
    messages: Messages,
    schema: type[BaseModel] | None = None,
    *,
    durable_id: str | None = None,
) -> Coroutine[Any, Any, ChatResponse]:
    """The raw response of a structured request (validate it with :func:`parse`)."""
    connection, msgs, fmt = _prepare(ctx, model, messages, schema)
    return ctx.durable_execute_async(
        connection.request, model, msgs, fmt, **_options(durable_id, connection)
    )


def parse(response: ChatResponse, schema: type[S]) -> S:
    """Validate a reply against ``schema``; :class:`StructuredOutputError` says why not."""
    text = response.content
    fenced = _FENCE.match(text)  # some OpenAI-compatible servers wrap JSON in a code fence
    try:
        return schema.model_validate_json(fenced.group(1) if fenced else text)
    except ValidationError as exc:
        raise StructuredOutputError(
            f"chat model {response.name!r} ({response.model}) answered call {response.call_id} "
            f"with output that does not validate as {schema.__name__}: {_errors(exc)}; the "
            f"output was {text[:300]!r}. The reply is journaled and replays the same way: catch "
            "StructuredOutputError in the action to ask again (a new call), or relax the schema"
        ) from None


# -- helpers ---------------------------------------------------------------------------


async def _parsed(call: Coroutine[Any, Any, ChatResponse], schema: type[BaseModel] | None) -> Any:
    response = await call
    return response if schema is None else parse(response, schema)


def _options(durable_id: str | None, connection: ChatModel) -> dict[str, Any]:
    # A model request changes nothing, so a call cut off by a crash is simply asked again
    # (no CallStarted record), and a failure to get an answer is not journaled as its
    # outcome: after a restart it is asked again instead of replaying the failure forever.
    return {
        "durable_id": durable_id,
        "on_unknown": "rerun",
        "record_failures": False,
        "retry": connection.config.retry,
    }


def _prepare(
    ctx: CallContext, model: str, messages: Messages, schema: type[BaseModel] | None
) -> tuple[ChatModel, list[Message], Format | None]:
    models: Mapping[str, ChatModel] = getattr(ctx.agent, "chat_models", None) or {}
    connection = models.get(model)
    if not isinstance(connection, ChatModel):
        raise ConfigurationError(
            f"agent {ctx.agent.operator_uid!r} has no chat model named {model!r} (it has "
            f"{sorted(models) or 'none'}); add it to the agent's chat_models, e.g. "
            f"chat_models = {{{model!r}: OllamaChat(endpoint=..., model=...)}}"
        )
    fmt = None
    if schema is not None:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(f"schema must be a pydantic model class, got {schema!r}")
        fmt = {"name": schema.__name__, "schema": schema.model_json_schema()}
    return connection, normalize_messages(messages), fmt


def normalize_messages(messages: Messages) -> list[Message]:
    """Plain ``{"role", "content"}`` dicts: the form that is sent, digested and journaled."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out: list[Message] = []
    for i, message in enumerate(messages):
        item = message.model_dump() if isinstance(message, BaseModel) else dict(message)
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise TypeError(
                f"chat message #{i} needs a str 'role' and a str 'content', got {message!r}"
            )
        out.append({"role": role, "content": content})
    if not out:
        raise ValueError("a chat request needs at least one message")
    return out


def _errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()
    )
