"""What the recovery reads of the partitioned stores (Kafka, Fluss) share: windows that read
a partition once for the many keys recovering together, within a byte budget, and broker
probes reused by a recovery wave."""

from __future__ import annotations

import time
from collections.abc import Callable, Container
from operator import itemgetter
from typing import Generic, TypeVar, cast

from actionjournal.durable.records import CONTROL_KEY
from actionjournal.stores.quarantine import Entries

Found = dict[str, Entries]
"""Entries of one namespace/operator in one partition, by key id."""
R = TypeVar("R")
"""What a recovery window keeps of a key's records: a list of these, in position order
(Kafka: ``(position, bytes)`` entries; Fluss: runs of records as Arrow gave them)."""
Scan = Callable[[int, int, bool], dict[str, list[R]]]
"""``scan(start, end, earlier)``: the records at positions ``[start, end)`` by key; ``earlier``
when the range lies before what a window read so far (it may begin below retention)."""

ENTRY_OVERHEAD = 100  # rough Python cost of one cached record besides its bytes
_data = itemgetter(1)


def entries_cost(entries: Entries) -> int:
    """Roughly the memory ``entries`` hold (what a recovery window counts against its budget)."""
    return sum(map(len, map(_data, entries))) + ENTRY_OVERHEAD * len(entries)


def with_control(entries: Entries, found: Found, key_id: str) -> Entries:
    """A key's entries with its partition's control records (in ``found``) among them, in
    position order."""
    control = found.get(CONTROL_KEY)
    if not control:
        return entries
    if key_id == CONTROL_KEY:
        return list(control)
    return sorted(entries + control, key=lambda entry: entry[0])


class RecoveryWindow(Generic[R]):
    """Records of one namespace/operator in one partition, positions ``[start, end)``, by key.

    Recovering many keys of a partition reads it once: a read keeps the other keys' records
    here until they ask. A key's entries are handed out once and dropped, so memory holds
    only keys that have not recovered yet. With ``control`` the partition's control records
    are handed out with every key and never dropped.
    """

    __slots__ = ("control", "cost", "costs", "end", "keys", "size", "start")

    def __init__(self, start: int, control: bool, cost: Callable[[list[R]], int]) -> None:
        self.start = self.end = start
        self.control = control  # then it keeps (position, bytes) entries
        self.cost = cost
        self.keys: dict[str, list[R]] = {}
        self.size = 0  # bytes held, roughly
        self.costs: dict[str, int] = {}  # each key's part of it, not summed again when taken

    def cover(self, start: int, end: int, scan: Scan[R], served: Container[str]) -> None:
        """Read what ``[start, end)`` adds to the window, leaving out keys in ``served``."""
        if start < self.start:  # a marker older than what was read so far
            self._add(scan(start, self.start, True), served, earlier=True)
            self.start = start
        if end > self.end:  # written since the last read
            self._add(scan(self.end, end, False), served, earlier=False)
            self.end = end

    def _add(self, found: dict[str, list[R]], served: Container[str], earlier: bool) -> None:
        for key_id, entries in found.items():
            if key_id in served:
                continue
            cost = self.cost(entries)
            self.size += cost
            self.costs[key_id] = self.costs.get(key_id, 0) + cost
            have = self.keys.get(key_id)
            if have is None:
                self.keys[key_id] = entries
            else:
                self.keys[key_id] = entries + have if earlier else have + entries

    def take(self, key_id: str) -> list[R]:
        """The key's records, dropped from the window (with the control records if ``control``)."""
        if self.control and key_id == CONTROL_KEY:  # for every key: never handed out alone
            entries: list[R] = []
        else:
            entries = self.keys.pop(key_id, [])
            self.size -= self.costs.pop(key_id, 0)
        if not self.control:
            return entries
        merged = with_control(cast(Entries, entries), cast(Found, self.keys), key_id)
        return cast(list[R], merged)


class RecoveryCache(Generic[R]):
    """A store's recovery windows, by partition and namespace/operator, within a byte budget
    (``cost``: roughly the memory a key's records take in a window)."""

    def __init__(self, budget: int, control: bool, cost: Callable[[list[R]], int]) -> None:
        self.budget = budget
        self.control = control
        self.cost = cost
        self._windows: dict[tuple[int, str, str], RecoveryWindow[R]] = {}

    def read(
        self,
        partition: int,
        namespace: str,
        operator_uid: str,
        key_id: str,
        start: int,
        end: int,
        scan: Scan[R],
        served: Container[str],
    ) -> list[R]:
        """The key's records at ``[start, end)``, read through its partition's window.

        ``served``: keys of the namespace/operator handed out before, whose records the
        window does not keep (a key asked again is read from the store afresh).
        """
        slot = (partition, namespace, operator_uid)
        window = self._windows.get(slot)
        if window is None:
            window = self._windows[slot] = RecoveryWindow(start, self.control, self.cost)
        window.cover(start, end, scan, served)
        entries = window.take(key_id)
        if sum(w.size for w in self._windows.values()) > self.budget:
            # Over budget: drop everything; keys not yet recovered read their partition
            # again (correct, only slower).
            self._windows.clear()
        return entries


V = TypeVar("V")


class RecentProbes(Generic[V]):
    """Answers of a broker probe per partition, reused while younger than a caller's limit.

    Keys recovering together (a recovery wave) share one probe per partition instead of one
    each; why that is safe depends on what is probed (see the Kafka and Fluss stores).
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[float, V]] = {}

    def get(self, partition: int, max_age: float, probe: Callable[[], V]) -> V:
        seen = self._seen.get(partition)
        if seen is not None and time.monotonic() - seen[0] <= max_age:
            return seen[1]
        asked = time.monotonic()  # before the probe: the answer is at least this old
        answer = probe()
        self._seen[partition] = (asked, answer)
        return answer

    def forget(self, partition: int) -> None:
        self._seen.pop(partition, None)
