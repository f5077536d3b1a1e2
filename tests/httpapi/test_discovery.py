"""Discovery documents: shapes as kube-apiserver 1.32 serves them, every kind present, and
real kubectl reading them (aggregated discovery first)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from services.api.machinery.kinds import KINDS, Kind
from services.httpapi import discovery
from tests.httpapi.kubectl_docs import doc_server


def _resources(kind: Kind) -> dict[str, dict]:
    doc = discovery.resource_list(kind.group, kind.version)
    assert doc is not None
    return {r["name"]: r for r in doc["resources"]}


def _aggregated(kind: Kind) -> dict:
    doc = discovery.aggregated_discovery(core=not kind.group)
    (group,) = [g for g in doc["items"] if g["metadata"].get("name", "") == kind.group]
    (version,) = [v for v in group["versions"] if v["version"] == kind.version]
    (res,) = [r for r in version["resources"] if r["resource"] == kind.http_resource]
    return res


def test_version_claims_kubernetes_1_32_so_kubectl_sees_no_skew() -> None:
    v = discovery.version_info()
    assert (v["major"], v["minor"]) == ("1", "32")
    assert v["gitVersion"].startswith("v1.32.")


def test_core_api_versions_has_only_v1() -> None:
    assert discovery.core_api_versions() == {"kind": "APIVersions", "versions": ["v1"]}


def test_api_group_list_names_each_group_once_with_its_preferred_version() -> None:
    groups = discovery.api_group_list()["groups"]
    names = [g["name"] for g in groups]
    assert sorted(names) == sorted({k.group for k in KINDS if k.group})
    served: dict[str, set[str]] = {}
    for k in KINDS:
        served.setdefault(k.group, set()).add(k.version)
    for g in groups:
        versions = sorted(served[g["name"]], key=discovery.version_priority)
        listed = [{"groupVersion": f"{g['name']}/{v}", "version": v} for v in versions]
        assert g["preferredVersion"] == listed[0]
        assert g["versions"] == listed


def test_a_group_with_ga_beta_and_alpha_versions_prefers_the_ga_one() -> None:
    group = discovery.api_group("scheduling.k8s.io")
    assert group is not None
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    assert group["preferredVersion"]["version"] == "v1"


@pytest.mark.parametrize(
    ("versions", "ordered"),
    [
        (["v1alpha1", "v1", "v1beta1"], ["v1", "v1beta1", "v1alpha1"]),
        (["v1beta1", "v2", "v1beta2"], ["v2", "v1beta2", "v1beta1"]),
        (["v1alpha2", "v1alpha1", "v10"], ["v10", "v1alpha2", "v1alpha1"]),
    ],
)
def test_versions_sort_ga_then_beta_then_alpha_highest_first(
    versions: list[str], ordered: list[str]
) -> None:
    assert sorted(versions, key=discovery.version_priority) == ordered


@pytest.mark.parametrize(
    ("group", "version"), [("resource.k8s.io", "v1"), ("scheduling.x-k8s.io", "v1alpha1")]
)
def test_new_groups_are_served_at_their_preferred_version(group: str, version: str) -> None:
    got = discovery.api_group(group)
    assert got is not None
    assert got["preferredVersion"] == {"groupVersion": f"{group}/{version}", "version": version}


def test_api_group_list_follows_kube_apiservers_group_priority() -> None:
    names = [g["name"] for g in discovery.api_group_list()["groups"]]
    assert names[:3] == ["apps", "batch", "policy"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_every_kind_is_in_its_resource_list(kind: Kind) -> None:
    res = _resources(kind)[kind.http_resource]
    assert res["kind"] == kind.kind
    assert res["singularName"] == kind.kind.lower()
    assert res["namespaced"] == kind.namespaced
    assert res.get("shortNames", []) == list(kind.short_names)
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(res["verbs"])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_every_kind_is_in_the_aggregated_document(kind: Kind) -> None:
    res = _aggregated(kind)
    assert res["responseKind"] == {"group": kind.group, "version": kind.version, "kind": kind.kind}
    assert res["scope"] == ("Namespaced" if kind.namespaced else "Cluster")
    assert res["singularResource"] == kind.kind.lower()
    assert res["verbs"] == _resources(kind)[kind.http_resource]["verbs"]


@pytest.mark.parametrize("kind", [k for k in KINDS if k.has_status], ids=lambda k: k.resource)
def test_every_kind_with_status_has_a_status_subresource(kind: Kind) -> None:
    res = _resources(kind)[f"{kind.http_resource}/status"]
    assert (res["kind"], res["verbs"]) == (kind.kind, ["get", "patch", "update"])
    assert "group" not in res  # the parent's group-version
    (sub,) = [s for s in _aggregated(kind).get("subresources", []) if s["subresource"] == "status"]
    assert sub["verbs"] == ["get", "patch", "update"]


@pytest.mark.parametrize(
    ("name", "group", "version", "kind", "verbs"),
    [
        ("pods/binding", None, None, "Binding", ["create"]),
        ("pods/eviction", "policy", "v1", "Eviction", ["create"]),
        ("deployments/scale", "autoscaling", "v1", "Scale", ["get", "patch", "update"]),
        ("replicasets/scale", "autoscaling", "v1", "Scale", ["get", "patch", "update"]),
    ],
)
def test_action_subresources_name_the_kind_they_take(
    name: str, group: str | None, version: str | None, kind: str, verbs: list[str]
) -> None:
    parent = next(k for k in KINDS if k.http_resource == name.split("/")[0])
    res = _resources(parent)[name]
    assert (res.get("group"), res.get("version"), res["kind"], res["verbs"]) == (
        group,
        version,
        kind,
        verbs,
    )


def test_namespaces_cannot_be_deleted_as_a_collection() -> None:
    ns = next(k for k in KINDS if k.kind == "Namespace")
    assert "deletecollection" not in _resources(ns)["namespaces"]["verbs"]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.resource)
def test_only_workloads_are_in_the_all_category(kind: Kind) -> None:
    assert {
        "pods",
        "services",
        "deployments",
        "replicasets",
        "daemonsets",
        "statefulsets",
        "jobs",
        "cronjobs",
    } <= discovery.ALL_CATEGORY
    expected = ["all"] if kind.http_resource in discovery.ALL_CATEGORY else []
    assert _resources(kind)[kind.http_resource].get("categories", []) == expected
    assert _aggregated(kind).get("categories", []) == expected


def test_core_aggregated_document_is_one_unnamed_group() -> None:
    doc = discovery.aggregated_discovery(core=True)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    assert [g["metadata"] for g in doc["items"]] == [{}]
    assert [v["freshness"] for v in doc["items"][0]["versions"]] == ["Current"]


def test_unknown_group_version_has_no_resource_list() -> None:
    assert discovery.resource_list("example.com", "v1") is None
    assert discovery.resource_list("apps", "v1beta1") is None
    assert discovery.api_group("example.com") is None


@pytest.mark.parametrize(
    ("accept", "aggregated"),
    [
        (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            True,
        ),
        ("application/json; g=apidiscovery.k8s.io; v=v2; as=APIGroupDiscoveryList", True),
        ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", False),
        ("application/json, */*", False),
        ("", False),
    ],
)
def test_aggregated_form_only_when_accept_names_v2(accept: str, aggregated: bool) -> None:
    assert discovery.wants_aggregated(accept) is aggregated


# ------------------------------------------------------------------ kubectl


async def test_kubectl_api_resources_lists_every_kind_from_aggregated_discovery(
    tmp_path: Path,
) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("api-resources", "--no-headers")
    assert rc == 0, err
    listed = {line.split()[0] for line in out.splitlines()}
    assert listed == {k.http_resource for k in KINDS}
    # The aggregated documents were enough: no per-group-version round trip.
    paths = [r.path_qs.split("?")[0] for r in server.requests]
    assert "/api/v1" not in paths and "/apis/apps/v1" not in paths
    assert "/apis" in paths


async def test_kubectl_api_resources_filters_by_category_and_verb(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl(
            "api-resources", "--categories=all", "--verbs=deletecollection", "-o", "name"
        )
    assert rc == 0, err
    assert {
        "daemonsets.apps",
        "deployments.apps",
        "pods",
        "replicasets.apps",
        "statefulsets.apps",
        "jobs.batch",
        "cronjobs.batch",
    } <= set(out.split())


async def test_kubectl_get_raw_reads_the_resource_list(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("get", "--raw", "/apis/apps/v1")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["groupVersion"] == "apps/v1"
    assert {"deployments", "deployments/scale", "deployments/status"} <= {
        r["name"] for r in doc["resources"]
    }


async def test_kubectl_version_shows_the_server_without_a_skew_warning(tmp_path: Path) -> None:
    async with doc_server(tmp_path) as server:
        rc, out, err = await server.kubectl("version")
    assert rc == 0, err
    assert f"Server Version: {discovery.GIT_VERSION}" in out
    assert "WARNING" not in err


async def test_python_dynamic_client_finds_kinds_and_subresources_unaggregated(
    tmp_path: Path,
) -> None:
    """The official Python client's DynamicClient reads /apis and each APIResourceList."""
    from kubernetes import client, dynamic

    async with doc_server(tmp_path) as server:

        def discover() -> tuple[Any, Any]:
            cfg = client.Configuration()
            cfg.host = server.url
            dc = dynamic.DynamicClient(client.ApiClient(cfg))
            deploy = dc.resources.get(api_version="apps/v1", kind="Deployment")
            pod = dc.resources.get(api_version="v1", kind="Pod")
            return deploy, pod

        deploy, pod = await asyncio.to_thread(discover)
    assert (deploy.name, deploy.namespaced, deploy.short_names) == ("deployments", True, ["deploy"])
    assert sorted(deploy.subresources) == ["scale", "status"]
    assert sorted(pod.subresources) == ["binding", "eviction", "status"]
    assert all("as=APIGroupDiscoveryList" not in r.accept for r in server.requests)


AGGREGATED = discovery.AGGREGATED_MEDIA_TYPE


@pytest.mark.parametrize(
    ("path", "accept", "kind", "content_type"),
    [
        ("/version", "", None, "application/json"),
        ("/api", "application/json", "APIVersions", "application/json"),
        ("/api", AGGREGATED + ",application/json", "APIGroupDiscoveryList", AGGREGATED),
        ("/apis", "application/json, */*", "APIGroupList", "application/json"),
        ("/apis/", AGGREGATED, "APIGroupDiscoveryList", AGGREGATED),
        ("/api/v1", AGGREGATED, "APIResourceList", "application/json"),
        ("/apis/apps", "", "APIGroup", "application/json"),
        ("/apis/apps/v1", "", "APIResourceList", "application/json"),
    ],
)
def test_document_for_dispatches_every_discovery_path(
    path: str, accept: str, kind: str | None, content_type: str
) -> None:
    found = discovery.document_for(path, accept)
    assert found is not None
    doc, ctype = found
    assert (doc.get("kind"), ctype) == (kind, content_type)


@pytest.mark.parametrize(
    "path", ["/apis/example.com", "/apis/example.com/v1", "/api/v2", "/apis/apps/v1/x", "/healthz"]
)
def test_document_for_unknown_paths_is_none(path: str) -> None:
    assert discovery.document_for(path, "") is None
