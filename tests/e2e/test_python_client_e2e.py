"""The official `kubernetes` Python client (37, pydantic models that refuse a missing
required field or a null where an integer belongs) against a real `kubera up`, configured
from the kubeconfig `up` wrote and nothing else: every kind kubera serves listed and watched
through the client's own models (one object of each, tests/e2e/kindobjects.py), pods and
PodDisruptionBudgets created, patched, watched and deleted, CoreV1Api on pods and nodes, a
watch that relists after a 410, AppsV1Api deployments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config, watch
from kubernetes.client.rest import ApiException

from kubera.testing import Cluster
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from tests.e2e.helpers import running
from tests.e2e.kindobjects import (
    NO_CLIENT_MODEL,
    VERB_KINDS,
    all_objects,
    dra_field_problems,
    named,
    python_api,
    write_statuses,
)
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


# A cluster of its own (tests/e2e/conftest.py): one object of every kind, cluster-scoped ones too.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, shared_ray: str) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("kubera-home")
    with running(home, "--nodes", "2", "--time-scale", "20", ray_address=shared_ray) as k:
        yield k


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[k8s.ApiClient]:
    c = config.new_client_from_config(config_file=str(cluster.home / "kubeconfig"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def every_kind(
    cluster: Cluster, api: k8s.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One object of every kind, applied with the CLI."""
    path = tmp_path_factory.mktemp("kinds") / "all.yaml"
    path.write_text(yaml.safe_dump_all(all_objects()))
    r = cluster("apply", "-f", str(path))
    assert r.returncode == 0, r.stderr + r.stdout
    write_statuses(cluster)


def _typed(api: k8s.ApiClient, kind: Kind) -> tuple[Any, str]:
    cls_name, snake = python_api(kind)
    return getattr(k8s, cls_name)(api), snake


def _list_call(api: k8s.ApiClient, kind: Kind) -> tuple[Any, tuple[str, ...]]:
    """The client's list function of `kind` across namespaces, and its leading arguments."""
    if kind.name in NO_CLIENT_MODEL:
        custom = k8s.CustomObjectsApi(api)
        return custom.list_cluster_custom_object, (kind.group, kind.version, kind.http_resource)
    typed, snake = _typed(api, kind)
    name = f"list_{snake}_for_all_namespaces" if kind.namespaced else f"list_{snake}"
    return getattr(typed, name), ()


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_lists_and_watches_through_the_clients_strict_models(
    api: k8s.ApiClient, every_kind: None, kind: Kind
) -> None:
    fn, args = _list_call(api, kind)
    listed = fn(*args)
    items = listed["items"] if isinstance(listed, dict) else listed.items
    names = [i["metadata"]["name"] if isinstance(i, dict) else i.metadata.name for i in items]
    assert f"cl-{kind.singular}" in names
    if kind.name in NO_CLIENT_MODEL:
        return
    assert type(listed).__name__.endswith(kind.kind + "List")
    # The item model by the list's own: the client's Watch guesses it from the list's name,
    # V1ResourceClaimList -> V1ResourceClaim, a model the client calls ResourceV1ResourceClaim.
    w = watch.Watch(return_type=type(items[0]))
    seen = None
    for ev in w.stream(
        fn,
        field_selector=f"metadata.name=cl-{kind.singular}",
        resource_version="0",
        timeout_seconds=30,
    ):
        seen = ev
        w.stop()
    assert seen is not None and seen["type"] == "ADDED"
    assert type(seen["object"]).__name__.endswith(kind.kind)


def test_the_newer_dra_fields_come_through_the_models(api: k8s.ApiClient, every_kind: None) -> None:
    """A claim allocated a share with consumed capacity and binding conditions, its device
    status, and slices with counters, taints, binding conditions and a capacity request
    policy: read through the client's models and written back out by its own serializer."""
    res = k8s.ResourceV1Api(api)
    objs = {
        "claim": res.read_namespaced_resource_claim("cl-resourceclaim", "default"),
        "slice": res.read_resource_slice("cl-resourceslice"),
        "counters": res.read_resource_slice("cl-resourceslice-counters"),
    }
    got = {k: api.sanitize_for_serialization(v) for k, v in objs.items()}
    assert dra_field_problems(got) == []


@pytest.mark.parametrize("kind_name", VERB_KINDS)
def test_creates_patches_watches_and_deletes(api: k8s.ApiClient, kind_name: str) -> None:
    kind = BY_KIND[kind_name]
    typed, snake = _typed(api, kind)
    name = f"py-verbs-{kind.singular}"
    rv = getattr(typed, f"list_namespaced_{snake}")("default").metadata.resource_version
    created = getattr(typed, f"create_namespaced_{snake}")("default", named(kind_name, name))
    assert created.metadata.name == name and created.metadata.uid
    patched = getattr(typed, f"patch_namespaced_{snake}")(
        name, "default", {"metadata": {"labels": {"patched": "yes"}}}
    )
    assert patched.metadata.labels["patched"] == "yes"
    getattr(typed, f"delete_namespaced_{snake}")(name, "default", grace_period_seconds=0)
    w = watch.Watch()
    seen = []
    for ev in w.stream(
        getattr(typed, f"list_namespaced_{snake}"),
        "default",
        field_selector=f"metadata.name={name}",
        resource_version=rv,
        timeout_seconds=60,
    ):
        assert type(ev["object"]).__name__.endswith(kind.kind)
        seen.append(ev["type"])
        if ev["type"] == "DELETED":
            w.stop()
    assert seen[0] == "ADDED" and "MODIFIED" in seen and seen[-1] == "DELETED", seen


def _pod(name: str, **labels: str) -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels or None),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
    )


def test_core_v1_lists_and_reads_nodes_and_patches_a_label(api: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api)

    def hollow() -> list[str]:  # not the node object of every_kind, which has no kubelet
        return [n.metadata.name for n in core.list_node().items if n.metadata.name != "cl-node"]

    until(lambda: len(hollow()) == 2, timeout=60)
    name = hollow()[0]
    node = core.read_node(name)
    assert node.metadata.name == name and node.status.allocatable["cpu"]
    patched = core.patch_node(name, {"metadata": {"labels": {"tier": "gold"}}})
    assert patched.metadata.labels["tier"] == "gold"
    assert [n.metadata.name for n in core.list_node(label_selector="tier=gold").items] == [name]


def _own_labels(pod: Any) -> dict[str, str]:
    """A pod's labels but the zone and region its binding may have copied from its node
    (PodTopologyLabelsAdmission, on by default): the pod may be bound at any moment."""
    return {
        k: v for k, v in (pod.metadata.labels or {}).items()
        if not k.startswith("topology.kubernetes.io/")
    }  # fmt: skip


def test_core_v1_creates_reads_patches_lists_and_deletes_a_pod(api: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(api)
    created = core.create_namespaced_pod("default", _pod("py-1", app="py"))
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", _pod("py-1"))
    assert e.value.status == 409
    got = core.read_namespaced_pod("py-1", "default")
    assert _own_labels(got) == {"app": "py"}
    patched = core.patch_namespaced_pod("py-1", "default", {"metadata": {"labels": {"v": "2"}}})
    assert _own_labels(patched) == {"app": "py", "v": "2"}
    assert [
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector="app=py").items
    ] == ["py-1"]
    assert any(p.metadata.name == "py-1" for p in core.list_pod_for_all_namespaces().items)
    core.delete_namespaced_pod("py-1", "default", grace_period_seconds=0)

    def gone() -> bool:
        try:
            core.read_namespaced_pod("py-1", "default")
        except ApiException as e:
            return e.status == 404
        return False

    until(gone, timeout=60)
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("never", "default")
    assert e.value.status == 404


def test_a_watch_from_an_expired_resource_version_gets_410_and_a_relist_watches_on(
    api: k8s.ApiClient,
) -> None:
    core = k8s.CoreV1Api(api)
    w = watch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(
            core.list_namespaced_pod, "default", resource_version="1", timeout_seconds=10
        ):
            pass
    assert e.value.status == 410
    listed = core.list_namespaced_pod("default")
    rv = listed.metadata.resource_version
    core.create_namespaced_pod("default", _pod("py-watched", app="watched"))
    seen = []
    for ev in w.stream(
        core.list_namespaced_pod,
        "default",
        resource_version=rv,
        label_selector="app=watched",
        timeout_seconds=30,
    ):
        seen.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "py-watched":
            w.stop()
    assert ("ADDED", "py-watched") in seen


def test_a_watch_from_past_the_store_gets_the_too_large_error_after_the_wait(
    api: k8s.ApiClient,
) -> None:
    """upstream's waitUntilFreshAndBlock: 3 s, then the watch's ERROR event, a 504 Timeout
    "Too large resource version", which the client raises (it retries only a 410)."""
    core = k8s.CoreV1Api(api)
    current = int(core.list_namespaced_pod("default").metadata.resource_version)
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod,
            "default",
            resource_version=str(current + 100_000),
            timeout_seconds=30,
        ):
            pass
    assert e.value.status == 504
    assert f"Timeout: Too large resource version: {current + 100_000}, current: " in str(
        e.value.reason
    )


def test_apps_v1_creates_scales_and_deletes_a_deployment(api: k8s.ApiClient) -> None:
    apps = k8s.AppsV1Api(api)
    dep = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="py-web"),
        spec=k8s.V1DeploymentSpec(
            replicas=2,
            selector=k8s.V1LabelSelector(match_labels={"app": "py-web"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={"app": "py-web"}),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
            ),
        ),
    )
    apps.create_namespaced_deployment("default", dep)
    until(
        lambda: (
            (apps.read_namespaced_deployment("py-web", "default").status.ready_replicas or 0) == 2
        ),
        timeout=90,
    )
    scale = apps.read_namespaced_deployment_scale("py-web", "default")
    assert scale.spec.replicas == 2
    apps.patch_namespaced_deployment_scale("py-web", "default", {"spec": {"replicas": 1}})
    until(
        lambda: apps.read_namespaced_deployment("py-web", "default").status.replicas == 1,
        timeout=90,
    )
    assert "py-web" in [d.metadata.name for d in apps.list_namespaced_deployment("default").items]
    apps.delete_namespaced_deployment("py-web", "default")
