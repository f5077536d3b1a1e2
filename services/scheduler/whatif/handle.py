"""What a what-if session's plugins get instead of the scheduler's handle.

The same surface as the scheduler's (services/scheduler/scheduler.py `_Handle`), answered
by the fork (fork.py): its snapshot, its stores as the informers, its nominator, its PDBs,
its frameworks for waiting pods and preemption, its RNG. Two parts differ on purpose:

- `client` is a `DryRunClient`: a write a plugin makes (preemption's DisruptionTarget
  patch, the victim's delete, the Preempted event; a nomination) is recorded in the fork
  and never sent. A session runs no PreBind and no Bind, so nothing else writes.
- `bind` refuses: the what-if confirms a placement in the fork itself (Fork.bind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import Kind, kind_of
from services.api.machinery.meta import object_meta

if TYPE_CHECKING:
    from services.scheduler.framework.runtime import Framework
    from services.scheduler.whatif.fork import Fork, StoreInformer


class DryRunClient:
    """The client calls plugins make while scheduling (preemption's), recorded in
    `writes` as (verb, kind, namespace, name) and answered as if they succeeded."""

    def __init__(self, writes: list[tuple[str, str, str, str]]) -> None:
        self.writes = writes
        #: uids of the pods deleted (the victims), in order.
        self.deleted: list[str] = []

    async def create(self, obj: Any, **_: Any) -> Any:
        meta = object_meta(obj)
        self.writes.append(("create", kind_of(obj).name, meta.namespace, meta.name))
        return obj

    async def patch(
        self, kind: Kind, name: str, merge_patch: str, *, namespace: str = "", status: bool = False
    ) -> None:
        self.writes.append(("patch", kind.name, namespace, name))

    async def delete(self, kind: Kind, name: str, namespace: str = "", *, uid: str = "") -> None:
        self.writes.append(("delete", kind.name, namespace, name))
        if kind.name == "Pod":
            self.deleted.append(f"{namespace}/{name}")


class SessionHandle:
    """The plugins' handle in a what-if session (see the module docstring)."""

    def __init__(self, fork: Fork) -> None:
        self._fork = fork
        self._shared: dict[str, Any] = {}
        base = fork.base
        self.clock = base.clock
        self.cluster_clock = base.cluster_clock
        self.client = DryRunClient(fork.writes)
        self.nominator = fork.nominator
        self.shared_state = base.shared_state

    def shared(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self._shared:
            self._shared[name] = make()
        return self._shared[name]

    def _frameworks(self) -> Iterable[Framework]:
        return self._fork.frameworks.values()

    def framework_for(self, scheduler_name: str) -> Framework | None:
        return self._fork.frameworks.get(scheduler_name)

    def pdbs(self) -> list[Any]:
        return list(self._fork.pdbs)

    def rand_int(self, n: int) -> int:
        return self._fork.rng.randrange(n)

    def reject_preempted_waiting_pod(self, uid: str) -> bool:
        return any(
            fwk.reject_waiting_pod(uid, "DefaultPreemption", "preempted")
            for fwk in self._frameworks()
        )

    def snapshot(self) -> Any:
        return self._fork.snapshot

    def informer(self, kind: str) -> StoreInformer:
        return self._fork.informer(kind)

    def pod_informer(self) -> StoreInformer:
        return self._fork.pods

    def activate(self, pods: Iterable[core_pb2.Pod]) -> None:
        """A session places every pod of its step in one pass: nothing waits to be woken."""

    async def bind(self, pod: core_pb2.Pod, node_name: str) -> None:
        raise RuntimeError("a what-if session never binds")

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        for fwk in self._frameworks():
            fwk.allow_waiting_pod(uid, plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        for fwk in self._frameworks():
            fwk.reject_waiting_pod(uid, plugin, reason)
