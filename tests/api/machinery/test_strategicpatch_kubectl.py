"""Strategic merge patch checked against upstream itself: `kubectl patch --local` (kubectl
1.32 on PATH) applies the same patch with apimachinery's strategicpatch and k8s.io/api's
struct tags, offline; kubera's apply_patch must give the same object, or refuse the
patch when kubectl does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from services.api.machinery.codec import decode, encode
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.api.machinery.patching import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
)

KUBECTL = shutil.which("kubectl")

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "labels": {"a": "1", "b": "2"},
        "finalizers": ["x", "y"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}
        ],
    },
    "spec": {
        "containers": [
            {
                "name": "a",
                "image": "a:1",
                "env": [{"name": "X", "value": "1"}, {"name": "Z", "value": "3"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
            },
            {"name": "b", "image": "b:1", "args": ["--one"]},
        ],
        "tolerations": [{"key": "t", "operator": "Exists"}],
        "volumes": [{"name": "v", "hostPath": {"path": "/x"}}],
    },
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
        ]
    },
}
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "spec": {
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
        "podCIDRs": ["10.0.0.0/24"],
    },
    "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]},
}
DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "a"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "a", "image": "a:1"}]},
        },
    },
}

CASES = [
    ("kubectl cordon", NODE, {"spec": {"unschedulable": True}}),
    ("kubectl label and unlabel", POD, {"metadata": {"labels": {"a": None, "c": "3"}}}),
    (
        "kubectl taint replaces the atomic list",
        NODE,
        {"spec": {"taints": [{"key": "n", "effect": "NoExecute"}]}},
    ),
    (
        "client-side apply with setElementOrder",
        POD,
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "a:2"}],
            }
        },
    ),
    ("new container goes first", POD, {"spec": {"containers": [{"name": "c", "image": "c"}]}}),
    (
        "delete a container by key",
        POD,
        {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}},
    ),
    (
        "replace the container list",
        POD,
        {"spec": {"containers": [{"name": "c", "image": "c"}, {"$patch": "replace"}]}},
    ),
    (
        "env merges by name",
        POD,
        {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}},
    ),
    (
        "env order from setElementOrder",
        POD,
        {
            "spec": {
                "containers": [
                    {
                        "name": "a",
                        "$setElementOrder/env": [{"name": "Z"}, {"name": "Y"}, {"name": "X"}],
                        "env": [{"name": "Y", "value": "2"}],
                    }
                ]
            }
        },
    ),
    (
        "ports merge on containerPort",
        POD,
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 81}]}]}},
    ),
    ("args are atomic", POD, {"spec": {"containers": [{"name": "b", "args": ["--two"]}]}}),
    ("finalizers merge as a set", POD, {"metadata": {"finalizers": ["z", "x"]}}),
    ("deleteFromPrimitiveList", POD, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
    ("labels replaced whole", POD, {"metadata": {"labels": {"$patch": "replace", "z": "1"}}}),
    (
        "ownerReferences merge by uid",
        POD,
        {
            "metadata": {
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"}]
            }
        },
    ),
    (
        "tolerations are atomic",
        POD,
        {"spec": {"tolerations": [{"key": "u", "operator": "Exists"}]}},
    ),
    (
        "volumes retainKeys",
        POD,
        {"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "emptyDir"], "emptyDir": {}}]}},
    ),
    (
        "status conditions merge by type",
        POD,
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    ),
    (
        "node addresses merge by type",
        NODE,
        {"status": {"addresses": [{"type": "Hostname", "address": "n1"}]}},
    ),
    ("podCIDRs merge as a set", NODE, {"spec": {"podCIDRs": ["10.0.1.0/24"]}}),
    ("kubectl scale", DEPLOY, {"spec": {"replicas": 5}}),
    (
        "deployment strategy retainKeys",
        DEPLOY,
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
    ),
    (
        "kubectl rollout restart annotates the template",
        DEPLOY,
        {
            "spec": {
                "template": {
                    "metadata": {
                        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
                    }
                }
            }
        },
    ),
    ("a null deletes a whole field", DEPLOY, {"spec": {"strategy": None}}),
    ("delete a whole map", POD, {"metadata": {"labels": {"$patch": "delete"}}}),
    (
        "setElementOrder naming an absent item",
        POD,
        {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "q"}, {"name": "a"}]}},
    ),
    (
        "setElementOrder out of step with the patch is refused",
        POD,
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b", "image": "b:2"}, {"name": "a", "image": "a:2"}],
            }
        },
    ),
    (
        "lists and maps the object lacks",
        NODE,
        {"metadata": {"finalizers": ["f"]}, "spec": {"podCIDRs": ["10.9.0.0/24"]}},
    ),
    (
        "retainKeys refuses a patched key it does not list",
        DEPLOY,
        {
            "spec": {
                "strategy": {
                    "$retainKeys": ["type"],
                    "type": "Recreate",
                    "rollingUpdate": {"maxSurge": 2},
                }
            }
        },
    ),
    (
        "delete two containers and add one",
        POD,
        {
            "spec": {
                "containers": [
                    {"name": "a", "$patch": "delete"},
                    {"name": "c", "image": "c"},
                    {"name": "b", "$patch": "delete"},
                ]
            }
        },
    ),
    (
        "nested null removes a container field",
        POD,
        {"spec": {"containers": [{"name": "b", "args": None}]}},
    ),
    (
        "a new list keeps duplicate keys as sent",
        POD,
        {
            "spec": {
                "containers": [
                    {"name": "b", "env": [{"name": "Q", "value": "1"}, {"name": "Q", "value": "2"}]}
                ]
            }
        },
    ),
    (
        "an empty setElementOrder passes",
        POD,
        {"metadata": {"finalizers": ["x"], "$setElementOrder/finalizers": []}},
    ),
    ("missing merge key is refused", POD, {"spec": {"containers": [{"image": "q"}]}}),
    (
        "patch merge in a list is refused",
        POD,
        {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}},
    ),
]


def kubectl_patch(
    tmp_path: Path, obj: dict[str, Any], patch_type: str, patch: Any
) -> dict[str, Any] | None:
    """kubectl's result, or None when kubectl refuses the patch."""
    src = tmp_path / "obj.json"
    src.write_text(json.dumps(obj))
    assert KUBECTL is not None, "these tests run real kubectl: put kubectl 1.32 on PATH"
    done = subprocess.run(
        [
            KUBECTL,
            "patch",
            "--local",
            "-f",
            str(src),
            "--type",
            patch_type,
            "-p",
            json.dumps(patch),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "KUBECONFIG": os.devnull},
        check=False,
    )
    if done.returncode != 0:
        return None
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def normalized(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """Through kubera's codec, as the apiserver stores a patched object: both sides lose the
    same representation noise (empty maps, nulls) and keep every value."""
    return None if obj is None else encode(decode(obj, validate="ignore").obj)


def kubera_patch(obj: dict[str, Any], content_type: str, patch: Any) -> dict[str, Any] | None:
    try:
        return apply_patch(BY_KIND[obj["kind"]], obj, content_type, json.dumps(patch).encode())
    except ApiError:
        return None


@pytest.mark.parametrize(("name", "obj", "patch"), CASES, ids=[c[0] for c in CASES])
def test_strategic_merge_patch_matches_kubectl(
    name: str, obj: dict[str, Any], patch: Any, tmp_path: Path
) -> None:
    assert kubera_patch(obj, STRATEGIC_MERGE_PATCH, patch) == kubectl_patch(
        tmp_path, obj, "strategic", patch
    )


@pytest.mark.parametrize(
    ("content_type", "patch_type", "patch"),
    [
        (MERGE_PATCH, "merge", {"metadata": {"finalizers": ["q"], "labels": {"a": None}}}),
        (JSON_PATCH, "json", [{"op": "replace", "path": "/spec/containers/0/image", "value": "z"}]),
        (JSON_PATCH, "json", [{"op": "add", "path": "/metadata/finalizers/-", "value": "w"}]),
        (JSON_PATCH, "json", [{"op": "test", "path": "/metadata/name", "value": "other"}]),
        (JSON_PATCH, "json", [{"op": "remove", "path": "/metadata/nothere"}]),
    ],
    ids=["merge", "json replace", "json append", "json failing test", "json remove missing"],
)
def test_merge_and_json_patch_match_kubectl(
    content_type: str, patch_type: str, patch: Any, tmp_path: Path
) -> None:
    ours = kubera_patch(POD, content_type, patch)
    assert normalized(ours) == normalized(kubectl_patch(tmp_path, POD, patch_type, patch))


# ---------------------------------------------------------------- the list-type table


Step = tuple[str, str, bool]  # (owner message, json name, is a list)


def _list_fields() -> list[tuple[str, tuple[Step, ...], Any]]:
    """(kind, path from the root, (owner, field)) for the first place each list field of
    each kind is reached."""
    out: list[tuple[str, tuple[Step, ...], Any]] = []
    seen: set[tuple[str, str]] = set()
    for kind in BY_KIND.values():
        _walk(kind.name, kind.message.DESCRIPTOR, (), seen, out)
    return out


def _walk(
    kind: str, desc: Any, path: tuple[Step, ...], seen: set[tuple[str, str]], out: list[Any]
) -> None:
    if len(path) > 8 or not desc.full_name.startswith("kubera."):
        return
    for f in desc.fields:
        mt = f.message_type
        is_map = mt is not None and mt.GetOptions().map_entry
        step = (desc.full_name, f.json_name, bool(f.is_repeated))
        if f.is_repeated and not is_map and (desc.full_name, f.json_name) not in seen:
            seen.add((desc.full_name, f.json_name))
            out.append((kind, (*path, step), (desc, f)))
        if mt is not None and not is_map and (f.json_name != "metadata" or not path):
            _walk(kind, mt, (*path, step), seen, out)


def _sample(desc: Any, name: str, n: int) -> Any:
    """A value of field `name` of message `desc` (or a string when the message is a Struct)."""
    f = {g.json_name: g for g in desc.fields}.get(name) if desc is not None else None
    if f is None or f.type == f.TYPE_STRING:
        return f"v{n}"
    if f.type == f.TYPE_BOOL:
        return n == 1
    return 80 + n


def _item(field: Any, n: int) -> Any:
    from services.api.machinery.listtypes import strategy

    owner, f = field
    st = strategy(owner.full_name, f.json_name)
    mt = f.message_type
    if mt is None:
        return _sample(owner, f.json_name, n) if f.type != f.TYPE_STRING else f"v{n}"
    if mt.full_name == "google.protobuf.Struct":
        return {(st.merge_key if st and st.merge_key else "name"): f"v{n}"}
    if st is not None and st.merge_key:
        return {st.merge_key: _sample(mt, st.merge_key, n)}
    return _minimal(mt, n)


def _minimal(mt: Any, n: int) -> dict[str, Any]:
    """An object of message `mt` with one field set to a value told apart by `n`."""
    first = next((g for g in mt.fields if g.message_type is None and not g.is_repeated), None)
    if first is not None:
        return {first.json_name: _sample(mt, first.json_name, n)}
    g = mt.fields[0]
    sub = _minimal(g.message_type, n) if g.message_type is not None else f"v{n}"
    return {g.json_name: [sub] if g.is_repeated else sub}


def _nest(path: tuple[Step, ...], leaf: list[Any]) -> dict[str, Any]:
    """`leaf` (the list) at `path`; a list on the way holds one item, with its merge key."""
    from services.api.machinery.listtypes import strategy

    def build(i: int) -> Any:
        owner, name, is_list = path[i]
        if i == len(path) - 1:
            return {name: leaf}
        child = build(i + 1)
        if not is_list:
            return {name: child}
        st = strategy(owner, name)
        if st is not None and st.merge_key:
            child = {st.merge_key: "p", **child}
        return {name: [child]}

    return build(0)  # type: ignore[no-any-return]


#: kubectl 1.32 predates resource.k8s.io/v1 (1.34) and patches only the types it compiles
#: in; its resource.k8s.io/v1beta1 carries the same list tags on every list both versions
#: have. The v1-only lists (requests[].exactly, requests[].firstAvailable) sit below the
#: atomic spec.devices.requests, which kubectl replaces whole without looking inside; their
#: tags are checked against the markers in test_strategicpatch_listtypes.py.
KUBECTL_API_VERSION = {"resource.k8s.io/v1": "resource.k8s.io/v1beta1"}

#: Kinds kubectl 1.32 has no Go type for (it refuses to patch them offline): 1.35's
#: scheduling.k8s.io/v1alpha1 Workload, and DeviceTaintRule (v1alpha3 from 1.33). Their
#: lists are checked against the tags of upstream's types.go (below, and in
#: test_strategicpatch_listtypes.py).
KUBECTL_UNKNOWN = frozenset({"Workload", "DeviceTaintRule", SCHEDULING_POD_GROUP})
#: Lists newer than kubectl 1.32's types outside an atomic list it replaces whole (it
#: refuses a patch naming them); their tags are checked in test_strategicpatch_listtypes.py.
#: dracounters: ResourceSliceSpec.sharedCounters (1.33, partitionable devices);
#: NodeStatus.declaredFeatures (1.35, NodeDeclaredFeatures; +listType=atomic).
KUBECTL_UNKNOWN_FIELDS = {
    ("kubera.v1.ResourceSliceSpec", "sharedCounters"),
    ("kubera.v1.NodeStatus", "declaredFeatures"),
}

#: draext: PodStatus.extendedResourceClaimStatus (1.34, DRAExtendedResource).
KUBECTL_UNKNOWN_FIELDS.add(("kubera.v1.PodExtendedResourceClaimStatus", "requestMappings"))

# kubectl never prints metadata.managedFields (--show-managed-fields defaults to false).
LIST_FIELDS = [
    f
    for f in _list_fields()
    if f[1][-1][1] != "managedFields"
    and f[0] not in KUBECTL_UNKNOWN
    and f[1][-1][:2] not in KUBECTL_UNKNOWN_FIELDS
]


def test_a_workloads_pod_groups_are_replaced_whole_by_a_strategic_patch() -> None:
    """WorkloadSpec.PodGroups is +listType=map by name with no patchStrategy tag: a
    strategic merge patch replaces the list (server-side apply merges it by name)."""
    obj = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"podGroups": [{"name": "a", "policy": {"basic": {}}}]},
    }
    patch = {"spec": {"podGroups": [{"name": "b", "policy": {"gang": {"minCount": 2}}}]}}
    got = kubera_patch(obj, STRATEGIC_MERGE_PATCH, patch)
    assert got is not None
    assert got["spec"]["podGroups"] == patch["spec"]["podGroups"]


@pytest.mark.parametrize(
    ("kind", "path", "field"),
    LIST_FIELDS,
    ids=[f"{k}:{'.'.join(n for _, n, _ in p)}" for k, p, _ in LIST_FIELDS],
)
def test_every_list_field_patches_as_kubectl(
    kind: str, path: tuple[Step, ...], field: Any, tmp_path: Path
) -> None:
    """Each list field of each kind, patched with a new item: kubectl (k8s.io/api's struct
    tags) and kubera (services/api/machinery/listtypes.py) must merge or replace it alike."""
    api_version = BY_KIND[kind].api_version
    head = {"apiVersion": api_version, "kind": BY_KIND[kind].kind, "metadata": {"name": "o"}}
    obj = {**_nest(path, [_item(field, 1)]), **head}
    if path[0][1] == "metadata":
        obj["metadata"] = {**obj["metadata"], "name": "o"}
    patch = _nest(path, [_item(field, 2)])
    asked = {**obj, "apiVersion": KUBECTL_API_VERSION.get(api_version, api_version)}
    theirs = kubectl_patch(tmp_path, asked, "strategic", patch)
    assert theirs is not None, "kubectl refused the patch"
    theirs["apiVersion"] = api_version
    assert kubera_patch(obj, STRATEGIC_MERGE_PATCH, patch) == theirs
