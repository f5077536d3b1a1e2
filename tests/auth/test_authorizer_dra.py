"""The authorizer's rules for the DRA kinds and PodGroups, table-driven, in the spirit of
upstream's bootstrap roles (system:kube-scheduler, the resourceclaim controller) and of its
Node authorizer with NodeRestriction: a node reads slices, classes and claims (kubera: a
pool watches claims), and writes only its nodes' ResourceSlices."""

from __future__ import annotations

from typing import Any

import pytest

from services.auth import AUTHENTICATED, NODES, RequestAttributes, User
from services.auth.authorizer import KuberaAuthorizer
from services.auth.tokens import CONTROLLER_MANAGER_USER, SCHEDULER_USER, node_user
from tests.builders import MakePod, resource_claim, resource_slice

N1 = User(node_user("n1"), "n1", (NODES, AUTHENTICATED))
POOL = User(
    "kubera:node-pool:pool-0", "pool-0", (NODES, AUTHENTICATED, node_user("n1"), node_user("n3"))
)
SCHED = User(SCHEDULER_USER, "scheduler", (AUTHENTICATED,))
CM = User(CONTROLLER_MANAGER_USER, "controller-manager", (AUTHENTICATED,))
STRANGER = User("alice", "a", (AUTHENTICATED,))

R = "resource.k8s.io"
PG = "scheduling.x-k8s.io"


def _reserved(name: str, *pods: tuple[str, str]) -> Any:
    return resource_claim(
        name,
        "default",
        status={
            "allocation": {"devices": {"results": []}},
            "reservedFor": [{"resource": "pods", "name": p, "uid": u} for p, u in pods],
        },
    )


def _pod(name: str, uid: str, node: str | None) -> Any:
    p = MakePod().name(name).namespace("default")
    if node:
        p = p.node(node)
    pod = p.obj()
    pod.metadata.uid = uid
    return pod


STORED = {
    ("resourceslices", "", "n1-gpu"): resource_slice("n1-gpu", node="n1"),
    ("resourceslices", "", "n2-gpu"): resource_slice("n2-gpu", node="n2"),
    ("resourceslices", "", "shared"): resource_slice("shared", allNodes=True),
    ("pods", "default", "on-n1"): _pod("on-n1", "u1", "n1"),
    ("pods", "default", "on-n2"): _pod("on-n2", "u2", "n2"),
    ("pods", "default", "unbound"): _pod("unbound", "u3", None),
    ("resourceclaims", "default", "mine"): _reserved("mine", ("on-n2", "u2"), ("on-n1", "u1")),
    ("resourceclaims", "default", "theirs"): _reserved("theirs", ("on-n2", "u2")),
    ("resourceclaims", "default", "stale"): _reserved("stale", ("on-n1", "old-uid")),
    ("resourceclaims", "default", "pending"): _reserved("pending", ("unbound", "u3")),
    ("resourceclaims", "default", "free"): resource_claim("free", "default"),
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
    group: str = R,
    obj: Any = None,
) -> RequestAttributes:
    return RequestAttributes(user, verb, resource, group, sub, ns, name, obj=obj)


CASES = [
    # the scheduler: reads every DRA kind and PodGroups, writes only claim status
    *[
        (f"scheduler {verb}s {res}", a(SCHED, verb, res, group=g), True)
        for res, g in (
            ("deviceclasses", R),
            ("resourceslices", R),
            ("resourceclaims", R),
            ("resourceclaimtemplates", R),
            ("podgroups", PG),
        )
        for verb in ("get", "list", "watch")
    ],
    (
        "scheduler updates claim status",
        a(SCHED, "update", "resourceclaims", "c", ns="default", sub="status"),
        True,
    ),
    (
        "scheduler patches claim status",
        a(SCHED, "patch", "resourceclaims", "c", ns="default", sub="status"),
        True,
    ),
    (
        "scheduler updates claims (its finalizer)",
        a(SCHED, "update", "resourceclaims", "c", ns="default"),
        True,
    ),
    # DRAExtendedResource: the claim the scheduler makes for a pod's extended resources
    # (PreBind creates it; PostFilter and Unreserve delete it).
    ("scheduler deletes claims", a(SCHED, "delete", "resourceclaims", "c", ns="default"), True),
    ("scheduler creates claims", a(SCHED, "create", "resourceclaims", ns="default"), True),
    (
        "scheduler may not delete a claim's status",
        a(SCHED, "delete", "resourceclaims", "c", ns="default", sub="status"),
        False,
    ),
    ("scheduler may not write slices", a(SCHED, "update", "resourceslices", "n1-gpu"), False),
    (
        "scheduler may not write podgroups",
        a(SCHED, "update", "podgroups", "g", ns="default", group=PG),
        False,
    ),
    # the controller-manager: the resourceclaim and podgroup controllers
    *[
        (
            f"controller-manager {verb}s claims",
            a(CM, verb, "resourceclaims", "c", ns="default"),
            True,
        )
        for verb in ("create", "delete", "get", "list", "watch", "update")
    ],
    (
        "controller-manager updates claim status",
        a(CM, "update", "resourceclaims", "c", ns="default", sub="status"),
        True,
    ),
    (
        "controller-manager reads templates",
        a(CM, "list", "resourceclaimtemplates", ns="default"),
        True,
    ),
    (
        "controller-manager may not write templates",
        a(CM, "create", "resourceclaimtemplates", ns="default"),
        False,
    ),
    (
        "controller-manager updates pod status",
        a(CM, "update", "pods", "p", ns="default", sub="status", group=""),
        True,
    ),
    *[
        (
            f"controller-manager {verb}s podgroups{'/' + sub if sub else ''}",
            a(CM, verb, "podgroups", "g", ns="default", sub=sub, group=PG),
            True,
        )
        for verb, sub in (
            ("get", ""),
            ("list", ""),
            ("watch", ""),
            ("update", "status"),
            ("patch", "status"),
        )
    ],
    # the podgroup controller writes only status (review finding 9c)
    *[
        (
            f"controller-manager may not {verb} podgroups",
            a(CM, verb, "podgroups", "g", ns="default", group=PG),
            False,
        )
        for verb in ("create", "update", "patch")
    ],
    ("controller-manager may not write slices", a(CM, "create", "resourceslices"), False),
    # nodes: read slices and classes, not claims in bulk, not templates or podgroups
    ("node lists slices", a(N1, "list", "resourceslices"), True),
    ("node watches deviceclasses", a(N1, "watch", "deviceclasses"), True),
    (
        "node may not read templates",
        a(N1, "get", "resourceclaimtemplates", "t", ns="default"),
        False,
    ),
    ("node may not read podgroups", a(N1, "list", "podgroups", ns="default", group=PG), False),
    # nodes: their own slices only
    (
        "node creates its slice",
        a(N1, "create", "resourceslices", "x", obj=resource_slice("x", node="n1")),
        True,
    ),
    (
        "pool creates a slice of one of its nodes",
        a(POOL, "create", "resourceslices", "x", obj=resource_slice("x", node="n3")),
        True,
    ),
    (
        "node may not create another node's slice",
        a(N1, "create", "resourceslices", "x", obj=resource_slice("x", node="n2")),
        False,
    ),
    (
        "node may not create an all-nodes slice",
        a(N1, "create", "resourceslices", "x", obj=resource_slice("x", allNodes=True)),
        False,
    ),
    ("node may not create a slice it does not send", a(N1, "create", "resourceslices", "x"), False),
    (
        "node updates its slice",
        a(N1, "update", "resourceslices", "n1-gpu", obj=resource_slice("n1-gpu", node="n1")),
        True,
    ),
    (
        "node may not move its slice to another node",
        a(N1, "update", "resourceslices", "n1-gpu", obj=resource_slice("n1-gpu", node="n2")),
        False,
    ),
    (
        "node may not update another node's slice",
        a(N1, "update", "resourceslices", "n2-gpu", obj=resource_slice("n2-gpu", node="n1")),
        False,
    ),
    ("node patches its slice", a(N1, "patch", "resourceslices", "n1-gpu"), True),
    ("node may not patch another node's slice", a(N1, "patch", "resourceslices", "n2-gpu"), False),
    ("node deletes its slice", a(N1, "delete", "resourceslices", "n1-gpu"), True),
    (
        "node may not delete another node's slice",
        a(N1, "delete", "resourceslices", "n2-gpu"),
        False,
    ),
    ("node may not delete an all-nodes slice", a(N1, "delete", "resourceslices", "shared"), False),
    (
        "node deleting a slice that is gone gets 404",
        a(N1, "delete", "resourceslices", "gone"),
        True,
    ),
    ("node may not deletecollection slices", a(N1, "deletecollection", "resourceslices"), False),
    # nodes: read claims (a pool's informer), never write them
    ("node gets a claim", a(N1, "get", "resourceclaims", "mine", ns="default"), True),
    ("node watches claims", a(POOL, "watch", "resourceclaims"), True),
    ("node lists claims", a(N1, "list", "resourceclaims", ns="default"), True),
    ("node may not update claims", a(N1, "update", "resourceclaims", "mine", ns="default"), False),
    (
        "node may not update claim status",
        a(N1, "update", "resourceclaims", "mine", ns="default", sub="status"),
        False,
    ),
    ("node may not delete claims", a(N1, "delete", "resourceclaims", "mine", ns="default"), False),
    # anyone else: nothing
    ("a stranger may not list slices", a(STRANGER, "list", "resourceslices"), False),
]


@pytest.mark.parametrize(
    ("attrs", "allowed"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES]
)
async def test_dra_authorization_rule(attrs: RequestAttributes, allowed: bool) -> None:
    decision = await KuberaAuthorizer(lookup).authorize(attrs)
    assert decision.allowed is allowed, decision.reason


async def test_denied_slice_write_names_the_slices_node() -> None:
    d = await KuberaAuthorizer(lookup).authorize(a(N1, "delete", "resourceslices", "n2-gpu"))
    assert (
        d.reason
        == "node(s) 'n1' may only modify resourceslices of their own nodes; this one is for n2"
    )


# ----------------------------------------------------------------------------- drabinding
# A node reports on the devices of claims allocated to its nodes (status.devices only).


def _allocated_to(node: str) -> Any:
    c = resource_claim(
        f"on-{node}-claim",
        "default",
        status={
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": "d.example.com", "pool": node, "device": "x"}
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        },
    )
    c.metadata.resource_version = "7"
    return c


def _reported(claim: Any, *, also: Any = None) -> Any:
    out = type(claim)()
    out.CopyFrom(claim)
    out.metadata.resource_version = "7"
    st = out.status.devices.add(driver="d.example.com", pool="n1", device="x")
    st.conditions.add(type="d.example.com/ready", status="True", reason="Ready")
    if also is not None:
        also(out)
    return out


ON_N1, ON_N2 = _allocated_to("n1"), _allocated_to("n2")


@pytest.mark.parametrize(
    ("claim", "sent", "allowed"),
    [
        (ON_N1, _reported(ON_N1), True),
        (ON_N2, _reported(ON_N2), False),  # another node's claim
        (ON_N1, _reported(ON_N1, also=lambda c: c.status.ClearField("reserved_for")), True),
        (ON_N1, _reported(ON_N1, also=lambda c: c.status.ClearField("allocation")), False),
        (ON_N1, _reported(ON_N1, also=lambda c: c.metadata.labels.update(x="y")), False),
        (None, _reported(ON_N1), False),  # no such claim
    ],
    ids=["own", "other-node", "unchanged-rest", "deallocates", "relabels", "missing"],
)
async def test_node_writes_only_status_devices_of_its_claims(
    claim: Any, sent: Any, allowed: bool
) -> None:
    async def stored(resource: str, namespace: str, name: str) -> Any:
        return claim

    for user in (N1, POOL):
        attrs = a(
            user,
            "update",
            "resourceclaims",
            sent.metadata.name,
            ns="default",
            sub="status",
            obj=sent,
        )
        assert (await KuberaAuthorizer(stored).authorize(attrs)).allowed is allowed
