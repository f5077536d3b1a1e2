"""PodTopologySpread's default spread group: upstream's helper.DefaultSelector, from the
Services that select the pod and its controlling ReplicaSet or StatefulSet (cases after
pkg/scheduler/framework/plugins/helper/spread_test.go TestDefaultSelector and
podtopologyspread/scoring_test.go "system defaulting, ... pods match service").
"""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2, service_pb2
from services.api.machinery.labels import Selector
from services.scheduler.plugins import podtopologyspread as pts
from services.scheduler.plugins.podtopologyspread.common import (
    WorkloadListers,
    default_selector,
)
from tests.builders import MakePod

SCHEDULE_ANYWAY = "ScheduleAnyway"


def service(ns: str, name: str, selector: dict[str, str]) -> service_pb2.Service:
    s = service_pb2.Service(spec=service_pb2.ServiceSpec(selector=selector))
    s.metadata.namespace, s.metadata.name = ns, name
    return s


def replica_set(ns: str, name: str, match: dict[str, str], exprs: Any = ()) -> apps_pb2.ReplicaSet:
    rs = apps_pb2.ReplicaSet()
    rs.metadata.namespace, rs.metadata.name = ns, name
    rs.spec.selector.match_labels.update(match)
    for key, op, values in exprs:
        rs.spec.selector.match_expressions.add(key=key, operator=op, values=values)
    return rs


def pod(labels: dict[str, str], owner: tuple[str, str, str] | None = None) -> core_pb2.Pod:
    p: core_pb2.Pod = MakePod().name("p").namespace("ns").labels(labels).obj()
    if owner is not None:
        api_version, kind, name = owner
        p.metadata.owner_references.append(
            meta_pb2.OwnerReference(api_version=api_version, kind=kind, name=name, controller=True)
        )
    return p


def listers(*objs: Any) -> WorkloadListers:
    by: dict[str, dict[str, Any]] = {"svc": {}, "rs": {}, "sts": {}}
    for o in objs:
        kind = {service_pb2.Service: "svc", apps_pb2.ReplicaSet: "rs"}.get(type(o), "sts")
        by[kind][f"{o.metadata.namespace}/{o.metadata.name}"] = o
    return WorkloadListers(services=by["svc"], replica_sets=by["rs"], stateful_sets=by["sts"])


RS = ("apps/v1", "ReplicaSet", "rs")
WEB = {"app": "web", "tier": "fe", "pod-template-hash": "abc"}

CASES = [
    ("no services and no controller: nothing", pod(WEB), listers(), ""),
    ("a service selecting the pod", pod(WEB), listers(service("ns", "s", {"app": "web"})), "app=web"),
    (
        "services merged",
        pod(WEB),
        listers(service("ns", "s", {"app": "web"}), service("ns", "t", {"tier": "fe"})),
        "app=web,tier=fe",
    ),
    ("a service of another namespace", pod(WEB), listers(service("other", "s", {"app": "web"})), ""),
    ("a service not selecting the pod", pod(WEB), listers(service("ns", "s", {"app": "db"})), ""),
    ("a service without selector selects nothing", pod(WEB), listers(service("ns", "s", {})), ""),
    (
        "the controlling ReplicaSet's selector",
        pod(WEB, RS),
        listers(replica_set("ns", "rs", {"app": "web", "pod-template-hash": "abc"})),
        "app=web,pod-template-hash=abc",
    ),
    (
        "a ReplicaSet's match expressions",
        pod(WEB, RS),
        listers(replica_set("ns", "rs", {}, [("tier", "In", ["fe", "be"])])),
        "tier in (be,fe)",
    ),
    (
        "service and ReplicaSet together",
        pod(WEB, RS),
        listers(service("ns", "s", {"tier": "fe"}), replica_set("ns", "rs", {"app": "web"})),
        "app=web,tier=fe",
    ),
    (
        "a controller not in the lister adds nothing",
        pod(WEB, RS),
        listers(service("ns", "s", {"app": "web"})),
        "app=web",
    ),
    (
        "a Job's pod: services only",
        pod(WEB, ("batch/v1", "Job", "rs")),
        listers(replica_set("ns", "rs", {"app": "web"})),
        "",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("case", "p", "ls", "want"), CASES, ids=[c[0] for c in CASES])
def test_default_selector(case: str, p: core_pb2.Pod, ls: WorkloadListers, want: str) -> None:
    got = default_selector(p, ls)
    assert str(got) == want
    assert got.is_empty() == (want == "")


def test_stateful_set_selector() -> None:
    sts = apps_pb2.ReplicaSet()  # any message with spec.selector stands for a StatefulSet here
    sts.metadata.namespace, sts.metadata.name = "ns", "db"
    sts.spec.selector.match_labels["app"] = "db"
    ls = WorkloadListers(services={}, replica_sets={}, stateful_sets={"ns/db": sts})
    assert (
        str(default_selector(pod({"app": "db"}, ("apps/v1", "StatefulSet", "db")), ls)) == "app=db"
    )


def test_system_defaults_use_the_service_selector() -> None:
    plugin = pts.PodTopologySpread(pts.Args(), None, listers(service("ns", "s", {"app": "web"})))
    constraints = plugin.get_constraints(pod(WEB), SCHEDULE_ANYWAY)
    assert [(c.topology_key, c.max_skew) for c in constraints] == [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]
    assert all(c.selector == Selector.from_set({"app": "web"}) for c in constraints)
    lonely = pts.PodTopologySpread(pts.Args(), None, listers())
    assert lonely.get_constraints(pod(WEB), SCHEDULE_ANYWAY) == []


class _Informer:
    def __init__(self) -> None:
        self.store: dict[str, Any] = {}


class _HandleWithInformers:
    """A handle whose `informer(kind)` is the scheduler's (a store per kind)."""

    def __init__(self) -> None:
        self.informers: dict[str, _Informer] = {}

    def informer(self, kind: str) -> _Informer:
        return self.informers.setdefault(kind, _Informer())


def test_the_factory_reads_services_and_replica_sets_from_the_schedulers_informers() -> None:
    handle = _HandleWithInformers()
    plugin = pts.new(None, handle)
    assert {"Service", "ReplicaSet"} <= set(handle.informers)
    # objects the informers see later are read at scheduling time
    handle.informers["Service"].store["ns/s"] = service("ns", "s", {"app": "web"})
    constraints = plugin.get_constraints(pod(WEB), SCHEDULE_ANYWAY)
    assert constraints and all(c.selector == Selector.from_set({"app": "web"}) for c in constraints)


def test_list_defaulting_without_constraints_asks_for_no_informers() -> None:
    handle = _HandleWithInformers()
    pts.new(pts.Args(defaulting_type="List"), handle)
    assert handle.informers == {}
