"""The apiserver's part of the namespace lifecycle (services/apiserver/deletion.py and
update.finalize), as upstream's pkg/registry/core/namespace/storage (storage_test.go:
TestDeleteNamespaceWithIncompleteFinalizers, TestDeleteNamespaceWithCompleteFinalizers,
TestUpdateDeletingNamespaceWithIncompleteMetadataFinalizers...) and strategy.go
(the "kubernetes" finalizer at create; spec.finalizers kept by updates, changed only by
namespaces/finalize), plus NamespaceLifecycle admission
(plugin/pkg/admission/namespace/lifecycle/admission_test.go: create in a terminating or
missing namespace is refused). Emptying the namespace is the namespace controller's
(tests/controllers/test_namespace.py): here, without it, a deleted namespace stays
Terminating with its content, as upstream's does."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ForbiddenError, InvalidError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from tests.builders import MakePod

NAMESPACES, PODS = BY_KIND["Namespace"], BY_KIND["Pod"]


def _ns(name: str, *spec_finalizers: str) -> core_pb2.Namespace:
    ns = core_pb2.Namespace(api_version="v1", kind="Namespace")
    ns.metadata.name = name
    ns.spec.finalizers.extend(spec_finalizers)
    return ns


def _pod(name: str, ns: str, *finalizers: str) -> core_pb2.Pod:
    pod = MakePod().typed().name(name).namespace(ns).container("c", "x").obj()
    pod.metadata.finalizers.extend(finalizers)
    return pod


async def _finalize(api: ApiServer, name: str, *finalizers: str) -> Any:
    ns: Any = await api.get(NAMESPACES, "", name)
    ns.spec.finalizers[:] = finalizers
    return await api.finalize(ns)


async def test_a_new_namespace_is_active_with_the_kubernetes_finalizer(api: ApiServer) -> None:
    await api.create(_ns("active"))
    await api.create(_ns("other", "example.com/mine"))
    ns: Any = await api.get(NAMESPACES, "", "active")
    assert ns.status.phase == "Active" and list(ns.spec.finalizers) == ["kubernetes"]
    other: Any = await api.get(NAMESPACES, "", "other")
    assert list(other.spec.finalizers) == ["example.com/mine", "kubernetes"]


async def test_delete_marks_terminating_and_leaves_content_to_the_controller(
    api: ApiServer,
) -> None:
    await api.create(_ns("doomed"))
    await api.create(_pod("a", "doomed"))
    out: Any = await api.delete(NAMESPACES, "", "doomed")
    assert out.status.phase == "Terminating" and out.metadata.deletion_timestamp
    assert list(out.spec.finalizers) == ["kubernetes"]
    # nothing emptied it: the pod is there, the namespace stays
    assert await api.get_or_none(PODS, "doomed", "a") is not None
    again: Any = await api.delete(NAMESPACES, "", "doomed")
    assert again.metadata.deletion_timestamp == out.metadata.deletion_timestamp
    assert (await api.get(NAMESPACES, "", "doomed")).status.phase == "Terminating"  # type: ignore[attr-defined]


async def test_create_in_a_terminating_namespace_is_forbidden(api: ApiServer) -> None:
    await api.create(_ns("doomed"))
    await api.delete(NAMESPACES, "", "doomed")
    with pytest.raises(ForbiddenError) as e:
        await api.create(_pod("late", "doomed"))
    assert str(e.value) == (
        'pods "late" is forbidden: unable to create new content in namespace doomed because it is being terminated'
    )


async def test_an_update_keeps_spec_finalizers(api: ApiServer) -> None:
    await api.create(_ns("kept"))
    ns: Any = await api.get(NAMESPACES, "", "kept")
    ns.spec.ClearField("finalizers")
    ns.metadata.labels["x"] = "y"
    out: Any = await api.update(ns)
    assert list(out.spec.finalizers) == ["kubernetes"] and out.metadata.labels["x"] == "y"


async def test_finalize_changes_spec_finalizers_and_keeps_status(api: ApiServer) -> None:
    await api.create(_ns("fin"))
    ns: Any = await api.get(NAMESPACES, "", "fin")
    ns.spec.finalizers[:] = ["example.com/a"]
    ns.status.phase = "Terminating"
    out: Any = await api.finalize(ns)
    assert list(out.spec.finalizers) == ["example.com/a"] and out.status.phase == "Active"
    with pytest.raises(InvalidError) as e:
        await _finalize(api, "fin", "bogus")
    assert "spec.finalizers[0]" in str(e.value)


async def test_finalize_of_a_terminating_namespace_removes_it_when_nothing_holds_it(
    api: ApiServer,
) -> None:
    await api.create(_ns("two", "example.com/other"))
    await api.delete(NAMESPACES, "", "two")
    out: Any = await _finalize(api, "two", "example.com/other")
    assert list(out.spec.finalizers) == ["example.com/other"]
    assert await api.get_or_none(NAMESPACES, "", "two") is not None
    await _finalize(api, "two")
    assert await api.get_or_none(NAMESPACES, "", "two") is None


async def test_metadata_finalizers_hold_a_finalized_namespace(api: ApiServer) -> None:
    ns = _ns("meta")
    ns.metadata.finalizers.append("example.com/meta")
    await api.create(ns)
    await api.delete(NAMESPACES, "", "meta")
    await _finalize(api, "meta")
    held: Any = await api.get(NAMESPACES, "", "meta")
    assert held.metadata.deletion_timestamp and not held.spec.finalizers
    held.metadata.ClearField("finalizers")
    await api.update(held)
    assert await api.get_or_none(NAMESPACES, "", "meta") is None


async def test_finalize_is_only_for_namespaces(api: ApiServer) -> None:
    await api.create(_ns("p"))
    await api.create(_pod("a", "p"))
    with pytest.raises(NotFoundError):
        await api.finalize(await api.get(PODS, "p", "a"))


async def test_create_in_a_missing_namespace_is_refused(api: ApiServer) -> None:
    with pytest.raises(NotFoundError) as e:
        await api.create(_pod("p", "nowhere"))
    assert str(e.value) == 'namespaces "nowhere" not found'
