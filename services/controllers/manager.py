"""The controller-manager: every controller of kubera in one process, sharing one set of
informers (kube-controller-manager's shape). Leader election for it comes with the
scheduler's (issue 5); until then one instance runs.

    ControllerManager(client, clock)
        → controllers built (each registers its informer handlers)
        → informers started once, waited on until synced
        → each controller's run(stop) as a task, until stop
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from services.client import Client, SharedInformers
from services.clock import Clock, RealClock

log = logging.getLogger(__name__)


class Controller(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


#: Controller names, in start order; `ControllerManagerConfig.controllers` picks from them.
ALL_CONTROLLERS = ("nodelifecycle", "tainteviction", "replicaset", "deployment", "podgc")


@dataclass(frozen=True)
class ControllerManagerConfig:
    #: Which controllers run (kube-controller-manager's --controllers, by our names).
    controllers: tuple[str, ...] = ALL_CONTROLLERS
    #: Per-controller configuration objects by name (None: defaults).
    configs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [c for c in self.controllers if c not in ALL_CONTROLLERS]
        if unknown:
            raise ValueError(
                f"controllers: unknown {', '.join(unknown)} (expected some of {', '.join(ALL_CONTROLLERS)})"
            )


def _build(
    name: str, client: Client, informers: SharedInformers, clock: Clock, config: Any
) -> Controller:
    if name == "nodelifecycle":
        from services.controllers.nodelifecycle import NodeLifecycleController

        return NodeLifecycleController(client, informers, config=config, clock=clock)
    if name == "tainteviction":
        from services.controllers.tainteviction import TaintEvictionController

        return TaintEvictionController(client, informers, config=config, clock=clock)
    if name == "replicaset":
        from services.controllers.replicaset import ReplicaSetController

        return ReplicaSetController(client, informers, config=config, clock=clock)
    if name == "deployment":
        from services.controllers.deployment import DeploymentController

        return DeploymentController(client, informers, config=config, clock=clock)
    from services.controllers.podgc import PodGCController

    return PodGCController(client, informers, config=config, clock=clock)


class ControllerManager:
    def __init__(
        self,
        client: Client,
        *,
        config: ControllerManagerConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ControllerManagerConfig()
        self.clock = clock or RealClock()
        # informers retry in wall time: reconnecting is infrastructure, not simulation
        self.informers = SharedInformers(client)
        self.controllers: dict[str, Controller] = {
            name: _build(name, client, self.informers, self.clock, self.config.configs.get(name))
            for name in self.config.controllers
        }

    async def run(self, stop: asyncio.Event) -> None:
        """Informers, then every controller, until `stop`; then everything stops."""
        self.informers.start()
        try:
            await self.informers.wait_synced()
            tasks = {
                name: asyncio.create_task(c.run(stop), name=f"controller-{name}")
                for name, c in self.controllers.items()
            }
            done, _ = await asyncio.wait(
                [*tasks.values(), asyncio.create_task(stop.wait())],
                return_when=asyncio.FIRST_COMPLETED,
            )
            for name, t in tasks.items():
                if t in done and not stop.is_set():
                    log.error(
                        "controller %s ended: %r",
                        name,
                        t.exception() if not t.cancelled() else "cancelled",
                    )
            stop.set()
            for t in tasks.values():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(t), 10)
                t.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        finally:
            await self.informers.stop()
