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
from actionjournal.flink_agents.api.agents.budget import LoopBudget
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
from actionjournal.flink_agents.runtime import budgets

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
        loop = _Loop(request.id, request.model, request.prompt_args, request.output_schema)
        loop.context, loop.budget = request.context, request.budget
        await _chat(ctx, loop, request.messages)
        return
    results = ToolResponseEvent.from_event(event)
    pending = ctx.sensory_memory.get(_REQUESTS) or {}
    resume = pending.pop(str(results.request_id), None)
    if resume is None:  # the answer to a tool request an action sent itself: not a chat's
        return
    ctx.sensory_memory.set(_REQUESTS, pending)
    answers = [
        ChatMessage(
            role=MessageRole.TOOL,
            content=str(result),
            extra_args={"external_id": ext} if (ext := results.external_ids.get(tool_id)) else {},
        )
        for tool_id, result in results.responses.items()
    ]
    loop = _Loop.resumed(resume)
    await _chat(ctx, loop, _converse(ctx, loop.request_id, None, answers))


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
    response = ToolResponseEvent(request.id, responses, external_ids, context=request.context)  # type: ignore[arg-type]
    ctx.send_event(response)


class _Loop:
    """One chat request and the tool rounds it leads to (kept with each tool request)."""

    def __init__(
        self,
        request_id: UUID,
        model: str,
        prompt_args: dict[str, Any],
        output_schema: OutputSchema | None,
    ) -> None:
        self.request_id, self.model = request_id, model
        self.prompt_args, self.output_schema = dict(prompt_args or {}), output_schema
        self.context: Any = None
        self.budget: LoopBudget | None = None

    def saved(self) -> dict[str, Any]:
        schema = self.output_schema
        return {
            "initial_request_id": str(self.request_id),
            "model": self.model,
            "prompt_args": self.prompt_args,
            "output_schema": schema.model_dump() if schema else None,
            "context": self.context,
            "budget": self.budget.model_dump() if self.budget else None,
        }

    @classmethod
    def resumed(cls, saved: dict[str, Any]) -> _Loop:
        schema, budget = saved["output_schema"], saved.get("budget")
        loop = cls(
            UUID(saved["initial_request_id"]),
            saved["model"],
            saved["prompt_args"],
            OutputSchema.model_validate(schema) if schema is not None else None,
        )
        loop.context = saved.get("context")
        loop.budget = LoopBudget.model_validate(budget) if budget is not None else None
        return loop


async def _chat(ctx: RunnerContext, loop: _Loop, messages: list[ChatMessage]) -> None:
    request_id, model, prompt_args = loop.request_id, loop.model, loop.prompt_args
    output_schema, budget = loop.output_schema, loop.budget
    setup: Any = ctx.get_resource(model, ResourceType.CHAT_MODEL)
    ask: Any = setup.chat
    final = False
    if budget is not None:
        spent = await budgets.spent(ctx, str(request_id), budget)
        if spent.exhausted is not None:
            if budget.on_exhausted == "stop" or spent.final:
                last = next(
                    (m for m in reversed(messages) if m.role == MessageRole.ASSISTANT), None
                )
                answer = ChatMessage(
                    role=MessageRole.ASSISTANT,
                    content=last.content if last is not None else "",
                    extra_args=spent.report(),
                )
                ctx.send_event(ChatResponseEvent(request_id, answer, context=loop.context))
                return
            final = spent.final = True
            budgets.save(ctx, str(request_id), spent)
            messages = [*messages, budgets.wrap_up(spent.exhausted)]
        ask = budgets.Counted(setup.chat, budgets.metrics_of(ctx))
    strategy = ctx.config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY)
    retries = max(0, ctx.config.get(AgentExecutionOptions.MAX_RETRIES))
    retries = retries if strategy == ErrorHandlingStrategy.RETRY else 0
    wait = max(0, ctx.config.get(AgentExecutionOptions.RETRY_WAIT_INTERVAL) or 0)
    for attempt in range(retries + 1):
        try:
            # The model's name is an argument: asking another model is a divergence, not a
            # replay. A failed attempt is not journaled: it is asked again after a failure.
            response: ChatMessage = await ctx.durable_execute_async(
                ask,
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
    if budget is not None:
        spent = budgets.answered(ctx, str(request_id), response)
        if final:  # the wrap-up answer ends the loop, whatever it asks for
            extra = {**response.extra_args, **spent.report()}
            response = response.model_copy(update={"tool_calls": [], "extra_args": extra})
    if response.tool_calls:
        _converse(ctx, request_id, messages, [response])
        tool_request = ToolRequestEvent(model, response.tool_calls)
        ctx.send_event(tool_request)  # sets its id, which the tool response will name
        pending = ctx.sensory_memory.get(_REQUESTS) or {}
        pending[str(tool_request.id)] = loop.saved()
        ctx.sensory_memory.set(_REQUESTS, pending)
        return
    ctx.send_event(
        ChatResponseEvent(request_id, response, retry_count=attempt, context=loop.context)
    )


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
