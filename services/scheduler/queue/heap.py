"""The heap behind activeQ and backoffQ (upstream backend/heap): a binary heap of queued pods
keyed by pod key, with O(log n) update and removal of any key.
"""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.framework.types import QueuedPodInfo

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


class _Entry:
    """A queued pod with its insertion number and its key (read on every swap: kept here
    rather than formatted from the pod each time; a pod's key never changes)."""

    __slots__ = ("qpi", "seq", "key")

    def __init__(self, qpi: QueuedPodInfo, seq: int, key: str) -> None:
        self.qpi = qpi
        self.seq = seq
        self.key = key


class Heap:
    """A binary heap of QueuedPodInfo keyed by namespace/name, with O(log n) update and
    removal by key (upstream backend/heap). Invariants: `_index[key]` is the position of that
    key's entry in `_items`; entries `less` cannot order come out in insertion order."""

    def __init__(self, less: LessFn) -> None:
        self._less = less
        self._items: list[_Entry] = []
        self._index: dict[str, int] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def get(self, key: str) -> QueuedPodInfo | None:
        i = self._index.get(key)
        return None if i is None else self._items[i].qpi

    def peek(self) -> QueuedPodInfo | None:
        return self._items[0].qpi if self._items else None

    def list(self) -> list[QueuedPodInfo]:
        return [e.qpi for e in self._items]

    def push(self, qpi: QueuedPodInfo) -> None:
        """Add, or replace the entry with the same key (keeping its place among equals)."""
        key = qpi.key
        i = self._index.get(key)
        if i is not None:
            self._items[i].qpi = qpi
            self._fix(i)
            return
        self._seq += 1
        self._items.append(_Entry(qpi, self._seq, key))
        self._index[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def fix(self, key: str) -> None:
        """Restore order after the entry's sort inputs changed."""
        i = self._index.get(key)
        if i is not None:
            self._fix(i)

    def pop(self) -> QueuedPodInfo:
        top = self._items[0].qpi
        self._remove_at(0)
        return top

    def remove(self, key: str) -> QueuedPodInfo | None:
        i = self._index.get(key)
        if i is None:
            return None
        qpi = self._items[i].qpi
        self._remove_at(i)
        return qpi

    # -------------------------------------------------------------------- internals
    def _before(self, a: _Entry, b: _Entry) -> bool:
        if self._less(a.qpi, b.qpi):
            return True
        if self._less(b.qpi, a.qpi):
            return False
        return a.seq < b.seq

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        a, b = items[j], items[i]
        items[i], items[j] = a, b
        self._index[a.key] = i
        self._index[b.key] = j

    def _up(self, i: int) -> None:
        while i > 0:
            parent = (i - 1) // 2
            if not self._before(self._items[i], self._items[parent]):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            left, smallest = 2 * i + 1, i
            if left < n and self._before(self._items[left], self._items[smallest]):
                smallest = left
            right = left + 1
            if right < n and self._before(self._items[right], self._items[smallest]):
                smallest = right
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest

    def _fix(self, i: int) -> None:
        key = self._items[i].key
        self._up(i)
        self._down(self._index[key])

    def _remove_at(self, i: int) -> None:
        last = len(self._items) - 1
        if i != last:
            self._swap(i, last)
        entry = self._items.pop()
        del self._index[entry.key]
        if i < len(self._items):
            self._fix(i)
