"""The built-in actions every Flink Agents agent has: chat, and tool calls.

``chat_model_action`` answers a ChatRequestEvent: it asks the chat model setup (a
durable call, so a journaled answer is never asked again) and, when the model asks for
tools, sends a ToolRequestEvent; ``tool_call_action`` runs each tool call as a durable
call of the tool's function and sends the results back as a ToolResponseEvent, which
``chat_model_action`` hands to the model with the conversation so far, until the model
answers with a ChatResponseEvent. The conversation lives in sensory memory, journaled
with each action, so a run interrupted between two tool calls resumes where it was.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from typing import Any
from uuid import UUID

from actionjournal.flink_agents.api.agents.agent import STRUCTURED_OUTPUT
from actionjournal.flink_agents.api.agents.types import OutputSchema
from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.core_options import (
    AgentExecutionOptions,
    ErrorHandlingStrategy,
)
from actionjournal.flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from actionjournal.flink_agents.api.events.event import Event
from actionjournal.flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from actionjournal.flink_agents.api.resource import ResourceType
from actionjournal.flink_agents.api.runner_context import RunnerContext

log = logging.getLogger(__name__)

CHAT_ACTION = "chat_model_action"
TOOL_ACTION = "tool_call_action"
_CONVERSATIONS = "_TOOL_CALL_CONTEXT"  # initial request id -> messages so far
_REQUESTS = "_TOOL_REQUEST_EVENT_CONTEXT"  # tool request id -> what to resume the chat with
_FENCE = re.compile(r"(?s)^```(?:json)?\s*(.*?)\s*```$")


async def chat_model_action(event: Event, ctx: RunnerContext) -> None:
    """Built-in: a chat request, or the results of the tools a model asked for."""
    if event.type == ChatRequestEvent.EVENT_TYPE:
        request = ChatRequestEvent.from_event(event)
        assert request.id is not None
        await _chat(
            ctx,
            request.id,
            request.model,
            request.messages,
            request.prompt_args,
            request.output_schema,
        )
        return
    results = ToolResponseEvent.from_event(event)
    pending = ctx.sensory_memory.get(_REQUESTS) or {}
    resume = pending.pop(str(results.request_id), None)
    if resume is None:
        raise ValueError(
            f"tool response to request {results.request_id} answers no tool request of this "
            "run's chat: send ToolResponseEvent(request_id=<the ToolRequestEvent's id>, ...)"
        )
    ctx.sensory_memory.set(_REQUESTS, pending)
    answers = [
        ChatMessage(
            role=MessageRole.TOOL,
            content=str(result),
            extra_args={"external_id": ext} if (ext := results.external_ids.get(tool_id)) else {},
        )
        for tool_id, result in results.responses.items()
    ]
    initial = UUID(resume["initial_request_id"])
    schema = resume["output_schema"]
    await _chat(
        ctx,
        initial,
        resume["model"],
        _converse(ctx, initial, None, answers),
        resume["prompt_args"],
        OutputSchema.model_validate(schema) if schema is not None else None,
    )


async def tool_call_action(event: Event, ctx: RunnerContext) -> None:
    """Built-in: run the tool calls a model asked for, each as a durable call, in order."""
    request = ToolRequestEvent.from_event(event)
    responses: dict[str, Any] = {}
    external_ids: dict[str, str | None] = {}
    for call in request.tool_calls:
        call_id, name = str(call["id"]), call["function"]["name"]
        external_ids[call_id] = call.get("original_id")
        try:
            tool: Any = ctx.get_resource(name, ResourceType.TOOL)
        except KeyError:
            responses[call_id] = f"Tool `{name}` does not exist."
            continue
        arguments = call["function"].get("arguments") or {}
        # A partial, so no argument name can be taken for an option of the durable call.
        call_tool = functools.partial(tool.target(), **arguments)
        responses[call_id] = await ctx.durable_execute_async(call_tool)
    # the event's validator always sets its id
    ctx.send_event(ToolResponseEvent(request.id, responses, external_ids))  # type: ignore[arg-type]


async def _chat(
    ctx: RunnerContext,
    request_id: UUID,
    model: str,
    messages: list[ChatMessage],
    prompt_args: dict[str, Any],
    output_schema: OutputSchema | None,
) -> None:
    setup: Any = ctx.get_resource(model, ResourceType.CHAT_MODEL)
    strategy = ctx.config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY)
    retries = max(0, ctx.config.get(AgentExecutionOptions.MAX_RETRIES))
    retries = retries if strategy == ErrorHandlingStrategy.RETRY else 0
    wait = max(0, ctx.config.get(AgentExecutionOptions.RETRY_WAIT_INTERVAL) or 0)
    for attempt in range(retries + 1):
        try:
            # The model's name is an argument: asking another model is a divergence, not a
            # replay. A failed attempt is not journaled: it is asked again after a failure.
            response: ChatMessage = await ctx.durable_execute_async(
                setup.chat,
                messages,
                prompt_args=prompt_args,
                model=setup.model,
                on_unknown="rerun",
                record_failures=False,
            )
            if output_schema is not None and not response.tool_calls:
                response = _structured(response, output_schema)
            break
        except Exception as exc:
            if strategy == ErrorHandlingStrategy.IGNORE:
                log.warning("chat request %s to %r failed (%s); ignored", request_id, model, exc)
                return
            if attempt == retries:
                raise
            log.warning(
                "chat request %s to %r failed (%s); retry %d", request_id, model, exc, attempt + 1
            )
            await asyncio.sleep(wait * (1 << attempt))
    if response.tool_calls:
        _converse(ctx, request_id, messages, [response])
        tool_request = ToolRequestEvent(model, response.tool_calls)
        ctx.send_event(tool_request)  # sets its id, which the tool response will name
        pending = ctx.sensory_memory.get(_REQUESTS) or {}
        pending[str(tool_request.id)] = {
            "initial_request_id": str(request_id),
            "model": model,
            "prompt_args": dict(prompt_args or {}),
            "output_schema": output_schema.model_dump() if output_schema else None,
        }
        ctx.sensory_memory.set(_REQUESTS, pending)
        return
    ctx.send_event(ChatResponseEvent(request_id, response, retry_count=attempt))


def _converse(
    ctx: RunnerContext,
    request_id: UUID,
    initial: list[ChatMessage] | None,
    added: list[ChatMessage],
) -> list[ChatMessage]:
    """Add to the conversation of ``request_id`` (started with ``initial``); all of it."""
    conversations = ctx.sensory_memory.get(_CONVERSATIONS) or {}
    key = str(request_id)
    if key not in conversations:
        conversations[key] = [m.model_dump(mode="json") for m in initial or ()]
    conversations[key].extend(m.model_dump(mode="json") for m in added)
    ctx.sensory_memory.set(_CONVERSATIONS, conversations)
    return [ChatMessage.model_validate(m) for m in conversations[key]]


def _structured(response: ChatMessage, schema: OutputSchema) -> ChatMessage:
    text = response.content.strip()
    fenced = _FENCE.match(text)
    parsed = schema.output_schema.model_validate_json(fenced.group(1) if fenced else text)
    extra = {**response.extra_args, STRUCTURED_OUTPUT: parsed}
    return response.model_copy(update={"extra_args": extra})
