"""The scheduling loop lets the binding cycles it starts send their binds promptly: a leader
that takes over a backlog sends its first bind before it schedules the rest of the backlog
(upstream runs each binding cycle in a goroutine of its own at once), and the whole backlog
is still bound; it goes alone, the binds behind it sent once it is answered. The order of
calls is what is checked, not how long anything took."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from services.api.machinery.kinds import BY_KIND
from services.scheduler.options import SchedulerOptions
from tests.builders import MakeNode, MakePod
from tests.harness import control_plane
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
BACKLOG = 30


async def test_a_backlogs_first_bind_goes_out_before_the_rest_is_scheduled() -> None:
    async with control_plane() as cp:
        api, client = cp.api, cp.client
        sched = cp.scheduler(SchedulerOptions(seed=7), start=False)
        calls: list[tuple[str, str]] = []
        real_cycle, real_bind = sched.cycles.schedule_one, client.bind

        async def cycle(qpi: Any) -> None:
            calls.append(("cycle", qpi.pod.metadata.name))
            await real_cycle(qpi)

        async def bind(name: str, *args: Any, **kwargs: Any) -> Any:
            calls.append(("bind", name))
            try:
                return await real_bind(name, *args, **kwargs)
            finally:
                calls.append(("answered", name))

        sched.cycles.schedule_one = cycle  # type: ignore[method-assign]
        client.bind = bind  # type: ignore[method-assign]
        stop = asyncio.Event()
        lead: asyncio.Task[None] | None = None
        try:
            size = {"cpu": "64", "memory": "64Gi", "pods": "110"}
            node = MakeNode().typed().name("n1").label("kubernetes.io/hostname", "n1")
            await api.create(node.allocatable(size).capacity(size).obj())
            for i in range(BACKLOG):
                pod = MakePod().typed().name(f"p{i:02}").namespace("default")
                await api.create(pod.container("c", "i", requests={"cpu": "10m"}).obj())
            # A standby's state at its takeover: warm, the backlog queued, nothing scheduled.
            await sched.warm()
            await eventually(lambda: len(sched.queue.pending_pods()["active"]) == BACKLOG)

            lead = asyncio.create_task(sched.lead(stop))

            async def all_bound() -> bool:
                pods, _ = await api.list(PODS, "default")
                return all(p.spec.node_name for p in pods)  # type: ignore[attr-defined]

            await eventually(all_bound, timeout=10)
            cycles = [name for kind, name in calls if kind == "cycle"]
            assert len(cycles) == BACKLOG
            first_bind = calls.index(("bind", cycles[0]))
            assert first_bind == 1, f"the first bind waited for other cycles: {calls[:first_bind]}"
            assert {name for kind, name in calls if kind == "bind"} == set(cycles)
            # ... alone: the binds behind it are sent once it is answered, then together.
            answered = calls.index(("answered", cycles[0]))
            assert [c for c in calls[:answered] if c[0] == "bind"] == [("bind", cycles[0])]
        finally:
            stop.set()
            if lead is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(lead, 10)
            await sched.close()
