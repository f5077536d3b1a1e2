"""Server-side apply and managedFields (services/api/machinery/fieldmanager.py), with scenarios
after kubernetes-sigs/structured-merge-diff merge/*_test.go (conflicts, multiple
appliers, leaving fields, lists of maps) and the apiserver's fieldmanager tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.api.machinery import codec, fieldmanager, fieldpath
from services.api.machinery.errors import BadRequestError, ConflictError
from services.api.machinery.fieldmanager import ApplyConflictError, apply, track_update
from services.api.machinery.kinds import BY_KIND

DEPLOY = BY_KIND["Deployment"]
POD = BY_KIND["Pod"]
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def deploy(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", **meta},
        "spec": spec,
    }


def pod(containers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": containers},
        **extra,
    }


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (e["manager"], e["operation"]): e["fieldsV1"]
        for e in obj["metadata"].get("managedFields", [])
    }


def test_create_through_apply_owns_exactly_the_applied_fields() -> None:
    out = apply(
        DEPLOY,
        None,
        deploy({"replicas": 3}, labels={"app": "a"}),
        manager="kubectl",
        force=False,
        now=T0,
    )
    assert out["spec"] == {"replicas": 3}
    assert out["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}}},
        }
    ]


def test_reapply_without_a_field_removes_it() -> None:
    live = apply(
        DEPLOY, None, deploy({"replicas": 3, "paused": True}), manager="a", force=False, now=T0
    )
    out = apply(DEPLOY, live, deploy({"replicas": 3}), manager="a", force=False, now=T1)
    assert out["spec"] == {"replicas": 3}
    assert managers(out)[("a", "Apply")] == {"f:spec": {"f:replicas": {}}}


def test_a_field_left_by_one_applier_stays_when_another_owns_it() -> None:
    live = apply(
        DEPLOY, None, deploy({"replicas": 3, "paused": True}), manager="a", force=False, now=T0
    )
    live = apply(DEPLOY, live, deploy({"paused": True}), manager="b", force=False, now=T1)
    out = apply(DEPLOY, live, deploy({"replicas": 3}), manager="a", force=False, now=T2)
    assert out["spec"] == {"replicas": 3, "paused": True}
    assert managers(out)[("b", "Apply")] == {"f:spec": {"f:paused": {}}}


def test_same_value_is_shared_ownership_not_a_conflict() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    out = apply(DEPLOY, live, deploy({"replicas": 3}), manager="b", force=False, now=T1)
    assert set(managers(out)) == {("a", "Apply"), ("b", "Apply")}


def test_changing_a_field_another_applier_owns_conflicts() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    with pytest.raises(ApplyConflictError) as err:
        apply(DEPLOY, live, deploy({"replicas": 5}), manager="b", force=False, now=T1)
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "a": .spec.replicas'
    assert err.value.causes == [(".spec.replicas", 'conflict with "a"')]
    assert isinstance(err.value, ConflictError) and err.value.reason == "Conflict"


def test_conflict_with_an_update_manager_names_its_api_version() -> None:
    created = track_update(
        DEPLOY, None, deploy({"replicas": 1}), manager="kubectl-client-side-apply", now=T0
    )
    with pytest.raises(ApplyConflictError) as err:
        apply(DEPLOY, created, deploy({"replicas": 2}), manager="kubectl", force=False, now=T1)
    assert err.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )


def test_several_conflicts_are_listed_by_manager() -> None:
    live = apply(
        DEPLOY, None, deploy({"replicas": 3, "paused": True}), manager="a", force=False, now=T0
    )
    with pytest.raises(ApplyConflictError) as err:
        apply(
            DEPLOY, live, deploy({"replicas": 5, "paused": False}), manager="b", force=False, now=T1
        )
    assert err.value.message == (
        'Apply failed with 2 conflicts: conflicts with "a":\n- .spec.paused\n- .spec.replicas'
    )
    assert len(err.value.causes) == 2


def test_force_takes_ownership_and_drops_the_emptied_manager() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    out = apply(DEPLOY, live, deploy({"replicas": 5}), manager="b", force=True, now=T1)
    assert out["spec"]["replicas"] == 5
    assert managers(out) == {("b", "Apply"): {"f:spec": {"f:replicas": {}}}}


def test_lists_of_maps_merge_by_key_and_each_applier_owns_its_items() -> None:
    a = {"name": "a", "image": "a:1"}
    b = {"name": "b", "image": "b:1"}
    live = apply(POD, None, pod([a]), manager="ma", force=False, now=T0)
    live = apply(POD, live, pod([b]), manager="mb", force=False, now=T1)
    # live-only items keep their place; applied items follow in applied order
    assert [c["name"] for c in live["spec"]["containers"]] == ["a", "b"]
    assert managers(live)[("mb", "Apply")] == {
        "f:spec": {"f:containers": {'k:{"name":"b"}': {".": {}, "f:image": {}, "f:name": {}}}}
    }
    out = apply(POD, live, pod([]), manager="ma", force=False, now=T2)
    assert out["spec"]["containers"] == [b]


def test_an_item_owned_by_another_keeps_the_fields_it_owns() -> None:
    live = apply(
        POD,
        None,
        pod([{"name": "c", "image": "x", "args": ["1"]}]),
        manager="ma",
        force=False,
        now=T0,
    )
    live = apply(POD, live, pod([{"name": "c", "image": "x"}]), manager="mb", force=False, now=T1)
    out = apply(POD, live, pod([]), manager="ma", force=False, now=T2)
    assert out["spec"]["containers"] == [{"name": "c", "image": "x"}]


def test_sets_merge_as_unions_with_value_elements() -> None:
    live = apply(
        POD,
        None,
        {**pod([]), "metadata": {"name": "p", "finalizers": ["x"]}},
        manager="a",
        force=False,
        now=T0,
    )
    out = apply(
        POD,
        live,
        {**pod([]), "metadata": {"name": "p", "finalizers": ["y"]}},
        manager="b",
        force=False,
        now=T1,
    )
    assert out["metadata"]["finalizers"] == ["x", "y"]
    assert managers(out)[("b", "Apply")]["f:metadata"] == {"f:finalizers": {'v:"y"': {}}}


def test_atomic_lists_are_owned_whole() -> None:
    tol = [{"key": "k", "operator": "Exists"}]
    out = apply(
        POD,
        None,
        {**pod([]), "spec": {"containers": [], "tolerations": tol}},
        manager="a",
        force=False,
        now=T0,
    )
    assert managers(out)[("a", "Apply")]["f:spec"]["f:tolerations"] == {}


def test_update_moves_ownership_of_the_fields_it_changes() -> None:
    live = apply(
        DEPLOY, None, deploy({"replicas": 3, "paused": True}), manager="a", force=False, now=T0
    )
    changed = {**live, "spec": {"replicas": 4, "paused": True}}
    out = track_update(DEPLOY, live, changed, manager="hpa", now=T1)
    assert managers(out) == {
        ("a", "Apply"): {"f:spec": {"f:paused": {}}},
        ("hpa", "Update"): {"f:spec": {"f:replicas": {}}},
    }


def test_update_removing_a_field_removes_it_from_every_manager() -> None:
    live = apply(
        DEPLOY, None, deploy({"replicas": 3, "paused": True}), manager="a", force=False, now=T0
    )
    out = track_update(DEPLOY, live, {**live, "spec": {"replicas": 3}}, manager="edit", now=T1)
    assert managers(out) == {("a", "Apply"): {"f:spec": {"f:replicas": {}}}}


def test_update_that_creates_a_map_owns_it_with_a_dot_entry() -> None:
    out = track_update(
        POD,
        None,
        pod([{"name": "c", "image": "x"}], metadata={"name": "p", "labels": {"app": "a"}}),
        manager="kubectl-create",
        now=T0,
    )
    assert managers(out)[("kubectl-create", "Update")] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:containers": {".": {}, 'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}}
        },
    }


def test_update_sending_empty_managed_fields_clears_them() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    new = deploy({"replicas": 3}, managedFields=[])
    assert "managedFields" not in track_update(DEPLOY, live, new, manager="x", now=T1)["metadata"]


def test_one_entry_per_manager_operation_and_only_the_actor_gets_a_new_time() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    live = track_update(
        DEPLOY, live, {**live, "spec": {"replicas": 3, "paused": True}}, manager="a", now=T1
    )
    live = apply(
        DEPLOY,
        live,
        deploy({"replicas": 3, "minReadySeconds": 5}),
        manager="a",
        force=False,
        now=T2,
    )
    entries = live["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"], e["time"]) for e in entries] == [
        ("a", "Apply", T2),
        ("a", "Update", T1),
    ]


def test_first_apply_to_an_untracked_object_conflicts_with_before_first_apply() -> None:
    live = deploy({"replicas": 1})
    with pytest.raises(
        ApplyConflictError, match='conflict with "before-first-apply" using apps/v1: .spec.replicas'
    ):
        apply(DEPLOY, live, deploy({"replicas": 2}), manager="kubectl", force=False, now=T0)
    out = apply(DEPLOY, live, deploy({"replicas": 1}), manager="kubectl", force=False, now=T0)
    assert set(managers(out)) == {("before-first-apply", "Update"), ("kubectl", "Apply")}


def test_status_in_an_apply_to_the_main_resource_is_ignored() -> None:
    config = pod([{"name": "c", "image": "x"}], status={"phase": "Running"})
    out = apply(POD, None, config, manager="a", force=False, now=T0)
    assert "status" not in out
    assert "f:status" not in managers(out)[("a", "Apply")]


def test_apply_changes_neither_argument() -> None:
    live = apply(DEPLOY, None, deploy({"replicas": 3}), manager="a", force=False, now=T0)
    snapshot = copy.deepcopy(live)
    cfg = deploy({"replicas": 3, "paused": None})
    apply(DEPLOY, live, cfg, manager="b", force=False, now=T1)
    assert live == snapshot and cfg == deploy({"replicas": 3, "paused": None})


@pytest.mark.parametrize(
    ("live", "applied", "merged"),
    [
        (["a", "b"], ["b", "a"], ["b", "a"]),
        (["a", "x"], ["b", "a"], ["b", "a", "x"]),
        (["a", "c", "b"], ["b", "a"], ["c", "b", "a"]),
        (["b", "a"], ["a", "c", "b"], ["a", "c", "b"]),
        (["x", "a", "y"], ["a", "n"], ["x", "a", "y", "n"]),
        ([], ["a"], ["a"]),
        (["a"], [], ["a"]),
    ],
)
def test_merged_list_order_is_upstreams(
    live: list[str], applied: list[str], merged: list[str]
) -> None:
    got = fieldmanager.merge_items(
        [(x, x) for x in live], [(x, x) for x in applied], lambda lv, cv: cv
    )
    assert got == merged


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (("f:spec", "f:replicas"), ".spec.replicas"),
        (
            ("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"),
            '.spec.containers[name="c"].image',
        ),
        (
            ("f:spec", "f:containers", 'k:{"containerPort":80,"protocol":"TCP"}'),
            '.spec.containers[containerPort=80,protocol="TCP"]',
        ),
        (("f:metadata", "f:finalizers", 'v:"x"'), '.metadata.finalizers[="x"]'),
    ],
)
def test_paths_print_as_upstream(path: tuple[str, ...], text: str) -> None:
    assert fieldpath.path_string(path) == text


@pytest.mark.parametrize(
    "fields",
    [
        {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
        {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}}}}},
        {"f:a": {}, "f:b": {"f:c": {}}},
    ],
)
def test_fields_v1_round_trips(fields: dict[str, Any]) -> None:
    assert fieldpath.to_fields_v1(fieldpath.from_fields_v1(fields)) == fields


def test_managed_fields_round_trip_through_the_codec() -> None:
    out = apply(
        POD, None, pod([{"name": "c", "image": "x"}]), manager="kubectl", force=False, now=T0
    )
    decoded = codec.decode(out, validate="strict")
    assert decoded.unknown_fields == ()
    assert codec.encode(decoded.obj)["metadata"] == out["metadata"]


def _fin(items: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": items}}


def _owned_values(obj: dict[str, Any], manager: str, operation: str) -> set[str]:
    fields = managers(obj)[(manager, operation)]["f:metadata"]["f:finalizers"]
    return {k[3:-1] for k in fields if k.startswith("v:")}


@pytest.mark.parametrize(
    ("ops", "result", "owners"),
    [
        pytest.param(
            [("apply", "default", ["a", "c"]), ("apply", "default", ["a", "b", "c", "d"])],
            {"a", "b", "c", "d"},
            {("default", "Apply"): {"a", "b", "c", "d"}},
            id="apply twice",
        ),
        pytest.param(
            [
                ("apply", "default", ["a", "c"]),
                ("update", "controller", ["a", "b", "c", "d"]),
                ("apply", "default", ["a", "aprime", "c", "cprime"]),
            ],
            {"a", "aprime", "b", "c", "cprime", "d"},
            {
                ("default", "Apply"): {"a", "aprime", "c", "cprime"},
                ("controller", "Update"): {"b", "d"},
            },
            id="apply update apply no overlap",
        ),
        pytest.param(
            [
                ("apply", "default", ["a", "c"]),
                ("update", "controller", ["a", "b", "c", "d"]),
                ("apply", "default", ["a", "b", "c"]),
            ],
            {"a", "b", "c", "d"},
            {("default", "Apply"): {"a", "b", "c"}, ("controller", "Update"): {"b", "d"}},
            id="apply update apply with overlap",
        ),
        pytest.param(
            [("apply", "default", ["a", "b", "c", "d"]), ("apply", "default", ["a", "c"])],
            {"a", "c"},
            {("default", "Apply"): {"a", "c"}},
            id="apply twice remove",
        ),
    ],
)
def test_set_ownership_as_structured_merge_diff(
    ops: list[tuple[str, str, list[str]]], result: set[str], owners: dict[tuple[str, str], set[str]]
) -> None:
    """structured-merge-diff merge/set_test.go TestUpdateSet on ObjectMeta.finalizers (a set)."""
    live: dict[str, Any] | None = None
    for op, manager, items in ops:
        if op == "apply":
            live = apply(POD, live, _fin(items), manager=manager, force=False, now=T0)
        else:
            assert live is not None
            new = copy.deepcopy(live)
            new["metadata"]["finalizers"] = items
            live = track_update(POD, live, new, manager=manager, now=T0)
    assert live is not None
    assert set(live["metadata"]["finalizers"]) == result
    assert {k: _owned_values(live, *k) for k in owners} == owners
    assert set(managers(live)) == set(owners)


def _containers(*items: tuple[str, list[str]]) -> dict[str, Any]:
    return pod(
        [{"name": n, **({"env": [{"name": e} for e in env]} if env else {})} for n, env in items]
    )


def _env(obj: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(c["name"], [e["name"] for e in c.get("env", [])]) for c in obj["spec"]["containers"]]


@pytest.mark.parametrize(
    ("ops", "result"),
    [
        pytest.param(
            [
                ("apply", "apply-one", [("a", []), ("b", ["c"])]),
                ("apply", "apply-two", [("b", ["d"])]),
                ("apply", "apply-one", [("a", [])]),
            ],
            [("a", []), ("b", ["d"])],
            id="remove one keep one with sub item",
        ),
        pytest.param(
            [
                ("apply", "apply-one", [("a", []), ("b", ["c"])]),
                ("apply", "apply-two", [("b", ["d"])]),
                ("update", "controller", [("a", []), ("b", ["c", "d", "e"])]),
                ("apply", "apply-one", [("a", [])]),
            ],
            [("a", []), ("b", ["d", "e"])],
            id="remove one keep one with dangling subitem",
        ),
        pytest.param(
            [
                ("apply", "apply-one", [("a", []), ("b", ["c"])]),
                ("apply", "apply-two", [("a", ["b"])]),
                ("update", "controller", [("a", ["b"]), ("b", ["c", "d"])]),
                ("apply", "apply-one", [("a", [])]),
            ],
            [("a", ["b"])],
            id="remove one with dangling subitem keep one",
        ),
    ],
)
def test_nested_lists_as_structured_merge_diff(
    ops: list[tuple[str, str, list[tuple[str, list[str]]]]], result: list[tuple[str, list[str]]]
) -> None:
    """structured-merge-diff merge/multiple_appliers_test.go TestMultipleAppliersNestedType,
    with containers (keyed by name) holding env (keyed by name) for its listOfLists."""
    live: dict[str, Any] | None = None
    for op, manager, items in ops:
        if op == "apply":
            live = apply(POD, live, _containers(*items), manager=manager, force=False, now=T0)
        else:
            assert live is not None
            new = copy.deepcopy(live)
            new["spec"] = _containers(*items)["spec"]
            live = track_update(POD, live, new, manager=manager, now=T0)
    assert live is not None
    assert _env(live) == result


def test_more_than_ten_update_managers_merge_the_oldest_into_ancient_changes() -> None:
    live = deploy({"replicas": 0})
    for i in range(11):
        new = copy.deepcopy(live)
        new["metadata"].setdefault("labels", {})[f"l{i}"] = "x"
        live = track_update(DEPLOY, live, new, manager=f"m{i}", now=f"2026-01-01T00:00:{i:02d}Z")
    names = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(names) == 10
    assert "ancient-changes" in names and "m0" not in names and "m1" not in names
    bucket = managers(live)[("ancient-changes", "Update")]
    assert {"f:l0", "f:l1"} <= set(bucket["f:metadata"]["f:labels"])


@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        (
            "kubectl-client-side-apply/v1.32.0 (linux/amd64) kubernetes/abc",
            "kubectl-client-side-apply",
        ),
        ("kubectl/v1.32.0 (linux/amd64) kubernetes/abc", "kubectl"),
        ("OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
        ("", "unknown"),
    ],
)
def test_default_manager_is_the_user_agent_product(user_agent: str, manager: str) -> None:
    assert fieldmanager.manager_from_user_agent(user_agent) == manager


@pytest.mark.parametrize(
    ("manager", "message"),
    [
        ("", "fieldManager is required for apply requests"),
        ("x" * 129, "must be less than 128 characters"),
        ("a\nb", "printable"),
    ],
)
def test_apply_refuses_a_bad_field_manager(manager: str, message: str) -> None:
    with pytest.raises(BadRequestError, match=message):
        apply(DEPLOY, None, deploy({"replicas": 1}), manager=manager, force=False, now=T0)


def test_before_first_apply_owns_the_untracked_object_as_an_update() -> None:
    live = deploy({"replicas": 1}, labels={"app": "a"})
    out = apply(DEPLOY, live, deploy({"paused": True}), manager="kubectl", force=False, now=T0)
    assert managers(out)[("before-first-apply", "Update")] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:replicas": {}},
    }


def test_an_applied_configuration_may_not_carry_managed_fields() -> None:
    cfg = deploy({"replicas": 1}, managedFields=[{"manager": "x", "operation": "Apply"}])
    with pytest.raises(BadRequestError, match="metadata.managedFields must be nil"):
        apply(DEPLOY, None, cfg, manager="kubectl", force=False, now=T0)


def test_track_update_changes_neither_argument() -> None:
    old = apply(
        DEPLOY, None, deploy({"replicas": 3}, labels={"a": "1"}), manager="a", force=False, now=T0
    )
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["b"] = "2"
    old_copy, new_copy = copy.deepcopy(old), copy.deepcopy(new)
    out = track_update(DEPLOY, old, new, manager="edit", now=T1)
    assert (old, new) == (old_copy, new_copy)
    assert out["metadata"]["managedFields"] != new["metadata"]["managedFields"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"apiVersion": "apps/v2"}, "Specified patch version: apps/v2, expected: apps/v1"),
        ({"apiVersion": None}, "Specified patch version: , expected: apps/v1"),
        ({"kind": "ReplicaSet"}, "Specified: ReplicaSet, expected: Deployment"),
    ],
)
def test_apply_refuses_another_version_or_kind(override: dict[str, Any], message: str) -> None:
    cfg = {**deploy({"replicas": 1}), **override}
    with pytest.raises(BadRequestError, match=message):
        apply(DEPLOY, None, cfg, manager="kubectl", force=False, now=T0)


def test_apply_refuses_a_configuration_nested_past_the_depth_cap() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(120):
        node["x"] = {}
        node = node["x"]
    cfg = deploy({"template": deep})
    with pytest.raises(BadRequestError, match="the applied configuration is nested too deeply"):
        apply(DEPLOY, None, cfg, manager="kubectl", force=False, now=T0)


def test_kubectl_scale_then_server_side_apply_conflicts_on_replicas() -> None:
    """The classic: `kubectl apply --server-side`, `kubectl scale` (an Update through the
    scale subresource), then a re-apply with the manifest's replicas."""
    live = apply(
        DEPLOY,
        None,
        deploy({"replicas": 2, "paused": False}),
        manager="kubectl",
        force=False,
        now=T0,
    )
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    live = track_update(DEPLOY, live, scaled, manager="kubectl", subresource="scale", now=T1)
    entry = [e for e in live["metadata"]["managedFields"] if e.get("subresource") == "scale"]
    assert entry == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale",
        }
    ]
    with pytest.raises(ApplyConflictError) as err:
        apply(
            DEPLOY,
            live,
            deploy({"replicas": 2, "paused": False}),
            manager="kubectl",
            force=False,
            now=T2,
        )
    assert err.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas'
    )
    forced = apply(
        DEPLOY,
        live,
        deploy({"replicas": 2, "paused": False}),
        manager="kubectl",
        force=True,
        now=T2,
    )
    assert forced["spec"]["replicas"] == 2
    assert [(e["manager"], e["operation"]) for e in forced["metadata"]["managedFields"]] == [
        ("kubectl", "Apply")
    ]
    # leaving replicas out of the manifest instead keeps the scaled value, owned by scale
    kept = apply(DEPLOY, live, deploy({"paused": False}), manager="kubectl", force=False, now=T2)
    assert kept["spec"]["replicas"] == 5
