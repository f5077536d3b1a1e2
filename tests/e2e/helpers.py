"""What the end-to-end tests share besides their fixtures (tests/e2e/conftest.py): the CLI in
a private KUBERA_HOME (kubera.testing.Cluster), a running cluster for one block, and the pod
manifests and queries several files use."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.rayhead import on_ray, ray_namespace_of

#: The repository, the CLI's working directory (manifests are named relative to it).
ROOT = Path(__file__).resolve().parents[2]


def kubera_in(home: Path) -> Cluster:
    """The `kubera` CLI with KUBERA_HOME=home, run from the repository (240 s per command)."""
    return Cluster(home, cwd=ROOT, timeout=240)


def runs_on_ray(home: Path, ray_address: str) -> tuple[Cluster, tuple[str, ...]]:
    """`kubera_in(home)` for `kubera experiment run` and `kubera bench`, and the flag that
    puts every cluster they start on the Ray at `ray_address` (the session's, the
    `shared_ray` fixture) instead of a Ray each run starts and stops, in a Ray namespace of
    `home`'s own (KUBERA_RAY_NAMESPACE, which `kubera up` reads)."""
    k = kubera_in(home)
    k.env["KUBERA_RAY_NAMESPACE"] = ray_namespace_of(home)
    return k, ("--ray-address", ray_address)


def upstream_run(tmp_path: Path, shared_ray: str, config: Path, workload: str) -> dict[str, Any]:
    """`kubera experiment run CONFIG --workload WORKLOAD` (a file of upstream's, unchanged)
    on the session's Ray; its one run from results.json, checked to have run without
    error, with its DataItems (`dataItems`) and the command's stderr (`stderr`) added."""
    out = tmp_path / "out"
    k, on_ray = runs_on_ray(tmp_path / "home", shared_ray)
    r = k.run(
        "experiment", "run", str(config), *on_ray, "--workload", workload,
        "--output", str(out), "--timeout", "120", timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr + r.stdout
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert (run["id"], run["error"]) == (workload, None)
    run["dataItems"] = json.loads((out / "DataItems.json").read_text())["dataItems"]
    run["stderr"] = r.stderr
    return run  # type: ignore[no-any-return]


@contextlib.contextmanager
def running(home: Path, *up_args: str, ray_address: str = "") -> Iterator[Cluster]:
    """`kubera up --detach UP_ARGS` in `home`; `kubera down` after, and no process left
    behind even when down fails. With `ray_address` (the session's shared Ray, the
    `shared_ray` fixture), the cluster's actors run there in a Ray namespace of their own
    instead of in a Ray the cluster starts and stops itself."""
    k = kubera_in(home)
    up = k.start(*on_ray(home, ray_address), *up_args)
    assert up.returncode == 0, up.stderr + up.stdout
    try:
        yield k
    finally:
        k.stop()


#: Flags whose value, when it is the one `kubera up` uses without the flag, is left out of
#: a module's key (`--nodes 0 --time-scale 1` shares the cluster of no flags).
_DEFAULTS = {"--nodes": "0", "--time-scale": "1"}


def cluster_key(args: tuple[str, ...]) -> tuple[str, ...]:
    """`kubera up` flags in a normal form: each flag with its values, sorted by flag (the
    order of repeatable flags kept), defaults dropped; equal keys start equal clusters."""
    groups: list[tuple[str, ...]] = []
    for arg in args:
        if arg.startswith("--") or not groups:
            groups.append((arg,))
        else:
            groups[-1] += (arg,)
    kept = [g for g in groups if not (len(g) == 2 and _DEFAULTS.get(g[0]) == g[1])]
    kept.sort(key=lambda g: g[0])
    return tuple(a for g in kept for a in g)


def shared_key(node: pytest.Item | pytest.Module | None) -> tuple[str, ...] | None:
    """The key of the shared cluster (tests/e2e/conftest.py) a test, or a module's tests,
    run on; None when they run on a cluster of the module's own or on none. Read from the
    module and the test's fixture names alone, before any fixture runs."""
    if isinstance(node, pytest.Item) and "cluster" not in getattr(node, "fixturenames", ()):
        return None
    module = getattr(node, "module", None)
    if module is None or getattr(module, "EXCLUSIVE", None):
        return None
    if any(name in vars(module) for name in ("up_args", "own_ray", "cluster")):
        return None
    return cluster_key(tuple(getattr(module, "UP_ARGS", ())))


def _namespaces(k: Cluster) -> set[str]:
    return set(
        kubectl(k, "get", "namespaces", "-o", "name", timeout=30, check=False).stdout.split()
    )


@contextlib.contextmanager
def namespaces_left_behind_deleted(k: Cluster) -> Iterator[None]:
    """For one block (a module's tests on a shared cluster): the namespaces made in it and
    still there at its end are deleted (without waiting for their content to go)."""
    before = _namespaces(k)
    yield
    left = sorted(_namespaces(k) - before)
    if left:
        kubectl(k, "delete", *left, "--wait=false", check=False)


def pods_file(tmp: Path, prefix: str, n: int) -> Path:
    """`n` small pause pods `<prefix>-<i>` labelled app=chaos, as one manifest file."""
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{prefix}-{i}", "labels": {"app": "chaos"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ]
            },
        }
        for i in range(n)
    ]
    path = tmp / f"{prefix}.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def bound_pods(k: Cluster, prefix: str) -> dict[str, dict]:
    """The pods named `<prefix>…` that are bound to a node, by name (read with kubectl: a
    poll through `kubera get` starts a Python each time)."""
    items = json.loads(kubectl(k, "get", "pods", "-o", "json").stdout)["items"]
    return {
        p["metadata"]["name"]: p
        for p in items
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    }


def kubectl(
    k: Cluster, *args: str, stdin: str | None = None, timeout: float = 90, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Real kubectl against the cluster of `k` (its kubeconfig, a HOME of its own so no
    user's config is read); asserts it succeeded unless `check` is False."""
    env = {
        "KUBECONFIG": str(k.home / "kubeconfig"),
        "HOME": str(k.home),
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    r = subprocess.run(
        ["kubectl", *args], env=env, input=stdin, capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r


@contextlib.contextmanager
def hollow_storage_class(k: Cluster, name: str, *, default: bool = False) -> Iterator[None]:
    """A StorageClass of kubera's hollow provisioner binding WaitForFirstConsumer, for one
    block: what a cluster's dynamic provisioner offers and the docs' StatefulSets presume
    (`default`: annotated as the default class, for claims that name none). Deleted after."""
    doc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "hollow.kubera.io",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if default:
        doc["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    kubectl(k, "apply", "-f", "-", stdin=json.dumps(doc))
    try:
        yield
    finally:
        kubectl(k, "delete", "storageclass", name, "--wait=false", check=False)


# -- DRA: network-attached devices and pods that claim them (the device-safety tests) ----

#: The driver of `network_devices`' slices.
NETWORK_DRIVER = "net-gpu.example.com"


@contextlib.contextmanager
def network_devices(k: Cluster, name: str, count: int) -> Iterator[None]:
    """For one block: a DeviceClass `name` and a ResourceSlice (pool `name`) of `count`
    devices of NETWORK_DRIVER reachable from every node (allNodes), so any node can take
    any of them and no node's allocation record counts them. Deleted after."""
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{NETWORK_DRIVER}"'}}]
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": NETWORK_DRIVER,
                "allNodes": True,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"dev-{i}"} for i in range(count)],
            },
        },
    ]
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    try:
        yield
    finally:
        kubectl(k, "delete", "resourceslice", name, "--wait=false", check=False)
        kubectl(k, "delete", "deviceclass", name, "--wait=false", check=False)


def claimed_pods(namespace: str, prefix: str, n: int, device_class: str) -> str:
    """A ResourceClaimTemplate `prefix` asking for one device of `device_class` and `n`
    pods `<prefix>-<i>` each claiming one from it, as one YAML manifest."""
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": prefix, "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "dev", "exactly": {"deviceClassName": device_class}}]
                }
            }
        },
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{prefix}-{i}", "namespace": namespace},
            "spec": {
                "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": prefix}],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "10m"}, "claims": [{"name": "dev"}]},
                    }
                ],
            },
        }
        for i in range(n)
    ]
    return yaml.safe_dump_all([template, *pods])


def devices_held(k: Cluster, namespace: str) -> list[str]:
    """Every device the namespace's claims hold exclusively (driver/pool/device), once per
    claim holding it: a device listed twice was given twice."""
    items = json.loads(kubectl(k, "get", "resourceclaims", "-n", namespace, "-o", "json").stdout)
    return [
        f"{r['driver']}/{r['pool']}/{r['device']}"
        for c in items["items"]
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        if not r.get("adminAccess") and not r.get("shareID")
    ]


def settled_pods(k: Cluster, namespace: str) -> tuple[int, int] | None:
    """(bound, unschedulable) pods of the namespace once every pod is one or the other."""
    items = json.loads(kubectl(k, "get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    bound = sum(1 for p in items if p["spec"].get("nodeName"))
    waiting = sum(
        1
        for p in items
        if not p["spec"].get("nodeName")
        and any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in p.get("status", {}).get("conditions", [])
        )
    )
    return (bound, waiting) if items and bound + waiting == len(items) else None
