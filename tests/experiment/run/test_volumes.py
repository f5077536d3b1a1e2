"""scheduler_perf's persistent volumes: createPods with persistentVolumeTemplatePath and
persistentVolumeClaimTemplatePath (upstream getPodStrategy, getCustomVolumeFactory,
test/utils CreatePodWithPersistentVolume) and the CSINodes of nodeAllocatableStrategy
(NodeAllocatableStrategy.PrepareDependentObjects): how they load, the objects they make
(named and bound as upstream's, from upstream's own templates), and their execution against
a real apiserver, with kubera's PersistentVolume controller watching."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubera.experiment.output.results import RunResult
from kubera.experiment.run.opexec import OpExecutor
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import load
from kubera.experiment.spec.objects import (
    MIGRATED_PLUGINS_ANNOTATION,
    csinode_doc,
    node_doc,
    pod_doc,
    volume_docs,
    with_claim,
)
from kubera.experiment.spec.templates import read_template
from kubera.launch.context import Context
from services.api.machinery.kinds import BY_KIND
from services.client import Client, SharedInformers
from services.controllers.volume.persistentvolume import PersistentVolumeController
from tests.experiment.configfiles import DATA, runs, write
from tests.experiment.run.test_runner import FakeCollector
from tests.harness import control_plane

TEMPLATES = DATA / "templates"
VOLUMES = DATA / "volumes" / "performance-config.yaml"


def _template(name: str) -> Any:
    return read_template(str(TEMPLATES / name), name)


def _op(pv: str, *, namespace: str = "namespace-2", count: int = 3, **kw: Any) -> o.CreatePods:
    return o.CreatePods(
        index=2,
        count=count,
        namespace=namespace,
        pv_template=_template(pv),
        pvc_template=_template("pvc.yaml"),
        **kw,
    )


# ------------------------------------------------------------------------------ loading


def test_upstreams_volumes_file_loads_every_test_case() -> None:
    e = load(str(VOLUMES))
    assert [tc.name for tc in e.test_cases if tc.unsupported] == []
    planned = {
        name: ops
        for name, ops in runs(e).items()
        if name.endswith("/5Nodes")  # the integration-test workloads
    }
    shapes = {
        name: [
            (op.phase, op.count, op.pvc_template is not None)
            if isinstance(op, o.CreatePods)
            # createNodes: its CSINodes' drivers
            else (op.phase, op.count, getattr(op.strategy, "csi_node_allocatable", None))
            for op in ops
        ]
        for name, ops in planned.items()
    }
    csi = {"ebs.csi.aws.com": {"count": 39}}
    assert shapes == {
        "SchedulingSecrets/5Nodes": [
            ("createNodes[0]", 5, None),
            ("createPods[1]", 5, False),
            ("createPods[2]", 10, False),
        ],
        "SchedulingInTreePVs/5Nodes": [
            ("createNodes[0]", 5, None),
            ("createPods[1]", 5, True),
            ("createPods[2]", 10, True),
        ],
        "SchedulingMigratedInTreePVs/5Nodes": [
            ("createNodes[0]", 5, csi),
            ("createPods[1]", 5, True),
            ("createPods[2]", 10, True),
        ],
        "SchedulingCSIPVs/5Nodes": [
            ("createNodes[0]", 5, csi),
            ("createPods[1]", 5, True),
            ("createPods[2]", 10, True),
        ],
        "PreemptionPVs/5Nodes": [
            ("createNodes[0]", 5, None),
            ("createPods[1]", 20, False),
            ("createPods[2]", 5, True),
        ],
    }
    migrated = planned["SchedulingMigratedInTreePVs/5Nodes"][0]
    assert migrated.strategy.migrated_plugins == ("kubernetes.io/aws-ebs",)  # type: ignore[attr-defined]


CASE = """\
- name: V
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 2, collectMetrics: true, %s}
  workloads:
  - {name: w}
"""
FILES = {
    "pv.yaml": "apiVersion: v1\nkind: PersistentVolume\nspec: {capacity: {storage: 1Gi}}\n",
    "pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\n",
}


@pytest.mark.parametrize(
    ("fields", "pv", "pvc", "warning"),
    [
        (
            "persistentVolumeTemplatePath: pv.yaml, persistentVolumeClaimTemplatePath: pvc.yaml",
            True,
            True,
            None,
        ),
        # upstream reads the volume template only when a claim template is given
        (
            "persistentVolumeTemplatePath: pv.yaml",
            False,
            False,
            "persistentVolumeTemplatePath: ignored without persistentVolumeClaimTemplatePath",
        ),
    ],
    ids=["both", "volume-template-alone-is-ignored"],
)
def test_the_claim_template_decides_whether_pods_get_volumes(
    tmp_path: Any, fields: str, pv: bool, pvc: bool, warning: str | None
) -> None:
    e = load(str(write(tmp_path, CASE % fields, FILES)))
    (ops,) = runs(e).values()
    op = ops[1]
    assert isinstance(op, o.CreatePods)
    assert (op.pv_template is not None, op.pvc_template is not None) == (pv, pvc)
    assert [w for w in e.warnings if "persistentVolume" in w] == (
        [f"{tmp_path / 'exp.yaml'}: [0].workloadTemplate[1].{warning} (as upstream)"]
        if warning
        else []
    )


# ------------------------------------------------------------------------------ objects


@pytest.mark.parametrize(
    ("pv", "source", "want_source"),
    [
        # in-tree: getCustomVolumeFactory gives the EBS volume the ID vol-<i>
        ("pv-aws.yaml", "awsElasticBlockStore", {"volumeID": "vol-3"}),
        # CSI: CreatePodWithPersistentVolume makes the handle the volume's (unique) name
        (
            "pv-csi.yaml",
            "csi",
            {"driver": "ebs.csi.aws.com", "volumeHandle": "namespace-2-vol-3"},
        ),
    ],
)
def test_each_pod_gets_a_claim_and_a_volume_named_and_prebound_as_upstreams(
    pv: str, source: str, want_source: dict[str, str]
) -> None:
    pvc_doc, pv_doc = volume_docs(_op(pv), 3)
    assert pvc_doc["metadata"] == {
        "name": "pvc-3",
        "annotations": {"pv.kubernetes.io/bind-completed": "true"},
    }
    assert pvc_doc["spec"]["volumeName"] == "namespace-2-vol-3"
    assert pvc_doc["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert pvc_doc["status"] == {"phase": "Bound"}
    # PVs are cluster-wide: upstream prefixes the namespace to keep names unique
    assert pv_doc["metadata"] == {"name": "namespace-2-vol-3"}
    assert pv_doc["spec"][source] == want_source
    assert pv_doc["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "namespace": "namespace-2",
        "name": "pvc-3",
        "apiVersion": "v1",
    }
    assert pv_doc["status"] == {"phase": "Bound"}
    # the template is copied, never changed
    assert "claimRef" not in _op(pv).pv_template.data.get("spec", {})  # type: ignore[union-attr]


def test_the_claim_replaces_the_pods_own_volumes() -> None:
    # PreemptionPVs' measured pods: upstream sets Volumes to the one claim
    pod = with_claim(pod_doc(_template("pod-with-secret-volume.yaml"), 1, 2, {}), "pvc-1")
    assert pod["spec"]["volumes"] == [
        {"name": "vol", "persistentVolumeClaim": {"claimName": "pvc-1"}}
    ]


def test_node_allocatable_is_the_capacity_with_the_strategys_resources_set() -> None:
    # node-default.yaml gives capacity only: the create defaults allocatable to it, then
    # upstream's PreparePatch sets the attachable volumes in allocatable alone
    strategy = o.NodeAllocatableStrategy(
        node_allocatable={"attachable-volumes-csi-ebs.csi.aws.com": "39"}
    )
    op = o.CreateNodes(
        index=0, count=1, node_template=_template("node-default.yaml"), strategy=strategy
    )
    status = node_doc(op, 0)["status"]
    assert status["capacity"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    assert status["allocatable"] == {
        **status["capacity"],
        "attachable-volumes-csi-ebs.csi.aws.com": "39",
    }


@pytest.mark.parametrize(
    ("migrated", "annotation"),
    [(("kubernetes.io/aws-ebs",), "kubernetes.io/aws-ebs"), ((), "")],
    ids=["migrated", "csi-only"],
)
def test_each_node_gets_a_csinode_with_the_strategys_drivers(
    migrated: tuple[str, ...], annotation: str
) -> None:
    strategy = o.NodeAllocatableStrategy(
        node_allocatable={},
        csi_node_allocatable={"ebs.csi.aws.com": {"count": 39}},
        migrated_plugins=migrated,
    )
    doc = csinode_doc(strategy, "scheduler-perf-abc")
    assert doc["metadata"] == {
        "name": "scheduler-perf-abc",
        "annotations": {MIGRATED_PLUGINS_ANNOTATION: annotation},
    }
    assert doc["spec"]["drivers"] == [
        {"name": "ebs.csi.aws.com", "nodeID": "scheduler-perf-abc", "allocatable": {"count": 39}}
    ]


# ------------------------------------------------------------------------------ execution


@contextlib.asynccontextmanager
async def _cluster(with_pv_controller: bool) -> AsyncIterator[tuple[OpExecutor, Client]]:
    """A real apiserver (in memory); an executor with a fake pod timeline (pods are never
    bound: the ops skip waiting); kubera's PersistentVolume controller if asked."""
    async with control_plane() as cp:
        if with_pv_controller:
            informers = SharedInformers(cp.client)
            cp.run(PersistentVolumeController(cp.client, informers))
            informers.start()
            cp.defer(informers.stop)
        ctx = Context(apiserver=cp.address, etcd="http://127.0.0.1:2")
        ex = OpExecutor(
            ctx,
            cp.client,
            FakeCollector(),  # type: ignore[arg-type]
            RunResult(id="T/w", test_case="T", workload="w"),
            hollow_nodes=False,
            load_context=lambda: ctx,
            timeout=10,
        )
        yield ex, cp.client


async def _until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll `check` (an async function returning a value or None) until it gives a value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await check()) is None:
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.05)
    return got


async def test_create_nodes_makes_each_nodes_csinode() -> None:
    strategy = o.NodeAllocatableStrategy(
        node_allocatable={"attachable-volumes-csi-ebs.csi.aws.com": "39"},
        csi_node_allocatable={"ebs.csi.aws.com": {"count": 39}},
        migrated_plugins=("kubernetes.io/aws-ebs",),
    )
    op = o.CreateNodes(
        index=0, count=2, node_template=_template("node-default.yaml"), strategy=strategy
    )
    async with _cluster(with_pv_controller=False) as (ex, client):
        await ex.run(op)
        nodes, _ = await client.list(BY_KIND["Node"])
        csinodes, _ = await client.list(BY_KIND["CSINode"])
    names = sorted(n.metadata.name for n in nodes)  # type: ignore[attr-defined]
    assert len(names) == 2 and all(n.startswith("scheduler-perf-") for n in names)
    assert sorted(c.metadata.name for c in csinodes) == names  # type: ignore[attr-defined]
    for c in csinodes:
        assert c.metadata.annotations[MIGRATED_PLUGINS_ANNOTATION] == "kubernetes.io/aws-ebs"  # type: ignore[attr-defined]
        (driver,) = c.spec.drivers  # type: ignore[attr-defined]
        assert (driver.name, driver.node_id, driver.allocatable.count) == (
            "ebs.csi.aws.com",
            c.metadata.name,  # type: ignore[attr-defined]
            39,
        )
    assert all(
        n.status.allocatable["attachable-volumes-csi-ebs.csi.aws.com"] == "39"  # type: ignore[attr-defined]
        for n in nodes
    )


@pytest.mark.parametrize("with_pv_controller", [False, True], ids=["alone", "pv-controller"])
async def test_create_pods_writes_bound_claims_and_volumes_before_the_pods(
    with_pv_controller: bool,
) -> None:
    op = _op("pv-aws.yaml", skip_wait_to_completion=True)
    async with _cluster(with_pv_controller) as (ex, client):
        await ex.run(op)
        claims, _ = await client.list(BY_KIND["PersistentVolumeClaim"], namespace="namespace-2")
        volumes, _ = await client.list(BY_KIND["PersistentVolume"])
        pods, _ = await client.list(BY_KIND["Pod"], namespace="namespace-2")
        if with_pv_controller:
            # the controller took every pair as bound: it wrote the claims' capacity (and
            # not Lost, as it would for a claimRef without the claim's uid)
            async def synced() -> list[Any] | None:
                got, _ = await client.list(
                    BY_KIND["PersistentVolumeClaim"], namespace="namespace-2"
                )
                return got if all(c.status.capacity for c in got) else None  # type: ignore[attr-defined]

            claims = await _until(synced)
            volumes, _ = await client.list(BY_KIND["PersistentVolume"])
    uids = {c.metadata.name: c.metadata.uid for c in claims}  # type: ignore[attr-defined]
    assert sorted((c.metadata.name, c.spec.volume_name, c.status.phase) for c in claims) == [  # type: ignore[attr-defined]
        (f"pvc-{i}", f"namespace-2-vol-{i}", "Bound") for i in range(3)
    ]
    assert sorted(
        (
            v.metadata.name,  # type: ignore[attr-defined]
            v.spec.aws_elastic_block_store.volume_id,  # type: ignore[attr-defined]
            v.spec.claim_ref.name,  # type: ignore[attr-defined]
            v.spec.claim_ref.uid == uids[v.spec.claim_ref.name],  # type: ignore[attr-defined]
            v.status.phase,  # type: ignore[attr-defined]
        )
        for v in volumes
    ) == [(f"namespace-2-vol-{i}", f"vol-{i}", f"pvc-{i}", True, "Bound") for i in range(3)]
    assert sorted(
        [(v["name"], v["persistentVolumeClaim"]["claimName"]) for v in p.spec.volumes]  # type: ignore[attr-defined]
        for p in pods
    ) == [[("vol", f"pvc-{i}")] for i in range(3)]
