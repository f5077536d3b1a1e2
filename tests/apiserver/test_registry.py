"""The apiserver's registry rules, on the in-memory fake and on real etcd."""

from __future__ import annotations

import asyncio

import pytest

from services.api.helpers.fencing import Fencing
from services.api.machinery import codec
from services.api.machinery.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
    PreconditionError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.storage import Compare, Put
from tests.apiserver.conftest import obj
from tests.builders import pod

PODS, NODES, NS = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Namespace"]


async def test_initial_namespaces_and_system_priority_classes_exist(api: ApiServer) -> None:
    names = {o.metadata.name for o in (await api.list(NS))[0]}
    assert {"default", "kube-system", "kube-node-lease"} <= names
    pcs = {o.metadata.name: o.value for o in (await api.list(BY_KIND["PriorityClass"]))[0]}
    assert pcs == {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


async def test_create_fills_server_fields_and_defaults(api: ApiServer) -> None:
    p = await api.create(
        pod(
            "web",
            containers=[
                {
                    "name": "c",
                    "image": "nginx",
                    "resources": {"limits": {"cpu": "0.5", "memory": "1Gi"}},
                }
            ],
        )
    )
    assert p.metadata.uid and p.metadata.creation_timestamp.endswith("Z")
    assert int(p.metadata.resource_version) > 0
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.spec.termination_grace_period_seconds == 30
    assert p.spec.priority == 0 and p.spec.preemption_policy == "PreemptLowerPriority"
    assert p.status.phase == "Pending"
    # limits without requests default the requests; quantities are canonical
    assert dict(p.spec.containers[0].resources.requests) == {"cpu": "500m", "memory": "1Gi"}
    assert p.status.qos_class == "Guaranteed"
    tol = {(t.key, t.effect, t.toleration_seconds) for t in p.spec.tolerations}
    assert tol == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }


async def test_default_tolerations_not_added_when_pod_already_tolerates(api: ApiServer) -> None:
    p = await api.create(
        pod(
            "t",
            tolerations=[
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 6000,
                }
            ],
        )
    )
    secs = {t.key: t.toleration_seconds for t in p.spec.tolerations}
    assert secs == {"node.kubernetes.io/unreachable": 6000, "node.kubernetes.io/not-ready": 300}


async def test_generate_name_makes_a_unique_name(api: ApiServer) -> None:
    doc = pod("")
    doc.metadata.generate_name = "job-"
    a, b = await api.create(doc), await api.create(doc)
    assert a.metadata.name.startswith("job-") and len(a.metadata.name) == 9
    assert a.metadata.name != b.metadata.name


async def test_create_twice_is_already_exists(api: ApiServer) -> None:
    await api.create(pod("dup"))
    with pytest.raises(AlreadyExistsError, match='pods "dup" already exists'):
        await api.create(pod("dup"))


async def test_create_in_missing_namespace_is_refused(api: ApiServer) -> None:
    with pytest.raises(NotFoundError, match='namespaces "nope" not found'):
        await api.create(pod("x", namespace="nope"))


async def test_priority_class_name_resolves_to_priority(api: ApiServer) -> None:
    await api.create(
        obj(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
                "preemptionPolicy": "Never",
            }
        )
    )
    p = await api.create(pod("hp", priorityClassName="high"))
    assert p.spec.priority == 1000 and p.spec.preemption_policy == "Never"
    crit = await api.create(pod("crit", priorityClassName="system-node-critical"))
    assert crit.spec.priority == 2000001000


async def test_unknown_priority_class_is_rejected(api: ApiServer) -> None:
    with pytest.raises(ForbiddenError, match="no PriorityClass with name missing was found"):
        await api.create(pod("x", priorityClassName="missing"))


async def test_global_default_priority_class_applies_and_is_unique(api: ApiServer) -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "dflt"},
        "value": 50,
        "globalDefault": True,
    }
    await api.create(obj(pc))
    p = await api.create(pod("plain"))
    assert p.spec.priority == 50 and p.spec.priority_class_name == "dflt"
    pc["metadata"] = {"name": "other"}
    with pytest.raises(ForbiddenError, match="already marked as default"):
        await api.create(obj(pc))


async def test_system_prefix_priority_classes_are_reserved(api: ApiServer) -> None:
    with pytest.raises((ForbiddenError, InvalidError), match="system-"):
        await api.create(
            obj(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "system-mine"},
                    "value": 5,
                }
            )
        )


async def test_runtime_class_overhead_is_copied_and_user_overhead_rejected(api: ApiServer) -> None:
    await api.create(
        obj(
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": "kata"},
                "handler": "kata",
                "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            }
        )
    )
    p = await api.create(pod("vm", runtimeClassName="kata"))
    assert dict(p.spec.overhead) == {"cpu": "250m", "memory": "120Mi"}
    with pytest.raises(ForbiddenError, match="Overhead"):
        await api.create(pod("vm2", runtimeClassName="kata", overhead={"cpu": "1"}))
    with pytest.raises(ForbiddenError, match='RuntimeClass "nope" not found'):
        await api.create(pod("vm3", runtimeClassName="nope"))


async def test_stale_update_is_a_conflict_and_does_not_overwrite(api: ApiServer) -> None:
    p = await api.create(pod("u"))
    fresh = await api.get(PODS, "default", "u")
    fresh.metadata.labels["v"] = "1"
    await api.update(fresh)
    p.metadata.labels["v"] = "stale"
    with pytest.raises(ConflictError, match="the object has been modified"):
        await api.update(p)
    assert (await api.get(PODS, "default", "u")).metadata.labels["v"] == "1"


async def test_update_with_no_change_keeps_the_resource_version(api: ApiServer) -> None:
    p = await api.create(pod("same"))
    again = await api.update(p)
    assert again.metadata.resource_version == p.metadata.resource_version


async def test_update_cannot_change_status_and_update_status_cannot_change_spec(
    api: ApiServer,
) -> None:
    p = await api.create(pod("s"))
    p.status.phase = "Running"
    p.metadata.labels["a"] = "b"
    u = await api.update(p)
    assert u.status.phase == "Pending" and u.metadata.labels["a"] == "b"
    u.status.phase = "Running"
    u.spec.containers[0].image = "changed"
    s = await api.update_status(u)
    assert s.status.phase == "Running" and s.spec.containers[0].image != "changed"


async def test_merge_patch_changes_only_what_it_names(api: ApiServer) -> None:
    await api.create(pod("pt"))
    p = await api.patch(PODS, "default", "pt", '{"metadata": {"labels": {"app": "web"}}}')
    assert p.metadata.labels["app"] == "web" and p.spec.containers[0].name == "c"
    p = await api.patch(PODS, "default", "pt", '{"metadata": {"labels": {"app": null}}}')
    assert "app" not in p.metadata.labels


async def test_list_with_label_and_field_selectors(api: ApiServer) -> None:
    for name, labels in (("a", {"app": "web", "tier": "fe"}), ("b", {"app": "db"}), ("c", {})):
        p = pod(name)
        p.metadata.labels.update(labels)
        await api.create(p)
    await api.bind("default", "a", "n1")

    def opts(ls: str, fs: str) -> ListOptions:
        return ListOptions(label_selector=ls, field_selector=fs)

    async def names(ls: str = "", fs: str = "") -> list[str]:
        return sorted(o.metadata.name for o in (await api.list(PODS, "default", opts(ls, fs)))[0])

    assert await names("app=web") == ["a"]
    assert await names("app!=web") == ["b", "c"]
    assert await names("app in (web,db)") == ["a", "b"]
    assert await names("app notin (web)") == ["b", "c"]
    assert await names("tier") == ["a"]
    assert await names("!tier") == ["b", "c"]
    assert await names(fs="spec.nodeName=n1") == ["a"]
    assert await names(fs="spec.nodeName=") == ["b", "c"]
    assert await names(fs="metadata.name!=a,status.phase=Pending") == ["b", "c"]


async def test_bind_sets_node_and_condition(api: ApiServer) -> None:
    await api.create(pod("b"))
    p = await api.bind("default", "b", "node-1")
    assert p.spec.node_name == "node-1"
    assert [(c.type, c.status) for c in p.status.conditions] == [("PodScheduled", "True")]


async def test_second_bind_says_where_the_pod_is(api: ApiServer) -> None:
    await api.create(pod("b"))
    await api.bind("default", "b", "node-1")
    with pytest.raises(PreconditionError, match='already assigned to node "node-1"'):
        await api.bind("default", "b", "node-2")


async def test_bind_at_a_stale_resource_version_is_a_conflict(api: ApiServer) -> None:
    p = await api.create(pod("b"))
    await api.patch(PODS, "default", "b", '{"metadata": {"labels": {"x": "y"}}}')
    with pytest.raises(ConflictError):
        await api.bind("default", "b", "node-1", resource_version=p.metadata.resource_version)


async def test_fenced_bind_with_current_token_succeeds_and_stale_token_fails(
    api: ApiServer,
) -> None:
    key = "/kubera/election/kube-scheduler"
    won = await api.storage.txn([Compare(key, "create", "==", 0)], [Put(key, b"sched-a")])
    token = Fencing(key, won.revision)
    await api.create(pod("f1"))
    await api.create(pod("f2"))
    assert (await api.bind("default", "f1", "n1", fencing=token)).spec.node_name == "n1"
    # leadership moves: the key is deleted (lease expired) and re-created by another replica
    await api.storage.txn([], [__import__("services.storage", fromlist=["Delete"]).Delete(key)])
    await api.storage.txn([Compare(key, "create", "==", 0)], [Put(key, b"sched-b")])
    with pytest.raises(PreconditionError, match="stale leader"):
        await api.bind("default", "f2", "n1", fencing=token)
    assert (await api.get(PODS, "default", "f2")).spec.node_name == ""


async def test_fenced_bind_without_any_leader_fails(api: ApiServer) -> None:
    await api.create(pod("f"))
    with pytest.raises(PreconditionError, match="not held by anyone"):
        await api.bind("default", "f", "n1", fencing=Fencing("/kubera/election/none", 7))


async def test_unbound_pod_is_deleted_at_once(api: ApiServer) -> None:
    await api.create(pod("d"))
    await api.delete(PODS, "default", "d")
    with pytest.raises(NotFoundError):
        await api.get(PODS, "default", "d")


async def test_bound_pod_deletion_is_graceful_then_final_with_zero_grace(api: ApiServer) -> None:
    await api.create(pod("g"))
    await api.bind("default", "g", "n1")
    p = await api.delete(PODS, "default", "g")
    assert p.metadata.deletion_timestamp and p.metadata.deletion_grace_period_seconds == 30
    assert (await api.get(PODS, "default", "g")).metadata.deletion_timestamp
    await api.delete(PODS, "default", "g", grace_period_seconds=0)
    with pytest.raises(NotFoundError):
        await api.get(PODS, "default", "g")


async def test_finalizers_hold_deletion_until_removed(api: ApiServer) -> None:
    p = pod("fin")
    p.metadata.finalizers.append("example.com/hold")
    await api.create(p)
    d = await api.delete(PODS, "default", "fin", grace_period_seconds=0)
    assert d.metadata.deletion_timestamp
    held = await api.get(PODS, "default", "fin")
    del held.metadata.finalizers[:]
    await api.update(held)
    with pytest.raises(NotFoundError):
        await api.get(PODS, "default", "fin")


async def test_default_namespace_cannot_be_deleted(api: ApiServer) -> None:
    with pytest.raises(ForbiddenError, match="may not be deleted"):
        await api.delete(NS, "", "default")


async def test_scheduling_gates_can_only_be_removed(api: ApiServer) -> None:
    await api.create(
        pod("gated", schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}])
    )
    p = await api.get(PODS, "default", "gated")
    p.spec.scheduling_gates.add(name="example.com/c")
    with pytest.raises(InvalidError, match="schedulingGates"):
        await api.update(p)
    p = await api.get(PODS, "default", "gated")
    del p.spec.scheduling_gates[0]
    u = await api.update(p)
    assert [g.name for g in u.spec.scheduling_gates] == ["example.com/b"]


GATED = (
    "PodScheduled",
    "False",
    "SchedulingGated",
    "Scheduling is blocked due to non-empty scheduling gates",
)


def _scheduled(p: object) -> list[tuple[str, str, str, str]]:
    return [
        (c.type, c.status, c.reason, c.message)
        for c in p.status.conditions  # type: ignore[attr-defined]
        if c.type == "PodScheduled"
    ]


# upstream pkg/registry/core/pod/strategy_test.go TestSchedulingGatedCondition, through the
# apiserver's create (a client's own status, PodScheduled included, is not kept there).
@pytest.mark.parametrize(
    ("gates", "sent_condition", "want"),
    [
        ([], False, []),
        ([{"name": "foo"}], False, [GATED]),
        ([{"name": "foo"}], True, [GATED]),
    ],
    ids=["no gates: no condition", "gates: SchedulingGated", "a sent condition is not kept"],
)
async def test_a_pod_created_with_scheduling_gates_is_marked_scheduling_gated(
    api: ApiServer, gates: list[dict[str, str]], sent_condition: bool, want: list[tuple[str, ...]]
) -> None:
    p = pod("g", schedulingGates=gates) if gates else pod("g")
    if sent_condition:
        p.status.conditions.add(type="PodScheduled", status="True", reason="Mine")
    created = await api.create(p)
    assert _scheduled(created) == want
    if want:
        assert created.status.conditions[0].last_transition_time
    assert _scheduled(await api.get(PODS, "default", "g")) == want


async def test_the_gated_condition_gives_way_to_the_binding_once_the_gates_are_removed(
    api: ApiServer,
) -> None:
    await api.create(pod("g", schedulingGates=[{"name": "foo"}]))
    p = await api.get(PODS, "default", "g")
    del p.spec.scheduling_gates[:]
    ungated = await api.update(p)
    assert _scheduled(ungated) == [GATED]  # removing the gates does not touch the status
    bound = await api.bind("default", "g", "node-1")
    assert _scheduled(bound) == [("PodScheduled", "True", "", "")]


async def test_batch_create_reports_each_object(api: ApiServer) -> None:
    await api.create(pod("p1"))
    results = await api.batch_create(
        [pod(f"p{i}") for i in range(5)] + [pod("bad", namespace="nope")]
    )
    assert [r.error is None for r in results] == [True, False, True, True, True, False]
    assert isinstance(results[1].error, AlreadyExistsError)
    assert isinstance(results[5].error, NotFoundError)
    assert len((await api.list(PODS, "default"))[0]) == 5


async def _take(aiter, n: int, timeout: float = 10.0) -> list:
    out = []

    async def run() -> None:
        async for item in aiter:
            out.append(item)
            if len(out) >= n:
                return

    await asyncio.wait_for(run(), timeout)
    return out


async def test_watch_resumes_after_a_resource_version(api: ApiServer) -> None:
    await api.create(pod("w1"))
    _, rv = await api.list(PODS, "default")
    await api.create(pod("w2"))
    await api.patch(PODS, "default", "w2", '{"metadata": {"labels": {"a": "b"}}}')
    await api.delete(PODS, "default", "w1")
    events = await _take(
        api.watch(PODS, namespace="default", options=ListOptions(resource_version=str(rv))), 3
    )
    assert [(t, e.obj.metadata.name) for t, e in events] == [
        ("ADDED", "w2"),
        ("MODIFIED", "w2"),
        ("DELETED", "w1"),
    ]
    revs = [int(e.obj.metadata.resource_version) for _, e in events]
    assert revs == sorted(revs) and revs[0] > rv


async def test_watch_without_version_starts_with_current_state(api: ApiServer) -> None:
    await api.create(pod("s1"))
    await api.create(pod("s2"))
    events = await _take(api.watch(PODS, namespace="default"), 2)
    assert sorted((t, e.obj.metadata.name) for t, e in events) == [("ADDED", "s1"), ("ADDED", "s2")]


async def test_watch_with_selector_sees_objects_enter_and_leave(api: ApiServer) -> None:
    await api.create(pod("sel"))
    _, rv = await api.list(PODS)
    await api.patch(PODS, "default", "sel", '{"metadata": {"labels": {"app": "web"}}}')
    await api.patch(PODS, "default", "sel", '{"metadata": {"labels": {"app": "db"}}}')
    events = await _take(
        api.watch(PODS, options=ListOptions(label_selector="app=web", resource_version=str(rv))), 2
    )
    assert [t for t, _ in events] == ["ADDED", "DELETED"]


async def test_watch_from_a_version_older_than_the_window_is_gone(api: ApiServer) -> None:
    _, rv = await api.list(PODS)
    for i in range(60):  # the test cache keeps 50 events
        await api.create(pod(f"g{i}"))
    cache = api.caches["pods"]
    assert await cache.wait_revision((await api.list(PODS))[1], 10)
    with pytest.raises(GoneError, match="too old resource version"):
        await _take(api.watch(PODS, options=ListOptions(resource_version=str(rv))), 1)
    # the client's recovery: relist, then watch from the list's version
    items, rv2 = await api.list(PODS)
    assert len(items) == 60
    await api.create(pod("after"))
    events = await _take(api.watch(PODS, options=ListOptions(resource_version=str(rv2))), 1)
    assert events[0][1].obj.metadata.name == "after"


async def test_watch_bookmarks_carry_the_latest_version(api: ApiServer) -> None:
    await api.create(pod("bm"))
    _, rv = await api.list(PODS)
    events = await _take(
        api.watch(PODS, options=ListOptions(resource_version=str(rv), allow_bookmarks=True)),
        1,
        timeout=5,
    )
    assert events[0][0] == "BOOKMARK"
    assert int(events[0][1].obj.metadata.resource_version) >= rv


async def test_watch_from_a_list_revision_never_replays_what_the_list_had(api: ApiServer) -> None:
    for i in range(3):
        await api.create(pod(f"r{i}"))
    items, rv = await api.list(PODS)  # read from etcd: may be ahead of the watch cache
    await api.create(pod("next"))
    events = await _take(api.watch(PODS, options=ListOptions(resource_version=str(rv))), 1)
    assert [(t, e.obj.metadata.name) for t, e in events] == [("ADDED", "next")]


async def test_window_trim_inside_a_batch_revision_makes_that_revision_gone(storage) -> None:
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=5))
    await api.start()
    try:
        _, before = await api.list(PODS)
        res = await api.batch_create([pod(f"b{i}") for i in range(4)])  # one txn: one revision
        batch_rev = int(res[0].obj.metadata.resource_version)
        await api.create(pod("c1"))
        await api.create(pod("c2"))
        _, now = await api.list(PODS)
        assert await api.caches["pods"].wait_revision(now, 10)
        # b0 fell out of the window with part of its revision: resuming below it is gone
        with pytest.raises(GoneError):
            await _take(
                api.watch(PODS, options=ListOptions(resource_version=str(batch_rev - 1))), 1
            )
        events = await _take(
            api.watch(PODS, options=ListOptions(resource_version=str(batch_rev))), 2
        )
        assert [e.obj.metadata.name for _, e in events] == ["c1", "c2"]
        assert before < batch_rev
    finally:
        await api.stop()


async def test_bookmarks_keep_coming_while_the_resource_is_busy(api: ApiServer) -> None:
    _, rv = await api.list(PODS)
    kinds_seen: list[str] = []

    async def churn() -> None:
        for i in range(40):  # one create per ~25 ms for ~1 s: never 0.2 s of quiet
            await api.create(pod(f"busy{i}"))
            await api.clock.sleep(0.025)

    task = asyncio.create_task(churn())
    async for t, _ in api.watch(
        PODS,
        options=ListOptions(
            label_selector="app=none", resource_version=str(rv), allow_bookmarks=True
        ),
    ):
        kinds_seen.append(t)
        if t == "BOOKMARK":
            break
    done_before_bookmark = task.done()
    await task
    assert kinds_seen == ["BOOKMARK"] and not done_before_bookmark


async def test_patch_carrying_a_stale_resource_version_is_a_conflict(api: ApiServer) -> None:
    p = await api.create(pod("pin"))
    await api.patch(PODS, "default", "pin", '{"metadata": {"labels": {"a": "1"}}}')
    stale = f'{{"metadata": {{"resourceVersion": "{p.metadata.resource_version}", "labels": {{"a": "2"}}}}}}'
    with pytest.raises(ConflictError):
        await api.patch(PODS, "default", "pin", stale)
    assert (await api.get(PODS, "default", "pin")).metadata.labels["a"] == "1"


async def test_bind_refuses_a_gated_pod(api: ApiServer) -> None:
    await api.create(pod("gate", schedulingGates=[{"name": "example.com/wait"}]))
    with pytest.raises(PreconditionError, match="non-empty .spec.schedulingGates"):
        await api.bind("default", "gate", "n1")


@pytest.mark.parametrize(
    "token", [Fencing("", 5), Fencing("/kubera/election/x", 0)], ids=["empty-key", "zero-revision"]
)
async def test_a_malformed_fencing_token_is_refused(api: ApiServer, token: Fencing) -> None:
    await api.create(pod("tok"))
    with pytest.raises(InvalidError, match="fencing"):
        await api.bind("default", "tok", "n1", fencing=token)


async def test_update_status_of_a_kind_without_status_is_not_found(api: ApiServer) -> None:
    pc = await api.create(
        obj(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "p"},
                "value": 1,
            }
        )
    )
    with pytest.raises(NotFoundError, match="no status"):
        await api.update_status(pc)


async def test_update_restores_defaults_a_patch_removed(api: ApiServer) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }
    await api.create(obj(dep))
    d = await api.patch(
        BY_KIND["Deployment"], "default", "d", '{"spec": {"replicas": null, "strategy": null}}'
    )
    assert d.spec.replicas == 1 and d.spec.strategy.type == "RollingUpdate"
    assert d.spec.strategy.rolling_update.max_surge == "25%"


async def test_only_one_global_default_even_through_update(api: ApiServer) -> None:
    def mk(n, g):
        return obj(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": n},
                "value": 10,
                "globalDefault": g,
            }
        )  # noqa: E731

    await api.create(mk("a", True))
    await api.create(mk("b", False))
    with pytest.raises(ForbiddenError, match="already marked as default"):
        await api.patch(BY_KIND["PriorityClass"], "", "b", '{"globalDefault": true}')


async def test_system_priority_classes_cannot_be_deleted(api: ApiServer) -> None:
    with pytest.raises(ForbiddenError, match="may not be deleted"):
        await api.delete(BY_KIND["PriorityClass"], "", "system-node-critical")


async def test_no_new_finalizers_on_a_terminating_object(api: ApiServer) -> None:
    p = pod("term")
    p.metadata.finalizers.append("example.com/a")
    await api.create(p)
    await api.delete(PODS, "default", "term")
    cur = await api.get(PODS, "default", "term")
    cur.metadata.finalizers.append("example.com/b")
    with pytest.raises(InvalidError, match="no new finalizers can be added"):
        await api.update(cur)


async def test_graceful_delete_bumps_generation(api: ApiServer) -> None:
    dep_pod = pod("gen")
    dep_pod.metadata.finalizers.append("example.com/a")
    created = await api.create(dep_pod)
    deleted = await api.delete(PODS, "default", "gen")
    assert deleted.metadata.generation == created.metadata.generation + 1


async def test_namespace_deletion_marks_it_and_leaves_its_contents_to_the_controller(
    api: ApiServer,
) -> None:
    """The apiserver only marks the namespace; the namespace controller empties it and
    finalizes it (tests/controllers/test_namespace.py)."""
    await api.create(obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
    await api.create(pod("bound", namespace="team"))
    await api.bind("team", "bound", "n1")
    await api.create(pod("plain", namespace="team"))
    ns = await api.delete(NS, "", "team")
    assert ns.status.phase == "Terminating" and ns.metadata.deletion_timestamp
    names = {p.metadata.name for p in (await api.list(PODS, "team"))[0]}
    assert names == {"bound", "plain"}
    with pytest.raises(ForbiddenError, match="being terminated"):
        await api.create(pod("late", namespace="team"))
    for name in names:
        await api.delete(PODS, "team", name, grace_period_seconds=0)
    assert (await api.get(NS, "", "team")).metadata.deletion_timestamp  # still held
    ns = await api.get(NS, "", "team")
    del ns.spec.finalizers[:]
    await api.finalize(ns)
    with pytest.raises(NotFoundError):
        await api.get(NS, "", "team")


async def test_batch_create_into_a_terminating_namespace_is_refused(api: ApiServer) -> None:
    await api.create(obj({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t2"}}))
    keep = pod("keep", namespace="t2")
    keep.metadata.finalizers.append("example.com/keep")
    await api.create(keep)
    await api.delete(NS, "", "t2")
    res = await api.batch_create([pod("x", namespace="t2")])
    assert isinstance(res[0].error, ForbiddenError)


async def test_a_watch_delivers_every_event_of_a_batch_revision(api: ApiServer) -> None:
    _, rv = await api.list(PODS)
    res = await api.batch_create([pod(f"batch{i}") for i in range(20)])
    assert len({r.obj.metadata.resource_version for r in res}) == 1  # one txn, one revision
    events = await _take(api.watch(PODS, options=ListOptions(resource_version=str(rv))), 20)
    assert sorted(e.obj.metadata.name for _, e in events) == sorted(f"batch{i}" for i in range(20))


async def test_batch_update_writes_each_status_and_fails_only_the_stale_one(
    api: ApiServer,
) -> None:
    made = [await api.create(pod(f"b{i}")) for i in range(250)]
    for p in made:
        p.status.phase = "Running"
    stale = codec.clone(made[7])
    made[7].metadata.resource_version = "1"  # long gone: a conflict for this one only
    results = await api.batch_update(made, status=True)
    assert [r.error is None for r in results] == [i != 7 for i in range(250)]
    assert type(results[7].error).__name__ == "ConflictError"
    for i in (0, 100, 249):
        got = await api.get(PODS, "default", f"b{i}")
        assert got.status.phase == "Running"
        assert got.metadata.resource_version == results[i].obj.metadata.resource_version
    assert (await api.get(PODS, "default", "b7")).status.phase == "Pending"
    # a status batch leaves the spec alone
    stale.spec.node_name = "elsewhere"
    stale.metadata.resource_version = ""
    [r] = await api.batch_update([stale], status=True)
    assert r.error is None and not (await api.get(PODS, "default", "b7")).spec.node_name


async def test_batch_update_reports_a_missing_object_as_not_found(api: ApiServer) -> None:
    [r] = await api.batch_update([pod("ghost")], status=True)
    assert type(r.error).__name__ == "NotFoundError"


@pytest.mark.parametrize("status", [True, False], ids=["status", "spec"])
async def test_batch_update_naming_one_object_twice_writes_the_first_and_conflicts_the_second(
    api: ApiServer, status: bool
) -> None:
    made = await api.create(pod("twice"))
    first, second = codec.clone(made), codec.clone(made)
    first.metadata.labels["round"] = first.status.message = "1"
    second.metadata.labels["round"] = second.status.message = "2"
    results = await api.batch_update([first, second], status=status)
    assert results[0].error is None
    assert type(results[1].error).__name__ == "ConflictError"
    got = await api.get(PODS, "default", "twice")
    assert (got.status.message if status else got.metadata.labels["round"]) == "1"
