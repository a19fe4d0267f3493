"""The ``actionjournal`` command: demo, journal inspect, cleanup, dev services."""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = """usage: actionjournal COMMAND ...

commands:
  demo [--local]                run the crash-and-recover demo (a PyFlink job) on SQLite
  journal inspect ...           runs, actions and calls of a key; a namespace summary
  cleanup plan|apply ...        plan, then apply, a safe deletion of finished runs
  dev kafka start|stop|status   a local Apache Kafka broker for development
  dev fluss start|stop|status   a local Apache Fluss cluster for development
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["demo"]:
        from actionjournal.tools import demo

        return demo.main(args[1:])
    if args[:2] == ["journal", "inspect"]:
        from actionjournal.tools import journal_inspect

        return journal_inspect.main(args[2:])
    if args[:1] == ["cleanup"]:
        from actionjournal.tools import cleanup

        return cleanup.main(args[1:])
    if args[:2] == ["dev", "kafka"]:
        from actionjournal.dev import kafka as dev_kafka

        return dev_kafka.main(args[2:])
    if args[:2] == ["dev", "fluss"]:
        from actionjournal.dev import fluss as dev_fluss

        return dev_fluss.main(args[2:])
    print(USAGE, file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
    return 0 if args[:1] in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
