"""The Python clients people use besides the official one (tests/e2e/test_python_client_e2e.py)
against a real `kubera up`, each configured from the kubeconfig `up` wrote and nothing else:
`kubernetes-asyncio`, `lightkube` with lightkube-models 1.37, and `kr8s`. Each lists and
watches one object of every kind kubera serves (tests/e2e/kindobjects.py) through its own
models, and creates, patches, watches and deletes pods and PodDisruptionBudgets. A `kopf`
operator handling pods (tests/e2e/kopf_operator.py) runs standalone beside the cluster.

The watch of the verbs starts from the resourceVersion of a list taken before the create, so
it replays ADDED, MODIFIED and DELETED in order without a race; the watch of every kind starts
from resourceVersion 0 (the current state as ADDED events)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import kr8s.asyncio
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from kubernetes_asyncio import client as aio_client
from kubernetes_asyncio import config as aio_config
from kubernetes_asyncio import watch as aio_watch
from lightkube import AsyncClient, KubeConfig
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from kubera.testing import Cluster
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from tests.e2e.helpers import ROOT, running
from tests.e2e.kindobjects import (
    NO_ASYNCIO_MODEL,
    NO_CLIENT_MODEL,
    NO_JS_MODEL,
    VERB_KINDS,
    all_objects,
    dra_field_problems,
    lightkube_module,
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
        path = home / "all.yaml"
        path.write_text(yaml.safe_dump_all(all_objects()))
        r = k("apply", "-f", str(path))
        assert r.returncode == 0, r.stderr + r.stdout
        write_statuses(k)
        yield k


@pytest.fixture(scope="module")
def kubeconfig(cluster: Cluster) -> Path:
    return cluster.home / "kubeconfig"


def _ids(k: Kind) -> str:
    return k.name


# -- kubernetes-asyncio -------------------------------------------------------------------


def _aio_list(api: aio_client.ApiClient, kind: Kind) -> tuple[Any, tuple[str, ...]]:
    if kind.name in NO_ASYNCIO_MODEL:
        custom = aio_client.CustomObjectsApi(api)
        return custom.list_cluster_custom_object, (kind.group, kind.version, kind.http_resource)
    cls_name, snake = python_api(kind)
    typed = getattr(aio_client, cls_name)(api)
    name = f"list_{snake}_for_all_namespaces" if kind.namespaced else f"list_{snake}"
    return getattr(typed, name), ()


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
async def test_kubernetes_asyncio_lists_and_watches_every_kind(
    kubeconfig: Path, kind: Kind
) -> None:
    api = await aio_config.new_client_from_config(config_file=str(kubeconfig))
    async with api:
        fn, args = _aio_list(api, kind)
        listed = await fn(*args)
        if kind.name in NO_ASYNCIO_MODEL:
            assert f"cl-{kind.singular}" in [i["metadata"]["name"] for i in listed["items"]]
            return
        assert type(listed).__name__.endswith(kind.kind + "List")
        assert f"cl-{kind.singular}" in [i.metadata.name for i in listed.items]
        w = aio_watch.Watch(return_type=type(listed.items[0]).__name__)
        seen = None
        async with w.stream(
            fn,
            field_selector=f"metadata.name=cl-{kind.singular}",
            resource_version="0",
            timeout_seconds=30,
        ) as stream:
            async for ev in stream:
                seen = ev
                break
        assert seen is not None and seen["type"] == "ADDED"
        assert type(seen["object"]).__name__.endswith(kind.kind)


@pytest.mark.parametrize("kind_name", VERB_KINDS)
async def test_kubernetes_asyncio_creates_patches_watches_and_deletes(
    kubeconfig: Path, kind_name: str
) -> None:
    kind = BY_KIND[kind_name]
    name = f"aio-verbs-{kind.singular}"
    api = await aio_config.new_client_from_config(config_file=str(kubeconfig))
    async with api:
        cls_name, snake = python_api(kind)
        typed = getattr(aio_client, cls_name)(api)
        list_fn = getattr(typed, f"list_namespaced_{snake}")
        rv = (await list_fn("default")).metadata.resource_version
        created = await getattr(typed, f"create_namespaced_{snake}")(
            "default", named(kind_name, name)
        )
        assert created.metadata.uid
        patched = await getattr(typed, f"patch_namespaced_{snake}")(
            name, "default", {"metadata": {"labels": {"patched": "yes"}}}
        )
        assert patched.metadata.labels["patched"] == "yes"
        await getattr(typed, f"delete_namespaced_{snake}")(name, "default", grace_period_seconds=0)
        seen = []
        async with aio_watch.Watch().stream(
            list_fn,
            "default",
            field_selector=f"metadata.name={name}",
            resource_version=rv,
            timeout_seconds=60,
        ) as stream:
            async for ev in stream:
                assert type(ev["object"]).__name__.endswith(kind.kind)
                seen.append(ev["type"])
                if ev["type"] == "DELETED":
                    break
    assert seen[0] == "ADDED" and "MODIFIED" in seen and seen[-1] == "DELETED", seen


async def test_kubernetes_asyncio_keeps_the_newer_dra_fields(kubeconfig: Path) -> None:
    api = await aio_config.new_client_from_config(config_file=str(kubeconfig))
    async with api:
        res = aio_client.ResourceV1Api(api)
        objs = {
            "claim": await res.read_namespaced_resource_claim("cl-resourceclaim", "default"),
            "slice": await res.read_resource_slice("cl-resourceslice"),
            "counters": await res.read_resource_slice("cl-resourceslice-counters"),
        }
        got = {k: api.sanitize_for_serialization(v) for k, v in objs.items()}
    assert dra_field_problems(got) == []


# -- lightkube -----------------------------------------------------------------------------


def _lightkube_resource(kind: Kind) -> Any:
    if kind.name in NO_CLIENT_MODEL:
        make = create_namespaced_resource if kind.namespaced else create_global_resource
        return make(kind.group, kind.version, kind.kind, kind.http_resource)
    return getattr(importlib.import_module(lightkube_module(kind)), kind.kind)


@pytest.mark.parametrize("kind", KINDS, ids=_ids)
async def test_lightkube_lists_and_watches_every_kind(kubeconfig: Path, kind: Kind) -> None:
    res = _lightkube_resource(kind)
    lk = AsyncClient(KubeConfig.from_file(kubeconfig))
    try:
        ns = {"namespace": "*"} if kind.namespaced else {}
        items = [o async for o in lk.list(res, **ns)]
        assert all(isinstance(o, res) for o in items)
        assert f"cl-{kind.singular}" in [o.metadata.name for o in items]
        seen = None
        watching = lk.watch(
            res, **ns, fields={"metadata.name": f"cl-{kind.singular}"}, resource_version="0"
        )
        async with aclosing(watching):
            async for ev, obj in watching:
                seen = (ev, obj)
                break
        assert seen is not None and seen[0] == "ADDED" and isinstance(seen[1], res)
    finally:
        await lk.close()


async def test_lightkube_keeps_the_newer_dra_fields(kubeconfig: Path) -> None:
    claim_res = _lightkube_resource(BY_KIND["ResourceClaim"])
    slice_res = _lightkube_resource(BY_KIND["ResourceSlice"])
    lk = AsyncClient(KubeConfig.from_file(kubeconfig))
    try:
        objs = {
            "claim": await lk.get(claim_res, "cl-resourceclaim", namespace="default"),
            "slice": await lk.get(slice_res, "cl-resourceslice"),
            "counters": await lk.get(slice_res, "cl-resourceslice-counters"),
        }
    finally:
        await lk.close()
    assert dra_field_problems({k: v.to_dict() for k, v in objs.items()}) == []


@pytest.mark.parametrize("kind_name", VERB_KINDS)
async def test_lightkube_creates_patches_watches_and_deletes(
    kubeconfig: Path, kind_name: str
) -> None:
    kind = BY_KIND[kind_name]
    res = _lightkube_resource(kind)
    name = f"lk-verbs-{kind.singular}"
    lk = AsyncClient(KubeConfig.from_file(kubeconfig))
    try:
        listing = lk.list(res, namespace="default")
        async for _ in listing:
            pass
        rv = listing.resourceVersion
        created = await lk.create(res.from_dict(named(kind_name, name)))
        assert isinstance(created, res) and created.metadata.uid
        patched = await lk.patch(
            res, name, {"metadata": {"labels": {"patched": "yes"}}}, namespace="default"
        )
        assert patched.metadata.labels["patched"] == "yes"
        await lk.delete(res, name, namespace="default", grace_period=0)
        seen = []
        watching = lk.watch(
            res, namespace="default", fields={"metadata.name": name}, resource_version=rv
        )
        async with aclosing(watching):
            async for ev, obj in watching:
                assert isinstance(obj, res)
                seen.append(ev)
                if ev == "DELETED":
                    break
    finally:
        await lk.close()
    assert seen[0] == "ADDED" and "MODIFIED" in seen and seen[-1] == "DELETED", seen


# -- kr8s ----------------------------------------------------------------------------------


def _kr8s_kind(kind: Kind) -> str:
    return f"{kind.resource}.{kind.group}" if kind.group else kind.resource


#: kr8s keeps one Api (and its HTTP session) per set of arguments for the process: its
#: tests share one event loop, as a program using kr8s does.
kr8s_loop = pytest.mark.asyncio(loop_scope="module")


@kr8s_loop
@pytest.mark.parametrize("kind", KINDS, ids=_ids)
async def test_kr8s_lists_and_watches_every_kind(kubeconfig: Path, kind: Kind) -> None:
    api = await kr8s.asyncio.api(kubeconfig=str(kubeconfig))
    ns = kr8s.ALL if kind.namespaced else None
    objs = [o async for o in api.get(_kr8s_kind(kind), namespace=ns)]
    assert f"cl-{kind.singular}" in [o.name for o in objs]
    assert all(o.raw["apiVersion"] == kind.api_version for o in objs)
    seen = None
    watching = api.async_watch(  # the generator holding the stream, closed here
        _kr8s_kind(kind),
        namespace=ns,
        field_selector=f"metadata.name=cl-{kind.singular}",
        since="0",
    )
    async with aclosing(watching):
        async for ev, obj in watching:
            seen = (ev, obj)
            break
    assert seen is not None and seen[0] == "ADDED" and seen[1].name == f"cl-{kind.singular}"


@kr8s_loop
@pytest.mark.parametrize("kind_name", VERB_KINDS)
async def test_kr8s_creates_patches_watches_and_deletes(kubeconfig: Path, kind_name: str) -> None:
    kind = BY_KIND[kind_name]
    name = f"kr8s-verbs-{kind.singular}"
    api = await kr8s.asyncio.api(kubeconfig=str(kubeconfig))
    async with api.call_api(
        "GET", version=kind.api_version, namespace="default", url=kind.resource
    ) as r:
        rv = r.json()["metadata"]["resourceVersion"]
    obj = await kr8s.asyncio.objects.object_from_spec(named(kind_name, name), api=api)
    await obj.create()
    assert obj.metadata.uid
    await obj.patch({"metadata": {"labels": {"patched": "yes"}}})
    assert obj.labels["patched"] == "yes"
    await obj.delete(grace_period=0)
    seen = []
    watching = api.async_watch(  # the generator holding the stream, closed here
        _kr8s_kind(kind), namespace="default", field_selector=f"metadata.name={name}", since=rv
    )
    async with aclosing(watching):
        async for ev, o in watching:
            assert o.raw["apiVersion"] == kind.api_version
            seen.append(ev)
            if ev == "DELETED":
                break
    assert seen[0] == "ADDED" and "MODIFIED" in seen and seen[-1] == "DELETED", seen


# -- kopf -------------------------------------------------------------------------------------


@pytest.fixture
def kopf_operator(kubeconfig: Path, tmp_path: Path) -> Iterator[Path]:
    """`kopf run --standalone` of tests/e2e/kopf_operator.py against the cluster, as a user
    runs an operator beside a cluster; stopped by its PID (SIGTERM, then SIGKILL). Yields
    the file its deletion handler writes."""
    deleted = tmp_path / "deleted.txt"
    log = (tmp_path / "kopf.log").open("w")
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KOPF_DELETED_FILE": str(deleted)}
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "kopf"),
            "run",
            "--standalone",
            "--namespace",
            "default",
            str(Path(__file__).parent / "kopf_operator.py"),
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield deleted
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        print((tmp_path / "kopf.log").read_text()[-4000:])


def test_a_kopf_operator_handles_pods_create_update_and_delete(
    kubeconfig: Path, kopf_operator: Path
) -> None:
    api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    core = k8s.CoreV1Api(api)
    name = "kopf-pod"
    body = named("Pod", name)
    body["metadata"]["labels"] = {"kopf": "yes"}
    core.create_namespaced_pod("default", body)

    def annotations() -> dict[str, str]:
        return core.read_namespaced_pod(name, "default").metadata.annotations or {}

    until(lambda: annotations().get("kopf-seen") == f"created {name}", timeout=60)
    pod = core.read_namespaced_pod(name, "default")
    assert pod.metadata.finalizers == ["kopf.zalando.org/KopfFinalizerMarker"]
    core.patch_namespaced_pod(name, "default", {"metadata": {"labels": {"step": "2"}}})
    until(lambda: annotations().get("kopf-step") == "2", timeout=60)
    core.delete_namespaced_pod(name, "default", grace_period_seconds=0)

    def gone() -> bool:
        try:
            core.read_namespaced_pod(name, "default")
        except ApiException as e:
            return e.status == 404
        return False

    until(gone, timeout=60)  # the finalizer kopf put held the pod until its handler ran
    assert kopf_operator.read_text().split() == [name]
    api.close()


# -- the official JS client -------------------------------------------------------------------

JS = ROOT / "tests" / "e2e" / "js"


@pytest.fixture(scope="module")
def js_client() -> Path:
    """tests/e2e/js with its node_modules: `npm ci` from the committed package-lock.json
    when they are missing (a fresh clone, CI). No node or npm fails the test, as any
    missing tool does."""
    if not (JS / "node_modules" / "@kubernetes" / "client-node" / "package.json").exists():
        r = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=JS,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
        assert r.returncode == 0, r.stderr + r.stdout
    return JS


def test_the_js_client_lists_every_kind_and_its_informer_sees_create_patch_delete(
    kubeconfig: Path, js_client: Path
) -> None:
    kinds = [{"apiVersion": k.api_version, "kind": k.kind, "key": k.name} for k in KINDS]
    verbs = [named(kind_name, f"js-verbs-{kind_name.lower()}") for kind_name in VERB_KINDS]
    r = subprocess.run(
        ["node", "clients.mjs", str(kubeconfig), json.dumps(kinds), json.dumps(verbs)],
        cwd=js_client,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert dra_field_problems(out["dra"]) == []
    for k in KINDS:
        listed = out["lists"][k.name]
        assert f"cl-{k.singular}" in listed["names"], k.kind
        types = listed.get("typed", listed["types"])  # Event: listed typed (clients.mjs)
        if k.name not in NO_JS_MODEL:
            assert types and all(t != "Object" and t.endswith(k.kind) for t in types), (k, types)
    for kind_name in VERB_KINDS:
        seen = out["verbs"][kind_name]
        assert seen[0] == "add" and "update" in seen and seen[-1] == "delete", (kind_name, seen)
