"""Bringing back the replicas and node pools Ray re-created after a kill, without asking
every actor all the time.

Ray re-creates a killed scheduler, controller-manager or node pool (`max_restarts=-1`),
but the new process serves nothing until its `ensure_started()` is called. Which actors
need the call is read from Ray's actor table — one GCS call for all of them, made by a
thread of its own (`ActorTable`) so that a GCS that does not answer never holds up the
supervisor's loop that restarts etcd and the apiserver. The loop (`Reviver.step`) sends
`ensure_started()` to an actor when

- the table shows it in another incarnation (restarts, pid, state) than the one its
  last answered call was sent to: restarting (Ray holds the call and runs it the moment
  the new process is up, so a scheduler starts as soon as it is re-created), or alive
  in a new process;
- its last call failed (it died under the call: the next one waits for the new process);
- it was last asked BACKSTOP seconds ago (the table may be stale or unreadable).

At most one call is in flight per actor. Restart latency is the table's period plus the
loop's, well under Ray's own time to re-create a Python actor.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubera.launch.ray import actor_id, actor_table

#: Seconds between reads of Ray's actor table.
TABLE_INTERVAL = 0.2
#: Seconds after which an actor is asked again whatever the table says.
BACKSTOP = 1.5

Table = dict[str, dict[str, Any]]
#: What identifies one life of an actor in the table: restarts, pid, state.
Incarnation = tuple[int, int, str]


class ActorTable:
    """The latest read of Ray's actor table, refreshed every `interval` seconds by a
    daemon thread. The first failed read is logged, and the first good one after it."""

    def __init__(
        self,
        *,
        interval: float = TABLE_INTERVAL,
        read: Callable[[], Table] = actor_table,
        log: Callable[[str], None] = lambda line: print(line, flush=True),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self._read = read
        self._log = log
        self._clock = clock
        self._latest: Table | None = None
        #: When reads began to fail (None: the last one succeeded).
        self.failing_since: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def latest(self) -> Table | None:
        """The newest table read (None before the first good read)."""
        return self._latest

    def read_once(self) -> None:
        try:
            table = self._read()
        except Exception as e:  # noqa: BLE001 - the GCS is unreachable: said once, retried
            if self.failing_since is None:
                self.failing_since = self._clock()
                first = f"{type(e).__name__}: {e}".splitlines()[0]
                self._log(f"Ray's actor table unreadable (retrying): {first}")
            return
        if self.failing_since is not None:
            self._log(
                f"Ray's actor table readable again after {self._clock() - self.failing_since:.1f}s"
            )
            self.failing_since = None
        self._latest = table

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="actor-table", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.read_once()
            self._stop.wait(self.interval)

    def stop(self, timeout: float = 2.0) -> None:
        """Ends the thread (a read stuck in the GCS client is left to finish on its own:
        the thread is a daemon)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def incarnation(table: Table | None, actor: str) -> Incarnation | None:
    info = (table or {}).get(actor)
    if info is None:
        return None
    return (int(info.get("restarts", 0)), int(info.get("pid", 0)), str(info.get("state", "")))


@dataclass
class Revived:
    """One actor the supervisor brings back, and its `ensure_started()` bookkeeping."""

    handle: Any
    actor_id: str
    #: The call in flight, when it was sent and the incarnation the table showed then.
    call: Any = None
    sent_at: float = -math.inf
    sent_to: Incarnation | None = None
    #: The incarnation the last answered call was sent to.
    started: Incarnation | None = None
    #: The last call failed: the actor died under it.
    failed: bool = False

    def due(self, seen: Incarnation | None, now: float, backstop: float = BACKSTOP) -> bool:
        """Whether another ensure_started() is wanted (none being in flight)."""
        if self.failed or now - self.sent_at >= backstop:
            return True
        return seen is not None and (seen != self.started or seen[2] != "alive")

    def answered(self, ok: bool) -> None:
        self.call = None
        self.failed = not ok
        if ok:
            self.started = self.sent_to


class Reviver:
    """ensure_started() on the actors that need it (see the module's docstring)."""

    def __init__(self, *, backstop: float = BACKSTOP) -> None:
        self.backstop = backstop
        self.actors: list[Revived] = []

    def add(self, handles: list[Any]) -> None:
        self.actors.extend(Revived(h, actor_id(h)) for h in handles)

    def step(self, table: Table | None, now: float | None = None) -> int:
        """Collect the answered calls and send the due ones; returns how many were sent."""
        import ray

        now = time.monotonic() if now is None else now
        sent = 0
        for a in self.actors:
            if a.call is not None:
                done, _ = ray.wait([a.call], timeout=0)
                if not done:
                    continue
                try:
                    ray.get(a.call)
                    a.answered(True)
                except Exception:  # noqa: BLE001 - died under the call (or failed to start)
                    a.answered(False)
            seen = incarnation(table, a.actor_id)
            if a.due(seen, now, self.backstop):
                a.call = a.handle.ensure_started.remote()
                a.sent_at, a.sent_to = now, seen
                sent += 1
        return sent
