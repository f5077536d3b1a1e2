"""The controller-manager's pod informer drops the updates no controller acts on
(`pod_update_filter`, from each controller's `wants_pod_update`). Reference: the same
update handed to every handler. For any pair of pod versions the filter refuses, the
handlers change nothing — no queue, no index, no expectation moves."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import LIST_ALL
from services.clock import FakeClock
from services.controllers.controller_utils import PodsByNode
from services.controllers.manager import ControllerManager, ControllerManagerConfig
from services.controllers.tainteviction import EvictionQueue
from services.controllers.workqueue import WorkQueue
from tests.builders import MakePod
from tests.profiles import examples

PODS, RS, PDBS, NODES = (
    BY_KIND["Pod"],
    BY_KIND["ReplicaSet"],
    BY_KIND["PodDisruptionBudget"],
    BY_KIND["Node"],
)


class _NoClient:
    """Nothing here reaches the apiserver: handlers only queue work."""


def _manager() -> ControllerManager:
    m = ControllerManager(_NoClient(), ControllerManagerConfig(), clock=FakeClock())  # type: ignore[arg-type]
    inf = m.informers.informers
    rs = RS.new()
    rs.metadata.name, rs.metadata.namespace, rs.metadata.uid = "web", "budgeted", "rs-uid"
    rs.spec.selector.match_labels["app"] = "web"
    pdb = PDBS.new()
    pdb.metadata.name, pdb.metadata.namespace = "pdb", "budgeted"
    pdb.spec.selector.match_labels["app"] = "web"
    node = NODES.new()
    node.metadata.name = "n1"
    node.spec.taints.add(key="dedicated", effect="NoExecute")
    for key, obj in (
        (("replicasets", "", LIST_ALL), rs),
        (("poddisruptionbudgets", "", LIST_ALL), pdb),
        (("nodes", "", LIST_ALL), node),
    ):
        inf[key]._apply("ADDED", obj)
    return m


def _state(m: ControllerManager) -> Any:
    """Everything a pod handler may touch, as plain values."""
    out = []
    for name, c in m.controllers.items():
        for attr, v in sorted(vars(c).items()):
            if isinstance(v, WorkQueue):
                out.append((name, attr, list(v._queue), sorted(v._dirty), sorted(v._ready_at)))
            elif isinstance(v, EvictionQueue):
                out.append((name, attr, sorted(v._pending), sorted(v._running)))
            elif isinstance(v, PodsByNode):
                out.append((name, attr, sorted((k, sorted(s)) for k, s in v._by_node.items())))
            elif attr == "expectations":
                kept = {k: x for k, x in vars(v).items() if k != "_clock"}
                out.append((name, attr, copy.deepcopy(kept)))
    return out


NAMESPACES = st.sampled_from(["default", "budgeted"])
LABELS = st.dictionaries(
    st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db"]), max_size=2
)


@st.composite
def pod_pairs(draw: Any) -> tuple[core_pb2.Pod, core_pb2.Pod]:
    ns = draw(NAMESPACES)
    versions = []
    for rv in ("1", "2"):
        p = MakePod().typed().name("p").namespace(ns).container("c", "i")
        node = draw(st.sampled_from(["", "n1", "n2"]))
        if node:
            p.node(node)
        tol = draw(
            st.sampled_from(
                [[], [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]]
            )
        )
        pod = p.tolerations(tol).obj()
        pod.metadata.resource_version = rv
        for k, v in draw(LABELS).items():
            pod.metadata.labels[k] = v
        if draw(st.booleans()):
            pod.metadata.owner_references.add(
                kind="ReplicaSet", name="web", uid="rs-uid", controller=True
            )
        pod.status.phase = draw(st.sampled_from(["Pending", "Running"]))
        if draw(st.booleans()):
            pod.status.conditions.add(type="Ready", status="True")
        if rv == "2" and draw(st.booleans()):
            pod.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
        versions.append(pod)
    return versions[0], versions[1]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pod_pairs())
def test_a_dropped_pod_update_is_one_no_handler_acts_on(
    pair: tuple[core_pb2.Pod, core_pb2.Pod],
) -> None:
    old, new = pair

    async def run() -> None:
        m = _manager()
        pods = m.informers.informers[("pods", "", LIST_ALL)]
        assert pods.wants_update is not None
        pods._apply("ADDED", old)
        before = _state(m)
        if pods.wants_update(old, new):
            return  # dispatched as before: nothing to compare
        pods.wants_update = None  # the reference: every handler sees it
        pods._apply("MODIFIED", new)
        assert _state(m) == before
        assert pods.store[f"{new.metadata.namespace}/p"] is new

    asyncio.run(run())


def test_the_filter_passes_what_controllers_act_on() -> None:
    async def run() -> None:
        m = _manager()
        want = m.informers.informers[("pods", "", LIST_ALL)].wants_update
        assert want is not None
        base = MakePod().typed().name("p").namespace("default").container("c", "i").obj()
        bound = copy.deepcopy(base)
        bound.spec.node_name = "n1"
        assert want(base, bound)  # a bind: nodeName
        relabeled = copy.deepcopy(base)
        relabeled.metadata.labels["app"] = "web"
        assert want(base, relabeled)  # an orphan's labels: adoption
        status = copy.deepcopy(bound)
        status.status.phase = "Running"
        assert not want(bound, status)  # a kubelet's status write of an orphan
        owned, owned2 = copy.deepcopy(bound), copy.deepcopy(status)
        for p in (owned, owned2):
            p.metadata.owner_references.add(
                kind="ReplicaSet", name="web", uid="rs-uid", controller=True
            )
        assert want(owned, owned2)  # an owned pod's status: its ReplicaSet counts it
        budgeted, budgeted2 = copy.deepcopy(bound), copy.deepcopy(status)
        budgeted.metadata.namespace = budgeted2.metadata.namespace = "budgeted"
        assert want(budgeted, budgeted2)  # a budget counts healthy pods

    asyncio.run(run())


def test_no_filter_when_a_controller_does_not_say() -> None:
    from services.controllers.manager import pod_update_filter

    assert pod_update_filter([object()]) is None
