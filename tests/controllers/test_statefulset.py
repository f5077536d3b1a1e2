"""The StatefulSet controller: the pure rules as tables (cases from upstream's
pkg/controller/statefulset/stateful_set_utils_test.go), and the controller against a real
gRPC apiserver (cases from stateful_set_control_test.go: ordered creation, parallel
creation, ordered scale down, rolling update with partition, OnDelete, failed pod
replacement, claim retention)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import apps_pb2, core_pb2, storage_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, ForbiddenError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.clock import rfc3339
from services.controllers.controller_utils import controller_of, is_pod_ready
from services.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    find_equal,
    new_revision,
    revision_template,
)
from services.controllers.statefulset import StatefulSetController
from services.controllers.statefulset.rules import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    complete_rolling_update,
    identity_matches,
    is_member_of,
    max_unavailable_of,
    new_claims,
    new_stateful_pod,
    parent_and_ordinal,
    revision_for_ordinal,
    stateful_status,
    storage_matches,
    update_identity,
    update_storage,
)
from tests.controllers.conftest import NS, PODS, ControllerCluster, ReadinessDriver, template

STATEFUL_SETS = BY_KIND["StatefulSet"]
CLAIMS = BY_KIND["PersistentVolumeClaim"]
REVISIONS = BY_KIND["ControllerRevision"]
EVENTS = BY_KIND["Event"]
LABELS = {"app": "web"}


def sts_doc(name: str = "web", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {
            "replicas": replicas,
            "serviceName": "nginx",
            "selector": {"matchLabels": LABELS},
            "template": template(LABELS),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "www"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
            **spec,
        },
    }


def make_sts(**kw: Any) -> apps_pb2.StatefulSet:
    obj = codec.decode(sts_doc(**kw)).obj
    assert isinstance(obj, apps_pb2.StatefulSet)
    return obj


# ============================================================================ pure rules


@pytest.mark.parametrize(
    ("name", "parent", "ordinal"),
    [
        ("web-0", "web", 0),
        ("web-12", "web", 12),
        ("my-web-3", "my-web", 3),
        ("web", "", -1),
        ("web-", "", -1),
        ("web-x", "", -1),
    ],
)
def test_parent_and_ordinal_come_from_the_name(name: str, parent: str, ordinal: int) -> None:
    assert parent_and_ordinal(name) == (parent, ordinal)


def test_a_pod_is_a_member_only_of_the_set_its_name_names() -> None:
    sts = make_sts()
    pod = core_pb2.Pod()
    pod.metadata.name = "web-1"
    assert is_member_of(sts, pod)
    pod.metadata.name = "web2-1"
    assert not is_member_of(sts, pod)


def test_a_new_pod_has_the_sets_identity_storage_and_revision() -> None:
    sts = make_sts()
    pod = new_stateful_pod(sts, sts.spec.template, "web-abc", 2)
    assert pod.metadata.name == "web-2"
    assert pod.metadata.labels[POD_NAME_LABEL] == "web-2"
    assert pod.metadata.labels[POD_INDEX_LABEL] == "2"
    assert pod.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] == "web-abc"
    assert pod.metadata.labels["app"] == "web"
    assert pod.spec.hostname == "web-2" and pod.spec.subdomain == "nginx"
    ref = controller_of(pod)
    assert ref is not None and ref.kind == "StatefulSet" and ref.name == "web"
    vols = [codec.encode(pod)["spec"]["volumes"]][0]
    assert vols == [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-2"}}]


# stateful_set_utils_test.go: TestIdentityMatches, TestStorageMatches, TestUpdateIdentity,
# TestUpdateStorage.


def _pod1() -> core_pb2.Pod:
    sts = make_sts()
    return new_stateful_pod(sts, sts.spec.template, "web-abc", 1)


def _drop_pod_name_label(p: core_pb2.Pod) -> None:
    del p.metadata.labels[POD_NAME_LABEL]


def _rename(name: str) -> Any:
    def f(p: core_pb2.Pod) -> None:
        p.metadata.name = name

    return f


def _vol(p: core_pb2.Pod, doc: dict[str, Any]) -> None:
    del p.spec.volumes[:]
    p.spec.volumes.add().update(doc)


@pytest.mark.parametrize(
    "breaks",
    [
        pytest.param(_rename("foo"), id="wrong-name"),
        pytest.param(lambda p: p.metadata.__setattr__("namespace", ""), id="wrong-namespace"),
        pytest.param(_drop_pod_name_label, id="no-pod-name-label"),
    ],
)
def test_identity_matches_only_the_sets_name_namespace_and_pod_name_label(breaks: Any) -> None:
    sts = make_sts()
    pod = _pod1()
    assert identity_matches(sts, pod), "a new pod has a good identity"
    breaks(pod)
    assert not identity_matches(sts, pod)


def test_hostname_subdomain_and_index_label_are_not_part_of_identity() -> None:
    """Immutable since creation (hostname, subdomain), or only written by updateIdentity
    (the index label): identityMatches does not look at them."""
    sts = make_sts()
    pod = _pod1()
    pod.spec.hostname, pod.spec.subdomain = "other", "other"
    del pod.metadata.labels[POD_INDEX_LABEL]
    assert identity_matches(sts, pod)


@pytest.mark.parametrize(
    "breaks",
    [
        pytest.param(lambda p: p.spec.ClearField("volumes"), id="no-volumes"),
        pytest.param(lambda p: _vol(p, {"name": "www", "emptyDir": {}}), id="not-a-claim"),
        pytest.param(
            lambda p: _vol(p, {"name": "www", "persistentVolumeClaim": {"claimName": "foo"}}),
            id="another-claim",
        ),
        pytest.param(_rename("bar"), id="no-ordinal"),
    ],
)
def test_storage_matches_needs_the_ordinals_claim_per_template(breaks: Any) -> None:
    sts = make_sts()
    pod = _pod1()
    assert storage_matches(sts, pod), "a new pod has valid storage"
    breaks(pod)
    assert not storage_matches(sts, pod)


def test_update_identity_restores_namespace_and_labels() -> None:
    sts = make_sts()
    pod = _pod1()
    pod.metadata.namespace = ""
    assert not identity_matches(sts, pod)
    update_identity(sts, pod)
    assert identity_matches(sts, pod)
    del pod.metadata.labels[POD_NAME_LABEL]
    del pod.metadata.labels[POD_INDEX_LABEL]
    update_identity(sts, pod)
    assert identity_matches(sts, pod) and pod.metadata.labels[POD_INDEX_LABEL] == "1"


def test_update_storage_puts_the_claim_volumes_back_and_keeps_the_others() -> None:
    sts = make_sts()
    pod = _pod1()
    _vol(pod, {"name": "www", "emptyDir": {}})
    pod.spec.volumes.add().update({"name": "cache", "emptyDir": {}})
    assert not storage_matches(sts, pod)
    update_storage(sts, pod)
    assert storage_matches(sts, pod)
    assert codec.encode(pod)["spec"]["volumes"] == [
        {"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}},
        {"name": "cache", "emptyDir": {}},
    ]


@pytest.mark.parametrize(
    ("policy", "owned"),
    [("Retain", False), ("Delete", True)],
    ids=["whenDeleted-Retain-no-owner", "whenDeleted-Delete-owned-by-set"],
)
def test_claims_are_named_labelled_and_owned_per_retention_policy(policy: str, owned: bool) -> None:
    sts = make_sts(
        persistentVolumeClaimRetentionPolicy={"whenDeleted": policy, "whenScaled": "Retain"}
    )
    (claim,) = new_claims(sts, 4)
    assert claim.metadata.name == "www-web-4"
    assert dict(claim.metadata.labels) == LABELS
    assert claim.spec.resources.requests["storage"] == "1Gi"
    assert bool(claim.metadata.owner_references) is owned


@pytest.mark.parametrize(
    ("strategy", "current_replicas", "ordinal", "want"),
    [
        ({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}, 0, 1, "current"),
        ({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}, 0, 2, "update"),
        ({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, 3, 0, "update"),
        ({"type": "RollingUpdate"}, 2, 1, "current"),
        ({"type": "RollingUpdate"}, 2, 2, "update"),
        ({"type": "OnDelete"}, 3, 0, "update"),
    ],
    ids=[
        "below-partition-current",
        "at-partition-update",
        "partition-0-update",
        "no-rollingUpdate-below-currentReplicas-current",
        "no-rollingUpdate-at-currentReplicas-update",
        "OnDelete-update",
    ],
)
def test_a_recreated_pod_takes_the_revision_upstream_picks(
    strategy: dict[str, Any], current_replicas: int, ordinal: int, want: str
) -> None:
    sts = make_sts(updateStrategy=strategy)
    sts.status.current_replicas = current_replicas
    assert revision_for_ordinal(sts, ordinal) == want


@pytest.mark.parametrize(
    ("rolling", "replicas", "want"),
    [
        ({}, 5, 1),
        ({"maxUnavailable": 3}, 5, 3),
        ({"maxUnavailable": "50%"}, 5, 2),
        ({"maxUnavailable": "10%"}, 5, 1),
    ],
    ids=["unset-means-1", "int", "percent-rounds-down", "at-least-1"],
)
def test_max_unavailable_scales_to_the_replicas(
    rolling: dict[str, Any], replicas: int, want: int
) -> None:
    sts = make_sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    assert max_unavailable_of(sts, replicas) == want


def _pod(name: str, revision: str, *, ready: bool = True, phase: str = "Running") -> core_pb2.Pod:
    p = core_pb2.Pod()
    p.metadata.name = name
    p.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] = revision
    p.status.phase = phase
    if ready:
        p.status.conditions.add(type="Ready", status="True", last_transition_time=rfc3339(0))
    return p


def test_status_counts_pods_by_revision_and_readiness() -> None:
    sts = make_sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    pods = [
        _pod("web-0", "old"),
        _pod("web-1", "new"),
        _pod("web-2", "new", ready=False, phase="Pending"),
    ]
    st = stateful_status(sts, pods, "old", "new", now=100.0)
    assert (st.replicas, st.ready_replicas, st.available_replicas) == (3, 2, 2)
    assert (st.current_replicas, st.updated_replicas) == (1, 2)
    complete_rolling_update(sts, st)
    assert st.current_revision == "old", "not every pod is updated and ready yet"
    pods[0] = _pod("web-0", "new")
    pods[2] = _pod("web-2", "new")
    st = stateful_status(sts, pods, "old", "new", now=100.0)
    complete_rolling_update(sts, st)
    assert (st.current_revision, st.current_replicas) == ("new", 3)


def test_a_revision_restores_its_template_and_equal_templates_find_each_other() -> None:
    sts = make_sts()
    sts.metadata.uid = "u1"
    r1 = new_revision(sts, STATEFUL_SETS, sts.spec.template, 1, None)
    assert r1.metadata.name.startswith("web-")
    assert revision_template(r1) == sts.spec.template
    changed = copy.deepcopy(sts)
    changed.spec.template.spec.containers[0].image = "app:v2"
    r2 = new_revision(changed, STATEFUL_SETS, changed.spec.template, 2, None)
    assert r2.metadata.name != r1.metadata.name
    assert find_equal([r1, r2], new_revision(sts, STATEFUL_SETS, sts.spec.template, 3, None)) == [
        r1
    ]
    probed = new_revision(sts, STATEFUL_SETS, sts.spec.template, 1, 1)
    assert probed.metadata.name != r1.metadata.name, "a collision count changes the name"


# ============================================================================ the controller


@pytest.fixture
async def sts_cluster(cluster: ControllerCluster) -> AsyncIterator[ControllerCluster]:
    controller = StatefulSetController(cluster.client, cluster.informers)
    cluster.bump_on(STATEFUL_SETS, REVISIONS, CLAIMS)
    await cluster.start(controller)
    yield cluster


def sts_of(c: ControllerCluster, name: str = "web") -> apps_pb2.StatefulSet:
    """The cached set (an empty one until the informer has it)."""
    cached = c.informers.get(STATEFUL_SETS).store.get(f"{NS}/{name}")
    return cached if isinstance(cached, apps_pb2.StatefulSet) else apps_pb2.StatefulSet()


def claims_of(c: ControllerCluster) -> list[str]:
    store = c.informers.get(CLAIMS).store
    return sorted(
        p.metadata.name for p in store.values() if isinstance(p, storage_pb2.PersistentVolumeClaim)
    )


def pod_names(c: ControllerCluster) -> list[str]:
    return sorted(p.metadata.name for p in c.selected(LABELS))


async def test_ordered_ready_creates_each_ordinal_after_the_previous_is_ready(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    seen_unready: list[str] = []

    def check(live: dict[str, core_pb2.Pod]) -> None:
        for name in live:
            ordinal = parent_and_ordinal(name)[1]
            for lower in range(ordinal):
                prev = live.get(f"web-{lower}")
                if prev is None or not is_pod_ready(prev):
                    seen_unready.append(f"{name} before web-{lower} was ready")

    async with ReadinessDriver(c, LABELS, check) as driver:
        await c.create(sts_doc(replicas=3))
        await c.until(lambda: sts_of(c).status.ready_replicas == 3)
    assert driver.created == ["web-0", "web-1", "web-2"]
    assert seen_unready == []
    assert claims_of(c) == ["www-web-0", "www-web-1", "www-web-2"]
    st = sts_of(c).status
    assert st.current_revision == st.update_revision and st.current_revision.startswith("web-")
    assert (st.replicas, st.current_replicas, st.updated_replicas) == (3, 3, 3)


async def test_ordered_ready_waits_while_a_pod_is_not_ready(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=3))
    await c.until(lambda: pod_names(c) == ["web-0"])
    # Nothing marks web-0 Ready: no web-1 may appear however many syncs run.
    await c.until(lambda: sts_of(c).status.replicas == 1)
    assert pod_names(c) == ["web-0"]
    await c.set_status(c.selected(LABELS)[0], phase="Running", ready=True)
    await c.until(lambda: pod_names(c) == ["web-0", "web-1"])


async def test_parallel_creates_every_ordinal_at_once(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=4, podManagementPolicy="Parallel"))
    await c.until(lambda: len(pod_names(c)) == 4)
    assert pod_names(c) == ["web-0", "web-1", "web-2", "web-3"]
    assert not any(is_pod_ready(p) for p in c.selected(LABELS))


async def test_scale_down_deletes_the_highest_ordinal_first(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    deleted: list[str] = []
    previous: set[str] = set()

    def check(live: dict[str, core_pb2.Pod]) -> None:
        nonlocal previous
        deleted.extend(sorted(previous - set(live), reverse=True))
        previous = set(live)

    async with ReadinessDriver(c, LABELS, check):
        await c.create(sts_doc(replicas=4))
        await c.until(lambda: sts_of(c).status.ready_replicas == 4)
        await c.client.patch(STATEFUL_SETS, "web", '{"spec":{"replicas":1}}', namespace=NS)
        await c.until(lambda: pod_names(c) == ["web-0"] and sts_of(c).status.replicas == 1)
    assert deleted == ["web-3", "web-2", "web-1"]
    assert claims_of(c) == ["www-web-0", "www-web-1", "www-web-2", "www-web-3"], "Retain"


async def test_rolling_update_with_partition_updates_only_ordinals_at_or_above_it(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    async with ReadinessDriver(c, LABELS) as driver:
        await c.create(
            sts_doc(
                replicas=3,
                updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            )
        )
        await c.until(lambda: sts_of(c).status.ready_replicas == 3)
        first = sts_of(c).status.current_revision
        patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
        await c.client.patch(STATEFUL_SETS, "web", patch, namespace=NS)

        def images() -> dict[str, str]:
            return {p.metadata.name: p.spec.containers[0].image for p in c.selected(LABELS)}

        await c.until(
            lambda: (
                images() == {"web-0": "app:v1", "web-1": "app:v2", "web-2": "app:v2"}
                and sts_of(c).status.updated_replicas == 2
                and sts_of(c).status.ready_replicas == 3
            )
        )
    st = sts_of(c).status
    assert st.current_revision == first != st.update_revision
    assert st.current_replicas == 1
    assert driver.created[3:] == ["web-2", "web-1"], "updated highest ordinal first"
    revisions = [
        r for r in c.informers.get(REVISIONS).store.values() if controller_of(r) is not None
    ]
    assert sorted(r.revision for r in revisions) == [1, 2]  # type: ignore[attr-defined]


async def test_on_delete_leaves_pods_until_they_are_deleted(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    async with ReadinessDriver(c, LABELS):
        await c.create(sts_doc(replicas=2, updateStrategy={"type": "OnDelete"}))
        await c.until(lambda: sts_of(c).status.ready_replicas == 2)
        patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
        await c.client.patch(STATEFUL_SETS, "web", patch, namespace=NS)
        await c.until(lambda: sts_of(c).status.update_revision != sts_of(c).status.current_revision)
        assert {p.spec.containers[0].image for p in c.selected(LABELS)} == {"app:v1"}
        await c.client.delete(PODS, "web-1", NS)
        await c.until(
            lambda: (
                {p.metadata.name: p.spec.containers[0].image for p in c.selected(LABELS)}
                == {"web-0": "app:v1", "web-1": "app:v2"}
            )
        )


async def test_a_failed_pod_is_replaced_under_the_same_name(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=1))
    await c.until(lambda: pod_names(c) == ["web-0"])
    old = c.selected(LABELS)[0]
    await c.set_status(old, phase="Failed")
    await c.until(
        lambda: [p.metadata.uid for p in c.selected(LABELS)] not in ([], [old.metadata.uid])
    )
    assert pod_names(c) == ["web-0"]


async def test_when_scaled_delete_gives_a_condemned_pods_claims_to_that_pod(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    policy = {"whenDeleted": "Retain", "whenScaled": "Delete"}
    async with ReadinessDriver(c, LABELS):
        await c.create(sts_doc(replicas=2, persistentVolumeClaimRetentionPolicy=policy))
        await c.until(lambda: sts_of(c).status.ready_replicas == 2)
        doomed = next(p for p in c.selected(LABELS) if p.metadata.name == "web-1")
        await c.client.patch(STATEFUL_SETS, "web", '{"spec":{"replicas":1}}', namespace=NS)
        await c.until(lambda: pod_names(c) == ["web-0"])
    claims = {
        p.metadata.name: [(r.kind, r.uid) for r in p.metadata.owner_references]  # type: ignore[attr-defined]
        for p in c.informers.get(CLAIMS).store.values()
    }
    assert claims == {"www-web-0": [], "www-web-1": [("Pod", doomed.metadata.uid)]}


async def test_a_deleted_set_takes_its_pods_and_revisions_along(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=2, podManagementPolicy="Parallel"))
    await c.until(lambda: len(pod_names(c)) == 2 and len(c.informers.get(REVISIONS).store) == 1)
    await c.client.delete(STATEFUL_SETS, "web", NS)
    await c.until(lambda: pod_names(c) == [] and len(c.informers.get(REVISIONS).store) == 0)
    assert claims_of(c) == ["www-web-0", "www-web-1"], "whenDeleted Retain keeps the claims"


async def test_ordered_scale_down_waits_for_an_unhealthy_pod(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    async with ReadinessDriver(c, LABELS):
        await c.create(sts_doc(replicas=3))
        await c.until(lambda: sts_of(c).status.ready_replicas == 3)
    web0 = next(p for p in c.selected(LABELS) if p.metadata.name == "web-0")
    await c.set_status(web0, phase="Running", ready=False)
    await c.until(lambda: sts_of(c).status.ready_replicas == 2)
    await c.client.patch(STATEFUL_SETS, "web", '{"spec":{"replicas":1}}', namespace=NS)
    await c.until(lambda: sts_of(c).metadata.generation == sts_of(c).status.observed_generation)
    assert pod_names(c) == ["web-0", "web-1", "web-2"], "OrderedReady: web-0 is not healthy"
    await c.set_status(web0, phase="Running", ready=True)
    await c.until(lambda: pod_names(c) == ["web-0"])


async def test_ordinals_start_names_the_pods_from_it(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=2, podManagementPolicy="Parallel", ordinals={"start": 5}))
    await c.until(lambda: pod_names(c) == ["web-5", "web-6"])
    assert claims_of(c) == ["www-web-5", "www-web-6"]


async def test_rolling_update_replaces_up_to_max_unavailable_pods_at_once(
    sts_cluster: ControllerCluster,
) -> None:
    c = sts_cluster
    worst: list[int] = []

    def check(live: dict[str, core_pb2.Pod]) -> None:
        if sts_of(c).status.update_revision != sts_of(c).status.current_revision:
            worst.append(4 - sum(1 for p in live.values() if is_pod_ready(p)))

    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    async with ReadinessDriver(c, LABELS, check) as driver:
        await c.create(sts_doc(replicas=4, podManagementPolicy="Parallel", updateStrategy=strategy))
        await c.until(lambda: sts_of(c).status.ready_replicas == 4)
        patch = '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}}}'
        await c.client.patch(STATEFUL_SETS, "web", patch, namespace=NS)
        await c.until(
            lambda: (
                {p.spec.containers[0].image for p in c.selected(LABELS)} == {"app:v2"}
                and sts_of(c).status.ready_replicas == 4
                and sts_of(c).status.current_revision == sts_of(c).status.update_revision
            )
        )
    assert sorted(driver.created[4:6]) == ["web-2", "web-3"], driver.created
    assert max(worst) == 2, "never more than maxUnavailable pods down"


# stateful_pod_control_test.go (TestStatefulPodControlUpdatesIdentity,
# TestStatefulPodControlUpdatePodConflictSuccess, TestStatefulPodControlUpdateIdentityFailure,
# TestStatefulPodControlNoOpUpdate), through the controller.


def _events(c: ControllerCluster, reason: str) -> list[str]:
    return sorted(
        e.message  # type: ignore[attr-defined]
        for e in c.informers.get(EVENTS).store.values()
        if e.reason == reason  # type: ignore[attr-defined]
    )


class _ConflictOnce(Client):
    """A client whose first pod update conflicts (another writer got there first)."""

    conflicts = 1

    async def update(self, obj: Any) -> Any:
        if obj.kind == "Pod" and self.conflicts:
            self.conflicts -= 1
            raise ConflictError("the object has been modified")
        return await super().update(obj)


class _RefusesUpdates(Client):
    async def update(self, obj: Any) -> Any:
        if obj.kind == "Pod":
            raise ForbiddenError("no pod updates today")
        return await super().update(obj)


async def _broken_identity(c: ControllerCluster, client: Client) -> str:
    """A Parallel set of one pod, then its pod-name label removed by someone else; the
    uid of the pod."""
    controller = StatefulSetController(client, c.informers)
    c.bump_on(STATEFUL_SETS, REVISIONS, CLAIMS, EVENTS)
    await c.start(controller)
    await c.create(sts_doc(replicas=1, podManagementPolicy="Parallel"))
    await c.until(lambda: pod_names(c) == ["web-0"] and sts_of(c).status.replicas == 1)
    assert _events(c, "SuccessfulUpdate") == [], "a matching pod is never updated"
    pod = c.selected(LABELS)[0]
    del pod.metadata.labels[POD_NAME_LABEL]
    await c.client.update(pod)
    return pod.metadata.uid


def _labelled(c: ControllerCluster) -> bool:
    pods = c.selected(LABELS)
    return len(pods) == 1 and pods[0].metadata.labels.get(POD_NAME_LABEL) == "web-0"


@pytest.mark.parametrize("conflicts", [0, 1], ids=["updates-identity", "conflict-then-success"])
async def test_a_pod_whose_identity_broke_is_updated_back(
    cluster: ControllerCluster, conflicts: int
) -> None:
    client = _ConflictOnce(cluster.client.address)
    client.conflicts = conflicts
    try:
        uid = await _broken_identity(cluster, client)
        await cluster.until(
            lambda: _labelled(cluster) and bool(_events(cluster, "SuccessfulUpdate"))
        )
        assert cluster.selected(LABELS)[0].metadata.uid == uid, "updated, not replaced"
        assert _events(cluster, "SuccessfulUpdate") == [
            "update Pod web-0 in StatefulSet web successful"
        ]
        assert client.conflicts == 0
    finally:
        await cluster.stop()
        await client.close()


async def test_a_refused_identity_update_is_a_failed_update_event(
    cluster: ControllerCluster,
) -> None:
    client = _RefusesUpdates(cluster.client.address)
    try:
        await _broken_identity(cluster, client)
        await cluster.until(lambda: bool(_events(cluster, "FailedUpdate")))
        (msg, *_) = _events(cluster, "FailedUpdate")
        assert msg.startswith("update Pod web-0 in StatefulSet web failed error: ")
        assert "no pod updates today" in msg
        assert not _labelled(cluster)
    finally:
        await cluster.stop()
        await client.close()


async def test_a_missing_claim_of_a_live_pod_is_made_again(sts_cluster: ControllerCluster) -> None:
    c = sts_cluster
    await c.create(sts_doc(replicas=1, podManagementPolicy="Parallel"))
    await c.until(lambda: claims_of(c) == ["www-web-0"] and pod_names(c) == ["web-0"])
    old = c.informers.get(CLAIMS).store.get(f"{NS}/www-web-0")
    await c.client.delete(CLAIMS, "www-web-0", NS)
    # The claim keeps its kubernetes.io/pvc-protection finalizer until the pvc-protection
    # controller (not running here) sees no scheduled pod use it; do what it would.
    doomed = await c.client.get(CLAIMS, "www-web-0", NS)
    del doomed.metadata.finalizers[:]
    await c.client.update(doomed)
    await c.until(
        lambda: (
            (cur := c.informers.get(CLAIMS).store.get(f"{NS}/www-web-0")) is not None
            and cur.metadata.uid != old.metadata.uid
        )  # type: ignore[union-attr]
    )
