"""Minimal discovery, OpenAPI and Table output, behind the names of the modules that
serve them fully (services/httpapi/discovery.py, openapi.py, tables.py), used only
while those are absent on this branch. Deleted when they are merged (issue 15)."""

from __future__ import annotations

import time
from typing import Any

from google.protobuf.message import Message

from services.api.kinds import KINDS, Kind

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SUBRESOURCES: dict[str, tuple[str, str, str, list[str]]] = {
    # resource/sub -> (group, version, kind, verbs)
    "pods/binding": ("", "v1", "Binding", ["create"]),
    "pods/eviction": ("policy", "v1", "Eviction", ["create"]),
    "deployments/scale": ("autoscaling", "v1", "Scale", ["get", "patch", "update"]),
    "replicasets/scale": ("autoscaling", "v1", "Scale", ["get", "patch", "update"]),
}


def version_info() -> dict[str, Any]:
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-kubera",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "",
        "platform": "linux/amd64",
    }


def core_api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def api_group_list() -> dict[str, Any]:
    groups: dict[str, set[str]] = {}
    for k in KINDS:
        if k.group:
            groups.setdefault(k.group, set()).add(k.version)
    out = []
    for g in sorted(groups):
        versions = [{"groupVersion": f"{g}/{v}", "version": v} for v in sorted(groups[g])]
        out.append({"name": g, "versions": versions, "preferredVersion": versions[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": out}


def resource_list(group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for k in KINDS:
        if (k.group, k.version) != (group, version):
            continue
        resources.append(
            {
                "name": k.resource,
                "singularName": k.singular,
                "namespaced": k.namespaced,
                "kind": k.kind,
                "verbs": _VERBS,
                **({"shortNames": list(k.short_names)} if k.short_names else {}),
            }
        )
        if k.has_status:
            resources.append(
                {
                    "name": f"{k.resource}/status",
                    "singularName": "",
                    "namespaced": k.namespaced,
                    "kind": k.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        for sub, (g, v, kind, verbs) in _SUBRESOURCES.items():
            if sub.split("/")[0] == k.resource:
                resources.append(
                    {
                        "name": sub,
                        "singularName": "",
                        "namespaced": k.namespaced,
                        "group": g,
                        "version": v,
                        "kind": kind,
                        "verbs": verbs,
                    }
                )
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }


def openapi_v3_paths() -> dict[str, Any]:
    paths = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1"}}
    for g in api_group_list()["groups"]:
        for v in g["versions"]:
            paths[f"apis/{v['groupVersion']}"] = {
                "serverRelativeURL": f"/openapi/v3/apis/{v['groupVersion']}"
            }
    return {"paths": paths}


def openapi_v3_document(group: str, version: str) -> dict[str, Any]:
    """Only what kubectl's query-parameter verifier reads: each kind's PATCH operation
    with its group-version-kind, and the fieldValidation parameter of its path."""
    prefix = f"/apis/{group}/{version}" if group else f"/{version}"
    prefix = prefix if group else "/api/v1"
    paths: dict[str, Any] = {}
    for k in KINDS:
        if (k.group, k.version) != (group, version):
            continue
        ns = "/namespaces/{namespace}" if k.namespaced else ""
        paths[f"{prefix}{ns}/{k.resource}/{{name}}"] = {
            "patch": {
                "operationId": f"patch{k.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                ],
                "x-kubernetes-group-version-kind": {
                    "group": k.group,
                    "version": k.version,
                    "kind": k.kind,
                },
                "responses": {"200": {"description": "OK"}},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0-kubera"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _age(ts: str, now: float) -> str:
    if not ts:
        return "<unknown>"
    try:
        t = time.mktime(time.strptime(ts.rstrip("Z").split(".")[0], "%Y-%m-%dT%H:%M:%S"))
        t -= time.timezone
    except ValueError:
        return "<invalid>"
    s = max(0, int(now - t))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def to_table(
    kind: Kind,
    objects: list[Message],
    *,
    wide: bool,
    include_object: str = "Metadata",
    list_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from services.httpapi.verbs import to_json

    now = time.time()
    rows = []
    for o in objects:
        m = o.metadata  # type: ignore[attr-defined]
        row: dict[str, Any] = {"cells": [m.name, _age(m.creation_timestamp, now)]}
        if include_object == "Object":
            row["object"] = to_json(kind, o)
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": to_json(kind, o).get("metadata", {}),
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "", "priority": 0},
        ],
        "rows": rows,
    }
