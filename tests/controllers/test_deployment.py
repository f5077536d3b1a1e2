"""The Deployment controller: the pure rules (fenceposts, hash) as tables, and rollouts
against a real gRPC apiserver with the ReplicaSet controller, the test playing the kubelet
(readiness) and checking every state the pods pass through."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from protos.kubera.v1 import apps_pb2, core_pb2
from services.controllers.controller_utils import is_pod_ready
from services.controllers.deployment import DeploymentConfig, DeploymentController
from services.controllers.deployment.util import (
    DEFAULT_UNIQUE_LABEL_KEY,
    REVISION_ANNOTATION,
    compute_hash,
    equal_ignore_hash,
    resolve_fenceposts,
    safe_encode,
)
from services.controllers.replicaset import ReplicaSetController
from tests.controllers.conftest import (
    DEPLOYMENTS,
    NS,
    REPLICA_SETS,
    ControllerCluster,
    ReadinessDriver,
)

# ============================================================================ pure rules


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 4, (1, 1)),
        ("25%", "25%", 3, (1, 0)),  # surge rounds up, unavailable down
        ("25%", "25%", 10, (3, 2)),
        ("1%", "0%", 2, (1, 0)),
        ("0%", "1%", 2, (0, 1)),  # both resolve to 0: unavailable becomes 1
        ("0", "1%", 1, (0, 1)),
        (None, "2", 5, (0, 2)),  # unset counts as 0
        ("3", "2", 10, (3, 2)),
        ("100%", "0", 3, (3, 0)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailable_down(
    surge: str | None, unavailable: str | None, desired: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


@pytest.mark.parametrize(("text", "encoded"), [("0123456789", "456789bcdf"), ("42", "86")])
def test_safe_encode_maps_digits_into_upstreams_vowel_free_alphabet(
    text: str, encoded: str
) -> None:
    assert safe_encode(text) == encoded


def _template(image: str, labels: dict[str, str] | None = None) -> core_pb2.PodTemplateSpec:
    t = core_pb2.PodTemplateSpec()
    t.metadata.labels.update(labels or {"app": "web"})
    t.spec.containers.add(name="c", image=image)
    return t


def test_the_template_hash_is_stable_and_changes_with_the_template_and_collisions() -> None:
    h = compute_hash(_template("app:v1"))
    assert h == compute_hash(_template("app:v1"))
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert compute_hash(_template("app:v2")) != h
    assert compute_hash(_template("app:v1"), 0) != h
    assert compute_hash(_template("app:v1"), 1) != compute_hash(_template("app:v1"), 0)
    labeled = _template("app:v1", {"app": "web", DEFAULT_UNIQUE_LABEL_KEY: h})
    assert equal_ignore_hash(labeled, _template("app:v1"))
    assert not equal_ignore_hash(labeled, _template("app:v2"))


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="workers"):
        DeploymentConfig(workers=0)
    with pytest.raises(ValueError, match="max_retries"):
        DeploymentConfig(max_retries=-1)


# ============================================================================ the controller


@pytest.fixture
async def controllers(cluster: ControllerCluster) -> AsyncIterator[ControllerCluster]:
    await cluster.start(
        ReplicaSetController(cluster.client, cluster.informers),
        DeploymentController(cluster.client, cluster.informers),
    )
    yield cluster


def complete(cluster: ControllerCluster, name: str, image: str | None = None) -> bool:
    """The rollout is done (upstream's DeploymentComplete, on the cached status), with
    every pod running `image` when given."""
    d = cluster.deploy(name)
    if d is None:
        return False
    n, s = d.spec.replicas, d.status
    if not (
        s.observed_generation >= d.metadata.generation
        and s.updated_replicas == s.replicas == s.available_replicas == n
    ):
        return False
    if image is None:
        return True
    pods = cluster.selected(dict(d.spec.selector.match_labels))
    return len(pods) == n and all(p.spec.containers[0].image == image for p in pods)


async def set_image(cluster: ControllerCluster, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
    await cluster.client.patch(DEPLOYMENTS, name, json.dumps(patch), namespace=NS)


def conditions(d: apps_pb2.Deployment) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in d.status.conditions}


async def test_deployment_creates_a_replica_set_named_by_template_hash_at_revision_1(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    created = await cluster.deployment("web", 3, {"app": "web"})
    async with ReadinessDriver(cluster, {"app": "web"}):
        await cluster.until(lambda: complete(cluster, "web"))
    d = cluster.deploy("web")
    assert d is not None
    (rs,) = cluster.replica_sets_of(d)
    pod_hash = compute_hash(created.spec.template)
    assert rs.metadata.name == f"web-{pod_hash}"
    assert rs.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] == pod_hash
    assert dict(rs.spec.selector.match_labels) == {"app": "web", DEFAULT_UNIQUE_LABEL_KEY: pod_hash}
    assert rs.spec.template.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] == pod_hash
    assert rs.metadata.annotations[REVISION_ANNOTATION] == "1"
    assert rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "4"  # 3 + 25% up
    ref = rs.metadata.owner_references[0]
    assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
        "Deployment",
        "web",
        d.metadata.uid,
        True,
        True,
    )
    assert d.metadata.annotations[REVISION_ANNOTATION] == "1"
    pods = cluster.pods_of(rs)
    assert len(pods) == 3
    assert all(p.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] == pod_hash for p in pods)
    assert all(p.metadata.name.startswith(f"web-{pod_hash}-") for p in pods)
    s = d.status
    assert (s.replicas, s.updated_replicas, s.ready_replicas, s.available_replicas) == (3, 3, 3, 3)
    assert s.unavailable_replicas == 0
    assert conditions(d) == {
        "Available": ("True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
        "Progressing": (
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "web-{pod_hash}" has successfully progressed.',
        ),
    }


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable"),
    [
        (4, "1", "1"),
        (4, "25%", "0"),
        (5, "0", "40%"),
        (3, "50%", "50%"),
    ],
)
async def test_a_template_change_rolls_within_max_surge_and_max_unavailable_at_every_step(
    controllers: ControllerCluster, replicas: int, surge: str, unavailable: str
) -> None:
    cluster = controllers
    max_surge, max_unavailable = resolve_fenceposts(surge, unavailable, replicas)
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }
    await cluster.deployment("web", replicas, {"app": "web"}, strategy=strategy)
    violations: list[str] = []
    states: list[tuple[int, int]] = []
    rolling = False

    def check(live: dict[str, core_pb2.Pod]) -> None:
        total = len(live)
        ready = sum(1 for p in live.values() if is_pod_ready(p))
        states.append((total, ready))
        if total > replicas + max_surge:
            violations.append(f"{total} pods > {replicas} + maxSurge {max_surge}")
        if rolling and ready < replicas - max_unavailable:
            violations.append(f"{ready} ready < {replicas} - maxUnavailable {max_unavailable}")

    async with ReadinessDriver(cluster, {"app": "web"}, check):
        await cluster.until(lambda: complete(cluster, "web", "app:v1"))
        rolling = True
        before = len(states)
        await set_image(cluster, "web", "app:v2")
        await cluster.until(lambda: complete(cluster, "web", "app:v2"), timeout=20)
    assert violations == []
    assert len(states) - before >= 2 * replicas, "every replaced pod passes through the check"
    d = cluster.deploy("web")
    assert d is not None
    assert d.metadata.annotations[REVISION_ANNOTATION] == "2"
    sizes = sorted(
        (rs.metadata.annotations[REVISION_ANNOTATION], rs.spec.replicas)
        for rs in cluster.replica_sets_of(d)
    )
    assert sizes == [("1", 0), ("2", replicas)]


async def test_recreate_scales_the_old_pods_to_zero_before_any_new_pod_exists(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    await cluster.deployment("db", 3, {"app": "db"}, strategy={"type": "Recreate"})
    mixed: list[set[str]] = []
    saw_empty = False

    def check(live: dict[str, core_pb2.Pod]) -> None:
        nonlocal saw_empty
        images = {p.spec.containers[0].image for p in live.values()}
        if len(images) > 1:
            mixed.append(images)
        saw_empty = saw_empty or not live

    async with ReadinessDriver(cluster, {"app": "db"}, check):
        await cluster.until(lambda: complete(cluster, "db", "app:v1"))
        saw_empty = False
        await set_image(cluster, "db", "app:v2")
        await cluster.until(lambda: complete(cluster, "db", "app:v2"))
    assert mixed == [], "old and new pods never run together"
    assert saw_empty, "the old pods were all gone before the first new one came"


async def test_revision_history_limit_keeps_only_the_newest_old_replica_sets(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    await cluster.deployment("hist", 1, {"app": "hist"}, revisionHistoryLimit=1)
    async with ReadinessDriver(cluster, {"app": "hist"}):
        await cluster.until(lambda: complete(cluster, "hist", "app:v1"))
        for image in ("app:v2", "app:v3", "app:v4"):
            await set_image(cluster, "hist", image)
            await cluster.until(lambda image=image: complete(cluster, "hist", image))
    d = cluster.deploy("hist")
    assert d is not None

    def revisions() -> list[str]:
        return sorted(
            rs.metadata.annotations[REVISION_ANNOTATION] for rs in cluster.replica_sets_of(d)
        )

    await cluster.until(lambda: revisions() == ["3", "4"])
    assert d.metadata.annotations[REVISION_ANNOTATION] == "4"


async def test_scaling_mid_rollout_spreads_replicas_proportionally_as_upstream_documents(
    controllers: ControllerCluster,
) -> None:
    """kubernetes.io's example: 10 replicas, maxSurge 3, maxUnavailable 2, a rollout to an
    image that never gets ready, then a scale to 15: 3 go to the old ReplicaSet, 2 to the
    new one."""
    cluster = controllers
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    await cluster.deployment("big", 10, {"app": "big"}, strategy=strategy)
    d = None

    def sizes() -> tuple[int, ...]:
        assert d is not None
        rss = sorted(
            cluster.replica_sets_of(d), key=lambda rs: rs.metadata.annotations[REVISION_ANNOTATION]
        )
        return tuple(rs.spec.replicas for rs in rss)

    async with ReadinessDriver(
        cluster, {"app": "big"}, ready_if=lambda p: p.spec.containers[0].image == "app:v1"
    ):
        await cluster.until(lambda: complete(cluster, "big", "app:v1"))
        d = cluster.deploy("big")
        await set_image(cluster, "big", "app:broken")
        await cluster.until(lambda: sizes() == (8, 5))
        await cluster.client.patch(
            DEPLOYMENTS, "big", json.dumps({"spec": {"replicas": 15}}), namespace=NS
        )
        await cluster.until(lambda: sizes() == (11, 7))
    assert d is not None
    for rs in cluster.replica_sets_of(d):
        assert rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "15"
        assert rs.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "18"


async def test_deleting_a_deployment_deletes_its_replica_sets_and_their_pods(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    await cluster.deployment("gone", 2, {"app": "gone"})
    await cluster.until(lambda: len(cluster.selected({"app": "gone"})) == 2)
    d = cluster.deploy("gone")
    assert d is not None
    await cluster.client.delete(DEPLOYMENTS, "gone", NS)
    await cluster.until(
        lambda: not cluster.replica_sets_of(d) and not cluster.selected({"app": "gone"})
    )
    rss, _ = await cluster.client.list(REPLICA_SETS, namespace=NS)
    assert rss == []


async def test_a_paused_deployment_does_not_roll_out_until_resumed(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    await cluster.deployment("p", 2, {"app": "p"})
    async with ReadinessDriver(cluster, {"app": "p"}):
        await cluster.until(lambda: complete(cluster, "p", "app:v1"))
        patch = {
            "spec": {
                "paused": True,
                "template": {"spec": {"containers": [{"name": "c", "image": "app:v2"}]}},
            }
        }
        await cluster.client.patch(DEPLOYMENTS, "p", json.dumps(patch), namespace=NS)

        def paused_seen() -> bool:
            d = cluster.deploy("p")
            return (
                d is not None
                and d.status.observed_generation == d.metadata.generation
                and conditions(d).get("Progressing")
                == ("Unknown", "DeploymentPaused", "Deployment is paused")
            )

        await cluster.until(paused_seen)
        d = cluster.deploy("p")
        assert d is not None
        assert len(cluster.replica_sets_of(d)) == 1, "no new ReplicaSet while paused"
        await cluster.client.patch(
            DEPLOYMENTS, "p", json.dumps({"spec": {"paused": False}}), namespace=NS
        )
        await cluster.until(lambda: complete(cluster, "p", "app:v2"))


async def test_a_rollout_without_progress_reports_progress_deadline_exceeded(
    controllers: ControllerCluster,
) -> None:
    cluster = controllers
    await cluster.deployment("stuck", 1, {"app": "stuck"}, progressDeadlineSeconds=1)

    def timed_out() -> bool:
        d = cluster.deploy("stuck")
        return d is not None and conditions(d).get("Progressing", ("",))[0] == "False"

    await cluster.until(timed_out, timeout=8)  # no pod ever gets ready
    d = cluster.deploy("stuck")
    assert d is not None
    (rs,) = cluster.replica_sets_of(d)
    assert conditions(d)["Progressing"] == (
        "False",
        "ProgressDeadlineExceeded",
        f'ReplicaSet "{rs.metadata.name}" has timed out progressing.',
    )
    assert conditions(d)["Available"][:2] == ("False", "MinimumReplicasUnavailable")
