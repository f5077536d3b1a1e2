"""What `kubectl get` shows for the Dynamic Resource Allocation kinds (resource.k8s.io/v1)
and for PodGroup (scheduling.x-k8s.io/v1alpha1).

The resource.k8s.io columns are upstream's (pkg/printers/internalversion/printers.go):
DeviceClass and ResourceClaimTemplate NAME AGE; ResourceSlice NAME NODE DRIVER POOL AGE;
ResourceClaim NAME STATE AGE, where STATE is upstream's resourceClaimState. DeviceTaintRule
has no printer upstream, so the apiserver's default table answers: NAME CREATED AT. PodGroup is a
custom resource upstream, printed from its CRD's additionalPrinterColumns (kubernetes-sigs/
scheduler-plugins config/crd/bases/scheduling.x-k8s.io_podgroups.yaml): PHASE MINMEMBER
RUNNING SUCCEEDED FAILED AGE. A CRD column whose JSON path finds nothing prints <none>,
and PodGroup's fields are `omitempty`, so a zero count or an unset phase prints <none>,
as it does on a real cluster.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.printers.columns import AGE, INT, NAME, NONE, Column, Columns, S, age


def resource_claim_state(claim: Message) -> str:
    """upstream's resourceClaimState: "deleted" while the claim is being deleted, then
    "pending" (not allocated, not being deleted) or "allocated", plus "reserved" when a
    consumer holds it; joined by commas ("allocated,reserved", "deleted,allocated")."""
    x: Any = claim
    deleting = bool(x.metadata.deletion_timestamp)
    states = ["deleted"] if deleting else []
    if not x.status.HasField("allocation"):
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if len(x.status.reserved_for) > 0:
            states.append("reserved")
    return ",".join(states)


def _name_age_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    return [x.metadata.name, age(x.metadata.creation_timestamp, now)]


def _resource_slice_row(rs: Message, now: float, wide: bool) -> list[str]:
    x: Any = rs
    return [
        x.metadata.name,
        x.spec.node_name,
        x.spec.driver,
        x.spec.pool.name,
        age(x.metadata.creation_timestamp, now),
    ]


def _resource_claim_row(claim: Message, now: float, wide: bool) -> list[str]:
    x: Any = claim
    return [x.metadata.name, resource_claim_state(claim), age(x.metadata.creation_timestamp, now)]


def _created_at_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    return [x.metadata.name, x.metadata.creation_timestamp]


def _crd_int(value: int) -> str:
    return str(value) if value else NONE


def _pod_group_row(pg: Message, now: float, wide: bool) -> list[str]:
    x: Any = pg
    return [
        x.metadata.name,
        x.status.phase or NONE,
        _crd_int(x.spec.min_member),
        _crd_int(x.status.running),
        _crd_int(x.status.succeeded),
        _crd_int(x.status.failed),
        age(x.metadata.creation_timestamp, now),
    ]


_NAME_AGE = Columns((NAME, AGE), _name_age_row)

#: kind -> table, merged into printers.COLUMNS.
RESOURCE_COLUMNS: dict[str, Columns] = {
    "DeviceClass": _NAME_AGE,
    "ResourceClaimTemplate": _NAME_AGE,
    # drataints: the default table (no printer upstream).
    "DeviceTaintRule": Columns(
        (
            NAME,
            Column(
                "Created At",
                "date",
                "CreationTimestamp is a timestamp representing the server time when this "
                "object was created.",
            ),
        ),
        _created_at_row,
    ),
    "ResourceSlice": Columns(
        (
            NAME,
            Column("Node", S, "The node whose devices the slice lists (spec.nodeName)."),
            Column("Driver", S, "The DRA driver that publishes the devices (spec.driver)."),
            Column("Pool", S, "The pool the slice belongs to (spec.pool.name)."),
            AGE,
        ),
        _resource_slice_row,
    ),
    "ResourceClaim": Columns(
        (
            NAME,
            Column(
                "State",
                S,
                "A summary of the current state (allocated, pending, reserved, etc.).",
            ),
            AGE,
        ),
        _resource_claim_row,
    ),
    "PodGroup": Columns(
        (
            NAME,
            Column("Phase", S, "Current phase of PodGroup."),
            Column(
                "MinMember",
                INT,
                "MinMember defines the minimal number of members/tasks to run the pod group.",
            ),
            Column("Running", INT, "The number of actively running pods."),
            Column("Succeeded", INT, "The number of pods which reached phase Succeeded."),
            Column("Failed", INT, "The number of pods which reached phase Failed."),
            AGE,
        ),
        _pod_group_row,
    ),
}
