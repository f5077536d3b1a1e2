"""The framework handle the cluster-wide plugins (InterPodAffinity, PodTopologySpread) read,
over NodeInfos a test builds: one copy instead of one per plugin test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.types import NodeInfo, PodInfo


class FakeSnapshot:
    """The Snapshot protocol over NodeInfos built by the test."""

    def __init__(
        self, infos: list[NodeInfo], ns_labels: Mapping[str, Mapping[str, str]] | None = None
    ) -> None:
        self._infos = infos
        self._ns = ns_labels or {}

    def list(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        return next((ni for ni in self._infos if ni.name == name), None)

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_required_anti_affinity]

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self._ns.get(namespace)


class FakeHandle:
    def __init__(self, snapshot: FakeSnapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> FakeSnapshot:
        return self._snapshot


def fake_handle(
    nodes: Sequence[core_pb2.Node],
    pods: Sequence[core_pb2.Pod] = (),
    ns_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> FakeHandle:
    """A handle over `nodes`, each holding the `pods` bound to it (spec.nodeName)."""
    infos = []
    for n in nodes:
        ni = NodeInfo(n)
        for p in pods:
            if p.spec.node_name == n.metadata.name:
                ni.add_pod(PodInfo(p))
        infos.append(ni)
    return FakeHandle(FakeSnapshot(infos, ns_labels))
