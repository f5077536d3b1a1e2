"""OpenAPI v3 documents of kubera's API: /openapi/v3 and one document per group-version.

kubectl reads them for `kubectl explain`, to compute client-side apply patches (the
x-kubernetes-patch-* extensions of the schemas), and to learn that the server validates
fields: a `fieldValidation` query parameter on the kind's PATCH operation makes
`--validate=strict` server-side (kubectl's QueryParamVerifierV3). Like kube-apiserver,
/openapi/v3 indexes the documents at URLs carrying their content hash, so clients cache a
document until it changes. The schemas are services/httpapi/openapischemas.py's; this
module lays out the paths (operations, their parameters and GVKs) and the documents.

Differences from kube-apiserver: no watch paths (deprecated upstream) and no /openapi/v2
(kubectl 1.32 uses v3 when the server has it: explain, apply and validation were checked
against kubectl with no v2 endpoint).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from services.api.machinery.kinds import Kind
from services.httpapi import discovery
from services.httpapi.openapischemas import META, ref, schema_name, schemas_for

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_JSON_TYPES = ("application/json", "application/yaml")


# ---------------------------------------------------------------- paths


def _param(
    name: str, type_: str, text: str, *, where: str = "query", **extra: Any
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "name": name,
        "in": where,
        "description": text,
        "schema": {"type": type_, **extra},
    }
    if where == "path":
        p["required"] = True
    return p


_PRETTY = _param("pretty", "string", "If 'true', the output is pretty printed.")
_DRY_RUN = _param("dryRun", "string", "All: check the request, persist nothing.")
_FIELD_MANAGER = _param("fieldManager", "string", "The name of the actor making the change.")
#: kubectl looks for this parameter on a kind's PATCH to know the server validates fields.
_FIELD_VALIDATION = _param(
    "fieldValidation",
    "string",
    "What to do with unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
)
_FORCE = _param("force", "boolean", "Apply: take over fields other managers own.")
_LIST = [
    _param("allowWatchBookmarks", "boolean", "Watch: ask for BOOKMARK events.", uniqueItems=True),
    _param("continue", "string", "The continue token of the previous page.", uniqueItems=True),
    _param("fieldSelector", "string", "Only objects whose fields match.", uniqueItems=True),
    _param("labelSelector", "string", "Only objects whose labels match.", uniqueItems=True),
    _param("limit", "integer", "At most this many objects per page.", uniqueItems=True),
    _param("resourceVersion", "string", "The version to list or watch from.", uniqueItems=True),
    _param("resourceVersionMatch", "string", "How resourceVersion applies.", uniqueItems=True),
    _param(
        "sendInitialEvents", "boolean", "Watch: start with the current objects.", uniqueItems=True
    ),
    _param("timeoutSeconds", "integer", "End the list or watch after this long.", uniqueItems=True),
    _param("watch", "boolean", "Stream changes instead of listing.", uniqueItems=True),
]
_DELETE = [
    _DRY_RUN,
    _param("gracePeriodSeconds", "integer", "Seconds before the object is deleted."),
    _param(
        "propagationPolicy", "string", "Orphan, Background or Foreground deletion of dependents."
    ),
]


def _content(schema: str, types: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {t: {"schema": ref(schema)} for t in types}


def _op(
    action: str,
    op_id: str,
    kind: Kind,
    tag: str,
    gvk: tuple[str, str, str],
    response: str,
    *,
    params: list[dict[str, Any]] = (),  # type: ignore[assignment]
    body: dict[str, Any] | None = None,
    created: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(response)}}
    if created:
        responses["201"] = {"description": "Created", "content": _content(response)}
    responses["401"] = {"description": "Unauthorized"}
    op: dict[str, Any] = {
        "tags": [tag],
        "operationId": op_id,
        "parameters": list(params),
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": gvk[0], "version": gvk[1], "kind": gvk[2]},
    }
    if body is not None:
        op["requestBody"] = body
    return op


def _body(schema: str, types: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {"content": _content(schema, types), "required": True}


def _camel(group: str, version: str) -> str:
    name = group.split(".")[0] if group else "core"
    return name[:1].upper() + name[1:] + version[:1].upper() + version[1:]


def _tag(group: str, version: str) -> str:
    return f"{group.split('.')[0] if group else 'core'}_{version}"


def _write_params() -> list[dict[str, Any]]:
    return [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]


def _kind_paths(kind: Kind) -> dict[str, Any]:
    root = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    gv, tag = _camel(kind.group, kind.version), _tag(kind.group, kind.version)
    gvk = (kind.group, kind.version, kind.kind)
    schema = schema_name(kind.message.DESCRIPTOR)
    ns = "Namespaced" if kind.namespaced else ""
    base = (
        f"{root}/namespaces/{{namespace}}/{kind.http_resource}"
        if kind.namespaced
        else f"{root}/{kind.http_resource}"
    )
    scope = [
        _param("namespace", "string", "The object's namespace.", where="path", uniqueItems=True)
    ]
    scope = scope if kind.namespaced else []
    name = [_param("name", "string", f"The {kind.kind}'s name.", where="path", uniqueItems=True)]
    delete_body = _body(f"{META}.DeleteOptions", ("application/json",))
    delete_body["required"] = False
    paths: dict[str, Any] = {
        base: {
            "parameters": [*scope, _PRETTY],
            "get": _op(
                "list", f"list{gv}{ns}{kind.kind}", kind, tag, gvk, schema + "List", params=_LIST
            ),
            "post": _op(
                "post",
                f"create{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=_write_params(),
                body=_body(schema),
                created=True,
            ),
        },
        f"{base}/{{name}}": {
            "parameters": [*name, *scope, _PRETTY],
            "get": _op("get", f"read{gv}{ns}{kind.kind}", kind, tag, gvk, schema),
            "put": _op(
                "put",
                f"replace{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=_write_params(),
                body=_body(schema),
                created=True,
            ),
            "patch": _op(
                "patch",
                f"patch{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=[*_write_params(), _FORCE],
                body=_body(f"{META}.Patch", PATCH_TYPES),
                created=True,
            ),
            "delete": _op(
                "delete",
                f"delete{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                f"{META}.Status",
                params=_DELETE,
                body=delete_body,
            ),
        },
    }
    if "deletecollection" in discovery.verbs_of(kind):
        paths[base]["delete"] = _op(
            "deletecollection",
            f"delete{gv}Collection{ns}{kind.kind}",
            kind,
            tag,
            gvk,
            f"{META}.Status",
            params=[*_LIST, *_DELETE],
            body=delete_body,
        )
    if kind.namespaced:
        paths[f"{root}/{kind.http_resource}"] = {
            "parameters": [_PRETTY],
            "get": _op(
                "list",
                f"list{gv}{kind.kind}ForAllNamespaces",
                kind,
                tag,
                gvk,
                schema + "List",
                params=_LIST,
            ),
        }
    for sub in discovery.subresources_of(kind):
        paths[f"{base}/{{name}}/{sub.name}"] = _subresource_path(kind, sub, gv, tag, name + scope)
    return paths


_SUB_SCHEMAS = {
    "Binding": "io.k8s.api.core.v1.Binding",
    "Eviction": "io.k8s.api.policy.v1.Eviction",
}


def _subresource_path(
    kind: Kind, sub: discovery.Subresource, gv: str, tag: str, params: list[dict[str, Any]]
) -> dict[str, Any]:
    ns = "Namespaced" if kind.namespaced else ""
    suffix = sub.name[:1].upper() + sub.name[1:]
    if sub.kind == "Scale":
        schema, gvk = "io.k8s.api.autoscaling.v1.Scale", ("autoscaling", "v1", "Scale")
    elif sub.kind:
        schema, gvk = _SUB_SCHEMAS[sub.kind], (sub.group, sub.version, sub.kind)
    else:
        schema, gvk = schema_name(kind.message.DESCRIPTOR), (kind.group, kind.version, kind.kind)
    item: dict[str, Any] = {"parameters": [*params, _PRETTY]}
    op_name = f"{gv}{ns}{kind.kind}{suffix}"
    if "create" in sub.verbs:
        item["post"] = _op(
            "post",
            f"create{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=_write_params(),
            body=_body(schema),
            created=True,
        )
    if "get" in sub.verbs:
        item["get"] = _op("get", f"read{op_name}", kind, tag, gvk, schema)
    if "update" in sub.verbs:
        item["put"] = _op(
            "put",
            f"replace{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=_write_params(),
            body=_body(schema),
            created=True,
        )
    if "patch" in sub.verbs:
        item["patch"] = _op(
            "patch",
            f"patch{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=[*_write_params(), _FORCE],
            body=_body(f"{META}.Patch", PATCH_TYPES),
            created=True,
        )
    return item


# ------------------------------------------------------------ documents


@functools.cache
def _document(group: str, version: str) -> dict[str, Any] | None:
    kinds = discovery.kinds_in(group, version)
    if not kinds:
        return None
    paths: dict[str, Any] = {}
    for kind in kinds:
        paths.update(_kind_paths(kind))
    title = "Kubernetes"
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": discovery.GIT_VERSION},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": schemas_for(kinds),
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
        },
        "security": [{"BearerToken": []}],
    }


def openapi_v3_document(group: str, version: str) -> dict[str, Any] | None:
    """/openapi/v3/api/v1 (group "") or /openapi/v3/apis/G/V; None for a group-version kubera
    does not serve. The document is built once and shared: callers must not change it."""
    return _document(group, version)


def _path_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def document_hash(group: str, version: str) -> str:
    """The content hash in the index's URL (upper-case hex SHA-512, as kube-apiserver's)."""
    doc = _document(group, version)
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(data).hexdigest().upper()


def openapi_v3_paths() -> dict[str, Any]:
    """/openapi/v3: every group-version's document URL, with its hash."""
    return {
        "paths": {
            _path_key(g, v): {
                "serverRelativeURL": f"/openapi/v3/{_path_key(g, v)}?hash={document_hash(g, v)}"
            }
            for g, v in discovery.group_versions()
        }
    }


def clear_caches() -> None:
    """Forget the built documents (they are built once per process from static tables;
    tests that swap a table call this)."""
    _document.cache_clear()
    document_hash.cache_clear()


def document_for(path: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document a GET of `path` answers with (the ?hash= query is the
    client's cache key and does not change the answer); None when there is none."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] != ["openapi", "v3"]:
        return None
    rest = parts[2:]
    if not rest:
        return openapi_v3_paths()
    if len(rest) == 2 and rest[0] == "api":
        return openapi_v3_document("", rest[1])
    if len(rest) == 3 and rest[0] == "apis":
        return openapi_v3_document(rest[1], rest[2])
    return None
