"""The Kubernetes HTTP API of every apiserver replica: what kubectl and the official
Python client speak, served from the same registry (services/apiserver/registry.py) the
gRPC edge calls, so both APIs see one set of objects and one set of rules.

The modules, from the wire inwards:

* ``app``: the aiohttp application (`build_app`, `serve_http`), authentication and
  authorization of each request, and the dispatch of a parsed request to its verb;
* ``requestinfo``: a URL and method -> `RequestInfo` (upstream's RequestInfoFactory:
  API prefix, group, version, namespace, resource, name, subresource, verb);
* ``verbs``: get, list, create, update, patch, delete, deletecollection (and the
  status subresource), JSON in and out through services/api/machinery/codec.py;
* ``subresources``: pods/binding, pods/eviction, deployments|replicasets/scale;
* ``watch``: the chunked watch stream (ADDED/MODIFIED/DELETED/BOOKMARK/ERROR);
* ``status``: every refusal as a meta/v1 Status with the HTTP code kube-apiserver gives it;
* ``discovery``, ``openapi``, ``tables``: discovery documents, OpenAPI v3 and Table output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.httpapi.app import build_app, serve_http

__all__ = ["build_app", "serve_http"]

__getattr__ = lazy_exports(
    __name__,
    {"build_app": "services.httpapi.app", "serve_http": "services.httpapi.app"},
)
