"""The explorer's routes: each page at ``/NAME`` and its JSON at ``/api/NAME``.

Errors never show a traceback: input the explorer cannot use is 400 with what it takes,
an unknown run or dead letter 404, a journal that cannot be read 503, anything else 500
with one line; as a page with the message, or as ``{"error", "status"}`` from the API.
State changes are POST only, with the CSRF token, and only with ``--allow-actions``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from actionjournal.durable.errors import ActionJournalError
from actionjournal.tools.toolkit import ToolError, fmt_bytes, fmt_time
from actionjournal.tools.ui import deadletters, graph, health, views
from actionjournal.tools.ui.explorer import Explorer
from actionjournal.tools.ui.queries import BadRequest, NotFound
from actionjournal.tools.ui.security import TokenMiddleware

HERE = Path(__file__).parent
log = logging.getLogger("actionjournal.ui")


class Forbidden(Exception):
    """Refused: read-only, or a missing or wrong CSRF token (HTTP 403)."""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min"


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    env = templates.env
    env.filters["time"] = fmt_time
    env.filters["short"] = lambda text: (text[:12] + "…") if text and len(text) > 13 else text
    env.filters["duration"] = _duration
    env.filters["bytes"] = fmt_bytes
    env.filters["query"] = lambda params: urlencode(params)
    env.globals["now"] = time.time
    return templates


def create_app(explorer: Explorer) -> Starlette:
    templates = _templates()

    def page(name: str, request: Request, **context: Any) -> Response:
        context.update(
            status=explorer.status(),
            csrf=explorer.guard.csrf_token(),
            path=request.url.path,
        )
        return templates.TemplateResponse(request, name, context)

    def both(
        template: str, make: Callable[[Request], Any], inline: bool = False
    ) -> tuple[Callable[[Request], Any], Callable[[Request], Any]]:
        """A page and its API. ``inline``: answered on the event loop (index queries of a
        millisecond), not handed to a worker thread: no thread switch on a busy machine."""

        def html(request: Request) -> Response:
            return page(template, request, doc=make(request))

        def api(request: Request) -> Response:
            return JSONResponse(views.as_data(make(request)))

        if not inline:
            return html, api

        async def html_inline(request: Request) -> Response:
            return html(request)

        async def api_inline(request: Request) -> Response:
            return api(request)

        return html_inline, api_inline

    def params(request: Request, *allowed_extra: str) -> dict[str, str]:
        return {k: v for k, v in request.query_params.items() if k not in allowed_extra}

    runs_html, runs_api = both("runs.html", lambda r: views.runs(explorer, params(r)), inline=True)
    run_html, run_api = both("run.html", lambda r: views.run(explorer, r.path_params["run"]))
    flight_html, flight_api = both("inflight.html", lambda r: views.in_flight(explorer))
    letters_html, letters_api = both(
        "deadletters.html", lambda r: views.dead_letters(explorer, params(r, "done"))
    )
    graph_html, graph_api = both("graph.html", lambda r: graph.graph(explorer))
    health_html, health_api = both(
        "health.html",
        lambda r: health.health(explorer, r.query_params.get("cleanup") in ("1", "true")),
    )

    async def redrive(request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        form = dict(parse_qsl((await request.body()).decode(errors="replace")))
        given = request.headers.get("x-csrf-token") or form.get("csrf")
        target = {k: request.path_params[k] for k in ("partition", "position")}
        settings = explorer.settings
        if not settings.allow_actions:
            explorer.actions.record(request, "redrive", target, "refused: read-only")
            raise Forbidden("this explorer is read-only: start it with --allow-actions to re-drive")
        if not explorer.guard.csrf_ok(given):
            explorer.actions.record(request, "redrive", target, "refused: bad CSRF token")
            raise Forbidden(
                "missing or wrong CSRF token: re-drive from the dead letters page (the API "
                "takes the token of /api/status in an X-CSRF-Token header)"
            )
        why_not = views.redrive_refusal(explorer)
        if why_not:
            explorer.actions.record(request, "redrive", target, f"refused: {why_not}")
            raise Forbidden(f"cannot re-drive: {why_not}")
        partition = _number(target["partition"], "partition")
        position = _number(target["position"], "position")
        letter, about = deadletters.dead_letter(explorer.readers.get(), partition, position)
        assert settings.redrive_topic and settings.redrive_bootstrap
        try:
            offset = deadletters.produce(letter, settings.redrive_bootstrap, settings.redrive_topic)
        except ToolError as exc:
            explorer.actions.record(request, "redrive", about, f"failed: {exc}")
            raise
        where = f"topic {settings.redrive_topic} offset {offset}"
        explorer.actions.record(request, "redrive", about, f"produced to {where}")
        message = f"re-drove key id {letter.key_id} seq {letter.seq}: produced to {where}"
        if api:
            return JSONResponse({"redriven": about, "topic": settings.redrive_topic,
                                 "offset": offset, "message": message})  # fmt: skip
        return RedirectResponse(f"/dead-letters?{urlencode({'done': message})}", status_code=303)

    async def status_api(request: Request) -> Response:
        return JSONResponse({**explorer.status(), "csrf": explorer.guard.csrf_token()})

    def home(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=307)

    routes = [
        Route("/", home),
        Route("/runs", runs_html),
        Route("/runs/{run}", run_html),
        Route("/in-flight", flight_html),
        Route("/dead-letters", letters_html),
        Route("/dead-letters/{partition}/{position}/redrive", redrive, methods=["POST"]),
        Route("/graph", graph_html),
        Route("/health", health_html),
        Route("/api/status", status_api),
        Route("/api/runs", runs_api),
        Route("/api/runs/{run}", run_api),
        Route("/api/in-flight", flight_api),
        Route("/api/dead-letters", letters_api),
        Route("/api/dead-letters/{partition}/{position}/redrive", redrive, methods=["POST"]),
        Route("/api/graph", graph_api),
        Route("/api/health", health_api),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]

    def failure(status: int) -> Callable[[Request, Exception], Response]:
        def handle(request: Request, exc: Exception) -> Response:
            return error(request, status, str(exc))

        return handle

    def error(request: Request, status: int, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": message, "status": status}, status_code=status)
        try:
            response = page("error.html", request, code=status, message=message)
        except Exception:  # the error page itself failed: plain text, never a traceback
            return Response(message, status_code=status, media_type="text/plain")
        response.status_code = status
        return response

    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = exc.detail
        if exc.status_code == 404:
            message = (
                f"no page {request.url.path}: the pages are /runs, /in-flight, "
                "/dead-letters, /graph, /health and their JSON under /api/"
            )
        elif exc.status_code == 405:
            message = (
                f"{request.method} is not allowed on {request.url.path}: pages are "
                "read with GET, and actions (re-drive) are POST forms with a CSRF token"
            )
        return error(request, exc.status_code, message)

    def journal_error(request: Request, exc: Exception) -> Response:
        return error(request, 503, f"the journal cannot be read: {exc}")

    def unexpected(request: Request, exc: Exception) -> Response:
        log.error("unexpected %s on %s: %s", type(exc).__name__, request.url.path, exc,
                  exc_info=exc)  # fmt: skip
        return error(
            request,
            500,
            f"unexpected {type(exc).__name__}: {exc} (a bug in actionjournal: please report it)",
        )

    app = Starlette(
        routes=routes,
        exception_handlers={
            BadRequest: failure(400),
            NotFound: failure(404),
            Forbidden: failure(403),
            HTTPException: http_error,
            ToolError: journal_error,
            ActionJournalError: journal_error,
            Exception: unexpected,
        },
    )
    app.add_middleware(TokenMiddleware, guard=explorer.guard)
    return app


def _number(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{what} {text!r} is not a number") from None
