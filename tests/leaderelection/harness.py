"""A real apiserver (on real etcd) for the replica tests, with the few cluster actions they
share: a node, pods, and whether pods are bound."""

from __future__ import annotations

from dataclasses import dataclass

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from tests.builders import MakeNode, MakePod

PODS = BY_KIND["Pod"]


def new_pod(name: str, scheduler: str = "default-scheduler") -> core_pb2.Pod:
    return (
        MakePod()
        .typed()
        .name(name)
        .namespace("default")
        .scheduler_name(scheduler)
        .container("c", "i", requests={"cpu": "100m"})
        .obj()
    )


@dataclass
class ApiCluster:
    api: ApiServer
    address: str
    etcd: str

    async def node(self, name: str) -> None:
        size = {"cpu": "8", "memory": "16Gi", "pods": "110"}
        node = MakeNode().typed().name(name).label("kubernetes.io/hostname", name)
        await self.api.create(node.allocatable(size).capacity(size).obj())

    async def pods(self, *names: str) -> None:
        for name in names:
            await self.api.create(new_pod(name))

    async def pod(self, name: str) -> core_pb2.Pod:
        return await self.api.get(PODS, "default", name)  # type: ignore[return-value]

    async def bound(self, *names: str) -> bool:
        return all([(await self.pod(n)).spec.node_name for n in names])
