"""Reading journal rows from Arrow batches: the rows of one namespace/operator, by key."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from actionjournal.stores.base import Found
from actionjournal.stores.fluss.table import KEY, NAMESPACE, RECORD, UID


def collect(
    batch: pa.RecordBatch,
    base: int,
    namespace: str,
    uid: str,
    key_id: str,
    found: Found,
) -> None:
    """Add the rows of ``batch`` (first offset ``base``) of one namespace/operator to ``found``.

    Filtering and grouping by key happen in Arrow, so rows of other namespaces are never
    turned into Python objects, let alone decoded, and the Python work per key is one slice
    rather than a dictionary lookup per row (recovery spent most of its time here). Columns
    become Python lists through NumPy: ``to_pylist`` makes an Arrow scalar per value first
    (measured: 0.8 us a row for each of the two columns, against 0.04 us).
    """
    mask = pc.and_(pc.equal(batch.column(NAMESPACE), namespace), pc.equal(batch.column(UID), uid))
    if key_id:
        mask = pc.and_(mask, pc.equal(batch.column(KEY), key_id))
    rows = pc.indices_nonzero(mask)
    if len(rows) == 0:
        return
    keys = batch.column(KEY).take(rows).dictionary_encode()
    by_key = pc.sort_indices(keys.indices)  # stable: each key's rows stay in offset order
    runs = pc.run_end_encode(keys.indices.take(by_key))
    rows = rows.take(by_key)
    offsets = _listed(pc.add(rows, base))
    entries = list(zip(offsets, _listed(batch.column(RECORD).take(rows)), strict=True))
    names = keys.dictionary.to_pylist()
    start = 0
    for code, end in zip(_listed(runs.values), _listed(runs.run_ends), strict=True):
        found.setdefault(names[code], []).extend(entries[start:end])
        start = end


def _listed(array: pa.Array) -> list[Any]:
    """The values of an array without nulls, as Python objects."""
    values: list[Any] = array.to_numpy(zero_copy_only=False).tolist()
    return values
