"""The namespace lifecycle (services/apiserver/deletion.py), with the cases of upstream's
pkg/controller/namespace/deletion/namespaced_resources_deleter_test.go
(testSyncNamespaceThatIsTerminating: content deleted, the "kubernetes" finalizer removed
once empty; TestSyncNamespaceThatIsActive: nothing deleted) and status_condition_utils_test.go
(the conditions of a terminating namespace), plus NamespaceLifecycle admission
(plugin/pkg/admission/namespace/lifecycle/admission_test.go: create in a terminating or
missing namespace is refused)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ForbiddenError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.deletion import namespace_conditions
from services.apiserver.registry import ApiServer
from tests.builders import MakePod

NAMESPACES, PODS = BY_KIND["Namespace"], BY_KIND["Pod"]


def _ns(name: str) -> core_pb2.Namespace:
    ns = core_pb2.Namespace(api_version="v1", kind="Namespace")
    ns.metadata.name = name
    return ns


def _pod(name: str, ns: str, *finalizers: str) -> core_pb2.Pod:
    pod = MakePod().typed().name(name).namespace(ns).container("c", "x").obj()
    pod.metadata.finalizers.extend(finalizers)
    return pod


async def test_an_active_namespace_keeps_its_content(api: ApiServer) -> None:
    await api.create(_ns("active"))
    await api.create(_pod("p", "active"))
    ns: Any = await api.get(NAMESPACES, "", "active")
    assert ns.status.phase == "Active" and list(ns.spec.finalizers) == ["kubernetes"]
    assert await api.get_or_none(PODS, "active", "p") is not None


async def test_a_terminating_namespace_is_emptied_then_goes(api: ApiServer) -> None:
    await api.create(_ns("doomed"))
    for name in ("a", "b"):
        await api.create(_pod(name, "doomed"))
    await api.create(_pod("held", "doomed", "example.com/hold"))
    out: Any = await api.delete(NAMESPACES, "", "doomed")
    assert out.status.phase == "Terminating" and out.metadata.deletion_timestamp
    ns: Any = await api.get(NAMESPACES, "", "doomed")
    conds = {c.type: (c.status, c.reason, c.message) for c in ns.status.conditions}
    assert conds["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: pods has 1 resource instances",
    )
    assert conds["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    )
    assert conds["NamespaceDeletionDiscoveryFailure"] == (
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    )
    assert await api.get_or_none(PODS, "doomed", "a") is None
    with pytest.raises(ForbiddenError) as e:
        await api.create(_pod("late", "doomed"))
    assert str(e.value) == (
        'pods "late" is forbidden: unable to create new content in namespace doomed because it is being terminated'
    )
    held: Any = await api.get(PODS, "doomed", "held")
    held.metadata.ClearField("finalizers")
    await api.update(held)
    assert await api.get_or_none(NAMESPACES, "", "doomed") is None


async def test_create_in_a_missing_namespace_is_refused(api: ApiServer) -> None:
    with pytest.raises(NotFoundError) as e:
        await api.create(_pod("p", "nowhere"))
    assert str(e.value) == 'namespaces "nowhere" not found'


def test_conditions_when_all_content_is_gone_are_all_false_with_the_ok_reasons() -> None:
    conds = namespace_conditions({}, {}, "2026-01-01T00:00:00Z", [])
    assert [(c.type, c.status, c.reason) for c in conds] == [
        ("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered"),
        ("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions"),
        ("NamespaceDeletionContentFailure", "False", "ContentDeleted"),
        ("NamespaceContentRemaining", "False", "ContentRemoved"),
        ("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers"),
    ]


def test_an_unchanged_condition_keeps_its_transition_time() -> None:
    first = namespace_conditions({"pods": 2}, {}, "2026-01-01T00:00:00Z", [])
    again = namespace_conditions({"pods": 2}, {}, "2026-01-01T00:01:00Z", first)
    moved = namespace_conditions({"pods": 1}, {}, "2026-01-01T00:02:00Z", again)
    by = {c.type: c for c in again}
    assert by["NamespaceContentRemaining"].last_transition_time == "2026-01-01T00:00:00Z"
    assert {c.type: c for c in moved}["NamespaceContentRemaining"].last_transition_time == (
        "2026-01-01T00:02:00Z"
    )
    remaining = {"replicasets.apps": 1, "pods": 3}
    msg = {c.type: c for c in namespace_conditions(remaining, {}, "t", [])}[
        "NamespaceContentRemaining"
    ]
    assert (
        msg.message
        == "Some resources are remaining: pods has 3 resource instances, replicasets.apps has 1 resource instances"
    )
