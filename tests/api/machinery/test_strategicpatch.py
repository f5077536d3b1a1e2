"""Strategic merge patch: upstream's patch application cases (on upstream's test schema,
MergeItem) and kubera's kinds (the patches kubectl sends: cordon, label, taint, apply)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from services.api.machinery import strategicpatch
from services.api.machinery.codec import encode
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listtypes import ListStrategy, PatchSchema, schema_for
from services.api.machinery.strategicpatch import StrategicPatchError
from tests.builders import MakeNode, MakePod


class MergeItemSchema:
    """Upstream's MergeItem test type (patch_test.go, swagger-merge-item.json) as a schema."""

    FIELDS: dict[str, ListStrategy] = {
        "mergingList": ListStrategy("map", ("name",), "merge", "name"),
        "nonMergingList": ListStrategy("atomic"),
        "mergingIntList": ListStrategy("set", (), "merge"),
        "nonMergingIntList": ListStrategy("atomic"),
        "mergeItemPtr": ListStrategy("", (), "merge", "name"),
        "replacingItem": ListStrategy("", (), "replace"),
        "retainKeysMap": ListStrategy("", (), "retainKeys"),
        "retainKeysMergingList": ListStrategy("map", ("name",), "merge,retainKeys", "name"),
    }

    def field(self, name: str) -> tuple[ListStrategy | None, PatchSchema]:
        return self.FIELDS.get(name), self


MERGE_ITEM = MergeItemSchema()

UPSTREAM_CASES = yaml.safe_load(
    r"""
# Ported from kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch_test.go
# (customStrategicMergePatchTestCaseData, createStrategicMergePatchTestCaseData and the raw
# cases): each upstream case gives original+twoWay=modified and current+threeWay=result.
- description: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  patch: {mergingIntList: [2, 3]}
  result: {mergingIntList: [1, 2, 3]}
- description: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: delete}}
  result: {simpleMap: {}}
- description: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{$patch: replace}]}
  result: {mergingList: []}
- description: merge empty merging lists
  original: {mergingList: []}
  patch: {mergingList: []}
  result: {mergingList: []}
- description: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  result: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  result: {other: a}
- description: delete all duplicate entries in a merging list
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 1, $patch: delete}, {name: 3, $patch: delete}, {name: 3, $patch: delete}]}
  result: {mergingList: [{name: 2, value: a}]}
- description: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {value: bar}}
  result: {retainKeysMap: {name: foo, value: bar}}
- description: retainKeys map can change a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: b}}
  result: {retainKeysMap: {name: foo, value: b}}
- description: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: null}}
  result: {retainKeysMap: {name: foo}}
- description: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {}}
  result: {retainKeysMap: {name: foo, value: a}}
- description: retainKeys list can add a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  patch: {retainKeysMergingList: [{name: foo, value: a}]}
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- description: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: b}]}
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- description: retainKeys list can delete a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: null}]}
  result: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- description: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  result: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]}
- description: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  result: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- description: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1, 2]}
  result: {mergingIntList: [3, 1, 2]}
- description: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1]}
  result: {mergingIntList: [2, 3, 1]}
- description: setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  patch:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  result: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- description: setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  patch: {$setElementOrder/mergingIntList: [3, 2, 1]}
  result: {mergingIntList: [3, 1]}
- description: nil original
  original: {}
  patch: {name: 1, value: 1}
  result: {name: 1, value: 1}
- description: nil patch
  original: {name: 1}
  patch: {}
  result: {name: 1}
- description: add field to map (three-way)
  original: {name: 1, other: a}
  patch: {value: 1}
  result: {name: 1, value: 1, other: a}
- description: add field to map with conflict (three-way)
  original: {name: a, other: a}
  patch: {name: 1, value: 1}
  result: {name: 1, value: 1, other: a}
- description: add field and delete field from map
  original: {name: 1, other: a}
  patch: {name: null, value: 1}
  result: {value: 1, other: a}
- description: delete field from nested map
  original: {simpleMap: {key1: 1, key2: 1, other: a}}
  patch: {simpleMap: {key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- description: delete field from nested map with conflict
  original: {simpleMap: {key1: a, key2: 1, other: a}}
  patch: {simpleMap: {key1: 1, key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- description: delete all fields from map
  original: {name: 1, value: 1, other: a}
  patch: {name: null, value: null}
  result: {other: a}
- description: replace list of scalars
  original: {nonMergingIntList: [1, 2]}
  patch: {nonMergingIntList: [2, 3]}
  result: {nonMergingIntList: [2, 3]}
- description: replace list of scalars with conflict
  original: {nonMergingIntList: [1, 4]}
  patch: {nonMergingIntList: [2, 3]}
  result: {nonMergingIntList: [2, 3]}
- description: delete all maps from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: delete all maps from merging list with conflict
  original: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: delete all maps from empty merging list
  original: {mergingList: []}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- description: defined null values should propagate overwrite current fields (with conflict)
  original: {name: a, other: a}
  patch: {name: 1, value: 1, other: null}
  result: {name: 1, value: 1}
- description: defined null values should propagate removing original fields
  original: {name: original-name, value: original-value, other: current-other}
  patch: {name: modified-name, value: null}
  result: {name: modified-name, other: current-other}
- description: retainKeys map with no change should not be present
  original: {name: a, other: c, retainKeysMap: {name: foo}}
  patch: {value: b}
  result: {name: a, value: b, other: c, retainKeysMap: {name: foo}}
- description: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 4]}
- description: delete all duplicate items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 3, 4]}
  patch: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 4]}
- description: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  patch: {$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3], mergingIntList: [4]}
  result: {mergingIntList: [1, 2, 4]}
- description: merge lists of maps
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  result: {mergingList: [{name: 4, value: 4}, {name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- description: merge lists of maps with conflict
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- description: add field to map in merging list
  original: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}]
  result: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
"""
)


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=[c["description"] for c in UPSTREAM_CASES])
def test_patch_applies_as_upstream(case: dict[str, Any]) -> None:
    assert strategicpatch.apply(case["original"], case["patch"], MERGE_ITEM) == case["result"]


def test_apply_changes_neither_argument() -> None:
    original = {"mergingList": [{"name": 1, "value": "a"}]}
    patch = {"mergingList": [{"name": 1, "value": "b"}, {"name": 2}]}
    strategicpatch.apply(original, patch, MERGE_ITEM)
    assert original == {"mergingList": [{"name": 1, "value": "a"}]}
    assert patch == {"mergingList": [{"name": 1, "value": "b"}, {"name": 2}]}


@pytest.mark.parametrize(
    ("original", "patch", "result"),
    [
        pytest.param(
            {"retainKeysMap": {"name": "foo", "value": "a", "other": "b"}},
            {"retainKeysMap": {"$retainKeys": ["name", "value"], "value": "c"}},
            {"retainKeysMap": {"name": "foo", "value": "c"}},
            id="retainKeys drops the live keys it does not list",
        ),
        pytest.param(
            {"retainKeysMergingList": [{"name": "a", "value": "x", "other": "y"}]},
            {"retainKeysMergingList": [{"name": "a", "$retainKeys": ["name", "other"]}]},
            {"retainKeysMergingList": [{"name": "a", "other": "y"}]},
            id="retainKeys applies inside a merged list item",
        ),
        pytest.param(
            {"replacingItem": {"a": 1, "b": 2}},
            {"replacingItem": {"c": 3}},
            {"replacingItem": {"c": 3}},
            id="a field with strategy replace is replaced, not merged",
        ),
        pytest.param(
            {"nonMergingList": [{"name": 1}, {"name": 2}]},
            {"nonMergingList": [{"name": 3}]},
            {"nonMergingList": [{"name": 3}]},
            id="a list without merge strategy is replaced",
        ),
        pytest.param(
            {},
            {"mergingList": [{"name": 1, "$patch": "delete"}, {"name": 2, "value": None}]},
            {"mergingList": [{"name": 2}]},
            id="directives and nulls do not leak into a list the object lacked",
        ),
        pytest.param(
            {"simpleMap": {"a": "1"}},
            {"simpleMap": ["x"]},
            {"simpleMap": ["x"]},
            id="a value of another JSON type replaces the live one",
        ),
        pytest.param(
            {"mergingIntList": [1, 2]},
            {"$deleteFromPrimitiveList/mergingIntList": [2, 5]},
            {"mergingIntList": [1]},
            id="deleteFromPrimitiveList removes listed scalars and ignores absent ones",
        ),
        pytest.param(
            {},
            {"$deleteFromPrimitiveList/mergingIntList": [2]},
            {},
            id="deleteFromPrimitiveList on a missing list adds nothing",
        ),
        pytest.param(
            {"mergingIntList": [1]},
            {"$deleteFromPrimitiveList/mergingIntList": [2], "mergingIntList": [2, 3]},
            {"mergingIntList": [3, 1]},
            id="a scalar both added and deleted is deleted whatever the key order",
        ),
        pytest.param(
            {},
            {"mergingList": [{"name": 1, "value": "a"}, {"name": 1, "value": "b"}]},
            {"mergingList": [{"name": 1, "value": "a"}, {"name": 1, "value": "b"}]},
            id="a new list is taken as sent, duplicates included",
        ),
    ],
)
def test_directives(
    original: dict[str, Any], patch: dict[str, Any], result: dict[str, Any]
) -> None:
    assert strategicpatch.apply(original, patch, MERGE_ITEM) == result


@pytest.mark.parametrize(
    ("original", "patch", "message", "unprocessable"),
    [
        pytest.param(
            {"mergingList": [{"name": 1}, {"name": 3}, {"name": 2}]},
            {
                "$setElementOrder/mergingList": [{"name": 1}, {"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3, "value": 3}, {"name": 1, "value": 1}],
            },
            "doesn't match",
            False,
            id="setElementOrder must agree with the order of the patch list",
        ),
        pytest.param(
            {"mergingIntList": [1, 3, 2]},
            {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]},
            "doesn't match",
            False,
            id="setElementOrder must agree with the order of the patch int list",
        ),
        pytest.param(
            {"mergingList": [{"name": 1, "value": "a"}]},
            {"mergingList": [{"value": "b"}]},
            "does not contain declared merge key",
            False,
            id="an item without the merge key is refused",
        ),
        pytest.param(
            {"mergingList": [{"name": 1}]},
            {"mergingList": [{"name": 1, "$patch": "merge"}]},
            "merging lists cannot yet be specified",
            False,
            id="patch merge as a list item is refused as upstream",
        ),
        pytest.param(
            {"simpleMap": {}},
            {"simpleMap": {"$patch": "bogus"}},
            "unknown patch type: bogus",
            False,
            id="an unknown patch type is refused",
        ),
        pytest.param(
            {"retainKeysMap": {"name": "a"}},
            {"retainKeysMap": {"$retainKeys": ["name"], "value": "b"}},
            "not present in $retainKeys",
            True,
            id="a patched key outside retainKeys is unprocessable",
        ),
        pytest.param(
            {"mergingIntList": [[1]]},
            {"mergingIntList": [[2]]},
            "lists of lists",
            True,
            id="lists of lists are unprocessable",
        ),
        pytest.param(
            {},
            {"$bogus": 1},
            "unknown directive",
            False,
            id="an unknown directive is refused",
        ),
    ],
)
def test_bad_patches_are_refused_naming_why(
    original: dict[str, Any], patch: dict[str, Any], message: str, unprocessable: bool
) -> None:
    with pytest.raises(StrategicPatchError, match=message.replace("$", r"\$")) as err:
        strategicpatch.apply(original, patch, MERGE_ITEM)
    assert err.value.unprocessable is unprocessable


def _pod_schema() -> PatchSchema:
    return schema_for(BY_KIND["Pod"].message.DESCRIPTOR)


def _node_schema() -> PatchSchema:
    return schema_for(BY_KIND["Node"].message.DESCRIPTOR)


def test_kubectl_cordon_sets_unschedulable() -> None:
    node = encode(MakeNode().name("n1").label("a", "b").obj())
    out = strategicpatch.apply(node, {"spec": {"unschedulable": True}}, _node_schema())
    assert out["spec"] == {"unschedulable": True}
    assert out["metadata"] == {"name": "n1", "labels": {"a": "b"}}


def test_kubectl_label_merges_labels_and_null_removes_one() -> None:
    pod = encode(MakePod().name("p").labels({"a": "1", "b": "2"}).obj())
    out = strategicpatch.apply(pod, {"metadata": {"labels": {"a": None, "c": "3"}}}, _pod_schema())
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_kubectl_taint_replaces_the_atomic_taint_list() -> None:
    node = encode(MakeNode().name("n1").taints([{"key": "a", "effect": "NoSchedule"}]).obj())
    taints = [{"key": "b", "effect": "NoExecute"}]
    out = strategicpatch.apply(node, {"spec": {"taints": taints}}, _node_schema())
    assert out["spec"]["taints"] == taints


def test_containers_merge_by_name_and_env_by_name() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
                {"name": "b", "image": "b:1"},
            ]
        }
    }
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}],
        }
    }
    out = strategicpatch.apply(pod, patch, _pod_schema())
    # Without $setElementOrder for env, a new item goes before the live-only ones (upstream:
    # a live-only item is placed before a patch item only when both are live).
    assert out["spec"]["containers"] == [
        {
            "name": "a",
            "image": "a:1",
            "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}],
        },
        {"name": "b", "image": "b:1"},
    ]


def test_finalizers_merge_as_a_set_and_tolerations_replace() -> None:
    pod = {
        "metadata": {"finalizers": ["a"]},
        "spec": {"tolerations": [{"key": "x", "operator": "Exists"}]},
    }
    patch = {
        "metadata": {"finalizers": ["b", "a"]},
        "spec": {"tolerations": [{"key": "y", "operator": "Exists"}]},
    }
    out = strategicpatch.apply(pod, patch, _pod_schema())
    assert out["metadata"]["finalizers"] == ["b", "a"]
    assert out["spec"]["tolerations"] == [{"key": "y", "operator": "Exists"}]


def test_status_conditions_merge_by_type() -> None:
    pod = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"},
            ]
        }
    }
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    out = strategicpatch.apply(pod, patch, _pod_schema())
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_deployment_strategy_retain_keys_drops_rolling_update() -> None:
    deploy = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    schema = schema_for(BY_KIND["Deployment"].message.DESCRIPTOR)
    out = strategicpatch.apply(deploy, patch, schema)
    assert out["spec"]["strategy"] == {"type": "Recreate"}
