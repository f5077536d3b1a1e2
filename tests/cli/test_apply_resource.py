"""`kubera apply` of one manifest of each DRA kind and of a PodGroup: created, then
unchanged on a second apply (the manifest's YAML-number capacities and quantities compare
equal to the canonical ones stored), and read back as stored, with upstream's defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.api.machinery.kinds import BY_KIND
from tests.api.resource_manifests import MANIFESTS, defaulted, stored
from tests.cli.helpers import kubera, write


@pytest.mark.parametrize("kind", list(MANIFESTS))
def test_apply_creates_then_leaves_each_kind_unchanged(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    k = BY_KIND[kind]
    name = stored(kind)["metadata"]["name"]
    what = f"{k.singular}.{k.group}/{name}"
    path = write(tmp_path, "m.yaml", MANIFESTS[kind])
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out, r.err) == (0, f"{what} created\n", "")
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert (r.rc, r.out) == (0, f"{what} unchanged\n")
    r = kubera(capsys, apiserver, "get", f"{k.resource}.{k.group}", name, "-o", "json")
    assert r.rc == 0, r.err
    got = json.loads(r.out)
    assert got["spec"] == defaulted(kind)["spec"]


def test_get_prints_the_kinds_columns(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for kind in ("ResourceSlice", "ResourceClaim", "PodGroup"):
        assert (
            kubera(
                capsys, apiserver, "apply", "-f", write(tmp_path, f"{kind}.yaml", MANIFESTS[kind])
            ).rc
            == 0
        )
    slices = kubera(capsys, apiserver, "get", "resourceslices").out.splitlines()
    assert slices[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert slices[1].split()[:4] == [
        "node-1-gpu-example-com",
        "node-1",
        "gpu.example.com",
        "node-1",
    ]
    claims = kubera(capsys, apiserver, "get", "resourceclaims").out.splitlines()
    assert [line.split()[:2] for line in claims] == [["NAME", "STATE"], ["two-gpus", "pending"]]
    groups = kubera(capsys, apiserver, "get", "podgroups").out.splitlines()
    assert groups[1].split()[:3] == ["training", "<none>", "4"]
