"""The namespace controller (services/controllers/namespace.py), with the cases of
upstream's pkg/controller/namespace/deletion/namespaced_resources_deleter_test.go
(TestFinalizeNamespaceFunc, testSyncNamespaceThatIsTerminating's scenarios
pending-finalize / complete-finalize / groupVersionResourceErr-finalize,
TestSyncNamespaceThatIsActive, TestRetryOnConflictError) and status_condition_utils_test.go
(the five conditions, their reasons and messages, and when lastTransitionTime moves),
on a real gRPC apiserver over the in-memory store. The deleter's calls are recorded as
upstream's tests record the fake clientset's actions (verb-resource-subresource)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ConflictError
from services.api.machinery.kinds import BY_KIND, Kind
from services.client import Client, SharedInformers
from services.controllers.namespace import (
    FINALIZER_ESTIMATE_SECONDS,
    ConditionUpdater,
    ContentError,
    NamespaceConfig,
    NamespaceController,
    ResourcesRemainingError,
    namespaced_kinds,
    requeue_after,
)
from tests.builders import MakeNode, MakePod
from tests.controllers.conftest import OffsetClock
from tests.harness import ControlPlane, control_plane
from tests.waiting import eventually

NAMESPACES, PODS, SERVICES = BY_KIND["Namespace"], BY_KIND["Pod"], BY_KIND["Service"]
NOW = "2026-12-07T10:00:00Z"


class RecordingClient(Client):
    """A client that records verb-resource-subresource, as client-go's fake does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actions: list[str] = []

    async def get(self, kind: Kind, name: str, namespace: str = "") -> Any:
        self.actions.append(f"get-{kind.resource}-")
        return await super().get(kind, name, namespace)

    async def list(self, kind: Kind, **kw: Any) -> Any:  # type: ignore[override]
        self.actions.append(f"list-{kind.resource}-")
        return await super().list(kind, **kw)

    async def update_status(self, obj: Any) -> Any:
        self.actions.append("update-namespaces-status")
        return await super().update_status(obj)

    async def finalize(self, obj: Any) -> Any:
        self.actions.append("create-namespaces-finalize")
        return await super().finalize(obj)

    async def delete(self, kind: Kind, name: str, namespace: str = "", **kw: Any) -> Any:
        self.actions.append(f"delete-{kind.resource}-")
        return await super().delete(kind, name, namespace, **kw)


@pytest.fixture
async def cp() -> AsyncIterator[ControlPlane]:
    async with control_plane() as plane:
        yield plane


def _ns(name: str, *spec_finalizers: str, meta_finalizers: tuple[str, ...] = ()) -> Any:
    ns = core_pb2.Namespace(api_version="v1", kind="Namespace")
    ns.metadata.name = name
    ns.spec.finalizers.extend(spec_finalizers)
    ns.metadata.finalizers.extend(meta_finalizers)
    return ns


def _pod(name: str, ns: str, *finalizers: str, node: str = "") -> core_pb2.Pod:
    b = MakePod().typed().name(name).namespace(ns).container("c", "x")
    if node:
        b = b.node(node)
    pod = b.obj()
    pod.metadata.finalizers.extend(finalizers)
    return pod


def _service(name: str, ns: str, *finalizers: str) -> Any:
    svc = BY_KIND["Service"].new()
    svc.metadata.name, svc.metadata.namespace = name, ns
    svc.metadata.finalizers.extend(finalizers)
    port = svc.spec.ports.add()
    port.port = 80
    return svc


def _deleter(
    cp: ControlPlane, *, clock: OffsetClock | None = None, **kw: Any
) -> tuple[NamespaceController, RecordingClient]:
    client = cp.new_client(RecordingClient)
    ctl = NamespaceController(client, SharedInformers(client), clock=clock or OffsetClock(), **kw)
    return ctl, client


async def _terminating(cp: ControlPlane, name: str, *content: Any, **ns_kw: Any) -> None:
    await cp.api.create(_ns(name, **ns_kw))
    for obj in content:
        await cp.api.create(obj)
    await cp.api.delete(NAMESPACES, "", name)


async def _conditions(cp: ControlPlane, name: str) -> dict[str, tuple[str, str, str]]:
    ns: Any = await cp.api.get(NAMESPACES, "", name)
    return {c.type: (c.status, c.reason, c.message) for c in ns.status.conditions}


# ------------------------------------------------- namespaced_resources_deleter_test.go


async def test_pending_finalize_empties_the_namespace_and_finalizes_it(cp: ControlPlane) -> None:
    await _terminating(cp, "test", _pod("a", "test"), _pod("b", "test"), _service("s", "test"))
    ctl, client = _deleter(cp)
    await ctl.delete("test")
    assert {"get-namespaces-", "list-pods-", "update-namespaces-status"} <= set(client.actions)
    assert client.actions[-1] == "create-namespaces-finalize"
    assert client.actions.count("delete-pods-") == 2 and "delete-services-" in client.actions
    # every namespaced kind listed, as upstream lists each discovered resource
    listed = {a.split("-")[1] for a in client.actions if a.startswith("list-")}
    assert listed == {k.resource for k in namespaced_kinds()}
    assert await cp.api.get_or_none(NAMESPACES, "", "test") is None


async def test_complete_finalize_only_reads_the_namespace(cp: ControlPlane) -> None:
    await _terminating(cp, "test", meta_finalizers=("example.com/hold",))
    ns: Any = await cp.api.get(NAMESPACES, "", "test")
    ns.spec.ClearField("finalizers")
    await cp.api.finalize(ns)  # held by its metadata finalizer only
    ctl, client = _deleter(cp)
    await ctl.delete("test")
    assert client.actions == ["get-namespaces-"]


async def test_a_discovery_error_is_reported_and_nothing_is_finalized(cp: ControlPlane) -> None:
    await _terminating(cp, "test", _pod("a", "test"))
    err = RuntimeError("test error")
    ctl, client = _deleter(cp, discover=lambda: (namespaced_kinds(), err))
    with pytest.raises(ContentError, match="^test error$"):
        await ctl.delete("test")
    assert "create-namespaces-finalize" not in client.actions
    assert {"get-namespaces-", "list-pods-", "update-namespaces-status"} <= set(client.actions)
    conds = await _conditions(cp, "test")
    assert conds["NamespaceDeletionDiscoveryFailure"] == ("True", "DiscoveryFailed", "test error")
    assert (await cp.api.get(NAMESPACES, "", "test")).status.phase == "Terminating"  # type: ignore[attr-defined]
    assert await cp.api.get_or_none(PODS, "test", "a") is None  # content still deleted


async def test_an_active_namespace_is_only_read(cp: ControlPlane) -> None:
    await cp.api.create(_ns("test"))
    await cp.api.create(_pod("a", "test"))
    ctl, client = _deleter(cp)
    await ctl.delete("test")
    assert client.actions == ["get-namespaces-"]
    assert await cp.api.get_or_none(PODS, "test", "a") is not None


async def test_finalize_drops_only_the_kubernetes_finalizer(cp: ControlPlane) -> None:
    await _terminating(cp, "test")
    ns: Any = await cp.api.get(NAMESPACES, "", "test")
    ns.spec.finalizers[:] = ["kubernetes", "example.com/other"]
    await cp.api.finalize(ns)
    ctl, _ = _deleter(cp)
    await ctl.delete("test")
    left: Any = await cp.api.get(NAMESPACES, "", "test")
    assert list(left.spec.finalizers) == ["example.com/other"]


async def test_retry_on_conflict_reads_again_and_retries(cp: ControlPlane) -> None:
    await cp.api.create(_ns("test"))
    ctl, client = _deleter(cp)
    tries = 0

    async def once(ns: Any) -> Any:
        nonlocal tries
        tries += 1
        if tries == 1:
            raise ConflictError("ERROR")
        return ns

    await ctl._retry_on_conflict(await cp.api.get(NAMESPACES, "", "test"), once)  # type: ignore[arg-type]
    assert tries == 2 and client.actions == ["get-namespaces-"]


async def test_content_held_by_a_finalizer_waits_the_finalizer_estimate(cp: ControlPlane) -> None:
    await _terminating(cp, "test", _service("held", "test", "example.com/hold"))
    ctl, client = _deleter(cp)
    with pytest.raises(ResourcesRemainingError) as e:
        await ctl.delete("test")
    assert e.value.estimate == FINALIZER_ESTIMATE_SECONDS and requeue_after(15) == 8
    assert "create-namespaces-finalize" not in client.actions
    conds = await _conditions(cp, "test")
    assert conds["NamespaceContentRemaining"] == (
        "True",
        "SomeResourcesRemain",
        "Some resources are remaining: services. has 1 resource instances",
    )
    assert conds["NamespaceFinalizersRemaining"] == (
        "True",
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    )
    assert conds["NamespaceDeletionContentFailure"][:2] == ("False", "ContentDeleted")
    held: Any = await cp.api.get(SERVICES, "test", "held")
    held.metadata.ClearField("finalizers")
    await cp.api.update(held)
    await ctl.delete("test")
    assert await cp.api.get_or_none(NAMESPACES, "", "test") is None


async def test_a_pending_pod_is_estimated_at_its_grace_period(cp: ControlPlane) -> None:
    await _terminating(cp, "test", _pod("held", "test", "example.com/hold"))
    ctl, _ = _deleter(cp)
    with pytest.raises(ResourcesRemainingError) as e:
        await ctl.delete("test")
    assert e.value.estimate == 30  # terminationGracePeriodSeconds' default, not the 15 s


async def test_terminating_pods_are_waited_for_their_grace_period(cp: ControlPlane) -> None:
    await cp.api.create(MakeNode().typed().name("n1").obj())
    pod = _pod("bound", "test", node="n1")
    pod.spec.termination_grace_period_seconds = 40
    await _terminating(cp, "test", pod)
    clock = OffsetClock()
    ctl, _ = _deleter(cp, clock=clock)
    with pytest.raises(ResourcesRemainingError) as e:
        await ctl.delete("test")
    assert e.value.estimate == 40 and requeue_after(40) == 21
    # once the grace period has passed since the deletion, a pod still there is an error
    clock.advance(41)
    with pytest.raises(ContentError) as failed:
        await ctl.delete("test")
    msg = "unexpected items still remain in namespace: test for gvr: /v1, Resource=pods"
    assert str(failed.value) == msg
    conds = await _conditions(cp, "test")
    assert conds["NamespaceDeletionContentFailure"] == (
        "True",
        "ContentDeletionFailed",
        f"Failed to delete all resource types, 1 remaining: {msg}",
    )


async def test_the_controller_empties_and_removes_a_deleted_namespace(cp: ControlPlane) -> None:
    client = cp.new_client()
    informers = SharedInformers(client)
    ctl = NamespaceController(
        client, informers, config=NamespaceConfig(deletion_grace_period=0.0), clock=OffsetClock()
    )
    stop = asyncio.Event()
    informers.start()
    await informers.wait_synced()
    task = asyncio.create_task(ctl.run(stop))
    try:
        await _terminating(cp, "gone", _pod("a", "gone"), _service("s", "gone"))

        async def gone() -> bool:
            return await cp.api.get_or_none(NAMESPACES, "", "gone") is None

        await eventually(gone, timeout=5)
        assert await cp.api.get_or_none(SERVICES, "gone", "s") is None
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
        await informers.stop()


# ---------------------------------------------------------- status_condition_utils_test.go


def _status(*conds: tuple[str, str, str, str]) -> core_pb2.NamespaceStatus:
    status = core_pb2.NamespaceStatus(phase="Terminating")
    for ctype, st, reason, message in conds:
        status.conditions.add(
            type=ctype, status=st, reason=reason, message=message, last_transition_time=NOW
        )
    return status


def test_no_failures_give_every_condition_false_with_its_ok_reason() -> None:
    status = _status()
    assert ConditionUpdater(now=NOW).update(status)
    assert [(c.type, c.status, c.reason, c.message) for c in status.conditions] == [
        (
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        (
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        (
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
        ),
        (
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    ]
    assert not ConditionUpdater(now="2026-12-07T11:00:00Z").update(status)  # nothing changed


def test_failures_turn_their_conditions_true_and_other_types_stay() -> None:
    status = _status(("Other", "True", "Mine", "kept"))
    u = ConditionUpdater(now=NOW)
    u.discovery_failed(RuntimeError("boom"))
    u.group_version_failed(RuntimeError("bad gv"))
    u.delete_content_failed(RuntimeError("z failed"))
    u.delete_content_failed(RuntimeError("a failed"))
    u.content_totals({"replicasets.apps": 1, "pods.": 3}, {"b/f": 1, "a/f": 2})
    assert u.update(status)
    got = {c.type: (c.status, c.reason, c.message) for c in status.conditions}
    assert got["Other"] == ("True", "Mine", "kept")
    assert got["NamespaceDeletionDiscoveryFailure"] == ("True", "DiscoveryFailed", "boom")
    assert got["NamespaceDeletionGroupVersionParsingFailure"] == (
        "True",
        "GroupVersionParsingFailed",
        "bad gv",
    )
    assert got["NamespaceDeletionContentFailure"] == (
        "True",
        "ContentDeletionFailed",
        "Failed to delete all resource types, 2 remaining: a failed, z failed",
    )
    assert got["NamespaceContentRemaining"][2] == (
        "Some resources are remaining: pods. has 3 resource instances, "
        "replicasets.apps has 1 resource instances"
    )
    assert got["NamespaceFinalizersRemaining"][2] == (
        "Some content in the namespace has finalizers remaining: a/f in 2 resource instances, "
        "b/f in 1 resource instances"
    )


def test_transition_time_moves_only_when_the_status_changes() -> None:
    status = _status()
    first = ConditionUpdater(now=NOW)
    first.content_totals({"pods.": 2}, {})
    first.update(status)
    later = ConditionUpdater(now="2026-12-07T10:05:00Z")
    later.content_totals({"pods.": 1}, {})  # same status, new message
    assert later.update(status)
    by = {c.type: c for c in status.conditions}
    assert by["NamespaceContentRemaining"].last_transition_time == NOW
    assert by["NamespaceContentRemaining"].message.endswith("pods. has 1 resource instances")
    gone = ConditionUpdater(now="2026-12-07T10:10:00Z")
    assert gone.update(status)  # all removed: False again
    by = {c.type: c for c in status.conditions}
    assert by["NamespaceContentRemaining"].last_transition_time == "2026-12-07T10:10:00Z"
    assert by["NamespaceDeletionDiscoveryFailure"].last_transition_time == NOW
