"""The resourceclaim controller's PodGroup claims (DRAWorkloadResourceClaims): a claim made
once per PodGroup from a template, recorded in the group's status and copied into its pods'
statuses; reservations of a PodGroup kept while it exists; claims of a gone PodGroup freed.

The cases follow upstream's TestSyncHandler rows for PodGroups (pkg/controller/
resourceclaim/controller_test.go: "create for PodGroup", "skip create for Pod with PodGroup
…", "update Pod status with PodGroup claim", "nop for PodGroup", "recreate for PodGroup",
"missing-template-podgroup", "find-existing-claim-by-label-podgroup", "no-such-podgroup",
"podgroup-deleted", "clear-reserved-podgroup", "add-reserved-podgroup"), against a real
gRPC apiserver on in-memory storage: one sync of one key, then the objects are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, resource_pb2, schedulingv1beta1_pb2
from services.api.dra.claims import POD_CLAIM_NAME_ANNOTATION, is_for_pod, is_reserved_for_pod
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.controllers.resourceclaim import (
    DELETE_PROTECTION_FINALIZER,
    ResourceClaimController,
)
from tests.builders import MakePod, scheduling_pod_group
from tests.controllers.conftest import NS, ControllerCluster
from tests.controllers.test_resourceclaim import allocation, claims, gpu_template, settle
from tests.waiting import eventually

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
GROUPS = BY_KIND[SCHEDULING_POD_GROUP]
PodGroup = schedulingv1beta1_pb2.SchedulingPodGroup


@dataclass
class World:
    cluster: ControllerCluster
    group: PodGroup | None = None
    pod: core_pb2.Pod | None = None

    async def pod_group(
        self, *, template: str | None = "gpu-template", claim: str | None = None, status: str = ""
    ) -> PodGroup:
        entry: dict[str, str] = {"name": "gpu"}
        if template is not None:
            entry["resourceClaimTemplateName"] = template
        if claim is not None:
            entry["resourceClaimName"] = claim
        pg = scheduling_pod_group("pg", NS, resourceClaims=[entry])
        made: PodGroup = await self.cluster.client.create(pg)  # type: ignore[assignment]
        if status:
            made.status.resource_claim_statuses.add(name="gpu", resource_claim_name=status)
            made = await self.cluster.client.update_status(made)  # type: ignore[assignment]
        self.group = made
        return made

    async def member(
        self, *, template: str | None = "gpu-template", claim: str | None = None, node: str = ""
    ) -> core_pb2.Pod:
        b = MakePod().typed().name("p").namespace(NS).container("c", "app:v1").pod_group_name("pg")
        b.resource_claim("gpu", template=template, claim=claim)
        pod: core_pb2.Pod = await self.cluster.client.create(b.obj())
        if node:
            await self.cluster.bind(pod, node)
            pod = await self.cluster.client.get(PODS, "p", NS)  # type: ignore[assignment]
        self.pod = pod
        return pod

    async def claim(
        self,
        name: str,
        *,
        owned: bool = False,
        allocated: bool = False,
        reserved_for_group: tuple[str, str] | None = None,
    ) -> resource_pb2.ResourceClaim:
        c = resource_pb2.ResourceClaim(api_version="resource.k8s.io/v1", kind="ResourceClaim")
        c.metadata.name, c.metadata.namespace = name, NS
        c.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu.example.com"
        if owned:
            assert self.group is not None
            c.metadata.owner_references.add(
                api_version=GROUPS.api_version,
                kind="PodGroup",
                name="pg",
                uid=self.group.metadata.uid,
                controller=True,
                block_owner_deletion=True,
            )
            c.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] = "gpu"
        if allocated:
            c.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
        made: resource_pb2.ResourceClaim = await self.cluster.client.create(c)
        if allocated:
            json_format.ParseDict(allocation(), made.status.allocation)
            if reserved_for_group is not None:
                made.status.reserved_for.add(
                    api_group="scheduling.k8s.io",
                    resource="podgroups",
                    name=reserved_for_group[0],
                    uid=reserved_for_group[1],
                )
            made = await self.cluster.client.update_status(made)
        return made


async def _group(cluster: ControllerCluster) -> PodGroup | None:
    try:
        return await cluster.client.get(GROUPS, "pg", NS)  # type: ignore[return-value]
    except NotFoundError:
        return None


async def _pod(cluster: ControllerCluster) -> core_pb2.Pod | None:
    try:
        return await cluster.client.get(PODS, "p", NS)  # type: ignore[return-value]
    except NotFoundError:
        return None


def _statuses(obj: Any) -> list[tuple[str, str]]:
    if obj is None:
        return []
    return [(s.name, s.resource_claim_name) for s in obj.status.resource_claim_statuses]


@dataclass
class Case:
    name: str
    setup: Callable[[World], Any]
    key: str
    check: Callable[
        [World, list[resource_pb2.ResourceClaim], PodGroup | None, core_pb2.Pod | None], None
    ]
    error: type[Exception] | None = None


async def _create_for_group(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod_group()


def _check_group_claim(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert c.metadata.name.startswith("pg-gpu-")
    assert c.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
    ref = c.metadata.owner_references[0]
    assert (ref.api_version, ref.kind, ref.name) == ("scheduling.k8s.io/v1beta1", "PodGroup", "pg")
    assert ref.controller and ref.uid == w.group.metadata.uid  # type: ignore[union-attr]
    assert c.metadata.labels["team"] == "ml", "the template's labels"
    assert _statuses(pg) == [("gpu", c.metadata.name)]


async def _member_before_group_claim(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod_group()
    await w.member()


def _check_nothing_made(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert cs == [], "the pod's entry is its group's: no claim of its own"
    assert _statuses(pod) == []


async def _member_of_unknown_group(w: World) -> None:
    # Its PodGroup does not exist (yet): which entries are the group's is unknown, so no
    # claim is made for the pod (the group's arrival brings the pod back).
    await w.cluster.client.create(gpu_template())
    await w.member()


async def _member_after_group_claim(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod_group(status="pg-gpu-abcde")
    await w.claim("pg-gpu-abcde", owned=True)
    await w.member()


def _check_member_recorded(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert [c.metadata.name for c in cs] == ["pg-gpu-abcde"]
    assert _statuses(pod) == [("gpu", "pg-gpu-abcde")]
    assert pod is not None and is_for_pod(pod, cs[0]), "a claim its PodGroup controls is its"


async def _member_of_group_without_the_entry(w: World) -> None:
    # The group shares another claim: the pod's own template entry gets its own claim.
    await w.cluster.client.create(gpu_template())
    await w.pod_group(template=None, claim="other")
    await w.member()


def _check_own_claim(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert c.metadata.name.startswith("p-gpu-")
    assert c.metadata.owner_references[0].kind == "Pod"
    assert _statuses(pod) == [("gpu", c.metadata.name)]


async def _nop_for_group(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod_group(status="pg-gpu-abcde")
    await w.claim("pg-gpu-abcde", owned=True)


def _check_group_unchanged(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert [c.metadata.name for c in cs] == ["pg-gpu-abcde"]
    assert _statuses(pg) == [("gpu", "pg-gpu-abcde")]


async def _recreate_for_group(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    await w.pod_group(status="pg-gpu-gone1")


def _check_group_recreated(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert c.metadata.name.startswith("pg-gpu-") and c.metadata.name != "pg-gpu-gone1"
    assert _statuses(pg) == [("gpu", c.metadata.name)]


async def _group_without_template(w: World) -> None:
    await w.pod_group(template="missing")


def _check_no_claims(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert cs == []
    assert _statuses(pg) == []


async def _find_existing_for_group(w: World) -> None:
    # A crash after the create, before the status write: found by its owner and annotation.
    await w.pod_group()
    await w.claim("pg-gpu-abcde", owned=True)


def _check_group_found(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert [c.metadata.name for c in cs] == ["pg-gpu-abcde"]
    assert _statuses(pg) == [("gpu", "pg-gpu-abcde")]


async def _no_such_group(w: World) -> None:
    pass


async def _group_deleting(w: World) -> None:
    await w.cluster.client.create(gpu_template())
    pg = scheduling_pod_group(
        "pg", NS, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    )
    pg.metadata.finalizers.append("example.com/hold")
    w.group = await w.cluster.client.create(pg)  # type: ignore[assignment]
    await w.cluster.client.delete(GROUPS, "pg", NS)


async def _reserved_for_gone_group(w: World) -> None:
    await w.claim("shared", allocated=True, reserved_for_group=("pg", "gone-uid"))


def _check_deallocated(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert not c.status.reserved_for
    assert not c.status.HasField("allocation")
    assert DELETE_PROTECTION_FINALIZER not in c.metadata.finalizers


async def _reserved_for_live_group(w: World) -> None:
    pg = await w.pod_group(template=None, claim="shared")
    await w.claim("shared", allocated=True, reserved_for_group=("pg", pg.metadata.uid))


def _check_still_reserved(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert [(r.resource, r.name) for r in c.status.reserved_for] == [("podgroups", "pg")]
    assert c.status.HasField("allocation")


async def _bound_by_hand(w: World) -> None:
    await w.pod_group(template=None, claim="shared")
    await w.claim("shared", allocated=True)
    await w.member(template=None, claim="shared", node="n1")


def _check_reserved_for_group(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    (c,) = cs
    assert pg is not None and pod is not None
    assert [(r.api_group, r.resource, r.name, r.uid) for r in c.status.reserved_for] == [
        ("scheduling.k8s.io", "podgroups", "pg", pg.metadata.uid)
    ], "the group's claim is reserved for the group, not the pod"
    assert is_reserved_for_pod(pod, c)


async def _owned_by_gone_group(w: World) -> None:
    await w.pod_group()
    await w.claim("pg-gpu-abcde", owned=True)
    await w.cluster.client.delete(GROUPS, "pg", NS)


def _check_deleted(
    w: World, cs: list[resource_pb2.ResourceClaim], pg: PodGroup | None, pod: core_pb2.Pod | None
) -> None:
    assert cs == []


async def _owned_by_live_group(w: World) -> None:
    await w.pod_group(status="pg-gpu-abcde")
    await w.claim("pg-gpu-abcde", owned=True)


CASES = [
    Case("create-for-podgroup", _create_for_group, "podgroup:default/pg", _check_group_claim),
    Case("skip-create-for-pod-before-group-claim", _member_before_group_claim, "pod:default/p", _check_nothing_made),
    Case("no-claim-while-podgroup-unknown", _member_of_unknown_group, "pod:default/p", _check_nothing_made),
    Case("update-pod-status-with-podgroup-claim", _member_after_group_claim, "pod:default/p", _check_member_recorded),
    Case("own-claim-for-entry-the-group-lacks", _member_of_group_without_the_entry, "pod:default/p", _check_own_claim),
    Case("nop-for-podgroup", _nop_for_group, "podgroup:default/pg", _check_group_unchanged),
    Case("recreate-for-podgroup", _recreate_for_group, "podgroup:default/pg", _check_group_recreated),
    Case("missing-template-podgroup", _group_without_template, "podgroup:default/pg", _check_no_claims, NotFoundError),
    Case("find-existing-claim-podgroup", _find_existing_for_group, "podgroup:default/pg", _check_group_found),
    Case("no-such-podgroup", _no_such_group, "podgroup:default/pg", _check_no_claims),
    Case("podgroup-deleted", _group_deleting, "podgroup:default/pg", _check_no_claims),
    Case("clear-reserved-podgroup", _reserved_for_gone_group, "claim:default/shared", _check_deallocated),
    Case("keep-reserved-live-podgroup", _reserved_for_live_group, "claim:default/shared", _check_still_reserved),
    Case("add-reserved-podgroup", _bound_by_hand, "pod:default/p", _check_reserved_for_group),
    Case("delete-claim-of-gone-podgroup", _owned_by_gone_group, "claim:default/pg-gpu-abcde", _check_deleted),
    Case("keep-claim-of-live-podgroup", _owned_by_live_group, "claim:default/pg-gpu-abcde", _check_group_unchanged),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_sync(cluster: ControllerCluster, case: Case) -> None:
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    await cluster.start()
    w = World(cluster)
    await case.setup(w)
    await settle(cluster, ctrl)
    groups, _ = await cluster.client.list(GROUPS, namespace=NS)
    want = {g.metadata.resource_version for g in groups}  # type: ignore[attr-defined]
    await cluster.until(
        lambda: {g.metadata.resource_version for g in ctrl.group_informer.store.values()} == want
    )
    if case.error is not None:
        with pytest.raises(case.error):
            await ctrl.sync(case.key)
    else:
        await ctrl.sync(case.key)
    case.check(w, await claims(cluster), await _group(cluster), await _pod(cluster))


async def test_a_groups_pods_share_the_claim_made_from_its_template(
    cluster: ControllerCluster,
) -> None:
    """Workers on events: the group's claim is made once and recorded in the group's status,
    then in each member pod's, whichever came first."""
    ctrl = ResourceClaimController(cluster.client, cluster.informers)
    cluster.bump_on(GROUPS, CLAIMS)
    await cluster.start(ctrl)
    for i in range(3):
        b = MakePod().typed().name(f"p{i}").namespace(NS).container("c", "app:v1")
        b.pod_group_name("pg").resource_claim("gpu", template="gpu-template")
        await cluster.client.create(b.obj())
    await cluster.client.create(
        scheduling_pod_group(
            "pg", NS, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
        )
    )
    await cluster.client.create(gpu_template())

    async def recorded() -> set[str]:
        names: set[str] = set()
        for i in range(3):
            pod: core_pb2.Pod = await cluster.client.get(PODS, f"p{i}", NS)  # type: ignore[assignment]
            if not pod.status.resource_claim_statuses:
                return set()
            names |= {s.resource_claim_name for s in pod.status.resource_claim_statuses}
        return names

    names = await eventually(recorded, timeout=10)
    (c,) = await claims(cluster)
    assert names == {c.metadata.name}
    assert _statuses(await _group(cluster)) == [("gpu", c.metadata.name)]
