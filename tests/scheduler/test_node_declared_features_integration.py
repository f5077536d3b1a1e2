"""NodeDeclaredFeatures in the whole scheduler (gate on, the plugin enabled in the
profile), with a feature registry of one test feature that pods labelled `needs: f` need:
such a pod goes only to a node declaring it, waits with upstream's reason while none does,
and is scheduled when a node's status.declaredFeatures gains it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api import nodedeclaredfeatures as ndf
from services.api.machinery.kinds import BY_KIND
from services.scheduler import config as config_mod
from tests.scheduler.test_scheduler_integration import Cluster, _cluster

NODES = BY_KIND["Node"]


@dataclass(frozen=True)
class NeedsF:
    name: str = "TestFeatureF"
    max_version: ndf.Version | None = None

    def discover(self, config: ndf.NodeConfiguration) -> bool:
        return False

    def infer_for_scheduling(self, spec: core_pb2.PodSpec) -> bool:
        return spec.node_selector.get("needs") == "f"


@pytest.fixture
async def cluster(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cluster]:
    monkeypatch.setitem(features.DEFAULTS, features.NODE_DECLARED_FEATURES, True)
    monkeypatch.setattr(ndf, "ALL_FEATURES", (NeedsF(),))
    cfg = config_mod.load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- plugins:\n"
        "    multiPoint:\n"
        "      enabled: [{name: NodeDeclaredFeatures}]\n"
    )
    async for c in _cluster(cfg):
        yield c


async def _node(cluster: Cluster, name: str, *declared: str) -> None:
    await cluster.node(name, labels={"needs": "f"})
    if declared:
        node = await cluster.client.get(NODES, name)
        node.status.declared_features[:] = list(declared)
        await cluster.api.update_status(node)


async def test_a_pod_goes_only_to_a_node_declaring_what_it_needs(cluster: Cluster) -> None:
    await _node(cluster, "plain")
    await _node(cluster, "declares", "TestFeatureF")
    await cluster.pod("p", nodeSelector={"needs": "f"})
    assert await cluster.wait_bound("p") == {"p": "declares"}


async def test_it_waits_until_a_node_declares_the_feature(cluster: Cluster) -> None:
    await _node(cluster, "plain")
    await cluster.pod("p", nodeSelector={"needs": "f"})
    message = await cluster.wait_unschedulable("p")
    assert "1 node(s) didn't match Pod's required features" in message
    node = await cluster.client.get(NODES, "plain")
    node.status.declared_features.append("TestFeatureF")
    await cluster.api.update_status(node)
    assert await cluster.wait_bound("p") == {"p": "plain"}
