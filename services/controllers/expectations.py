"""Controller expectations (upstream pkg/controller/controller_utils.go
ControllerExpectations and UIDTrackingControllerExpectations): what each controller key
still expects its informers to show (creations, deletions) before it may sync again.

Kept apart from the other controller helpers because it is state of its own, kept by the
ReplicaSet controller, and needs only the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from services.clock import Clock

#: Upstream's ExpectationsTimeout.
EXPECTATIONS_TIMEOUT = 300.0


@dataclass
class _Expectation:
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class ControllerExpectations:
    """What each controller key still expects to observe (upstream ControllerExpectations
    with UIDTrackingControllerExpectations for deletions).

    Once set, expectations only go down; a key whose expectations are fulfilled or older
    than `timeout` may sync again; a key with none recorded may always sync.
    """

    def __init__(self, clock: Clock, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._store: dict[str, _Expectation] = {}
        self._deleting: dict[str, set[str]] = {}

    def satisfied(self, key: str) -> bool:
        exp = self._store.get(key)
        if exp is None:
            return True
        return exp.fulfilled() or self._clock.monotonic() - exp.timestamp > self._timeout

    def get(self, key: str) -> tuple[int, int] | None:
        exp = self._store.get(key)
        return None if exp is None else (exp.add, exp.delete)

    def expect_creations(self, key: str, adds: int) -> None:
        self._store[key] = _Expectation(adds, 0, self._clock.monotonic())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._deleting[key] = keys
        self._store[key] = _Expectation(0, len(keys), self._clock.monotonic())

    def creation_observed(self, key: str) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """Counts once per expected pod, whether seen terminating or gone."""
        keys = self._deleting.get(key)
        if keys is not None and pod_key in keys:
            keys.discard(pod_key)
            exp = self._store.get(key)
            if exp is not None:
                exp.delete -= 1

    def delete(self, key: str) -> None:
        self._store.pop(key, None)
        self._deleting.pop(key, None)


__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "ControllerExpectations",
]
