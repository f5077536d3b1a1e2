"""PodTopologyLabels admission (beta, on by default since 1.35): a pod gets its node's
topology.kubernetes.io/zone and /region labels at its binding, or at its create when it
names its node. The rows are upstream's TestPodTopology
(plugin/pkg/admission/podtopologylabels/admission_test.go), run through the pods/binding
path (single, batched, shared-state) and the create path. The bind also clears
status.nominatedNodeName (ClearingNominatedNodeNameAfterBinding, BindingREST)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from services.api import features
from services.api.machinery.kinds import BY_KIND
from services.apiserver.admission import copy_topology_labels
from services.apiserver.binding import BindItem
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.storage.memory import MemoryStorage
from tests.builders import MakeNode, MakePod

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"

#: (rule, node labels, the pod's labels before, the topology labels it has after)
ROWS = [
    (
        "copies the zone and region labels",
        {ZONE: "zone1", REGION: "region1", "topology.kubernetes.io/arbitrary": "x", "other/l": "x"},
        {},
        {ZONE: "zone1", REGION: "region1"},
    ),
    (
        "does not copy arbitrary topology labels",
        {ZONE: "zone1", "topology.kubernetes.io/arbitrary": "something"},
        {},
        {ZONE: "zone1"},
    ),
    (
        "does not copy topology labels that use a subdomain",
        {REGION: "region1", "sub.topology.kubernetes.io/zone": "value"},
        {},
        {REGION: "region1"},
    ),
    (
        "does not copy label keys without a slash",
        {"topology.kubernetes.io": "value"},
        {},
        {},
    ),
    (
        "overwrites the pod's own topology labels",
        {ZONE: "newValue"},
        {ZONE: "oldValue"},
        {ZONE: "newValue"},
    ),
    ("a node without topology labels copies nothing", {}, {ZONE: "mine"}, {ZONE: "mine"}),
]
IDS = [r[0] for r in ROWS]


def _topology(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k.startswith("topology.") or ".topology." in k}


@asynccontextmanager
async def _api(*disabled: str) -> AsyncIterator[ApiServer]:
    config = ApiServerConfig(watch_cache_capacity=50, disable_admission_plugins=frozenset(disabled))
    server = ApiServer(MemoryStorage(), config)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def _node(api: ApiServer, labels: dict[str, str], name: str = "n1") -> None:
    await api.create(
        MakeNode()
        .name(name)
        .labels(labels)
        .capacity({"cpu": "4", "pods": "110"})
        .allocatable({"cpu": "4", "pods": "110"})
        .obj()
    )


def _pod(name: str, labels: dict[str, str], node: str = "") -> object:
    b = MakePod().name(name).namespace("default").labels(labels).container("c", "x")
    return (b.node(node) if node else b).obj()


@pytest.mark.parametrize(("rule", "node_labels", "before", "after"), ROWS, ids=IDS)
async def test_binding_copies_the_nodes_topology_labels(
    rule: str, node_labels: dict[str, str], before: dict[str, str], after: dict[str, str]
) -> None:
    async with _api() as api:
        await _node(api, node_labels)
        await api.create(_pod("p", {**before, "app": "web"}))
        bound = await api.bind("default", "p", "n1")
        stored = await api.get(BY_KIND["Pod"], "default", "p")
    for pod in (bound, stored):
        assert _topology(dict(pod.metadata.labels)) == after, rule
        assert pod.metadata.labels["app"] == "web"


@pytest.mark.parametrize(("rule", "node_labels", "before", "after"), ROWS, ids=IDS)
async def test_a_pod_created_on_its_node_gets_the_labels(
    rule: str, node_labels: dict[str, str], before: dict[str, str], after: dict[str, str]
) -> None:
    async with _api() as api:
        await _node(api, node_labels)
        pod = await api.create(_pod("p", before, node="n1"))
    assert _topology(dict(pod.metadata.labels)) == after, rule


@pytest.mark.parametrize("check_allocation", [False, True], ids=["fenced-path", "shared-state"])
async def test_batched_binds_copy_each_nodes_labels(check_allocation: bool) -> None:
    async with _api() as api:
        await _node(api, {ZONE: "a", REGION: "r"}, "n1")
        await _node(api, {ZONE: "b"}, "n2")
        for name in ("p1", "p2", "p3"):
            await api.create(_pod(name, {}))
        items = [
            BindItem("default", name, node, check_allocation=check_allocation)
            for name, node in (("p1", "n1"), ("p2", "n2"), ("p3", "missing"))
        ]
        outcomes = await api.bind_batch(items)
    labels = [dict(o.pod.metadata.labels) if o.pod else None for o in outcomes]
    assert labels[0] == {ZONE: "a", REGION: "r"}
    assert labels[1] == {ZONE: "b"}
    if not check_allocation:
        # A node that does not exist copies nothing (upstream ignores NotFound).
        assert labels[2] == {}


async def test_nothing_is_copied_when_the_plugin_is_disabled() -> None:
    async with _api("PodTopologyLabels") as api:
        await _node(api, {ZONE: "z"})
        await api.create(_pod("p", {}))
        bound = await api.bind("default", "p", "n1")
        created = await api.create(_pod("q", {}, node="n1"))
    assert ZONE not in bound.metadata.labels and ZONE not in created.metadata.labels


async def test_nothing_is_copied_with_the_gate_off(monkeypatch: pytest.MonkeyPatch) -> None:
    labels: dict[str, str] = {}
    node = MakeNode().name("n").labels({ZONE: "z", REGION: "r"}).obj()
    copy_topology_labels(node, labels, {features.POD_TOPOLOGY_LABELS_ADMISSION: False})
    assert labels == {}
    monkeypatch.setitem(features.DEFAULTS, features.POD_TOPOLOGY_LABELS_ADMISSION, False)
    async with _api() as api:
        await _node(api, {ZONE: "z"})
        await api.create(_pod("p", {}))
        bound = await api.bind("default", "p", "n1")
    assert ZONE not in bound.metadata.labels


async def test_binding_clears_the_nominated_node_name() -> None:
    async with _api() as api:
        await _node(api, {})
        pod = await api.create(_pod("p", {}))
        pod.status.nominated_node_name = "n1"
        await api.update_status(pod)
        bound = await api.bind("default", "p", "n1")
    assert bound.status.nominated_node_name == ""


async def test_the_bindings_own_labels_and_annotations_reach_the_pod() -> None:
    """BindingREST: the Binding's annotations are merged into the pod's, its labels copied
    over the pod's (PodTopologyLabelsAdmission on); the plugin's node labels win, as it
    writes them into the Binding before the copy."""
    async with _api() as api:
        await _node(api, {ZONE: "node-zone"})
        await api.create(_pod("p", {"team": "a"}))
        bound = await api.bind(
            "default",
            "p",
            "n1",
            annotations={"note": "from-binding"},
            labels={"team": "b", ZONE: "binding-zone"},
        )
    assert dict(bound.metadata.labels) == {"team": "b", ZONE: "node-zone"}
    assert bound.metadata.annotations["note"] == "from-binding"


async def test_a_bindings_bad_hollow_kubelet_annotation_is_refused() -> None:
    from services.api.machinery.errors import InvalidError

    async with _api() as api:
        await _node(api, {})
        await api.create(_pod("p", {}))
        with pytest.raises(InvalidError, match="kubera.io/usage"):
            await api.bind("default", "p", "n1", annotations={"kubera.io/usage": "{not json"})
        pod = await api.get(BY_KIND["Pod"], "default", "p")
    assert not pod.spec.node_name  # nothing half-written
