"""Real kubectl (1.32) against a real apiserver on real etcd: a manifest of each DRA kind
(resource.k8s.io/v1, which kubectl 1.32 does not compile in, so it goes by discovery) and
of a PodGroup is applied twice (created, then unchanged or, for non-canonical quantities,
configured as kube-apiserver would say), read back, and listed with
upstream's columns."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from services.api.machinery.kinds import BY_KIND
from tests.api.resource_manifests import MANIFESTS, defaulted, manifest, stored

pytestmark = pytest.mark.integration


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(kubeconfig.parent)}
    proc = subprocess.run(
        ["kubectl", *args], env=env, capture_output=True, text=True, timeout=60, input=stdin
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("kind", list(MANIFESTS))
def test_apply_each_kind_twice_and_get_it_back(kubeconfig: Path, kind: str) -> None:
    k = BY_KIND[kind]
    name = stored(kind)["metadata"]["name"]
    what = f"{k.singular}.{k.group}/{name}"
    assert _kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFESTS[kind]) == f"{what} created\n"
    # kubectl diffs the manifest as written against the stored object: a quantity written
    # non-canonically (`80`, `1024Mi`), or an atomic list the server defaulted inside (a
    # claim's requests), is patched again each time, as against kube-apiserver.
    again = "unchanged" if manifest(kind) == defaulted(kind) else "configured"
    assert _kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFESTS[kind]) == f"{what} {again}\n"
    got = json.loads(_kubectl(kubeconfig, "get", f"{k.resource}.{k.group}", name, "-o", "json"))
    assert got["spec"] == defaulted(kind)["spec"]


def test_get_prints_upstreams_columns(kubeconfig: Path) -> None:
    _kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFESTS["ResourceClaim"])
    _kubectl(kubeconfig, "apply", "-f", "-", stdin=MANIFESTS["PodGroup"])
    claims = _kubectl(kubeconfig, "get", "resourceclaims").splitlines()
    assert claims[0].split() == ["NAME", "STATE", "AGE"]
    assert claims[1].split()[:2] == ["two-gpus", "pending"]
    groups = _kubectl(kubeconfig, "get", "pg").splitlines()
    assert groups[0].split() == [
        "NAME",
        "PHASE",
        "MINMEMBER",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "AGE",
    ]
    assert groups[1].split()[:3] == ["training", "<none>", "4"]


@pytest.mark.parametrize("kind", ["ResourceSlice", "ResourceClaimTemplate", "PodGroup"])
def test_server_side_apply_of_each_kind(kubeconfig: Path, kind: str) -> None:
    k = BY_KIND[kind]
    doc = manifest(kind)
    doc["metadata"]["name"] = name = "ssa-" + doc["metadata"]["name"]
    text = json.dumps(doc)
    out = _kubectl(kubeconfig, "apply", "--server-side", "--field-manager=t", "-f", "-", stdin=text)
    assert out == f"{k.singular}.{k.group}/{name} serverside-applied\n"
    got = json.loads(
        _kubectl(
            kubeconfig,
            "get",
            f"{k.resource}.{k.group}",
            name,
            "-o",
            "json",
            "--show-managed-fields",
        )
    )
    assert got["spec"] == defaulted(kind)["spec"]
    assert [m["manager"] for m in got["metadata"]["managedFields"]] == ["t"]
