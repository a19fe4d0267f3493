"""``actionjournal ui``: options, checks, and the server (uvicorn) until Ctrl-C."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ToolError,
    UsageError,
    add_namespace_args,
    seconds,
)
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.security import TOKEN_ENV, is_loopback


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal ui",
        description="The journal explorer: a local web UI (and JSON API under /api/) over a "
        "job's journal: runs, a run's timeline, calls in flight, dead letters, the agent's "
        "graph, journal health. Read-only unless --allow-actions. docs/ui.md says more.",
    )
    jr.add_store_args(p)
    add_namespace_args(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on; any other than "
                   "loopback needs --token")  # fmt: skip
    p.add_argument("--port", type=int, default=8470, help="port to listen on (0: a free one)")
    p.add_argument(
        "--token",
        help=f"access token every request must carry (default: ${TOKEN_ENV}); required for "
        "a non-loopback --host",
    )
    p.add_argument(
        "--allow-actions",
        action="store_true",
        help="allow state changes (the re-drive button); each is logged with who and what",
    )
    p.add_argument(
        "--action-log", metavar="FILE", help="also append each action as a JSON line to FILE"
    )
    p.add_argument(
        "--redact",
        action="append",
        default=[],
        metavar="PATH",
        help="hide a field in pages and API alike, e.g. input.card_number (repeatable; "
        "docs/ui.md says how paths read)",
    )
    p.add_argument(
        "--redrive-topic", metavar="TOPIC", help="the Kafka topic the job reads dead letters "
        "back from: enables the re-drive button (with --allow-actions)"
    )  # fmt: skip
    p.add_argument(
        "--redrive-bootstrap",
        metavar="HOST:PORT",
        help="Kafka bootstrap servers of --redrive-topic (default: the journal's, on Kafka)",
    )
    p.add_argument(
        "--checkpoints",
        metavar="PATH",
        help="retained Flink checkpoints (a directory of chk-N) or a LocalRunner snapshot: "
        "the health page shows what they need and what cleanup would delete",
    )
    p.add_argument("--plan", metavar="FILE", help="the agent's plan (`actionjournal plan`)")
    p.add_argument("--agent", metavar="MODULE:AGENT", help="the agent class, instead of --plan")
    p.add_argument(
        "--index", metavar="FILE", help="the run index file (default: one per journal under "
        "~/.cache/actionjournal/ui)"
    )  # fmt: skip
    p.add_argument(
        "--poll", type=seconds, default=1.0, metavar="SECONDS", help="how often to look for "
        "new records"
    )  # fmt: skip
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        import uvicorn

        from actionjournal.tools.ui.app import create_app
        from actionjournal.tools.ui.explorer import Explorer, Settings
    except ImportError as exc:
        raise ToolError(
            f"the explorer needs its web libraries ({exc}): pip install 'actionjournal[ui]'"
        ) from None
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(args.host) and not token:
        raise UsageError(
            f"--host {args.host} is not a loopback address: anyone who reaches it would see "
            f"the journal, so give --token TOKEN (or set {TOKEN_ENV})"
        )
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: give 0 (a free port) to 65535")
    journal = jr.journal_from_args(args)
    bootstrap = args.redrive_bootstrap
    if bootstrap is None and args.redrive_topic and jr.is_kafka(journal.config):
        bootstrap = args.bootstrap
    plan = _plan(args)
    checkpoints = Path(args.checkpoints) if args.checkpoints else None
    if checkpoints is not None and not checkpoints.exists():
        raise UsageError(f"--checkpoints {checkpoints}: no such file or directory")
    settings = Settings(
        index=Path(args.index) if args.index else None,
        token=token,
        allow_actions=args.allow_actions,
        redact=args.redact,
        redrive_topic=args.redrive_topic,
        redrive_bootstrap=bootstrap,
        checkpoints=checkpoints,
        plan=plan,
        poll_s=max(args.poll, 0.05),
        action_log=Path(args.action_log) if args.action_log else None,
    )
    explorer = Explorer(journal, settings)
    try:
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: a response's header and body writes go out at
        # once instead of the body waiting ~40 ms for the client's delayed ACK (Nagle).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:
            raise ToolError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
        sock.listen(128)  # connections wait from the moment the URL is printed
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        explorer.start()
        print(f"actionjournal ui: http://{shown}:{port}/ ({journal.describe()}; index "
              f"{explorer.index_path}; {'actions allowed' if args.allow_actions else 'read-only'}"
              f"{'; token required' if token else ''})", flush=True)  # fmt: skip
        config = uvicorn.Config(create_app(explorer), log_level="warning", access_log=False)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        explorer.close()
    return EXIT_OK


def _plan(args: object) -> dict | None:
    plan_file, agent = getattr(args, "plan", None), getattr(args, "agent", None)
    if plan_file and agent:
        raise UsageError("give --plan or --agent, not both")
    if agent:
        from actionjournal.tools.plan import load_agent, plan_of

        return plan_of(load_agent(agent))
    if plan_file:
        try:
            return json.loads(Path(plan_file).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--plan {plan_file}: {exc}") from None
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
