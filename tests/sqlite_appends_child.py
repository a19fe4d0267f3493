"""Appends to an SQLite journal from many threads until killed; prints every acknowledgement.

python tests/sqlite_appends_child.py JOURNAL THREADS

Each thread appends RunCompleted records of its own key, seq 0, 1, 2, ... and writes
``key seq position`` on stdout (one ``os.write``, so lines never interleave) only after
``append`` returned. Used by tests/integration/test_crash_sqlite_appends.py.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from actionjournal.durable.records import RunCompleted
from actionjournal.stores import SqliteStore


def main(path: str, threads: int) -> None:
    store = SqliteStore(path)

    def appender(n: int) -> None:
        key = f"key-{n}"
        seq = 0
        while True:
            marker = store.append(
                RunCompleted("ns", "op", 0, key, seq, at=time.time(), input_digest="d" * 40)
            )
            os.write(1, f"{key} {seq} {marker.position}\n".encode())
            seq += 1

    for n in range(threads):
        threading.Thread(target=appender, args=(n,), daemon=True).start()
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
