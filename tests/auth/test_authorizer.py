"""The authorizer's rules (services/auth/authorizer.py), table-driven: who, verb, resource,
object -> allowed? Pods are read through a fake lookup (pod "mine" bound to n1, "theirs"
to n2, "pending" unbound)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import storagev1_pb2
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.auth import ADMIN, AUTHENTICATED, NODES, RequestAttributes, User
from services.auth.authorizer import KuberaAuthorizer, forbidden_message
from services.auth.tokens import CONTROLLER_MANAGER_USER, SCHEDULER_USER, node_user
from tests.builders import MakeNode, MakePod, resource_claim, resource_slice

N1 = User(node_user("n1"), "n1", (NODES, AUTHENTICATED))
POOL = User(
    "kubera:node-pool:pool-0",
    "pool-0",
    (NODES, AUTHENTICATED, node_user("n1"), node_user("n3")),
)
SCHED = User(SCHEDULER_USER, "scheduler", (AUTHENTICATED,))
CM = User(CONTROLLER_MANAGER_USER, "controller-manager", (AUTHENTICATED,))
STRANGER = User("alice", "a", (AUTHENTICATED,))


def _csi_driver(name: str, *, hollow: bool) -> Any:
    d = storagev1_pb2.CSIDriver()
    d.metadata.name = name
    if hollow:
        d.metadata.labels[LABEL_HOLLOW_DRIVER] = "true"
    return d


def _csi_node(name: str) -> Any:
    n = storagev1_pb2.CSINode()
    n.metadata.name = name
    return n


STORED = {
    ("pods", "default", "mine"): MakePod().name("mine").namespace("default").node("n1").obj(),
    ("pods", "default", "also-mine"): MakePod().name("also-mine").node("n3").obj(),
    ("pods", "default", "theirs"): MakePod().name("theirs").namespace("default").node("n2").obj(),
    ("pods", "default", "pending"): MakePod().name("pending").namespace("default").obj(),
    ("resourceslices", "", "n1-gpu"): resource_slice("n1-gpu", node="n1"),
    ("resourceslices", "", "n2-gpu"): resource_slice("n2-gpu", node="n2"),
    ("csidrivers", "", "hollow.example.com"): _csi_driver("hollow.example.com", hollow=True),
    ("csidrivers", "", "ebs.csi.aws.com"): _csi_driver("ebs.csi.aws.com", hollow=False),
}


async def lookup(resource: str, namespace: str, name: str) -> Any:
    return STORED.get((resource, namespace, name))


def a(
    user: User,
    verb: str,
    resource: str,
    name: str = "",
    *,
    ns: str = "",
    sub: str = "",
    group: str = "",
    obj: Any = None,
) -> RequestAttributes:
    return RequestAttributes(user, verb, resource, group, sub, ns, name, obj=obj)


CASES = [
    # storage: a node reads claims and volumes, publishes its CSINode and hollow drivers
    ("node reads claims", a(N1, "list", "persistentvolumeclaims"), True),
    ("node watches volume attachments", a(N1, "watch", "volumeattachments"), True),
    ("node writes its CSINode", a(POOL, "create", "csinodes", obj=_csi_node("n3")), True),
    (
        "node writes another's CSINode",
        a(N1, "update", "csinodes", "n2", obj=_csi_node("n2")),
        False,
    ),
    (
        "node creates a hollow CSIDriver",
        a(N1, "create", "csidrivers", obj=_csi_driver("new.example.com", hollow=True)),
        True,
    ),
    (
        "node overwrites a real CSIDriver",
        a(
            N1,
            "update",
            "csidrivers",
            "ebs.csi.aws.com",
            obj=_csi_driver("ebs.csi.aws.com", hollow=True),
        ),
        False,
    ),
    (
        "node creates an unlabelled CSIDriver",
        a(N1, "create", "csidrivers", obj=_csi_driver("x.example.com", hollow=False)),
        False,
    ),
    ("node writes a claim", a(N1, "update", "persistentvolumeclaims", "c", ns="default"), False),
    ("controller-manager attaches", a(CM, "update", "volumeattachments", "va", sub="status"), True),
    # DRA: a node publishes the slices of its own nodes and reads claims
    (
        "node creates its slice",
        a(POOL, "create", "resourceslices", obj=resource_slice("x", node="n3")),
        True,
    ),
    (
        "node creates another node's slice",
        a(N1, "create", "resourceslices", obj=resource_slice("x", node="n2")),
        False,
    ),
    (
        "node updates its slice",
        a(N1, "update", "resourceslices", "n1-gpu", obj=resource_slice("n1-gpu", node="n1")),
        True,
    ),
    (
        "node moves its slice",
        a(N1, "update", "resourceslices", "n1-gpu", obj=resource_slice("n1-gpu", node="n2")),
        False,
    ),
    ("node deletes another node's slice", a(N1, "delete", "resourceslices", "n2-gpu"), False),
    ("node lists resourceclaims", a(N1, "list", "resourceclaims", group="resource.k8s.io"), True),
    (
        "node may not write resourceclaims",
        a(N1, "update", "resourceclaims", "c", ns="default", sub="status"),
        False,
    ),
    (
        "controller-manager creates a claim",
        a(CM, "create", "resourceclaims", ns="default", obj=resource_claim("c")),
        True,
    ),
    (
        "controller-manager clears reservedFor",
        a(CM, "update", "resourceclaims", "c", ns="default", sub="status"),
        True,
    ),
    # volume binding: the scheduler annotates claims and binds volumes; the PV controller
    (
        "scheduler annotates a claim (selected-node)",
        a(SCHED, "update", "persistentvolumeclaims", "c", ns="default"),
        True,
    ),
    ("scheduler binds a volume", a(SCHED, "update", "persistentvolumes", "v"), True),
    ("scheduler may not delete a volume", a(SCHED, "delete", "persistentvolumes", "v"), False),
    ("controller-manager provisions a volume", a(CM, "create", "persistentvolumes", "v"), True),
    (
        "controller-manager sets a volume's phase",
        a(CM, "update", "persistentvolumes", "v", sub="status"),
        True,
    ),
    ("node may not write volumes", a(N1, "update", "persistentvolumes", "v"), False),
    # the admin: everything
    ("admin deletes a node", a(ADMIN, "delete", "nodes", "n2"), True),
    ("admin binds", a(ADMIN, "create", "pods", "p", ns="default", sub="binding"), True),
    # a node reads what a kubelet reads
    ("node lists pods", a(N1, "list", "pods"), True),
    ("node watches nodes", a(N1, "watch", "nodes"), True),
    ("node gets runtimeclasses", a(N1, "get", "runtimeclasses", "rc", group="node.k8s.io"), True),
    ("node does not list replicasets", a(N1, "list", "replicasets", group="apps"), False),
    ("node watches configmaps", a(N1, "watch", "configmaps"), True),
    ("node does not list secrets", a(N1, "list", "secrets"), False),
    ("node does not write configmaps", a(N1, "create", "configmaps", "c", ns="d"), False),
    # its own Node, and no other
    ("node creates its own node", a(N1, "create", "nodes", obj=MakeNode().name("n1").obj()), True),
    ("node creates another node", a(N1, "create", "nodes", obj=MakeNode().name("n2").obj()), False),
    ("node updates its node status", a(N1, "update", "nodes", "n1", sub="status"), True),
    ("node patches another's status", a(N1, "patch", "nodes", "n2", sub="status"), False),
    ("node labels another node", a(N1, "patch", "nodes", "n2"), False),
    # its own Lease in kube-node-lease
    ("node renews its lease", a(N1, "update", "leases", "n1", ns="kube-node-lease"), True),
    ("node renews another's lease", a(N1, "update", "leases", "n2", ns="kube-node-lease"), False),
    ("node writes a lease elsewhere", a(N1, "update", "leases", "n1", ns="kube-system"), False),
    # pods bound to it
    (
        "node sets status of its pod",
        a(N1, "update", "pods", "mine", ns="default", sub="status"),
        True,
    ),
    (
        "node sets status of another's pod",
        a(N1, "patch", "pods", "theirs", ns="default", sub="status"),
        False,
    ),
    (
        "node sets status of a pending pod",
        a(N1, "update", "pods", "pending", ns="default", sub="status"),
        False,
    ),
    ("node deletes its pod", a(N1, "delete", "pods", "mine", ns="default"), True),
    (
        "node writes a pod that is gone (404 follows)",
        a(N1, "update", "pods", "gone", ns="default", sub="status"),
        True,
    ),
    ("node deletes another's pod", a(N1, "delete", "pods", "theirs", ns="default"), False),
    ("node updates a pod spec", a(N1, "update", "pods", "mine", ns="default"), False),
    ("node creates a pod", a(N1, "create", "pods", "x", ns="default"), False),
    ("node binds a pod", a(N1, "create", "pods", "pending", ns="default", sub="binding"), False),
    ("node creates events", a(N1, "create", "events", ns="default"), True),
    # a pool acts for its nodes, and only those
    ("pool renews its node's lease", a(POOL, "update", "leases", "n3", ns="kube-node-lease"), True),
    ("pool renews a foreign lease", a(POOL, "update", "leases", "n2", ns="kube-node-lease"), False),
    (
        "pool sets status of its pod",
        a(POOL, "update", "pods", "also-mine", ns="default", sub="status"),
        True,
    ),
    (
        "pool sets a foreign pod's status",
        a(POOL, "update", "pods", "theirs", ns="default", sub="status"),
        False,
    ),
    (
        "pool registers a foreign node",
        a(POOL, "create", "nodes", obj=MakeNode().name("n2").obj()),
        False,
    ),
    # the scheduler
    ("scheduler binds", a(SCHED, "create", "pods", "pending", ns="default", sub="binding"), True),
    (
        "scheduler sets pod conditions",
        a(SCHED, "patch", "pods", "pending", ns="default", sub="status"),
        True,
    ),
    ("scheduler deletes victims", a(SCHED, "delete", "pods", "theirs", ns="default"), True),
    (
        "scheduler sets a PodGroup's PodGroupInitiallyScheduled",
        a(SCHED, "patch", "podgroups", "pg", ns="default", sub="status"),
        True,
    ),
    (
        "scheduler sets it through the gRPC API's resource name",
        a(SCHED, "patch", "podgroups.scheduling.k8s.io", "pg", ns="default", sub="status"),
        True,
    ),
    (
        "scheduler does not change a PodGroup's spec",
        a(SCHED, "patch", "podgroups", "pg", ns="default"),
        False,
    ),
    (
        "scheduler renews its lease",
        a(SCHED, "update", "leases", "kube-scheduler", ns="kube-system"),
        True,
    ),
    (
        "scheduler does not write the controller-manager's lease",
        a(SCHED, "update", "leases", "kube-controller-manager", ns="kube-system"),
        False,
    ),
    (
        "scheduler does not renew a node's lease",
        a(SCHED, "update", "leases", "n1", ns="kube-node-lease"),
        False,
    ),
    (
        "cm does not renew a node's lease",
        a(CM, "update", "leases", "n1", ns="kube-node-lease"),
        False,
    ),
    (
        "cm renews its own lease",
        a(CM, "update", "leases", "kube-controller-manager", ns="kube-system"),
        True,
    ),
    ("scheduler does not create pods", a(SCHED, "create", "pods", "x", ns="default"), False),
    ("scheduler does not write nodes", a(SCHED, "update", "nodes", "n1"), False),
    # the controller-manager
    ("cm creates pods", a(CM, "create", "pods", "x", ns="default"), True),
    (
        "cm updates replicaset status",
        a(CM, "update", "replicasets", "r", ns="d", sub="status", group="apps"),
        True,
    ),
    ("cm taints nodes", a(CM, "update", "nodes", "n1"), True),
    ("cm finalizes namespaces", a(CM, "update", "namespaces", "t", sub="finalize"), True),
    ("cm does not finalize pods", a(CM, "update", "pods", "p", ns="d", sub="finalize"), False),
    ("cm sets node conditions", a(CM, "update", "nodes", "n1", sub="status"), True),
    ("cm garbage-collects anything", a(CM, "delete", "runtimeclasses", "rc"), True),
    ("cm does not bind", a(CM, "create", "pods", "p", ns="default", sub="binding"), False),
    ("cm does not write runtimeclasses", a(CM, "create", "runtimeclasses", "rc"), False),
    (
        "cm writes endpointslices",
        a(CM, "update", "endpointslices", "s", ns="d", group="discovery.k8s.io"),
        True,
    ),
    ("cm creates serviceaccounts", a(CM, "create", "serviceaccounts", "default", ns="d"), True),
    ("cm reads secrets", a(CM, "get", "secrets", "s", ns="d"), True),
    ("cm does not write secrets", a(CM, "create", "secrets", "s", ns="d"), False),
    ("cm does not write services", a(CM, "update", "services", "s", ns="d"), False),
    # nobody else
    ("a stranger reads nothing", a(STRANGER, "get", "pods", "mine", ns="default"), False),
]


@pytest.mark.parametrize(("rule", "attrs", "allowed"), CASES, ids=[c[0] for c in CASES])
async def test_authorizer_rule(rule: str, attrs: RequestAttributes, allowed: bool) -> None:
    decision = await KuberaAuthorizer(lookup).authorize(attrs)
    assert decision.allowed is allowed, decision.reason
    if not allowed:
        assert decision.reason  # every denial says why


async def test_denial_of_another_nodes_pod_names_the_node_it_is_bound_to() -> None:
    d = await KuberaAuthorizer(lookup).authorize(
        a(N1, "patch", "pods", "theirs", ns="default", sub="status")
    )
    assert "n2" in d.reason and "n1" in d.reason


@pytest.mark.parametrize(
    ("attrs", "reason", "message"),
    [
        (
            a(N1, "patch", "pods", "x", ns="default", sub="status"),
            "no",
            'pods "x" is forbidden: User "system:node:n1" cannot patch resource "pods/status" '
            'in API group "" in the namespace "default": no',
        ),
        (
            a(N1, "list", "replicasets", group="apps"),
            "",
            'replicasets.apps is forbidden: User "system:node:n1" cannot list resource '
            '"replicasets" in API group "apps" at the cluster scope',
        ),
    ],
)
def test_forbidden_message_has_upstreams_shape(
    attrs: RequestAttributes, reason: str, message: str
) -> None:
    assert forbidden_message(attrs, reason) == message
