"""The resourceclaim controller against a real gRPC apiserver (in-memory storage): claims
made from templates for pods, reservations of finished pods cleared, claims of done or
gone pods deleted, shared claims deallocated.

The table cases follow upstream's TestSyncHandler (pkg/controller/resourceclaim/
controller_test.go): each sets up objects, runs one sync of one key (as upstream calls
syncHandler) and checks the claims and the pod afterwards. The last tests run the
controller's workers on events instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.claims import POD_CLAIM_NAME_ANNOTATION
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.controllers.manager import ALL_CONTROLLERS
from services.controllers.resourceclaim import (
    DELETE_PROTECTION_FINALIZER,
    ResourceClaimController,
    generate_name,
    is_pod_done,
)
from tests.builders import MakePod, exact_request, resource_claim, resource_claim_template
from tests.controllers.conftest import NS, ControllerCluster
from tests.waiting import eventually

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
TEMPLATES = BY_KIND["ResourceClaimTemplate"]


def gpu_template(name: str = "gpu-template") -> resource_pb2.ResourceClaimTemplate:
    t = resource_claim_template(name, NS, exact_request("gpu", "gpu.example.com"))
    t.spec.metadata.labels["team"] = "ml"
    t.spec.metadata.annotations["note"] = "from-template"
    return t


def allocation() -> dict[str, Any]:
    return {
        "devices": {
            "results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
            ]
        }
    }


@dataclass
class World:
    """What a case starts from, made through the apiserver."""

    cluster: ControllerCluster
    pods: dict[str, core_pb2.Pod] = field(default_factory=dict)

    async def pod(
        self,
        name: str,
        *,
        template: str | None = None,
        claim: str | None = None,
        node: str = "",
        phase: str = "",
        statuses: dict[str, str] | None = None,
    ) -> core_pb2.Pod:
        b = MakePod().typed().name(name).namespace(NS).container("c", "app:v1")
        if template is not None:
            b.resource_claim("gpu", template=template)
        if claim is not None:
            b.resource_claim("shared", claim=claim)
        pod: core_pb2.Pod = await self.cluster.client.create(b.obj())
        if node:
            await self.cluster.bind(pod, node)
        if phase or statuses:
            pod = await self.cluster.client.get(PODS, name, NS)  # type: ignore[assignment]
            if phase:
                pod.status.phase = phase
            for entry, cname in (statuses or {}).items():
                pod.status.resource_claim_statuses.add(name=entry, resource_claim_name=cname)
            pod = await self.cluster.client.update_status(pod)
        self.pods[name] = pod
        return pod

    async def claim(
        self,
        name: str,
        *,
        owner: core_pb2.Pod | None = None,
        reserved_for: list[core_pb2.Pod | tuple[str, str]] = (),  # type: ignore[assignment]
        allocated: bool = False,
        finalizer: bool = False,
    ) -> resource_pb2.ResourceClaim:
        c = resource_claim(name, NS, exact_request("gpu", "gpu.example.com"))
        if owner is not None:
            c.metadata.owner_references.add(
                api_version="v1",
                kind="Pod",
                name=owner.metadata.name,
                uid=owner.metadata.uid,
                controller=True,
                block_owner_deletion=True,
            )
            c.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] = "gpu"
        if finalizer:
            c.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
        made: resource_pb2.ResourceClaim = await self.cluster.client.create(c)
        if reserved_for or allocated:
            for who in reserved_for:
                if isinstance(who, tuple):
                    made.status.reserved_for.add(resource="pods", name=who[0], uid=who[1])
                else:
                    made.status.reserved_for.add(
                        resource="pods", name=who.metadata.name, uid=who.metadata.uid
                    )
            if allocated:
                json_format.ParseDict(allocation(), made.status.allocation)
            made = await self.cluster.client.update_status(made)
        return made


async def claims(cluster: ControllerCluster) -> list[resource_pb2.ResourceClaim]:
    items, _ = await cluster.client.list(CLAIMS, namespace=NS)
    return sorted(items, key=lambda c: c.metadata.name)  # type: ignore[attr-defined,return-value]


async def settle(cluster: ControllerCluster, ctrl: ResourceClaimController) -> None:
    """Wait until the controller's informers hold what the apiserver holds."""
    for inf, kind in (
        (ctrl.pod_informer, PODS),
        (ctrl.claim_informer, CLAIMS),
        (ctrl.template_informer, TEMPLATES),
    ):
        items, _ = await cluster.client.list(kind, namespace=NS)
        want = {(i.metadata.name, i.metadata.resource_version) for i in items}  # type: ignore[attr-defined]

        def have(inf: Any = inf, want: set[tuple[str, str]] = want) -> bool:
            got = {(o.metadata.name, o.metadata.resource_version) for o in inf.store.values()}
            return got == want

        await cluster.until(have)


@dataclass
class Case:
    name: str
    setup: Callable[[World], Any]
    key: Callable[[World], str]
    check: Callable[[World, list[resource_pb2.ResourceClaim], core_pb2.Pod | None], None]
    error: type[Exception] | None = None


async def _create(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod("p", template="gpu-template")


def _check_created(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    assert len(cs) == 1
    c = cs[0]
    assert c.metadata.name.startswith("p-gpu-")
    assert c.metadata.labels["team"] == "ml"
    assert c.metadata.annotations["note"] == "from-template"
    assert c.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
    ref = c.metadata.owner_references[0]
    assert (ref.kind, ref.name, ref.uid) == ("Pod", "p", w.pods["p"].metadata.uid)
    assert ref.controller and ref.block_owner_deletion
    assert c.spec.devices.requests[0].exactly.device_class_name == "gpu.example.com"
    assert pod is not None
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [
        ("gpu", c.metadata.name)
    ]


async def _find_existing(w: World) -> None:
    # A crash after the create, before the status write: the claim exists, owned by the pod.
    await w.cluster.client.create(gpu_template())
    p = await w.pod("p", template="gpu-template")
    await w.claim("p-gpu-abcde", owner=p)


def _check_found(w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None) -> None:
    assert [c.metadata.name for c in cs] == ["p-gpu-abcde"]
    assert pod is not None
    assert [s.resource_claim_name for s in pod.status.resource_claim_statuses] == ["p-gpu-abcde"]


async def _other_owner(w: World) -> None:
    # A claim owned by another pod is not this pod's: a new one is made.
    await w.cluster.client.create(gpu_template())
    other = await w.pod("other", template="gpu-template", statuses={"gpu": "other-gpu-xyz"})
    await w.claim("other-gpu-xyz", owner=other)
    await w.pod("p", template="gpu-template")


def _check_other(w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None) -> None:
    assert len(cs) == 2
    assert pod is not None
    made = pod.status.resource_claim_statuses[0].resource_claim_name
    assert made != "other-gpu-xyz" and made.startswith("p-gpu-")


async def _nop(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    p = await w.pod("p", template="gpu-template", statuses={"gpu": "p-gpu-abcde"})
    await w.claim("p-gpu-abcde", owner=p)


def _check_unchanged(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    assert [c.metadata.name for c in cs] == ["p-gpu-abcde"]


async def _done(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod("p", template="gpu-template", node="n1", phase="Succeeded")


def _check_none(w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None) -> None:
    assert cs == []
    assert pod is None or not pod.status.resource_claim_statuses


async def _deleting(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod("p", template="gpu-template", node="n1")
    await w.cluster.client.delete(PODS, "p", NS, grace_period_seconds=30)


async def _no_template(w: World) -> None:
    await w.pod("p", template="missing")


async def _no_pod(w: World) -> None:
    pass


async def _reserved_gone(w: World) -> None:
    # A shared claim reserved for a pod that no longer exists, and for a live one.
    live = await w.pod("live", claim="shared", node="n1", phase="Running")
    await w.claim("shared", reserved_for=[("ghost", "ghost-uid"), live], allocated=True)


def _check_one_left(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert [r.name for r in c.status.reserved_for] == ["live"]
    assert c.status.HasField("allocation"), "still in use: stays allocated"


async def _reserved_done(w: World) -> None:
    done = await w.pod("done", claim="shared", node="n1", phase="Failed")
    await w.claim("shared", reserved_for=[done], allocated=True, finalizer=True)


def _check_deallocated(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert not c.status.reserved_for
    assert not c.status.HasField("allocation")
    assert DELETE_PROTECTION_FINALIZER not in c.metadata.finalizers


async def _reserved_done_no_finalizer(w: World) -> None:
    # Allocated by someone other than the scheduler (no delete-protection finalizer).
    done = await w.pod("done", claim="shared", node="n1", phase="Failed")
    await w.claim("shared", reserved_for=[done], allocated=True)


def _check_unreserved_still_allocated(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert not c.status.reserved_for
    assert c.status.HasField("allocation"), "not the scheduler's allocation: left alone"


async def _replaced(w: World) -> None:
    # A pod of the same name but another UID: the reservation was the old one's.
    p = await w.pod("p", claim="shared", node="n1", phase="Running")
    await w.claim("shared", reserved_for=[("p", "old-uid"), p], allocated=True)


def _check_replaced(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert [r.uid for r in c.status.reserved_for] == [w.pods["p"].metadata.uid]


async def _allocated_unreserved(w: World) -> None:
    # Allocated but never reserved (a driver may allocate first): not deallocated.
    await w.claim("shared", allocated=True)


def _check_still_allocated(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert c.status.HasField("allocation")


async def _owned_pod_done(w: World) -> None:
    p = await w.pod("p", template="t", node="n1", phase="Succeeded", statuses={"gpu": "p-gpu-1"})
    await w.claim("p-gpu-1", owner=p, reserved_for=[p], allocated=True)


def _check_deleted(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    assert cs == []


async def _owned_pod_gone(w: World) -> None:
    p = await w.pod("p", template="t", statuses={"gpu": "p-gpu-1"})
    await w.claim("p-gpu-1", owner=p)
    await w.cluster.client.delete(PODS, "p", NS, grace_period_seconds=0)


async def _owned_pod_running(w: World) -> None:
    p = await w.pod("p", template="t", node="n1", phase="Running", statuses={"gpu": "p-gpu-1"})
    await w.claim("p-gpu-1", owner=p, reserved_for=[p], allocated=True)


def _check_kept(w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None) -> None:
    (c,) = cs
    assert len(c.status.reserved_for) == 1 and c.status.HasField("allocation")


async def _owned_pod_deleting_on_node(w: World) -> None:
    # Being deleted but bound to a node: its kubelet may still run it; the claim stays.
    p = await w.pod("p", template="t", node="n1", phase="Running", statuses={"gpu": "p-gpu-1"})
    await w.claim("p-gpu-1", owner=p, reserved_for=[p], allocated=True)
    await w.cluster.client.delete(PODS, "p", NS, grace_period_seconds=30)


async def _bound_by_hand(w: World) -> None:
    # nodeName set by hand, the claim allocated beforehand: the controller reserves it
    await w.claim("shared", allocated=True)
    await w.pod("p", claim="shared", node="n1")


def _check_reserved(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert [(r.resource, r.name, r.uid) for r in c.status.reserved_for] == [
        ("pods", "p", w.pods["p"].metadata.uid)
    ]


async def _unbound(w: World) -> None:
    await w.claim("shared", allocated=True)
    await w.pod("p", claim="shared")


def _check_unreserved(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert not c.status.reserved_for, "the scheduler reserves for the pods it binds"


async def _recreate(w: World) -> None:
    # The recorded claim was deleted by someone while the pod still needs it.
    await w.cluster.client.create(gpu_template())
    await w.pod("p", template="gpu-template", statuses={"gpu": "p-gpu-gone1"})


def _check_recreated(
    w: World, cs: list[resource_pb2.ResourceClaim], pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert c.metadata.name.startswith("p-gpu-") and c.metadata.name != "p-gpu-gone1"
    assert pod is not None
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [
        ("gpu", c.metadata.name)
    ]


async def _claim_being_deleted(w: World) -> None:
    # Deleted while allocated but unused: the allocation is cleared, the finalizer goes.
    await w.claim("shared", allocated=True, finalizer=True)
    await w.cluster.client.delete(CLAIMS, "shared", NS)
    held = await w.cluster.client.get(CLAIMS, "shared", NS)
    assert held.metadata.deletion_timestamp, "the finalizer holds it"  # type: ignore[attr-defined]


CASES = [
    Case("create", _create, lambda w: "pod:default/p", _check_created),
    Case("find-existing-claim", _find_existing, lambda w: "pod:default/p", _check_found),
    Case("claim-of-another-pod", _other_owner, lambda w: "pod:default/p", _check_other),
    Case("nop-status-recorded", _nop, lambda w: "pod:default/p", _check_unchanged),
    Case("no-claims-for-done-pod", _done, lambda w: "pod:default/p", _check_none),
    Case("no-claims-for-deleted-pod", _deleting, lambda w: "pod:default/p", _check_none),
    Case("no-such-template", _no_template, lambda w: "pod:default/p", _check_none, NotFoundError),
    Case("no-such-pod", _no_pod, lambda w: "pod:default/p", _check_none),
    Case("remove-reserved-gone-pod", _reserved_gone, lambda w: "claim:default/shared", _check_one_left),
    Case("clear-reserved-and-deallocate", _reserved_done, lambda w: "claim:default/shared", _check_deallocated),
    Case("clear-reserved-keep-allocation-without-finalizer", _reserved_done_no_finalizer, lambda w: "claim:default/shared", _check_unreserved_still_allocated),
    Case("remove-reserved-replaced-pod", _replaced, lambda w: "claim:default/shared", _check_replaced),
    Case("dont-deallocate-never-reserved", _allocated_unreserved, lambda w: "claim:default/shared", _check_still_allocated),
    Case("delete-claim-when-pod-done", _owned_pod_done, lambda w: "claim:default/p-gpu-1", _check_deleted),
    Case("delete-claim-when-pod-gone", _owned_pod_gone, lambda w: "claim:default/p-gpu-1", _check_deleted),
    Case("keep-claim-of-running-pod", _owned_pod_running, lambda w: "claim:default/p-gpu-1", _check_kept),
    Case("recreate", _recreate, lambda w: "pod:default/p", _check_recreated),
    Case("structured-deleted", _claim_being_deleted, lambda w: "claim:default/shared", _check_deleted),
    Case("add-reserved", _bound_by_hand, lambda w: "pod:default/p", _check_reserved),
    Case("no-reservation-for-unbound-pod", _unbound, lambda w: "pod:default/p", _check_unreserved),
    Case("keep-claim-of-pod-deleting-on-node", _owned_pod_deleting_on_node, lambda w: "claim:default/p-gpu-1", _check_kept),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_sync(cluster: ControllerCluster, case: Case) -> None:
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    await cluster.start()
    w = World(cluster)
    await case.setup(w)
    await settle(cluster, ctrl)
    if case.error is not None:
        with pytest.raises(case.error):
            await ctrl.sync(case.key(w))
    else:
        await ctrl.sync(case.key(w))
    pod: core_pb2.Pod | None
    try:
        pod = await cluster.client.get(PODS, "p", NS)  # type: ignore[assignment]
    except NotFoundError:
        pod = None
    case.check(w, await claims(cluster), pod)


async def test_stay_reserved_for_a_pod_the_cache_has_not_seen(cluster: ControllerCluster) -> None:
    """upstream stay-reserved-not-seen: a pod missing from the cache is looked up in the
    apiserver before its reservation is dropped."""
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    await cluster.start()
    w = World(cluster)
    p = await w.pod("p", claim="shared", node="n1", phase="Running")
    await w.claim("shared", reserved_for=[p], allocated=True)
    await settle(cluster, ctrl)
    del ctrl.pod_informer.store["default/p"]  # as if the pod were too new for the cache
    await ctrl.sync("claim:default/shared")
    _check_kept(w, await claims(cluster), None)


def test_is_pod_done() -> None:
    cases = [
        ("Pending", "", False, False),
        ("Running", "n1", False, False),
        ("Succeeded", "n1", False, True),
        ("Failed", "", False, True),
        ("Running", "n1", True, False),  # deleting on a node: the kubelet may still run it
        ("Pending", "", True, True),  # deleting, never scheduled
    ]
    for phase, node, deleting, want in cases:
        b = MakePod().name("p").phase(phase).node(node)
        if deleting:
            b.deletion_timestamp("2026-01-01T00:00:00Z")
        assert is_pod_done(b.obj()) is want, (phase, node, deleting)


@pytest.mark.parametrize(
    ("pod", "entry", "want"),
    [
        ("my-pod", "gpu", "my-pod-gpu-"),
        ("p" * 60, "gpu", "p" * 52 + "-gp"),
        ("p" * 30, "c" * 30, "p" * 27 + "-" + "c" * 27),
    ],
)
def test_generated_names_keep_both_parts(pod: str, entry: str, want: str) -> None:
    got = generate_name(pod, entry)
    assert got == want
    assert len(got) <= 57


def test_registered_in_the_controller_manager() -> None:
    assert "resourceclaim" in ALL_CONTROLLERS


async def test_claims_follow_the_pod_lifecycle(cluster: ControllerCluster) -> None:
    """Workers on events: a claim is made and recorded, survives while the pod runs,
    loses its reservation and is deleted when the pod finishes."""
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    await cluster.start(ctrl)
    w = World(cluster)
    await cluster.client.create(gpu_template())
    await w.pod("p", template="gpu-template", node="n1")

    async def recorded() -> str:
        pod: core_pb2.Pod = await cluster.client.get(PODS, "p", NS)  # type: ignore[assignment]
        return (
            pod.status.resource_claim_statuses[0].resource_claim_name
            if pod.status.resource_claim_statuses
            else ""
        )

    name = await eventually(recorded)
    (c,) = await claims(cluster)
    assert c.metadata.name == name
    # The scheduler's part: allocate and reserve for the pod.
    pod = await cluster.client.get(PODS, "p", NS)
    c.status.reserved_for.add(resource="pods", name="p", uid=pod.metadata.uid)  # type: ignore[attr-defined]
    json_format.ParseDict(allocation(), c.status.allocation)
    await cluster.client.update_status(c)
    await cluster.set_status(w.pods["p"], phase="Running")
    assert len(await claims(cluster)) == 1
    await cluster.set_status(w.pods["p"], phase="Succeeded")

    async def gone() -> bool:
        return not await claims(cluster)

    await eventually(gone)


async def test_template_created_later_unblocks_the_pod(cluster: ControllerCluster) -> None:
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    await cluster.start(ctrl)
    w = World(cluster)
    await w.pod("p", template="late")
    await cluster.client.create(gpu_template("late"))

    async def made() -> bool:
        return len(await claims(cluster)) == 1

    await eventually(made, timeout=5)
