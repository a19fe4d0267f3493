"""A local chat model server speaking the Ollama and the OpenAI-compatible protocols.

Tests and the examples use it when no real model is configured: replies are
deterministic (derived from the model and the prompt), latency is configurable per
model, and every request is counted, so "was the model asked again after a crash"
is answered by the called server, not by our own bookkeeping.

    POST /api/chat              Ollama, {"model", "messages", "stream": false, "format"?}
    POST /v1/chat/completions   OpenAI, {"model", "messages", "response_format"?}
    GET  /api/tags, /v1/models  the models it serves (those given, or those asked so far)

A structured request (Ollama ``format``, OpenAI ``response_format``) gets a JSON
object generated from its JSON schema (enums, bounds and nested models respected),
or, for models in ``invalid_json``, a truncated JSON text.

Tool calling: a request that offers ``tools`` is answered with the tool calls its model's
plan (``tool_calls``) lists for the round the conversation is in (the number of assistant
messages with tool calls so far), then, once the plan is done, with a reply as above. As a
real server, it refuses (400) a tool result that answers no tool call of the conversation.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from actionjournal.testing.http import JsonHandler, LocalService


@dataclass(frozen=True)
class ModelRequest:
    """One request the server received."""

    protocol: str  # "ollama" | "openai"
    model: str
    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None
    key: str  # digest of (model, messages, schema, tools): equal requests have equal keys
    tools: tuple[str, ...] = ()  # names of the tools offered

    @property
    def prompt(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages)


class ModelServer(LocalService):
    """``with ModelServer(latency={"judge": 0.2}) as server: server.url``.

    ``latency``: seconds per request, one number or per model (``default`` for others).
    ``models``: when given, other models answer 404 as a real server does.
    ``invalid_json``: models whose structured replies are truncated JSON.
    ``tool_calls``: per model (``default`` for others), the rounds of tool calls it asks
    for when offered tools, each round a list of ``{"name": ..., "arguments": {...}}``.
    """

    def __init__(
        self,
        latency: float | dict[str, float] = 0.0,
        *,
        models: set[str] | None = None,
        invalid_json: set[str] | None = None,
        tool_calls: dict[str, list[list[dict[str, Any]]]] | None = None,
    ) -> None:
        self.latency = dict(latency) if isinstance(latency, dict) else {"default": latency}
        self.models = models
        self.invalid_json = set(invalid_json or ())
        self.tool_calls = dict(tool_calls or {})
        self.requests: list[ModelRequest] = []
        """Every request received, in arrival order."""
        self.counts: Counter[str] = Counter()
        """Requests received per request key: a value above 1 means it was asked again."""
        self._cond = threading.Condition()
        self._held: set[str] = set()
        self._serve(self._handler())

    def stop(self) -> None:
        with self._cond:
            self._held.clear()
            self._cond.notify_all()
        super().stop()

    # -- inspection and control ----------------------------------------------------------

    def count(self, model: str | None = None, contains: str | None = None) -> int:
        """Requests received, optionally only for ``model`` and/or whose prompt has ``contains``."""
        with self._cond:
            return sum(
                1
                for r in self.requests
                if (model is None or r.model == model)
                and (contains is None or contains in r.prompt)
            )

    def repeated(self) -> dict[str, int]:
        """Request keys received more than once (the same question asked again)."""
        with self._cond:
            return {key: n for key, n in self.counts.items() if n > 1}

    def hold(self, model: str) -> None:
        """Requests to ``model`` wait, unanswered, until :meth:`release`."""
        with self._cond:
            self._held.add(model)

    def release(self, model: str) -> None:
        with self._cond:
            self._held.discard(model)
            self._cond.notify_all()

    def latency_of(self, model: str) -> float:
        return self.latency.get(model, self.latency.get("default", 0.0))

    # -- replies --------------------------------------------------------------------------

    def reply(self, request: ModelRequest) -> str:
        """The deterministic content the server answers ``request`` with."""
        if request.schema is None:
            last = request.messages[-1].get("content", "") if request.messages else ""
            return (
                f"[{request.model}] reply {request.key[:8]} to: {' '.join(str(last).split())[:80]}"
            )
        if request.model in self.invalid_json:
            return json.dumps(fake_instance(request.schema, request.key))[:12]
        return json.dumps(fake_instance(request.schema, request.key))

    def tool_round(self, request: ModelRequest) -> list[dict[str, Any]] | None:
        """The tool calls ``request`` is answered with, or None for a reply."""
        plan = self.tool_calls.get(request.model, self.tool_calls.get("default"))
        if not plan or not request.tools:
            return None
        done = sum(
            1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls")
        )
        return plan[done] if done < len(plan) else None

    def _receive(self, protocol: str, body: dict[str, Any]) -> ModelRequest:
        schema = _schema_of(protocol, body)
        model, messages = str(body.get("model", "")), list(body.get("messages") or [])
        tools = tuple(str((t.get("function") or {}).get("name")) for t in body.get("tools") or ())
        key = _digest(json.dumps([model, messages, schema, tools], sort_keys=True))
        request = ModelRequest(protocol, model, messages, schema, key, tools)
        with self._cond:
            self.requests.append(request)
            self.counts[key] += 1
        return request

    def _answer(self, request: ModelRequest) -> dict[str, Any]:
        delay = self.latency_of(request.model)
        if delay:
            time.sleep(delay)
        with self._cond:
            while request.model in self._held:
                self._cond.wait()
        calls = self.tool_round(request)
        content = "" if calls else self.reply(request)
        prompt_tokens, completion_tokens = len(request.prompt.split()), len(content.split())
        if request.protocol == "ollama":
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = [
                    {"function": {"name": c["name"], "arguments": c.get("arguments", {})}}
                    for c in calls
                ]
            return {
                "model": request.model,
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "message": message,
                "done": True,
                "done_reason": "stop",
                "total_duration": int(delay * 1e9),
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }
        return {
            "id": f"chatcmpl-{request.key[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": _openai_reply(request, content, calls),
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers and httpx pools expect

            def do_GET(self) -> None:
                with server._cond:
                    names = sorted(server.models or {r.model for r in server.requests})
                if self.path == "/api/tags":
                    return self._reply(200, {"models": [{"name": n, "model": n} for n in names]})
                if self.path == "/v1/models":
                    data = [{"id": n, "object": "model", "owned_by": "test"} for n in names]
                    return self._reply(200, {"object": "list", "data": data})
                self._reply(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:
                raw = self.read_body()
                if raw is None:  # the client died mid-request: nothing was asked
                    return
                protocol = {"/api/chat": "ollama", "/v1/chat/completions": "openai"}.get(
                    self.path.rstrip("/")
                )
                if protocol is None:
                    return self._reply(404, {"error": f"no route {self.path}"})
                try:
                    body = json.loads(raw)
                    assert isinstance(body, dict) and isinstance(body.get("messages"), list)
                except (ValueError, AssertionError):
                    return self._error(protocol, 400, "body must be JSON with a messages list")
                if protocol == "ollama" and body.get("stream") is not False:
                    return self._error(
                        protocol,
                        400,
                        'this server answers non-streaming requests only: "stream": false',
                    )
                model = str(body.get("model", ""))
                if server.models is not None and model not in server.models:
                    return self._error(
                        protocol, 404, f'model "{model}" not found, try pulling it first'
                    )
                refused = _tool_messages_refused(protocol, body)
                if refused:
                    return self._error(protocol, 400, refused)
                with server.serving():
                    request = server._receive(protocol, body)
                    missing = {c["name"] for c in server.tool_round(request) or ()}
                    missing -= set(request.tools)
                    if missing:
                        return self._error(
                            protocol, 400, f"the tool plan asks for {sorted(missing)}, not offered"
                        )
                    self._reply(200, server._answer(request))

            def _error(self, protocol: str, status: int, message: str) -> None:
                if protocol == "ollama":
                    return self._reply(status, {"error": message})
                self._reply(
                    status, {"error": {"message": message, "type": "invalid_request_error"}}
                )

        return Handler


def _openai_reply(
    request: ModelRequest, content: str, calls: list[dict[str, Any]] | None
) -> dict[str, Any]:
    if not calls:
        return {"role": "assistant", "content": content}
    tool_calls = [
        {
            "id": f"call_{request.key[:8]}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
        }
        for i, c in enumerate(calls)
    ]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def _tool_messages_refused(protocol: str, body: dict[str, Any]) -> str | None:
    """Why the conversation's tool messages are invalid, as a real server would say; or None.

    OpenAI: a tool result needs the ``tool_call_id`` of an earlier assistant tool call.
    Both: a tool call's arguments are a JSON object (OpenAI: its text); the model
    asks only for tools offered.
    """
    asked: set[str] = set()
    offered = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or ()}
    for i, message in enumerate(body["messages"]):
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments")
            if protocol == "openai":
                try:
                    arguments = json.loads(arguments)  # type: ignore[arg-type]  # None: TypeError
                except (TypeError, ValueError):
                    return f"messages[{i}]: tool call arguments must be a JSON text"
                asked.add(str(call.get("id")))
            if not isinstance(arguments, dict):
                return f"messages[{i}]: tool call arguments must be a JSON object"
            if offered and function.get("name") not in offered:
                return f"messages[{i}]: tool {function.get('name')!r} was not offered"
        if message.get("role") == "tool":
            if not isinstance(message.get("content"), str):
                return f"messages[{i}]: a tool message needs a str content"
            if protocol == "openai" and message.get("tool_call_id") not in asked:
                return (
                    f"messages[{i}]: tool_call_id {message.get('tool_call_id')!r} answers no "
                    "tool call of an earlier assistant message"
                )
    return None


def _schema_of(protocol: str, body: dict[str, Any]) -> dict[str, Any] | None:
    if protocol == "ollama":
        fmt = body.get("format")
        if fmt == "json":
            return {"type": "object", "properties": {"reply": {"type": "string"}}}
        return fmt if isinstance(fmt, dict) else None
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema") or {"type": "object"}
    if fmt.get("type") == "json_object":
        return {"type": "object", "properties": {"reply": {"type": "string"}}}
    return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def fake_instance(schema: dict[str, Any], seed: str) -> Any:
    """A JSON value valid for ``schema``, chosen deterministically by ``seed``."""
    return _fake(schema, schema.get("$defs", {}), seed, "")


def _fake(schema: dict[str, Any], defs: dict[str, Any], seed: str, path: str) -> Any:
    n = int(_digest(f"{seed}/{path}")[:8], 16)
    if "$ref" in schema:
        return _fake(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, seed, path)
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            options = [s for s in schema[combo] if s.get("type") != "null"] or schema[combo]
            return _fake(options[0], defs, seed, path)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][n % len(schema["enum"])]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _fake(sub, defs, seed, f"{path}.{name}") for name, sub in props.items()}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        item = schema.get("items", {"type": "string"})
        return [_fake(item, defs, seed, f"{path}[{i}]") for i in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 10) - 1)
        if kind == "integer":
            return int(low) + n % (int(high) - int(low) + 1)
        return round(low + (high - low) * (n % 1000) / 999, 2)
    if kind == "boolean":
        return bool(n & 1)
    if kind == "null":
        return None
    text = f"{schema.get('title', path.rsplit('.', 1)[-1] or 'text')} {n % 100000:05d}"
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = text.ljust(low, "x")
    return text[: int(high)] if high is not None else text
