"""The garbage collector (services/controllers/garbagecollector.py) and the apiserver's half
of propagation (services/apiserver/deletion.py), with the cases of upstream's
pkg/controller/garbagecollector/garbagecollector_test.go and test/integration/garbagecollector
(TestCascadingDeletion, TestOrphaning, TestBlockingOwnerRefDoesBlock,
TestNonBlockingOwnerRefDoesNotBlock, TestSolidOwnerDoesNotBlockWaitingOwner,
TestClusterScopedOwners) and pkg/registry/generic/registry/store_test.go
(TestStoreDeletionPropagation: which finalizers a delete leaves).

The controller runs against a real gRPC apiserver (in-memory storage); nothing plays the
kubelet, so pods (unbound) go at once when deleted."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import BadRequestError
from services.api.machinery.kinds import BY_KIND, Kind
from services.apiserver.deletion import gc_finalizers
from services.controllers.garbagecollector import GarbageCollector
from tests.builders import MakePod
from tests.controllers.conftest import NS, ControllerCluster

PODS, RS, NODES, LEASES = BY_KIND["Pod"], BY_KIND["ReplicaSet"], BY_KIND["Node"], BY_KIND["Lease"]

# (finalizers before, policy, finalizers after) -- TestStoreDeletionPropagation's table.
FINALIZER_CASES = [
    ([], "", []),
    ([], "Background", []),
    ([], "Orphan", ["orphan"]),
    ([], "Foreground", ["foregroundDeletion"]),
    (["orphan"], "", ["orphan"]),
    (["orphan"], "Background", []),
    (["orphan"], "Foreground", ["foregroundDeletion"]),
    (["foregroundDeletion"], "", ["foregroundDeletion"]),
    (["foregroundDeletion"], "Orphan", ["orphan"]),
    (["example.com/keep"], "Orphan", ["example.com/keep", "orphan"]),
]


@pytest.mark.parametrize(("before", "policy", "after"), FINALIZER_CASES)
def test_the_policy_decides_the_gc_finalizer(
    before: list[str], policy: str, after: list[str]
) -> None:
    assert gc_finalizers(before, policy) == after


def _rs_doc(name: str = "rs") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def _owned(name: str, *owners: Message, block: bool = False, kind: Kind = RS) -> core_pb2.Pod:
    pod = MakePod().typed().name(name).namespace(NS).container("c", "x").obj()
    for o in owners:
        m = o.metadata  # type: ignore[attr-defined]
        pod.metadata.owner_references.add(
            api_version=kind.api_version,
            kind=kind.kind,
            name=m.name,
            uid=m.uid,
            block_owner_deletion=block,
        )
    return pod


async def test_orphan_and_foreground_hold_the_object_background_does_not(
    cluster: ControllerCluster,
) -> None:
    api = cluster.api
    for policy, held in (
        ("Orphan", ["orphan"]),
        ("Foreground", ["foregroundDeletion"]),
        ("Background", None),
    ):
        await api.create(codec.decode(_rs_doc()).obj)
        out = await api.delete(RS, NS, "rs", propagation_policy=policy)
        stored = await api.get_or_none(RS, NS, "rs")
        if held is None:
            assert stored is None
            continue
        assert stored is not None and list(stored.metadata.finalizers) == held  # type: ignore[attr-defined]
        assert stored.metadata.deletion_timestamp  # type: ignore[attr-defined]
        assert list(out.metadata.finalizers) == held  # type: ignore[attr-defined]
        stored.metadata.ClearField("finalizers")  # type: ignore[attr-defined]
        await api.update(stored)  # the collector's last step: the object goes
        assert await api.get_or_none(RS, NS, "rs") is None


async def test_an_unknown_policy_is_refused(cluster: ControllerCluster) -> None:
    with pytest.raises(BadRequestError, match="propagationPolicy"):
        await cluster.api.delete(RS, NS, "rs", propagation_policy="Sometimes")


# ------------------------------------------------------------------ the collector


async def _start(cluster: ControllerCluster) -> GarbageCollector:
    gc = GarbageCollector(cluster.client, cluster.informers, clock=cluster.api_clock)
    await cluster.start(gc)
    return gc


async def _seen(cluster: ControllerCluster, gc: GarbageCollector, *names: str) -> None:
    """Until the collector's graph holds the dependents `names`: a foreground or orphan
    deletion acts on the dependents the graph knows, which its informers bring in their own
    time (as upstream's graph builder), so a test deletes the owner after that."""
    await cluster.until(lambda: set(names) <= {n.name for n in gc.graph.values()})


async def _exists(cluster: ControllerCluster, kind: Kind, name: str, ns: str = NS) -> bool:
    items, _ = await cluster.client.list(kind, namespace=ns if kind.namespaced else "")
    return any(i.metadata.name == name for i in items)  # type: ignore[attr-defined]


async def eventually_async(cond: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Wait until the apiserver shows what `cond` asks (polled: the objects are read fresh)."""

    async def loop() -> None:
        while not await cond():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(loop(), timeout)


async def until_gone(cluster: ControllerCluster, kind: Kind, name: str, ns: str = NS) -> None:
    async def gone() -> bool:
        return not await _exists(cluster, kind, name, ns)

    await eventually_async(gone)


async def test_background_deletion_deletes_dependents_whose_owners_are_all_gone(
    cluster: ControllerCluster,
) -> None:
    """TestCascadingDeletion: a pod with one (deleted) owner goes; one with a live owner
    left stays and loses the reference to the deleted one."""
    await _start(cluster)
    rs1 = await cluster.create(_rs_doc("rs1"))
    rs2 = await cluster.create(_rs_doc("rs2"))
    await cluster.client.create(_owned("only-rs1", rs1))
    await cluster.client.create(_owned("rs1-and-rs2", rs1, rs2))
    await cluster.client.delete(RS, "rs1", NS)
    await eventually_async(lambda: _gone(cluster, "only-rs1"))

    async def rs2_only() -> bool:
        pod: Any = await cluster.client.get(PODS, "rs1-and-rs2", NS)
        return [r.name for r in pod.metadata.owner_references] == ["rs2"]

    await eventually_async(rs2_only)


async def _gone(cluster: ControllerCluster, name: str) -> bool:
    return not await _exists(cluster, PODS, name)


async def test_orphan_deletion_keeps_the_dependents_without_the_reference(
    cluster: ControllerCluster,
) -> None:
    """TestOrphaning."""
    gc = await _start(cluster)
    rs = await cluster.create(_rs_doc())
    for i in range(3):
        await cluster.client.create(_owned(f"p{i}", rs))
    await _seen(cluster, gc, "p0", "p1", "p2")
    await cluster.client.delete(RS, "rs", NS, propagation_policy="Orphan")
    await until_gone(cluster, RS, "rs")
    for i in range(3):
        pod: Any = await cluster.client.get(PODS, f"p{i}", NS)
        assert list(pod.metadata.owner_references) == []


async def test_foreground_deletion_waits_for_blocking_dependents(
    cluster: ControllerCluster,
) -> None:
    """TestBlockingOwnerRefDoesBlock: the owner stays (foregroundDeletion) until its
    blocking dependents are gone; here a finalizer of ours holds one dependent."""
    gc = await _start(cluster)
    rs = await cluster.create(_rs_doc())
    held = _owned("held", rs, block=True)
    held.metadata.finalizers.append("example.com/hold")
    await cluster.client.create(held)
    await cluster.client.create(_owned("free", rs, block=True))
    await _seen(cluster, gc, "held", "free")
    await cluster.client.delete(RS, "rs", NS, propagation_policy="Foreground")
    await eventually_async(lambda: _gone(cluster, "free"))

    async def held_deleting() -> bool:
        pod: Any = await cluster.client.get(PODS, "held", NS)
        return bool(pod.metadata.deletion_timestamp)

    await eventually_async(held_deleting)
    owner: Any = await cluster.client.get(RS, "rs", NS)
    assert list(owner.metadata.finalizers) == ["foregroundDeletion"]
    pod: Any = await cluster.client.get(PODS, "held", NS)
    pod.metadata.ClearField("finalizers")
    await cluster.client.update(pod)
    await until_gone(cluster, RS, "rs")


async def test_a_non_blocking_dependent_does_not_hold_a_foreground_deletion(
    cluster: ControllerCluster,
) -> None:
    """TestNonBlockingOwnerRefDoesNotBlock: the owner goes while a dependent that does not
    block it is still held by its own finalizer."""
    await _start(cluster)
    rs = await cluster.create(_rs_doc())
    pod = _owned("loose", rs, block=False)
    pod.metadata.finalizers.append("example.com/hold")
    await cluster.client.create(pod)
    await cluster.client.delete(RS, "rs", NS, propagation_policy="Foreground")
    await until_gone(cluster, RS, "rs")
    loose: Any = await cluster.client.get(PODS, "loose", NS)
    assert loose.metadata.deletion_timestamp  # deleted too, held by its own finalizer
    loose.metadata.ClearField("finalizers")
    await cluster.client.update(loose)


async def test_a_dependent_observed_before_its_owner_is_not_deleted(
    cluster: ControllerCluster,
) -> None:
    """An owner the graph has not seen is read from the apiserver before anything goes."""
    rs = await cluster.create(_rs_doc())
    await cluster.client.create(_owned("child", rs))
    gc = await _start(cluster)
    await cluster.until(lambda: any(n.name == "child" for n in gc.graph.values()))
    await gc.attempt_to_delete(next(n for n in gc.graph.values() if n.name == "child"))
    assert await _exists(cluster, PODS, "child")


async def test_cluster_scoped_owners_collect_namespaced_dependents(
    cluster: ControllerCluster,
) -> None:
    """TestClusterScopedOwners: a node's lease in kube-node-lease goes with the node."""
    await _start(cluster)
    await cluster.node("n1")
    node: Any = await cluster.client.get(NODES, "n1")
    lease = LEASES.new()
    lease.metadata.name, lease.metadata.namespace = "n1", "kube-node-lease"  # type: ignore[attr-defined]
    lease.metadata.owner_references.add(
        api_version="v1", kind="Node", name="n1", uid=node.metadata.uid
    )  # type: ignore[attr-defined]
    await cluster.client.create(lease)
    await cluster.client.delete(NODES, "n1")
    await until_gone(cluster, LEASES, "n1", "kube-node-lease")


async def test_dependents_left_dangling_while_no_collector_ran_are_collected_at_start(
    cluster: ControllerCluster,
) -> None:
    """The sweep after the informers' sync: an owner deleted before the collector started."""
    rs = await cluster.create(_rs_doc())
    await cluster.client.create(_owned("orphaned", rs))
    await cluster.client.delete(RS, "rs", NS)
    assert await _exists(cluster, PODS, "orphaned")
    await _start(cluster)
    await until_gone(cluster, PODS, "orphaned")


# ------------------------------------------------------------------ the graph alone
# (garbagecollector_test.go TestProcessEvent-like: what each event does to the graph and
# the queue, with no apiserver behind the collector)


class _NoClient:
    """The graph tests never reach the apiserver."""


def _graph_gc() -> GarbageCollector:
    from services.client import SharedInformers

    return GarbageCollector(_NoClient(), SharedInformers(_NoClient()))  # type: ignore[arg-type]


def _obj(kind: Kind, name: str, uid: str, *owners: tuple[str, str], **meta: Any) -> Message:
    obj = kind.new()
    m: Any = obj.metadata  # type: ignore[attr-defined]
    m.name, m.namespace, m.uid = name, NS if kind.namespaced else "", uid
    for owner_name, owner_uid in owners:
        m.owner_references.add(
            api_version="apps/v1",
            kind="ReplicaSet",
            name=owner_name,
            uid=owner_uid,
            block_owner_deletion=True,
        )
    if meta.get("deleting"):
        m.deletion_timestamp = "2026-01-01T00:00:00Z"
    m.finalizers.extend(meta.get("finalizers", ()))
    return obj


async def _queued(gc: GarbageCollector) -> set[tuple[str, str]]:
    """Everything the events queued (the queue drained, as workers would)."""
    out = set()
    while len(gc.queue):
        item = await gc.queue.get()
        assert item is not None
        gc.queue.done(item)
        out.add(item)
    return out


async def test_the_graph_follows_owner_references() -> None:
    gc = _graph_gc()
    gc.synced = True
    gc.observe(RS, _obj(RS, "rs", "u-rs"))
    gc.observe(PODS, _obj(PODS, "p", "u-p", ("rs", "u-rs")))
    assert gc.dependents["u-rs"] == {"u-p"}
    assert await _queued(gc) == set()  # the owner is in the graph: nothing to attempt
    gc.observe(PODS, _obj(PODS, "p", "u-p"))  # the reference removed
    assert gc.dependents.get("u-rs", set()) == set()


async def test_a_dependent_whose_owner_is_unseen_is_attempted_only_after_the_sync() -> None:
    gc = _graph_gc()
    gc.observe(PODS, _obj(PODS, "p", "u-p", ("rs", "u-gone")))
    assert await _queued(gc) == set()  # the initial list may not have reached the owner yet
    gc.synced = True
    gc.observe(PODS, _obj(PODS, "p2", "u-p2", ("rs", "u-gone")))
    assert ("delete", "u-p2") in await _queued(gc)


async def test_deleting_an_owner_attempts_its_dependents() -> None:
    gc = _graph_gc()
    gc.synced = True
    rs = _obj(RS, "rs", "u-rs")
    gc.observe(RS, rs)
    gc.observe(PODS, _obj(PODS, "p", "u-p", ("rs", "u-rs")))
    gc.forget(RS, rs)
    assert "u-rs" not in gc.graph
    assert ("delete", "u-p") in await _queued(gc)


async def test_an_owner_held_for_orphaning_or_foreground_is_queued_so() -> None:
    gc = _graph_gc()
    gc.synced = True
    gc.observe(RS, _obj(RS, "a", "u-a", deleting=True, finalizers=["orphan"]))
    gc.observe(RS, _obj(RS, "b", "u-b", deleting=True, finalizers=["foregroundDeletion"]))
    gc.observe(PODS, _obj(PODS, "p", "u-p", ("b", "u-b")))
    queued = await _queued(gc)
    assert (
        ("orphan", "u-a") in queued and ("delete", "u-b") in queued and ("delete", "u-p") in queued
    )
    assert [d.uid for d in gc.blocking_dependents(gc.graph["u-b"])] == ["u-p"]
