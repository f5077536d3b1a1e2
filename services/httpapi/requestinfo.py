"""A request's URL and method -> what it asks for (upstream's RequestInfoFactory).

Why this module exists: the resource path grammar is shared by the authorizer (which
needs verb, resource, subresource, namespace and name before anything runs) and the
dispatch (which needs the kind). Parsing it in one pure function keeps the two in step
and testable without a server. The grammar, as kube-apiserver's:

    /api/v1/RESOURCE[/NAME[/SUBRESOURCE]]
    /api/v1/namespaces/NS/RESOURCE[/NAME[/SUBRESOURCE]]
    /api/v1/namespaces[/NAME[/status|/finalize]]
    /apis/GROUP/VERSION/... (the same shapes)
    /api/v1/watch/...        (the deprecated watch prefix)

A list or watch whose field selector requires one metadata.name carries that name, as
upstream's (so an authorizer can allow watching one object). The verb: GET is get (with a name) or list, and watch with ``?watch=true|1`` or the watch
prefix; POST create; PUT update; PATCH patch; DELETE delete, or deletecollection without
a name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.api.machinery.kinds import KINDS, Kind

#: (group, version, resource) -> its Kind.
BY_GVR: dict[tuple[str, str, str], Kind] = {(k.group, k.version, k.http_resource): k for k in KINDS}
GROUP_VERSIONS: frozenset[tuple[str, str]] = frozenset((k.group, k.version) for k in KINDS)
#: Subresources of the namespace itself (not resources inside it).
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class RequestInfo:
    """A resource request, parsed. `kind` is None when the group/version/resource is not served."""

    verb: str
    group: str
    version: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    kind: Kind | None = None


class NotAResource(ValueError):
    """The path is not a resource path (discovery, openapi, or nothing at all)."""


def selected_name(field_selector: str) -> str:
    """The name a field selector requires exactly (metadata.name=X or ==X), or ""."""
    for part in field_selector.split(","):
        key, sep, value = part.partition("==") if "==" in part else part.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


def truthy(value: str | None) -> bool:
    return value in ("1", "true", "True")


def parse(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """The RequestInfo of a resource request; NotAResource for any other path."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise NotAResource(path)
    if not rest:
        raise NotAResource(path)
    watch_prefix = rest[0] == "watch"
    if watch_prefix:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise NotAResource(path)
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method in ("GET", "HEAD"):
        verb = "watch" if watch_prefix or truthy(query.get("watch")) else "get" if name else "list"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    elif method in METHOD_VERBS:
        verb = METHOD_VERBS[method]
    else:
        verb = method.lower()
    if verb in ("list", "watch") and not name:
        # As upstream: a list or watch selecting one name is authorized as for that name.
        name = selected_name(query.get("fieldSelector", ""))
    return RequestInfo(
        verb=verb,
        group=group,
        version=version,
        resource=resource,
        namespace=namespace,
        name=name,
        subresource=subresource,
        kind=BY_GVR.get((group, version, resource)),
    )
