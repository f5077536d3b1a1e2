"""The HTTP half of the fuzz harness: hypothesis over every route of the Kubernetes HTTP
API (services/httpapi/), through a real socket, with the same tally as the gRPC half
(kubera/fuzz/harness.py).

Routes are every kind's collection, item and subresource paths (core and group forms,
namespaced and not), the discovery and OpenAPI documents, and paths of random text; each
input picks a route, a method, query parameters (the API's own names with values in and
out of their grammar), Content-Type and Accept headers, and a body. Three shapes, as for
gRPC:

- `raw`: random bytes as the body, random methods and query strings;
- `random`: random JSON as the body, random parameters;
- `crafted`: the route's own kind as a valid object, then bent (bit flips, truncations,
  wrong types in fields), merge / JSON / strategic / apply patches with directives, huge
  and negative resourceVersions, limits and grace periods, deep nesting.

An answer is fine when its status is one the API means (`ALLOWED_HTTP`); a 500 or
another code, a request that hangs past its deadline, a traceback in the server's log, or
a write to storage made by a request that was answered with an error (a partial write;
see `harness.RecordingStorage`) is a failure, kept once per class.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubera.fuzz.grpc_inputs import (
    INTERESTING_STRINGS,
    json_values,
    merge_patches,
    mutated,
    names,
    resource_versions,
    selectors,
)
from kubera.fuzz.harness import ErrorLog, Tally, pod_doc, traceback_head
from services.api.machinery.kinds import KINDS, Kind

#: Statuses the HTTP API answers on purpose (upstream's, for the same inputs). 500 is not
#: among them: upstream answers 500 only for a bug or a broken store, as we mean to.
ALLOWED_HTTP = frozenset(
    {200, 201, 202, 400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 422, 429, 503, 504}
)
OPEN = "OPEN (stream still open)"
TIMEOUT = 20.0
WATCH_READ_SECONDS = 0.3

SUBRESOURCES = ("status", "binding", "eviction", "scale", "log", "x")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CONTENT_TYPES = (
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
)
ACCEPTS = (
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "*/*",
    "",
    "text/html",
)
PARAMS = (
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "watch",
    "dryRun",
    "fieldValidation",
    "fieldManager",
    "force",
    "gracePeriodSeconds",
    "propagationPolicy",
    "orphanDependents",
    "pretty",
    "includeObject",
    "sendInitialEvents",
)
PATCH_CONTENT_TYPES = CONTENT_TYPES[1:5]
#: What anyone may read without a token (upstream's system:public-info-viewer).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
DOCUMENTS = (
    "/version",
    "/api",
    "/apis",
    "/api/v1",
    "/openapi/v3",
    "/openapi/v3/api/v1",
    "/openapi/v3/apis/apps/v1",
    "/openapi/v2",
    "/healthz",
    "/livez",
    "/readyz",
)


#: Every kind has objects of these names in "default" (`seed_http`), so items are found.
SEEDED = ("fz-0", "fz-1")


def _base(kind: Kind) -> str:
    return "/api/v1" if not kind.group else f"/apis/{kind.group}/{kind.version}"


@dataclass(frozen=True)
class Route:
    """A path and the name of its class in the tally ("pods/{name}/status")."""

    path: str
    template: str
    kind: Kind | None = None


@st.composite
def routes(draw: st.DrawFn) -> Route:
    if draw(st.integers(0, 9)) == 0:
        doc = draw(st.sampled_from(DOCUMENTS))
        return Route(doc, doc)
    if draw(st.integers(0, 19)) == 0:
        text = draw(st.text(max_size=40))
        return Route("/" + urllib.parse.quote(text, safe="/"), "{random path}")
    kind = draw(st.sampled_from(KINDS))
    ns = draw(st.sampled_from(["default", "default", "fz", "", "kube-system", "BAD"]))
    base = _base(kind)
    prefix = f"{base}/namespaces/{ns}" if kind.namespaced and ns else base
    shape = draw(st.sampled_from(["collection", "item", "item", "sub"]))
    if shape == "collection":
        return Route(f"{prefix}/{kind.resource}", kind.resource, kind)
    name = draw(st.one_of(st.sampled_from(SEEDED), names()))
    item = f"{prefix}/{kind.resource}/{urllib.parse.quote(name, safe='')}"
    if shape == "item":
        return Route(item, f"{kind.resource}/{{name}}", kind)
    sub = draw(st.sampled_from(SUBRESOURCES))
    return Route(f"{item}/{sub}", f"{kind.resource}/{{name}}/{sub}", kind)


def param_values(name: str) -> st.SearchStrategy[str]:
    if name in ("labelSelector", "fieldSelector"):
        return selectors()
    if name in ("resourceVersion",):
        return resource_versions()
    if name in ("limit", "timeoutSeconds", "gracePeriodSeconds"):
        return st.one_of(
            st.integers(-(2**70), 2**70).map(str), st.sampled_from(INTERESTING_STRINGS[:13])
        )
    choices = {
        "resourceVersionMatch": ["NotOlderThan", "Exact", "", "x"],
        "allowWatchBookmarks": ["true", "false", "1", "x"],
        "watch": ["true", "1", "false", "0", "x"],
        "dryRun": ["All", "", "x", "All,All"],
        "fieldValidation": ["Strict", "Warn", "Ignore", "", "x"],
        "propagationPolicy": ["Orphan", "Background", "Foreground", "", "x"],
        "force": ["true", "false", "x"],
        "includeObject": ["None", "Metadata", "Object", "x"],
    }.get(name)
    if choices is not None:
        return st.one_of(st.sampled_from(choices), st.text(max_size=20))
    return st.text(max_size=40)


@st.composite
def queries(draw: st.DrawFn, raw: bool = False) -> str:
    if raw:  # any text, percent-encoded where a request line cannot carry it
        return urllib.parse.quote(draw(st.text(max_size=80)), safe="=&;%/:?+,!$'()*@[]~")
    keys = draw(st.lists(st.sampled_from(PARAMS), max_size=4, unique=True))
    pairs = [(k, draw(param_values(k))) for k in keys]
    return urllib.parse.urlencode(pairs)


def _object_for(kind: Kind | None, name: str) -> dict[str, Any]:
    if kind is None or kind.kind == "Pod":
        return pod_doc(name, "default", "", {})
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": {"name": name, **({"namespace": "default"} if kind.namespaced else {})},
    }


@st.composite
def crafted_bodies(draw: st.DrawFn, route: Route, content_type: str, max_depth: int) -> bytes:
    obj = _object_for(route.kind, draw(names()))
    which = draw(st.integers(0, 6))
    if which == 0:  # the object, bent in its bytes
        return draw(mutated(json.dumps(obj).encode()))
    if which == 1:  # the object with a random value somewhere
        top = draw(st.sampled_from(["metadata", "spec", "status", "apiVersion", "kind", "x"]))
        obj[top] = draw(json_values())
        return json.dumps(obj).encode()
    if which == 2:
        return draw(merge_patches(max_depth)).encode()
    if which == 3:  # JSON patch ops
        op = st.fixed_dictionaries(
            {
                "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x"]),
                "path": st.sampled_from(
                    ["/metadata/labels/a", "/spec/containers/0", "/spec/containers/-", "", "/"]
                )
                | st.text(max_size=20),
            },
            optional={"value": json_values(), "from": st.text(max_size=20)},
        )
        return json.dumps(draw(st.lists(op, max_size=4))).encode()
    if which == 4:  # strategic merge patch directives
        directive = draw(
            st.sampled_from(
                [
                    {"$patch": draw(st.sampled_from(["replace", "delete", "merge", "x"]))},
                    {"$retainKeys": draw(json_values())},
                    {"$setElementOrder/containers": draw(json_values())},
                    {"$deleteFromPrimitiveList/finalizers": draw(json_values())},
                ]
            )
        )
        return json.dumps({"spec": {"containers": [{"name": "c", **directive}]}}).encode()
    if which == 5:  # server-side apply, in YAML
        return yaml.safe_dump(obj).encode() + draw(st.binary(max_size=8))
    if which == 6 and content_type:  # an eviction or a binding, bent
        body = {
            "apiVersion": draw(st.sampled_from(["policy/v1", "v1", "x"])),
            "kind": draw(st.sampled_from(["Eviction", "Binding", "Scale", "x"])),
            "metadata": {"name": draw(names()), "namespace": "default"},
            "target": {"kind": "Node", "name": draw(names())},
            "spec": {"replicas": draw(st.integers(-(2**40), 2**40))},
            "deleteOptions": {"gracePeriodSeconds": draw(st.integers(-(2**63), 2**63 - 1))},
        }
        return json.dumps(body).encode()
    return b""


def seed_objects() -> list[tuple[str, bytes]]:
    """(collection path, JSON body) of one valid object per kind and name in SEEDED."""
    from kubera.fuzz.grpc_inputs import example_objects
    from services.api.machinery import codec

    out = []
    seen: set[str] = set()
    for packed in example_objects():
        doc = codec.encode(codec.unpack(packed))
        kind = next((k for k in KINDS if k.kind == doc.get("kind")), None)
        if kind is None or kind.kind in seen:
            continue
        seen.add(kind.kind)
        for name in SEEDED:
            d = json.loads(json.dumps(doc))
            d["metadata"] = {**d.get("metadata", {}), "name": name}
            if kind.namespaced:
                d["metadata"]["namespace"] = "default"
            base = _base(kind)
            path = (
                f"{base}/namespaces/default/{kind.resource}"
                if kind.namespaced
                else f"{base}/{kind.resource}"
            )
            out.append((path, json.dumps(d).encode()))
    return out


@dataclass(frozen=True)
class Request:
    method: str
    route: Route
    query: str
    content_type: str
    accept: str
    body: bytes
    token: str | None = None

    @property
    def key(self) -> str:
        return f"{self.method} {self.route.template}"

    def dump(self) -> bytes:
        head = f"{self.method} {self.route.path}?{self.query}\nContent-Type: {self.content_type}\nAccept: {self.accept}\n\n"
        return head.encode(errors="replace") + self.body


@st.composite
def requests(draw: st.DrawFn, shape: str, max_raw: int, max_depth: int) -> Request:
    route = draw(routes())
    method = draw(
        st.one_of(st.sampled_from(METHODS), st.sampled_from(["HEAD", "OPTIONS", "FUZZ"]))
        if shape == "raw"
        else st.sampled_from(METHODS)
    )
    if shape == "raw" or draw(st.integers(0, 4)) == 0:
        content_type = draw(st.sampled_from(CONTENT_TYPES))
        accept = draw(st.sampled_from(ACCEPTS))
    else:  # mostly what a client sends, so inputs get past negotiation to the verbs
        content_type = (
            draw(st.sampled_from(PATCH_CONTENT_TYPES)) if method == "PATCH" else "application/json"
        )
        accept = "application/json"
    query = draw(queries(raw=shape == "raw"))
    if shape == "raw":
        body = draw(st.binary(max_size=max_raw))
    elif shape == "random":
        body = json.dumps(draw(json_values())).encode()
    else:
        body = draw(crafted_bodies(route, content_type, max_depth))
    return Request(method, route, query, content_type, accept, body)


@st.composite
def token_requests(draw: st.DrawFn) -> Request:
    """A valid request with a token that is not one of the cluster's: always 401."""
    token = draw(
        st.one_of(
            st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=60),
            st.sampled_from(["", "Bearer", "null", "admin", "a" * 5000]),
        )
    )
    route = draw(routes())
    return Request(draw(st.sampled_from(METHODS)), route, "", "application/json", "", b"", token)


# ------------------------------------------------------------------- the calls


class HttpCaller:
    """Sends one `Request` over a fresh connection and classifies the answer (the status
    as a string, OPEN for a watch still streaming, or "hung")."""

    def __init__(
        self,
        url: str,
        errors: ErrorLog,
        *,
        token: str = "",
        writes: Any = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.https = parsed.scheme == "https"
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 443
        self.errors = errors
        self.token = token
        #: The storage's write log (harness.RecordingStorage), for the partial-write check.
        self.writes = writes
        self._ssl = ssl._create_unverified_context() if self.https else None  # noqa: S323 - our own CA, loopback

    def _connection(self) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=TIMEOUT, context=self._ssl
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)

    def call(self, req: Request) -> tuple[str, str]:
        conn = self._connection()
        path = req.route.path + (f"?{req.query}" if req.query else "")
        headers = {"Content-Type": req.content_type, "Accept": req.accept}
        token = self.token if req.token is None else req.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        watching = "watch=" in req.query and req.method == "GET"
        try:
            conn.request(req.method, path, body=req.body, headers=headers)
            resp = conn.getresponse()
            if watching and resp.status == 200:
                assert conn.sock is not None
                conn.sock.settimeout(WATCH_READ_SECONDS)
                try:
                    resp.read(64 * 1024)
                except TimeoutError:
                    return OPEN, ""
                return str(resp.status), ""
            body = resp.read()
            return str(resp.status), body[:300].decode(errors="replace")
        except TimeoutError:
            return "hung", f"no answer in {TIMEOUT:.0f} s"
        except (http.client.HTTPException, OSError) as e:
            return "connection error", f"{type(e).__name__}: {e}"
        finally:
            conn.close()

    def run(self, tally: Tally, shape: str, req: Request, *, expect: str = "") -> None:
        """Send `req` and record its answer; `expect`: the one status that is right (a
        wrong token's 401), else any of ALLOWED_HTTP."""
        self.errors.drain()
        mark = self.writes.mark() if self.writes is not None else 0
        code, message = self.call(req)
        logged = [traceback_head(r) for r in self.errors.drain()]
        failed = code != expect if expect else code not in _ALLOWED and code != OPEN
        if self.writes is not None and code.isdigit() and int(code) >= 400:
            wrote = self.writes.since(mark)
            if wrote:
                logged.append(f"partial write: answered {code} but wrote {wrote[:3]}")
        tally.record(req.key, shape, code, message, req.dump(), logged, failed=failed)


_ALLOWED = frozenset(str(c) for c in ALLOWED_HTTP)


def seed_http(caller: HttpCaller) -> int:
    """Create the seed objects; returns how many were created."""
    created = 0
    for path, body in seed_objects():
        req = Request("POST", Route(path, "seed"), "", "application/json", "application/json", body)
        created += caller.call(req)[0] == "201"
    return created


def fuzz_http(
    caller: HttpCaller,
    tally: Tally,
    shape: str,
    *,
    examples: int,
    max_raw: int = 4096,
    max_depth: int = 3000,
    derandomize: bool = False,
) -> None:
    """hypothesis over every route with one shape ("raw", "random", "crafted", "tokens")."""
    strategy = token_requests() if shape == "tokens" else requests(shape, max_raw, max_depth)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(req: Request) -> None:
        public = req.method in ("GET", "HEAD") and req.route.path in PUBLIC_PATHS
        caller.run(tally, shape, req, expect="401" if shape == "tokens" and not public else "")

    run()
