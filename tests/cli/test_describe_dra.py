"""`kubera get resourceclaims` and `kubera describe pod|resourceclaim` for DRA: a pod's
claims (entry, claim, devices, reservation), a claim's requests, allocation and
reservedFor, against a real apiserver."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.api.machinery.kinds import BY_KIND
from services.client import Client
from tests.cli.helpers import kubera, write

CLAIMS, PODS = BY_KIND["ResourceClaim"], BY_KIND["Pod"]

MANIFEST = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].model == "A100"'}
        count: 2
    constraints:
    - requests: [gpu]
      matchAttribute: gpu.example.com/numa
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: idle, namespace: default}
spec:
  devices:
    requests:
    - name: nic
      exactly: {deviceClassName: nic.example.com}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  nodeName: node-a
  resourceClaims:
  - name: gpus
    resourceClaimName: shared-gpu
  - name: scratch
    resourceClaimTemplateName: scratch-template
  containers:
  - name: c
    image: registry.k8s.io/pause:3.8
    resources:
      claims: [{name: gpus}]
"""


def _allocate(address: str) -> None:
    async def go() -> None:
        async with Client(address, timeout=10) as client:
            pod = await client.get(PODS, "trainer", "default")
            claim = await client.get(CLAIMS, "shared-gpu", "default")
            for i in range(2):
                claim.status.allocation.devices.results.add(  # type: ignore[attr-defined]
                    request="gpu", driver="gpu.example.com", pool="node-a", device=f"gpu-{i}"
                )
            term = claim.status.allocation.node_selector.node_selector_terms.add()  # type: ignore[attr-defined]
            term.match_fields.add(key="metadata.name", operator="In", values=["node-a"])
            claim.status.reserved_for.add(  # type: ignore[attr-defined]
                resource="pods",
                name="trainer",
                uid=pod.metadata.uid,  # type: ignore[attr-defined]
            )
            await client.update_status(claim)

    asyncio.run(go())


def test_get_and_describe_claims(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "c.yaml", MANIFEST)).rc == 0
    r = kubera(capsys, apiserver, "get", "resourceclaims")
    assert r.rc == 0, r.err
    rows = [line.split() for line in r.out.splitlines()]
    assert rows[0] == ["NAME", "STATE", "AGE"]
    assert [row[:2] for row in rows[1:]] == [["idle", "pending"], ["shared-gpu", "pending"]]

    _allocate(apiserver)
    r = kubera(capsys, apiserver, "get", "resourceclaims", "shared-gpu")
    assert r.out.splitlines()[1].split()[:2] == ["shared-gpu", "allocated,reserved"]

    r = kubera(capsys, apiserver, "describe", "pod", "trainer")
    assert r.rc == 0, r.err
    section = r.out.split("Resource Claims:")[1]
    lines = [line.split() for line in section.splitlines()]
    assert ["gpus:", "shared-gpu"] in lines
    assert ["Allocated:", "true"] in lines
    assert ["Devices:", "gpu.example.com/node-a/gpu-0"] in lines
    assert ["gpu.example.com/node-a/gpu-1"] in lines
    assert ["Reserved:", "true"] in lines
    assert [
        "scratch:",
        "<not",
        "created",
        "yet>",
        "(from",
        "template",
        "scratch-template)",
    ] in lines

    r = kubera(capsys, apiserver, "describe", "resourceclaim", "shared-gpu")
    assert r.rc == 0, r.err
    for expected in (
        "State:              allocated,reserved",
        "Device Class Name:  gpu.example.com",
        'device.attributes["gpu.example.com"].model == "A100"',
        "Count:              2",
        "Match Attribute:  gpu.example.com/numa",
        "metadata.name In [node-a]",
        "Events:             <none>",
    ):
        assert expected in r.out, (expected, r.out)
    devices = [line.split() for line in r.out.split("Devices:")[-1].splitlines()]
    assert ["Request", "Driver", "Pool", "Device"] in devices
    assert ["gpu", "gpu.example.com", "node-a", "gpu-1"] in devices
    reserved = r.out.split("Reserved For:")[1].split()
    assert reserved[0] == "pods/trainer"


def test_get_resourceslices_shows_node_driver_and_pool(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-a-gpu-example-com}
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}]
"""
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "s.yaml", manifest)).rc == 0
    r = kubera(capsys, apiserver, "get", "resourceslices")
    assert r.rc == 0, r.err
    rows = [line.split() for line in r.out.splitlines()]
    assert rows[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert rows[1][:4] == ["node-a-gpu-example-com", "node-a", "gpu.example.com", "node-a"]


def test_describe_pending_claim_and_pod_whose_claim_is_missing(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "c.yaml", MANIFEST)).rc == 0
    r = kubera(capsys, apiserver, "describe", "resourceclaim", "idle")
    assert r.rc == 0, r.err
    status = [line.split() for line in r.out.split("Status:")[1].splitlines()]
    assert ["Allocation:", "<none>"] in status and ["Reserved", "For:", "<none>"] in status
    assert kubera(capsys, apiserver, "delete", "resourceclaim", "shared-gpu").rc == 0
    r = kubera(capsys, apiserver, "describe", "pod", "trainer")
    section = [line.split() for line in r.out.split("Resource Claims:")[1].splitlines()]
    assert ["gpus:", "shared-gpu"] in section and ["State:", "not", "found"] in section
