"""Validation of scheduling.k8s.io/v1beta1 PodGroup and of a pod's spec.schedulingGroup
(services/api/validation/scheduling.py), by the declarative tags of upstream's
staging/src/k8s.io/api/scheduling/v1beta1/types.go and ValidatePodGroup's policy union
(pkg/apis/scheduling/validation): the field path and error type of each refusal."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from services.api import validation
from services.api.machinery import codec
from services.api.machinery.kinds import SCHEDULING_POD_GROUP

Json = dict[str, Any]
REQ, INV, FORB, DUP, MANY, UNSUP = (
    "Required value",
    "Invalid value",
    "Forbidden",
    "Duplicate value",
    "Too many",
    "Unsupported value",
)


def _pg(tweak: Callable[[Json], None] | None = None, version: str = "v1beta1") -> Json:
    """A PodGroup that passes validation: a gang of 2 with every optional field set."""
    doc: Json = {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"},
        "spec": {
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
            "disruptionMode": {"all": {}},
            "priorityClassName": "high",
            "priority": 10,
            "preemptionPolicy": "Never",
        },
    }
    if tweak is not None:
        tweak(doc)
    return doc


def _obj(doc: Json) -> Any:
    return codec.decode(copy.deepcopy(doc), validate="strict").obj


def errors(doc: Json) -> list[tuple[str, str]]:
    return [(e.path, e.type) for e in validation.validate_create(SCHEDULING_POD_GROUP, _obj(doc))]


def update_errors(old: Json, new: Json) -> list[tuple[str, str]]:
    o, n = _obj(old), _obj(new)
    o.metadata.resource_version = "0"
    n.metadata.resource_version = "1"
    return [(e.path, e.type) for e in validation.validate_update(SCHEDULING_POD_GROUP, n, o)]


def _spec(**fields: Any) -> Callable[[Json], None]:
    def tweak(doc: Json) -> None:
        for k, v in fields.items():
            if v is None:
                doc["spec"].pop(k, None)
            else:
                doc["spec"][k] = v

    return tweak


CREATE = {
    "valid": (_pg(), []),
    "valid basic, nothing optional": (
        _pg(lambda d: d.update(spec={"schedulingPolicy": {"basic": {}}})),
        [],
    ),
    "valid at v1alpha3 (read as v1beta1)": (_pg(version="v1alpha3"), []),
    "bad name": (_pg(lambda d: d["metadata"].update(name="Bad_")), [("metadata.name", INV)]),
    "no policy": (
        _pg(_spec(schedulingPolicy={})),
        [("spec.schedulingPolicy", INV)],
    ),
    "both policies": (
        _pg(_spec(schedulingPolicy={"basic": {}, "gang": {"minCount": 1}})),
        [("spec.schedulingPolicy", INV)],
    ),
    "gang minCount 0 is missing": (
        _pg(_spec(schedulingPolicy={"gang": {"minCount": 0}})),
        [("spec.schedulingPolicy.gang.minCount", REQ)],
    ),
    "gang minCount negative": (
        _pg(_spec(schedulingPolicy={"gang": {"minCount": -1}})),
        [("spec.schedulingPolicy.gang.minCount", INV)],
    ),
    "workloadRef without names": (
        _pg(_spec(workloadRef={"workloadName": "", "templateName": ""})),
        [("spec.workloadRef.workloadName", REQ), ("spec.workloadRef.templateName", REQ)],
    ),
    "workloadRef template not a DNS label": (
        _pg(_spec(workloadRef={"workloadName": "w.x", "templateName": "t.x"})),
        [("spec.workloadRef.templateName", INV)],
    ),
    "two topology constraints": (
        _pg(_spec(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]})),
        [("spec.schedulingConstraints.topology", MANY)],
    ),
    "topology key missing": (
        _pg(_spec(schedulingConstraints={"topology": [{"key": ""}]})),
        [("spec.schedulingConstraints.topology[0].key", REQ)],
    ),
    "topology key not a label key": (
        _pg(_spec(schedulingConstraints={"topology": [{"key": "bad key"}]})),
        [("spec.schedulingConstraints.topology[0].key", INV)],
    ),
    "five resource claims": (
        _pg(_spec(resourceClaims=[{"name": f"c{i}", "resourceClaimName": "x"} for i in range(5)])),
        [("spec.resourceClaims", MANY)],
    ),
    "resource claim names repeat": (
        _pg(_spec(resourceClaims=[{"name": "c", "resourceClaimName": "x"}] * 2)),
        [("spec.resourceClaims[1]", DUP)],
    ),
    "resource claim with neither source": (
        _pg(_spec(resourceClaims=[{"name": "c"}])),
        [("spec.resourceClaims[0]", INV)],
    ),
    "resource claim with both sources": (
        _pg(
            _spec(
                resourceClaims=[
                    {"name": "c", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}
                ]
            )
        ),
        [("spec.resourceClaims[0]", INV)],
    ),
    "disruption mode with both": (
        _pg(_spec(disruptionMode={"single": {}, "all": {}})),
        [("spec.disruptionMode", INV)],
    ),
    "disruption mode empty": (_pg(_spec(disruptionMode={})), [("spec.disruptionMode", INV)]),
    "priority above the highest user-definable": (
        _pg(_spec(priority=1_000_000_001)),
        [("spec.priority", INV)],
    ),
    "priority class name not a subdomain": (
        _pg(_spec(priorityClassName="Bad_")),
        [("spec.priorityClassName", INV)],
    ),
    "unknown preemption policy": (
        _pg(_spec(preemptionPolicy="Sometimes")),
        [("spec.preemptionPolicy", UNSUP)],
    ),
    "a parent composite pod group is not served": (
        _pg(_spec(parentCompositePodGroupName="cpg")),
        [("spec.parentCompositePodGroupName", FORB)],
    ),
}


@pytest.mark.parametrize(("doc", "want"), list(CREATE.values()), ids=list(CREATE))
def test_validate_pod_group(doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors(doc) == want


UPDATE = {
    "gang minCount may change": (_spec(schedulingPolicy={"gang": {"minCount": 5}}), []),
    "gang may not become basic": (
        _spec(schedulingPolicy={"basic": {}}),
        [("spec.schedulingPolicy.basic", INV), ("spec.schedulingPolicy.gang", FORB)],
    ),
    "topology is immutable": (
        _spec(schedulingConstraints={"topology": [{"key": "zone"}]}),
        [("spec.schedulingConstraints", INV)],
    ),
    "resource claims are immutable": (
        _spec(resourceClaims=[{"name": "gpu", "resourceClaimName": "other"}]),
        [("spec.resourceClaims", INV)],
    ),
    "disruption mode is immutable": (
        _spec(disruptionMode={"single": {}}),
        [("spec.disruptionMode", INV)],
    ),
    "priority class name is immutable": (
        _spec(priorityClassName="low"),
        [("spec.priorityClassName", INV)],
    ),
    "priority is immutable": (_spec(priority=11), [("spec.priority", INV)]),
    "priority may not be unset": (_spec(priority=None), [("spec.priority", INV)]),
    "preemption policy is immutable": (
        _spec(preemptionPolicy="PreemptLowerPriority"),
        [("spec.preemptionPolicy", INV)],
    ),
    "workload reference is immutable": (
        _spec(workloadRef={"workloadName": "w2", "templateName": "t"}),
        [("spec.workloadRef", INV)],
    ),
}


@pytest.mark.parametrize(("tweak", "want"), list(UPDATE.values()), ids=list(UPDATE))
def test_validate_pod_group_update(
    tweak: Callable[[Json], None], want: list[tuple[str, str]]
) -> None:
    assert update_errors(_pg(), _pg(tweak)) == want


def _pod(group: Json) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"schedulingGroup": group, "containers": [{"name": "c", "image": "i"}]},
    }


@pytest.mark.parametrize(
    ("group", "want"),
    [
        ({"podGroupName": "pg.a"}, []),
        ({"podGroupName": "Bad_"}, [("spec.schedulingGroup.podGroupName", INV)]),
        ({"podGroupName": ""}, [("spec.schedulingGroup.podGroupName", REQ)]),
        ({}, [("spec.schedulingGroup", INV)]),
    ],
    ids=["a subdomain", "not a subdomain", "empty", "no field"],
)
def test_a_pods_scheduling_group_names_a_pod_group(
    group: Json, want: list[tuple[str, str]]
) -> None:
    pod = codec.decode(_pod(group), validate="strict").obj
    assert [(e.path, e.type) for e in validation.validate_create("Pod", pod)] == want


def test_a_pods_scheduling_group_is_immutable() -> None:
    old = codec.decode(_pod({"podGroupName": "a"}), validate="strict").obj
    new = codec.decode(_pod({"podGroupName": "b"}), validate="strict").obj
    old.metadata.resource_version, new.metadata.resource_version = "0", "1"
    assert validation.validate_update("Pod", new, old)


@pytest.mark.parametrize(
    ("statuses", "want"),
    [
        ([{"name": "gpu", "resourceClaimName": "pg-gpu-abcde"}], []),
        (
            [{"name": "nic", "resourceClaimName": "pg-nic-abcde"}],
            [("status.resourceClaimStatuses[0].name", INV)],
        ),
    ],
    ids=["names an entry", "names no entry"],
)
def test_a_claim_status_must_name_an_entry_of_spec_resource_claims(
    statuses: list[Json], want: list[tuple[str, str]]
) -> None:
    """upstream validatePodGroupResourceClaimStatuses: "must match the name of an entry in
    `spec.resourceClaims`"."""

    def tweak(doc: Json) -> None:
        doc["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
        doc["status"] = {"resourceClaimStatuses": statuses}

    assert errors(_pg(tweak)) == want
