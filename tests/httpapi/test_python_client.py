"""The official Python client (`kubernetes`) against a real apiserver on real etcd over
plain HTTP: typed reads and writes of pods, nodes and deployments, and a watch that
relists after a 410 the way an informer does."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch

from tests.httpapi.conftest import HostThread

pytestmark = pytest.mark.integration

#: The client sends a dict as a strategic merge patch unless told otherwise; kubera's
#: strategic merge patch is services/api/machinery/patching.py's (tested in tests/api).
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def api_client(host: HostThread) -> Any:
    cfg = k8s.Configuration()
    cfg.host = host.host.http_address
    cfg.api_key = {"authorization": "unused"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    c = k8s.ApiClient(cfg)
    try:
        yield c
    finally:
        c.close()


def make_pod(name: str, labels: dict[str, str] | None = None) -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1PodSpec(
            containers=[k8s.V1Container(name="c", image="registry.k8s.io/pause:3.9")]
        ),
    )


@pytest.fixture(scope="module")
def ns(api_client: Any) -> str:
    core = k8s.CoreV1Api(api_client)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="py")))
    return "py"


def test_pods_create_read_list_patch_delete(api_client: Any, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    created = core.create_namespaced_pod(ns, make_pod("p1", {"app": "a"}))
    assert created.metadata.uid and created.spec.containers[0].name == "c"
    assert core.read_namespaced_pod("p1", ns).metadata.uid == created.metadata.uid
    core.create_namespaced_pod(ns, make_pod("p2", {"app": "b"}))
    listed = core.list_namespaced_pod(ns, label_selector="app=a")
    assert [p.metadata.name for p in listed.items] == ["p1"] and listed.metadata.resource_version
    patched = core.patch_namespaced_pod(
        "p1", ns, {"metadata": {"labels": {"tier": "web"}}}, _content_type=MERGE
    )
    assert patched.metadata.labels == {"app": "a", "tier": "web"}
    everywhere = core.list_pod_for_all_namespaces(field_selector=f"metadata.namespace={ns}")
    assert sorted(p.metadata.name for p in everywhere.items) == ["p1", "p2"]
    core.delete_namespaced_pod("p1", ns)
    with pytest.raises(k8s.ApiException) as e:
        core.read_namespaced_pod("p1", ns)
    assert e.value.status == 404


def test_paged_list_with_limit_and_continue(api_client: Any, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    for i in range(3):
        core.create_namespaced_pod(ns, make_pod(f"pg{i}", {"page": "yes"}))
    names, token, pages = [], None, 0
    while pages < 10:
        page = core.list_namespaced_pod(ns, label_selector="page=yes", limit=2, _continue=token)
        names += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names == ["pg0", "pg1", "pg2"] and pages == 2


def test_create_conflicts_raise_api_exceptions_with_the_status(api_client: Any, ns: str) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_namespaced_pod(ns, make_pod("dup"))
    with pytest.raises(k8s.ApiException) as e:
        core.create_namespaced_pod(ns, make_pod("dup"))
    assert e.value.status == 409 and '"reason": "AlreadyExists"' in e.value.body.replace(
        '":"', '": "'
    )


def test_nodes_create_patch_status_list_delete(api_client: Any) -> None:
    core = k8s.CoreV1Api(api_client)
    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="py-node", labels={"zone": "z"})))
    core.patch_node_status(
        "py-node", {"status": {"capacity": {"cpu": "8", "memory": "16Gi"}}}, _content_type=MERGE
    )
    node = core.read_node("py-node")
    assert node.status.capacity == {"cpu": "8", "memory": "16Gi"}
    core.patch_node("py-node", {"spec": {"unschedulable": True}}, _content_type=MERGE)
    assert core.read_node("py-node").spec.unschedulable is True
    assert "py-node" in [n.metadata.name for n in core.list_node(label_selector="zone=z").items]
    core.delete_node("py-node")
    assert "py-node" not in [n.metadata.name for n in core.list_node().items]


def test_deployments_and_their_scale(api_client: Any, ns: str) -> None:
    apps = k8s.AppsV1Api(api_client)
    dep = k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="d"),
        spec=k8s.V1DeploymentSpec(
            replicas=2,
            selector=k8s.V1LabelSelector(match_labels={"app": "d"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={"app": "d"}),
                spec=make_pod("t").spec,
            ),
        ),
    )
    created = apps.create_namespaced_deployment(ns, dep)
    assert created.spec.replicas == 2
    apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 5}}, _content_type=MERGE)
    assert apps.read_namespaced_deployment_scale("d", ns).spec.replicas == 5
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 5
    names = [d.metadata.name for d in apps.list_namespaced_deployment(ns).items]
    assert names == ["d"]
    apps.delete_namespaced_deployment("d", ns)
    assert apps.list_namespaced_deployment(ns).items == []


def test_watch_stream_then_relist_after_410(api_client: Any, ns: str, host: HostThread) -> None:
    core = k8s.CoreV1Api(api_client)
    start = core.list_namespaced_pod(ns).metadata.resource_version
    core.create_namespaced_pod(ns, make_pod("w1"))
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=start, timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "w1":
            w.stop()
    assert ("ADDED", "w1") in seen
    # Push the pod watch cache's window past `start` (capacity 200 events).
    for i in range(210):
        core.patch_namespaced_pod(
            "w1", ns, {"metadata": {"labels": {"n": str(i)}}}, _content_type=MERGE
        )
    with pytest.raises(k8s.ApiException) as e:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, ns, resource_version=start, timeout_seconds=10
        ):
            pass
    assert e.value.status == 410
    relisted = core.list_namespaced_pod(ns)
    rv = relisted.metadata.resource_version
    core.delete_namespaced_pod("w1", ns)
    w = watch.Watch()
    events = []
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=10):
        events.append((event["type"], event["object"].metadata.name))
        w.stop()
    assert events == [("DELETED", "w1")]
