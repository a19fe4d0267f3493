"""How much memory an object keeps: for tests that what grows with keys ever seen does not."""

from __future__ import annotations

import gc
import sys
import types


def reachable_bytes(root: object, besides: object = None) -> int:
    """Bytes of the Python objects reachable from ``root``, not through ``besides`` nor
    through modules, classes and functions (code, not data). Memory held by C libraries
    (librdkafka, SQLite) is not counted."""
    seen = {id(besides)}
    todo = [root]
    total = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        todo.extend(gc.get_referents(obj))
    return total
