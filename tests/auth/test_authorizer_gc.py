"""The garbage collector's updates (services/auth/authorizer.py): the controller-manager may
update any kind when only ownerReferences and finalizers change, nothing more."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import coordination_pb2, podgroup_pb2
from services.auth import RequestAttributes, User
from services.auth.authorizer import KuberaAuthorizer
from services.auth.tokens import CONTROLLER_MANAGER_USER

CM = User(CONTROLLER_MANAGER_USER, ("system:authenticated",))


def _lease(holder: str, *owners: str, finalizers: tuple[str, ...] = ()) -> coordination_pb2.Lease:
    lease = coordination_pb2.Lease(api_version="coordination.k8s.io/v1", kind="Lease")
    lease.metadata.name, lease.metadata.namespace = "n1", "kube-node-lease"
    lease.metadata.resource_version = "7"
    lease.spec.holder_identity = holder
    for uid in owners:
        lease.metadata.owner_references.add(api_version="v1", kind="Node", name="n1", uid=uid)
    lease.metadata.finalizers.extend(finalizers)
    return lease


def _authz(stored: Any) -> KuberaAuthorizer:
    async def lookup(resource: str, namespace: str, name: str) -> Any:
        return stored

    return KuberaAuthorizer(lookup)


def _update(obj: Any, resource: str = "leases", ns: str = "kube-node-lease") -> RequestAttributes:
    return RequestAttributes(CM, "update", resource, namespace=ns, name=obj.metadata.name, obj=obj)


@pytest.mark.parametrize(
    ("sent", "allowed"),
    [
        (_lease("n1"), True),  # the owner reference dropped
        (_lease("n1", "u1", finalizers=("orphan",)), True),  # a finalizer added
        (_lease("someone-else"), False),  # the holder changed: a heartbeat is the node's
    ],
    ids=["drop owner", "finalizer", "spec change"],
)
async def test_only_owner_references_and_finalizers_may_change(sent: Any, allowed: bool) -> None:
    stored = _lease("n1", "u1")
    decision = await _authz(stored).authorize(_update(sent))
    assert decision.allowed is allowed


async def test_a_podgroup_spec_stays_its_users() -> None:
    stored = podgroup_pb2.PodGroup()
    stored.metadata.name, stored.metadata.namespace = "g", "default"
    stored.spec.min_member = 2
    sent = podgroup_pb2.PodGroup()
    sent.CopyFrom(stored)
    sent.spec.min_member = 3
    decision = await _authz(stored).authorize(_update(sent, "podgroups", "default"))
    assert not decision.allowed
