"""What-if sessions: a fork of the leader's state and the steps applied to it, with
rollback to any step (after the shape of scheduler-library's Transaction and Kueue's
simulator snapshot; kubera's own API).

    Session(base, seed)       step 0: the fork as taken from the leader
      apply(step)             step k+1 on top of step k; its StepResult
      rollback(k)             back to step k (0: the fork as taken): the steps after k are
                              dropped, the fork rebuilt from the base and steps 1..k
                              replayed. A session is a function of (base, steps, seed): each
                              step's RNG is seeded from (seed, k), so the replay gives the
                              same answers and the same fork, plugin state included.

    Sessions(clock)           the leader's open sessions by id: at most MAX_SESSIONS, each
                              dropped after IDLE_TTL seconds unused, and all of them when
                              the scheduler's term ends (a session belongs to the Scheduler
                              it was forked from).

Nothing a session does reaches the apiserver: its plugins' client records (handle.py),
and no PreBind or Bind runs (cycle.py).
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections import OrderedDict
from typing import Any

from services.scheduler.framework.runtime import Framework
from services.scheduler.whatif.cycle import run_schedule, session_cycles
from services.scheduler.whatif.fork import Base, Fork
from services.scheduler.whatif.handle import SessionHandle
from services.scheduler.whatif.steps import (
    DELETED,
    AddNode,
    DeleteNode,
    DeletePod,
    PodResult,
    Schedule,
    Step,
    StepResult,
    describe,
)

#: Open sessions a leader keeps (the least recently used goes first).
MAX_SESSIONS = 16
#: Seconds a session is kept unused.
IDLE_TTL = 15 * 60.0


class StepError(ValueError):
    """A step that cannot apply to the fork (an unknown node or pod, a node that exists):
    the session is left as it was."""


def build_frameworks(fork: Fork) -> dict[str, Framework]:
    """The leader's profiles, instantiated anew on the fork's handle."""
    handle = SessionHandle(fork)
    config = fork.base.config
    registry = config.registry()
    return {
        p.scheduler_name: Framework(p, registry=registry, handle=handle) for p in config.profiles
    }


class Session:
    """One what-if session (see the module docstring)."""

    def __init__(self, base: Base, *, seed: int, ident: str = "") -> None:
        self.id = ident or secrets.token_hex(6)
        self.base = base
        self.seed = seed
        self.steps: list[tuple[Step, StepResult]] = []
        self.lock = asyncio.Lock()
        self.fork = self._fresh()

    def _fresh(self) -> Fork:
        return Fork(self.base, rng=random.Random(self.seed), make_frameworks=build_frameworks)

    async def apply(self, step: Step) -> StepResult:
        """Apply `step` as the next one; raises StepError (nothing changed) when it cannot."""
        n = len(self.steps) + 1
        fork = self.fork
        fork.rng.seed(f"{self.seed}:{n}")
        op, target = describe(step)
        result = StepResult(n, op, target)
        if isinstance(step, Schedule):
            result.pods = await run_schedule(fork, session_cycles(fork), step)
        elif isinstance(step, DeleteNode):
            if fork.node(step.name) is None:
                raise StepError(f'node "{step.name}" not found')
            gone = fork.remove_node(step.name)
            result.pods = [PodResult(key, DELETED) for key in gone]
            result.message = f"{len(gone)} pod(s) bound to it deleted with it"
        elif isinstance(step, DeletePod):
            key = f"{step.namespace}/{step.name}"
            if fork.pod(key) is None:
                raise StepError(f'pod "{key}" not found')
            fork.remove_pod(key)
            result.pods = [PodResult(key, DELETED)]
        elif isinstance(step, AddNode):
            try:
                fork.add_node(step.node)
            except ValueError as e:
                raise StepError(str(e)) from None
        self.steps.append((step, result))
        return result

    async def rollback(self, k: int) -> None:
        """Back to step `k` (see the module docstring)."""
        if not 0 <= k <= len(self.steps):
            raise StepError(f"no step {k}: the session has steps 0 to {len(self.steps)}")
        await self.replay([step for step, _ in self.steps[:k]])

    async def replay(self, steps: list[Step]) -> None:
        """The session as these steps make it from the base (steps that applied before)."""
        self.steps = []
        self.fork = self._fresh()
        for step in steps:
            await self.apply(step)

    def applied(self) -> list[Step]:
        return [step for step, _ in self.steps]

    def results(self) -> list[StepResult]:
        return [r for _, r in self.steps]


class Sessions:
    """The open sessions of one scheduler term (see the module docstring). `now`: the
    monotonic clock the idle TTL is measured on."""

    def __init__(self, owner: Any, now: Any, *, max_sessions: int = MAX_SESSIONS) -> None:
        self.owner = owner
        self._now = now
        self._max = max_sessions
        self._open: OrderedDict[str, tuple[Session, float]] = OrderedDict()

    def open(self, session: Session) -> None:
        self._expire()
        self._open[session.id] = (session, self._now())
        while len(self._open) > self._max:
            self._open.popitem(last=False)

    def get(self, ident: str) -> Session | None:
        self._expire()
        found = self._open.pop(ident, None)
        if found is None:
            return None
        self._open[ident] = (found[0], self._now())
        return found[0]

    def close(self, ident: str) -> bool:
        return self._open.pop(ident, None) is not None

    def __len__(self) -> int:
        return len(self._open)

    def _expire(self) -> None:
        now = self._now()
        for ident, (_, used) in list(self._open.items()):
            if now - used > IDLE_TTL:
                del self._open[ident]
