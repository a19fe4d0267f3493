"""Who may see and do what: the access token, CSRF tokens for forms, the action log.

* With a token (required off loopback), every request must carry it: the
  ``Authorization: Bearer`` header, or ``?token=`` once, which sets an HttpOnly,
  SameSite=Strict cookie and redirects to the same page without it. Anything else is 401.
* State changes are POST only, with a CSRF token (form field ``csrf`` or header
  ``X-CSRF-Token``) derived from a secret made at start, so another site cannot forge one.
* Every action is logged (stderr and, if given, a file) with who asked and what for.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "actionjournal_ui"
TOKEN_ENV = "ACTIONJOURNAL_UI_TOKEN"
log = logging.getLogger("actionjournal.ui.actions")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """The server's secrets: the access token (may be None on loopback) and the CSRF key."""

    def __init__(self, token: str | None) -> None:
        self.token = token
        self._csrf_key = secrets.token_bytes(32)

    def csrf_token(self) -> str:
        return hmac.new(self._csrf_key, b"csrf", hashlib.sha256).hexdigest()

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(
            (given or "").encode(), self.csrf_token().encode()
        )

    def token_ok(self, given: str | None) -> bool:
        if self.token is None:
            return True
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def cookie_value(self) -> str:
        """What the cookie holds: a digest of the token, never the token itself."""
        assert self.token is not None
        return hashlib.sha256(b"cookie:" + self.token.encode()).hexdigest()


class TokenMiddleware:
    """Refuses (401) every request without the token, when the server has one."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.guard.token is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        header = request.headers.get("authorization", "")
        bearer = header[7:].strip() if header.lower().startswith("bearer ") else None
        cookie = request.cookies.get(COOKIE)
        if self.guard.token_ok(bearer) or (
            cookie is not None
            and hmac.compare_digest(cookie.encode(), self.guard.cookie_value().encode())
        ):
            await self.app(scope, receive, send)
            return
        given = request.query_params.get("token")
        if given is not None and self.guard.token_ok(given) and request.method == "GET":
            rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, self.guard.cookie_value(), httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        message = (
            "this explorer needs its access token: send 'Authorization: Bearer TOKEN', or "
            "open the page once with ?token=TOKEN"
        )
        if request.url.path.startswith("/api/"):
            response = JSONResponse({"error": message, "status": 401}, status_code=401)
        else:
            response = PlainTextResponse(message, status_code=401)
        response.headers["WWW-Authenticate"] = "Bearer"
        await response(scope, receive, send)


class ActionLog:
    """Every state change the explorer made: when, who asked, what, and how it went."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path

    def record(self, request: Request, action: str, target: dict[str, Any], result: str) -> None:
        client = request.client.host if request.client else "?"
        who = {
            "client": client,
            "user_agent": request.headers.get("user-agent", "")[:200],
            "authenticated": "token"
            if request.headers.get("authorization") or request.cookies.get(COOKIE)
            else "loopback",
        }
        entry = {
            "at": time.time(),
            "who": who,
            "action": action,
            "target": target,
            "result": result,
        }
        line = json.dumps(entry, sort_keys=True)
        log.warning("action: %s", line)
        if self.path is not None:
            with self.path.open("a") as out:
                out.write(line + "\n")
