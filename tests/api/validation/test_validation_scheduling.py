"""Validation of scheduling.k8s.io/v1alpha1 Workload and of a pod's spec.workloadRef
(services/api/validation/scheduling.py), with the cases of upstream 1.35's
pkg/apis/scheduling/validation/validation_test.go (TestValidateWorkload,
TestValidateWorkloadUpdate; its mkWorkload is `_workload` here): the field path and error
type of each refusal."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from services.api import validation
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND

Json = dict[str, Any]
REQ, INV, FORB, DUP, MANY = (
    "Required value",
    "Invalid value",
    "Forbidden",
    "Duplicate value",
    "Too many",
)


def _workload(tweak: Callable[[Json], None] | None = None) -> Json:
    """mkWorkload: a Workload that passes validation (a basic and a gang group)."""
    doc: Json = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "workload", "namespace": "ns"},
        "spec": {
            "controllerRef": {"apiGroup": "group", "kind": "foo", "name": "baz"},
            "podGroups": [
                {"name": "group1", "policy": {"basic": {}}},
                {"name": "group2", "policy": {"gang": {"minCount": 2}}},
            ],
        },
    }
    if tweak is not None:
        tweak(doc)
    return doc


def _obj(doc: Json) -> Any:
    return codec.decode(copy.deepcopy(doc), validate="strict").obj


def errors(doc: Json) -> list[tuple[str, str]]:
    return [(e.path, e.type) for e in validation.validate_create("Workload", _obj(doc))]


def update_errors(old: Json, new: Json) -> list[tuple[str, str]]:
    o, n = _obj(old), _obj(new)
    o.metadata.resource_version = "0"
    n.metadata.resource_version = "1"
    return [(e.path, e.type) for e in validation.validate_update("Workload", n, o)]


def _set(path: str, value: Any) -> Callable[[Json], None]:
    """A tweak setting spec field `path` (dots and [i] indexes) to `value`; None deletes."""

    def tweak(doc: Json) -> None:
        node: Any = doc
        parts = path.replace("[", ".").replace("]", "").split(".")
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        last = parts[-1]
        if value is None:
            del node[int(last) if last.isdigit() else last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return tweak


def _many_groups(doc: Json) -> None:
    doc["spec"]["podGroups"] = [{"name": f"group-{i}", "policy": {"basic": {}}} for i in range(9)]


# ------------------------------------------------------------------ ValidateWorkload

SUCCESS = {
    "basic and gang policies": None,
    "no controllerRef": _set("spec.controllerRef", None),
    "no controllerRef apiGroup": _set("spec.controllerRef.apiGroup", None),
}


@pytest.mark.parametrize("tweak", list(SUCCESS.values()), ids=list(SUCCESS))
def test_a_valid_workload_passes(tweak: Callable[[Json], None] | None) -> None:
    assert errors(_workload(tweak)) == []


FAILURES: dict[str, tuple[Callable[[Json], None], list[tuple[str, str]]]] = {
    "no name": (_set("metadata.name", ""), [("metadata.name", REQ)]),
    "invalid name": (_set("metadata.name", ".workload"), [("metadata.name", INV)]),
    "too long name": (_set("metadata.name", "w" * 254), [("metadata.name", INV)]),
    "no namespace": (_set("metadata.namespace", ""), [("metadata.namespace", REQ)]),
    "invalid namespace": (_set("metadata.namespace", ".ns"), [("metadata.namespace", INV)]),
    "too long namespace": (_set("metadata.namespace", "n" * 64), [("metadata.namespace", INV)]),
    "too long controllerRef apiGroup": (
        _set("spec.controllerRef.apiGroup", "g" * 254),
        [("spec.controllerRef.apiGroup", INV)],
    ),
    "invalid controllerRef apiGroup": (
        _set("spec.controllerRef.apiGroup", ".group"),
        [("spec.controllerRef.apiGroup", INV)],
    ),
    "no controllerRef kind": (
        _set("spec.controllerRef.kind", None),
        [("spec.controllerRef.kind", REQ)],
    ),
    "invalid controllerRef kind": (
        _set("spec.controllerRef.kind", "/foo"),
        [("spec.controllerRef.kind", INV)],
    ),
    "no controllerRef name": (
        _set("spec.controllerRef.name", None),
        [("spec.controllerRef.name", REQ)],
    ),
    "invalid controllerRef name": (
        _set("spec.controllerRef.name", "/baz"),
        [("spec.controllerRef.name", INV)],
    ),
    "no pod group name": (_set("spec.podGroups[0].name", None), [("spec.podGroups[0].name", INV)]),
    "two policies": (
        _set("spec.podGroups[0].policy.gang", {"minCount": 2}),
        [("spec.podGroups[0].policy", INV)],
    ),
    "no policy set": (_set("spec.podGroups[0].policy", {}), [("spec.podGroups[0].policy", REQ)]),
    "zero min count in gang": (
        _set("spec.podGroups[1].policy.gang.minCount", 0),
        [("spec.podGroups[1].policy.gang.minCount", INV)],
    ),
    "negative min count in gang": (
        _set("spec.podGroups[1].policy.gang.minCount", -1),
        [("spec.podGroups[1].policy.gang.minCount", INV)],
    ),
    "two pod groups with the same name": (
        _set("spec.podGroups[1].name", "group1"),
        [("spec.podGroups[1].name", DUP)],
    ),
    "no pod groups": (_set("spec.podGroups", []), [("spec.podGroups", REQ)]),
    "too many pod groups": (_many_groups, [("spec.podGroups", MANY)]),
}


@pytest.mark.parametrize(("tweak", "want"), list(FAILURES.values()), ids=list(FAILURES))
def test_an_invalid_workload_is_refused_at_the_field(
    tweak: Callable[[Json], None], want: list[tuple[str, str]]
) -> None:
    assert errors(_workload(tweak)) == want


def test_eight_pod_groups_are_allowed() -> None:
    def eight(doc: Json) -> None:
        doc["spec"]["podGroups"] = [
            {"name": f"group-{i}", "policy": {"gang": {"minCount": 1}}} for i in range(8)
        ]

    assert errors(_workload(eight)) == []


def test_the_error_texts_are_upstreams() -> None:
    obj = _obj(_workload(_set("spec.podGroups[0].policy.gang", {"minCount": 2})))
    (err,) = validation.validate_create("Workload", obj)
    assert str(err) == (
        'spec.podGroups[0].policy: Invalid value: "{`basic`, `gang`}": exactly one of '
        "`basic`, `gang` is required, but multiple fields are set"
    )
    (err,) = validation.validate_create("Workload", _obj(_workload(_many_groups)))
    assert (err.path, err.type, err.detail) == ("spec.podGroups", MANY, "must have at most 8 items")


# ------------------------------------------------------------ ValidateWorkloadUpdate

UPDATE_SUCCESS = {
    "no change": (None, None),
    "set controller ref": (_set("spec.controllerRef", None), None),
}


@pytest.mark.parametrize(("old", "new"), list(UPDATE_SUCCESS.values()), ids=list(UPDATE_SUCCESS))
def test_an_allowed_update_passes(
    old: Callable[[Json], None] | None, new: Callable[[Json], None] | None
) -> None:
    assert update_errors(_workload(old), _workload(new)) == []


UPDATE_FAILURES = {
    "change name": _set("metadata.name", "workloadbar"),
    "change namespace": _set("metadata.namespace", "nsbar"),
    "change pod group name": _set("spec.podGroups[0].name", "group1bar"),
    "add pod group": lambda d: d["spec"]["podGroups"].append(
        {"name": "group3", "policy": {"basic": {}}}
    ),
    "delete pod group": lambda d: d["spec"]["podGroups"].pop(),
    "change gang min count": _set("spec.podGroups[1].policy.gang.minCount", 5),
    "change controllerRef": _set("spec.controllerRef.kind", "foobar"),
    "delete controllerRef": _set("spec.controllerRef", None),
}


@pytest.mark.parametrize("tweak", list(UPDATE_FAILURES.values()), ids=list(UPDATE_FAILURES))
def test_a_workload_update_may_not_change_its_groups_or_controller(
    tweak: Callable[[Json], None],
) -> None:
    assert update_errors(_workload(), _workload(tweak)) != []


def test_an_immutable_field_is_named_in_the_refusal() -> None:
    got = update_errors(_workload(), _workload(_set("spec.podGroups[1].policy.gang.minCount", 5)))
    assert got == [("spec.podGroups", INV)]
    got = update_errors(_workload(), _workload(_set("spec.controllerRef", None)))
    assert got == [("spec.controllerRef", INV)]


# -------------------------------------------------------------- Pod spec.workloadRef


def _pod(ref: Json | None) -> Json:
    spec: Json = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
    if ref is not None:
        spec["workloadRef"] = ref
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": spec,
    }


def _pod_errors(doc: Json) -> list[tuple[str, str]]:
    from services.apiserver import admission

    obj = _obj(doc)
    admission.apply_defaults(BY_KIND["Pod"], obj)
    return [(e.path, e.type) for e in validation.validate_create("Pod", obj)]


POD_REFS: dict[str, tuple[Json, list[tuple[str, str]]]] = {
    "name and group": ({"name": "w", "podGroup": "pg"}, []),
    "with a replica key": ({"name": "w", "podGroup": "pg", "podGroupReplicaKey": "0"}, []),
    "a subdomain workload name": ({"name": "w.x", "podGroup": "pg"}, []),
    "no name": ({"podGroup": "pg"}, [("spec.workloadRef.name", REQ)]),
    "no pod group": ({"name": "w"}, [("spec.workloadRef.podGroup", REQ)]),
    "invalid name": ({"name": "W_1", "podGroup": "pg"}, [("spec.workloadRef.name", INV)]),
    "a pod group that is no label": (
        {"name": "w", "podGroup": "p.g"},
        [("spec.workloadRef.podGroup", INV)],
    ),
    "a replica key that is no label": (
        {"name": "w", "podGroup": "pg", "podGroupReplicaKey": "A"},
        [("spec.workloadRef.podGroupReplicaKey", INV)],
    ),
}


@pytest.mark.parametrize(("ref", "want"), list(POD_REFS.values()), ids=list(POD_REFS))
def test_a_pods_workload_ref_names_a_workload_and_a_pod_group(
    ref: Json, want: list[tuple[str, str]]
) -> None:
    assert _pod_errors(_pod(ref)) == want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, {"name": "w", "podGroup": "pg"}),
        ({"name": "w", "podGroup": "pg"}, None),
        ({"name": "w", "podGroup": "pg"}, {"name": "w", "podGroup": "pg2"}),
        (
            {"name": "w", "podGroup": "pg"},
            {"name": "w", "podGroup": "pg", "podGroupReplicaKey": "1"},
        ),
    ],
    ids=["set", "unset", "change group", "add replica key"],
)
def test_a_pods_workload_ref_is_immutable(old: Json | None, new: Json | None) -> None:
    from services.apiserver import admission

    o, n = _obj(_pod(old)), _obj(_pod(new))
    for p in (o, n):
        admission.apply_defaults(BY_KIND["Pod"], p)
    o.metadata.resource_version = "0"
    n.metadata.resource_version = "1"
    got = validation.validate_update("Pod", n, o)
    assert [(e.path, e.type) for e in got] == [("spec", FORB)]
