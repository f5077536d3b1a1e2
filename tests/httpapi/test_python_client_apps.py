"""The official Python client (`kubernetes`, strict models) on the apps kinds of issue 26:
DaemonSet, StatefulSet (and its scale), ControllerRevision and PersistentVolumeClaim are
created, read, listed and deleted through the typed API, so every object kubera writes
decodes into the client's own models."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from tests.httpapi.test_python_client import MERGE, api_client, make_pod

pytestmark = pytest.mark.integration

__all__ = ["api_client"]  # the fixture, shared with test_python_client


@pytest.fixture(scope="module")
def ns(api_client: Any) -> str:
    core = k8s.CoreV1Api(api_client)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="py-apps")))
    return "py-apps"


def template(app: str) -> k8s.V1PodTemplateSpec:
    return k8s.V1PodTemplateSpec(
        metadata=k8s.V1ObjectMeta(labels={"app": app}), spec=make_pod("t").spec
    )


def test_daemonsets_are_defaulted_and_decode(api_client: Any, ns: str) -> None:
    apps = k8s.AppsV1Api(api_client)
    ds = k8s.V1DaemonSet(
        metadata=k8s.V1ObjectMeta(name="agent"),
        spec=k8s.V1DaemonSetSpec(
            selector=k8s.V1LabelSelector(match_labels={"app": "agent"}), template=template("agent")
        ),
    )
    created = apps.create_namespaced_daemon_set(ns, ds)
    st = created.spec.update_strategy
    assert (st.type, st.rolling_update.max_unavailable, st.rolling_update.max_surge) == (
        "RollingUpdate",
        1,
        0,
    )
    assert created.spec.revision_history_limit == 10
    listed = apps.list_namespaced_daemon_set(ns)
    assert [d.metadata.name for d in listed.items] == ["agent"]
    apps.delete_namespaced_daemon_set("agent", ns)


def test_statefulsets_with_claims_and_their_scale(api_client: Any, ns: str) -> None:
    apps = k8s.AppsV1Api(api_client)
    sts = k8s.V1StatefulSet(
        metadata=k8s.V1ObjectMeta(name="web"),
        spec=k8s.V1StatefulSetSpec(
            service_name="nginx",
            replicas=2,
            selector=k8s.V1LabelSelector(match_labels={"app": "web"}),
            template=template("web"),
            volume_claim_templates=[
                k8s.V1PersistentVolumeClaim(
                    metadata=k8s.V1ObjectMeta(name="www"),
                    spec=k8s.V1PersistentVolumeClaimSpec(
                        access_modes=["ReadWriteOnce"],
                        resources=k8s.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
                    ),
                )
            ],
        ),
    )
    created = apps.create_namespaced_stateful_set(ns, sts)
    assert created.spec.pod_management_policy == "OrderedReady"
    assert created.spec.update_strategy.rolling_update.partition == 0
    policy = created.spec.persistent_volume_claim_retention_policy
    assert (policy.when_deleted, policy.when_scaled) == ("Retain", "Retain")
    assert created.spec.volume_claim_templates[0].spec.resources.requests == {"storage": "1Gi"}
    apps.patch_namespaced_stateful_set_scale(
        "web", ns, {"spec": {"replicas": 4}}, _content_type=MERGE
    )
    assert apps.read_namespaced_stateful_set_scale("web", ns).spec.replicas == 4
    assert apps.read_namespaced_stateful_set("web", ns).spec.replicas == 4
    with pytest.raises(k8s.ApiException) as e:
        apps.patch_namespaced_stateful_set(
            "web", ns, {"spec": {"serviceName": "other"}}, _content_type=MERGE
        )
    assert e.value.status == 422
    apps.delete_namespaced_stateful_set("web", ns)


def test_controller_revisions_and_claims_decode(api_client: Any, ns: str) -> None:
    apps = k8s.AppsV1Api(api_client)
    core = k8s.CoreV1Api(api_client)
    rev = k8s.V1ControllerRevision(
        metadata=k8s.V1ObjectMeta(name="web-1"), data={"spec": {"template": {}}}, revision=1
    )
    created = apps.create_namespaced_controller_revision(ns, rev)
    assert created.revision == 1 and created.data == {"spec": {"template": {}}}
    assert [r.metadata.name for r in apps.list_namespaced_controller_revision(ns).items] == [
        "web-1"
    ]
    claim = k8s.V1PersistentVolumeClaim(
        metadata=k8s.V1ObjectMeta(name="data"),
        spec=k8s.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            resources=k8s.V1VolumeResourceRequirements(requests={"storage": "2Gi"}),
        ),
    )
    made = core.create_namespaced_persistent_volume_claim(ns, claim)
    assert made.status.phase == "Pending"
    assert made.spec.volume_mode == "Filesystem"
    listed = core.list_namespaced_persistent_volume_claim(ns)
    assert [c.metadata.name for c in listed.items] == ["data"]
    core.delete_namespaced_persistent_volume_claim("data", ns)
    apps.delete_namespaced_controller_revision("web-1", ns)
