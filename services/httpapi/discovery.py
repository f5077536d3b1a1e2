"""The discovery documents kubectl reads before anything else: /version, /api, /apis, the
APIResourceList of each group-version, and the aggregated (apidiscovery.k8s.io/v2) lists.

kubectl (1.32) asks /api and /apis for the aggregated form first (Accept names
`as=APIGroupDiscoveryList`); a server that answers with it saves the per-group-version round
trips, and kube-apiserver 1.32 does, so kubera does too. The unaggregated documents stay for
older clients and the official Python client.

Everything here is read off `services.api.machinery.kinds.KINDS` plus one table of
subresources, so a new kind appears in discovery without touching this module. The documents are pure data (no
request, no I/O); the HTTP edge (services/httpapi/app.py) mounts them.

Differences from kube-apiserver: no storageVersionHash (kubectl only uses it to invalidate
its cache, and kubera serves one version per kind), and only the subresources kubera serves.
"""

from __future__ import annotations

import functools
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from services.api.machinery.kinds import KINDS, Kind

#: The Kubernetes minor version kubera claims: kubectl warns when it is more than one minor
#: away from the server, and kubera follows the 1.32 API.
KUBERNETES_MAJOR = "1"
KUBERNETES_MINOR = "32"
GIT_VERSION = f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0-kubera"

#: The media type of the aggregated documents (request Accept and response Content-Type).
AGGREGATED_MEDIA_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

#: The verbs of a whole resource, as kube-apiserver's generic registry serves them.
STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
#: Namespaces and Services have no deletecollection upstream (deleting every namespace is
#: not a verb; a service's REST storage releases its IPs one by one).
NAMESPACE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")

#: Kinds in the `all` category (`kubectl get all`), as upstream's.
ALL_CATEGORY = frozenset(
    {
        "pods",
        "services",
        "deployments",
        "replicasets",
        "daemonsets",
        "statefulsets",
        "jobs",
        "cronjobs",
    }
)

#: Group order of /apis (kube-apiserver's priority order, restricted to kubera's groups);
#: groups not named here (scheduling.x-k8s.io, a CRD group upstream) follow, by name.
GROUP_ORDER = (
    "apps",
    "batch",
    "policy",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
)


@dataclass(frozen=True)
class Subresource:
    """One `<resource>/<name>` endpoint: its verbs and the kind it answers with."""

    resource: str
    name: str
    verbs: tuple[str, ...]
    #: (group, version, kind) of the response; empty group/version means the parent's.
    group: str = ""
    version: str = ""
    kind: str = ""


def _subresources() -> tuple[Subresource, ...]:
    # One row per plural: two groups may serve one (podgroups), each with its status.
    plurals = dict.fromkeys(k.http_resource for k in KINDS if k.has_status)
    subs = [Subresource(plural, "status", STATUS_VERBS) for plural in plurals]
    subs += [
        Subresource("pods", "binding", ("create",), "", "v1", "Binding"),
        Subresource("pods", "eviction", ("create",), "policy", "v1", "Eviction"),
        Subresource("namespaces", "finalize", ("update",)),
        Subresource("deployments", "scale", STATUS_VERBS, "autoscaling", "v1", "Scale"),
        Subresource("replicasets", "scale", STATUS_VERBS, "autoscaling", "v1", "Scale"),
        Subresource("statefulsets", "scale", STATUS_VERBS, "autoscaling", "v1", "Scale"),
    ]
    return tuple(subs)


SUBRESOURCES: tuple[Subresource, ...] = _subresources()


def subresources_of(kind: Kind) -> list[Subresource]:
    return sorted(
        (s for s in SUBRESOURCES if s.resource == kind.http_resource), key=lambda s: s.name
    )


def verbs_of(kind: Kind) -> list[str]:
    return list(NAMESPACE_VERBS if kind.kind in ("Namespace", "Service") else STANDARD_VERBS)


def categories_of(kind: Kind) -> list[str]:
    return ["all"] if kind.resource in ALL_CATEGORY else []


_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """apimachinery's version.CompareKubeAwareVersionStrings as a sort key: GA before beta
    before alpha, higher numbers first; other strings last, by name (v1 < v1beta1 <
    v1alpha1 in the order of the result)."""
    m = _VERSION.fullmatch(version)
    if m is None:
        return (3, 0, 0, version)
    stability = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stability, -int(m.group(1)), -int(m.group(3) or 0), version)


def group_versions() -> list[tuple[str, str]]:
    """Every (group, version) kubera serves, core first, then in GROUP_ORDER; a group's
    versions by priority (its first is its preferred version)."""
    seen = {(k.group, k.version) for k in KINDS}
    rank = {g: i for i, g in enumerate(("", *GROUP_ORDER))}
    return sorted(seen, key=lambda gv: (rank.get(gv[0], len(rank)), gv[0], version_priority(gv[1])))


def kinds_in(group: str, version: str) -> list[Kind]:
    return sorted(
        (k for k in KINDS if k.group == group and k.version == version),
        key=lambda k: k.http_resource,
    )


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


# ------------------------------------------------------------------ /version


@functools.cache
def version_info() -> dict[str, Any]:
    """/version (k8s.io/apimachinery/pkg/version.Info)."""
    return {
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


# ---------------------------------------------------------- unaggregated


def core_api_versions(*, server_address: str = "") -> dict[str, Any]:
    """/api: APIVersions (the legacy group has only v1)."""
    doc: dict[str, Any] = {"kind": "APIVersions", "versions": ["v1"]}
    if server_address:
        doc["serverAddressByClientCIDRs"] = [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ]
    return doc


def api_group_list() -> dict[str, Any]:
    """/apis: APIGroupList, one APIGroup per named group with its preferred version."""
    groups: dict[str, list[str]] = {}
    for group, version in group_versions():
        if group:
            groups.setdefault(group, []).append(version)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": group,
                "versions": [
                    {"groupVersion": _group_version(group, v), "version": v} for v in versions
                ],
                "preferredVersion": {
                    "groupVersion": _group_version(group, versions[0]),
                    "version": versions[0],
                },
            }
            for group, versions in groups.items()
        ],
    }


def api_group(group: str) -> dict[str, Any] | None:
    """/apis/G: one APIGroup; None when kubera does not serve the group."""
    for g in api_group_list()["groups"]:
        if g["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **g}
    return None


def _api_resource(kind: Kind) -> dict[str, Any]:
    res: dict[str, Any] = {
        "name": kind.http_resource,
        "singularName": kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": verbs_of(kind),
    }
    if kind.short_names:
        res["shortNames"] = list(kind.short_names)
    if categories_of(kind):
        res["categories"] = categories_of(kind)
    return res


def _api_subresource(kind: Kind, sub: Subresource) -> dict[str, Any]:
    res: dict[str, Any] = {
        "name": f"{kind.http_resource}/{sub.name}",
        "singularName": "",
        "namespaced": kind.namespaced,
    }
    if sub.kind:
        if sub.group != kind.group or sub.version != kind.version:
            res["group"], res["version"] = sub.group, sub.version
        res["kind"] = sub.kind
    else:
        res["kind"] = kind.kind
    res["verbs"] = list(sub.verbs)
    return res


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    """/api/v1 or /apis/G/V: APIResourceList with every resource and subresource; None
    when kubera does not serve the group-version."""
    kinds = kinds_in(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for kind in kinds:
        resources.append(_api_resource(kind))
        resources += [_api_subresource(kind, s) for s in subresources_of(kind)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _group_version(group, version),
        "resources": resources,
    }


# ------------------------------------------------------------ aggregated


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _resource_discovery(kind: Kind) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "resource": kind.http_resource,
        "responseKind": _gvk(kind.group, kind.version, kind.kind),
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "singularResource": kind.singular,
        "verbs": verbs_of(kind),
    }
    if kind.short_names:
        doc["shortNames"] = list(kind.short_names)
    if categories_of(kind):
        doc["categories"] = categories_of(kind)
    subs = [
        {
            "subresource": s.name,
            "responseKind": _gvk(s.group, s.version, s.kind)
            if s.kind
            else _gvk(kind.group, kind.version, kind.kind),
            "verbs": list(s.verbs),
        }
        for s in subresources_of(kind)
    ]
    if subs:
        doc["subresources"] = subs
    return doc


def _group_discovery(group: str, versions: Iterable[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": group} if group else {},
        "versions": [
            {
                "version": v,
                "resources": [_resource_discovery(k) for k in kinds_in(group, v)],
                "freshness": "Current",
            }
            for v in versions
        ],
    }


def aggregated_discovery(core: bool) -> dict[str, Any]:
    """apidiscovery.k8s.io/v2 APIGroupDiscoveryList: for /api when `core` (one item, the
    legacy group, whose name is ""), for /apis otherwise (every named group, in priority
    order). Served with Content-Type AGGREGATED_MEDIA_TYPE."""
    groups: dict[str, list[str]] = {}
    for group, version in group_versions():
        if bool(group) != core:
            groups.setdefault(group, []).append(version)
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [_group_discovery(g, vs) for g, vs in groups.items()],
    }


def wants_aggregated(accept: str) -> bool:
    """Whether an Accept header names the aggregated v2 list (kubectl names it first, with
    plain JSON as its fallback)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
    return False


JSON = "application/json"


def document_for(path: str, accept: str = "") -> tuple[dict[str, Any], str] | None:
    """The discovery document a GET of `path` answers with, and its Content-Type; None when
    `path` is not a discovery path kubera serves (the edge's 404). One dispatch for every
    discovery URL, so the edge cannot serve the aggregated form under the wrong type."""
    parts = [p for p in path.split("/") if p]
    if parts == ["version"]:
        return version_info(), JSON
    if parts in (["api"], ["apis"]):
        core = parts == ["api"]
        if wants_aggregated(accept):
            return aggregated_discovery(core), AGGREGATED_MEDIA_TYPE
        return (core_api_versions() if core else api_group_list()), JSON
    doc: dict[str, Any] | None = None
    if len(parts) == 2 and parts[0] == "api":
        doc = resource_list("", parts[1])
    elif len(parts) == 2 and parts[0] == "apis":
        doc = api_group(parts[1])
    elif len(parts) == 3 and parts[0] == "apis":
        doc = resource_list(parts[1], parts[2])
    return None if doc is None else (doc, JSON)
