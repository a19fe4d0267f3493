"""``actionjournal cleanup run ...`` whose deletes hang, to stop it in the middle of a round.

python tests/cleanup_run_child.py HELD_FILE cleanup run [options...]

The SQLite store's ``delete_below`` writes HELD_FILE and then waits (for a signal): by then
the round has journaled its boundaries and deleted nothing. Used by
tests/unit/test_cleanup_run.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from actionjournal.stores.sqlite import SqliteStore
from actionjournal.tools.cli import main


def held_delete(*_args: object, **_kwargs: object) -> int:
    Path(sys.argv[1]).write_text("deleting\n")
    time.sleep(600)
    raise AssertionError("no signal came")


if __name__ == "__main__":
    SqliteStore.delete_below = held_delete  # type: ignore[method-assign]
    sys.exit(main(sys.argv[2:]))
