"""PodInfo derives its fields once per distinct input (spec bytes; with namespace and labels
when the pod has pod (anti-)affinity), and the equivalence signature once per spec: the
memoised values equal a fresh derivation for every pod of the table, in any order."""

from __future__ import annotations

import itertools

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.cache import equivalence
from services.scheduler.framework import types
from services.scheduler.framework.types import PodInfo
from tests.builders import MakePod

AFFINITY_BY_LABEL = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "zone",
                "matchLabelKeys": ["rev"],
            }
        ]
    }
}
PREFERRED_NS = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 5,
                "podAffinityTerm": {
                    "labelSelector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]},
                    "topologyKey": "host",
                },
            }
        ]
    }
}
BAD_SELECTOR = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]},
                "topologyKey": "zone",
            }
        ]
    }
}


def pods() -> list[core_pb2.Pod]:
    """Pods that agree in some inputs and differ in others."""
    out = []
    for i, (ns, rev, affinity) in enumerate(
        itertools.product(
            ("default", "other"),
            ("1", "2"),
            (None, AFFINITY_BY_LABEL, PREFERRED_NS, BAD_SELECTOR),
        )
    ):
        b = MakePod().name(f"p{i}").namespace(ns).uid(f"u{i}").labels({"app": "web", "rev": rev})
        b = b.req({"cpu": "100m", "memory": "1Gi"})
        if affinity is not None:
            b = b.affinity(affinity)
        out.append(b.obj())
    out.append(MakePod().name("bad").uid("bad").req({"cpu": "lots"}).obj())
    out.append(
        MakePod()
        .name("ports")
        .uid("ports")
        .container("c", ports=[{"containerPort": 80, "hostPort": 8080}])
        .init_container("side", requests={"cpu": "1"}, restart_policy="Always")
        .overhead({"cpu": "10m"})
        .node_selector({"disk": "ssd"})
        .obj()
    )
    return out


def derived(pi: PodInfo) -> types._Derived:
    return (
        pi.problems,
        pi.affinity_error,
        pi.requests,
        pi.non_zero,
        pi.required_affinity,
        pi.required_anti_affinity,
        pi.preferred_affinity,
        pi.preferred_anti_affinity,
        pi.ports,
    )


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_memoised_fields_equal_a_fresh_derivation(order: str) -> None:
    table = pods()
    if order == "backward":
        table.reverse()
    types._DERIVED.clear()
    for _ in range(2):  # the second pass reads the memo for every pod
        for pod in table:
            assert derived(PodInfo(pod)) == types._derive(pod), pod.metadata.name
    first, second = PodInfo(table[0]), PodInfo(table[0])
    assert first.requests is not second.requests  # each owns its containers
    assert first.required_anti_affinity is not second.required_anti_affinity


def test_match_label_keys_read_the_pods_own_labels() -> None:
    a, b = (
        MakePod().name(n).uid(n).labels({"app": "web", "rev": n}).affinity(AFFINITY_BY_LABEL).obj()
        for n in ("1", "2")
    )
    ta, tb = PodInfo(a).required_anti_affinity, PodInfo(b).required_anti_affinity
    assert ta != tb
    assert ta[0].selector.matches({"app": "web", "rev": "1"})
    assert not tb[0].selector.matches({"app": "web", "rev": "1"})


def test_a_full_memo_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(types, "DERIVED_MEMO_SIZE", 2)
    types._DERIVED.clear()
    for pod in pods():
        assert derived(PodInfo(pod)) == types._derive(pod)
        assert len(types._DERIVED) <= 2


def test_pod_signature_equals_the_signature_of_the_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(equivalence, "SIGNATURE_MEMO_SIZE", 3)
    equivalence._BY_SPEC.clear()
    for _ in range(2):
        for pod in pods():
            pi = PodInfo(pod)
            assert equivalence.pod_signature(pi) == equivalence.signature(pod)
            assert pi.signature == equivalence.signature(pod)


def test_the_assumed_copy_has_its_own_signature() -> None:
    pi = PodInfo(MakePod().name("p").uid("p").req({"cpu": "1"}).obj())
    unassigned = equivalence.pod_signature(pi)
    assumed = pi.assigned("n1")
    assert assumed.signature is None and assumed.spec_bytes is None
    assert equivalence.pod_signature(assumed) == equivalence.signature(assumed.pod)
    assert equivalence.pod_signature(assumed) != unassigned
    assert assumed.requests is pi.requests  # derived fields shared, as before


def test_a_sidecar_init_container_changes_the_signature() -> None:
    """restartPolicy Always makes an init container a sidecar: its requests add to the
    containers' instead of counting at their maximum, so the node-local verdicts (and the
    caches keyed by the signature) must tell the two pods apart."""

    def pod(restart_policy: str) -> core_pb2.Pod:
        p = MakePod().name("p").namespace("default").req({"cpu": "1"}).obj()
        init = p.spec.init_containers.add(name="init", restart_policy=restart_policy)
        init.resources.requests["cpu"] = "1"
        return p

    plain, sidecar = pod(""), pod("Always")
    assert PodInfo(plain).requests != PodInfo(sidecar).requests
    assert equivalence.signature(plain) != equivalence.signature(sidecar)
