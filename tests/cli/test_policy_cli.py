"""`kubera describe quota|limitrange` (kubectl's layout: Resource / Used / Hard; one row per
type and resource) and `kubera delete --cascade` (DeleteOptions.propagationPolicy over
gRPC), against a real apiserver without a controller-manager: the quota's status is written
here as the quota controller would."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.api.machinery.kinds import BY_KIND
from services.client import Client
from tests.cli.helpers import kubera, write

QUOTAS, RS = BY_KIND["ResourceQuota"], BY_KIND["ReplicaSet"]

MANIFEST = Path(__file__).resolve().parents[2] / "examples" / "quota-and-limits.yaml"


def _compute_status(address: str) -> None:
    async def go() -> None:
        async with Client(address, timeout=10) as client:
            rq = await client.get(QUOTAS, "mem-cpu-demo", "team-a")
            rq.status.hard.update(rq.spec.hard)  # type: ignore[attr-defined]
            rq.status.used.update(  # type: ignore[attr-defined]
                {
                    "requests.cpu": "0",
                    "requests.memory": "0",
                    "limits.cpu": "0",
                    "limits.memory": "0",
                }
            )
            await client.update_status(rq)

    asyncio.run(go())


def test_describe_quota_and_limitrange(apiserver: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert kubera(capsys, apiserver, "apply", "-f", str(MANIFEST)).rc == 0
    _compute_status(apiserver)
    r = kubera(capsys, apiserver, "describe", "quota", "mem-cpu-demo", "-n", "team-a")
    assert r.rc == 0, r.err
    assert [line.split() for line in r.out.splitlines()] == [
        ["Name:", "mem-cpu-demo"],
        ["Namespace:", "team-a"],
        ["Resource", "Used", "Hard"],
        ["--------", "----", "----"],
        ["limits.cpu", "0", "2"],
        ["limits.memory", "0", "2Gi"],
        ["requests.cpu", "0", "1"],
        ["requests.memory", "0", "1Gi"],
    ]
    r = kubera(capsys, apiserver, "describe", "limitrange", "mem-limit-range", "-n", "team-a")
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert lines[2].split("  ")[0] == "Type"
    assert lines[4].split() == ["Container", "memory", "-", "-", "256Mi", "512Mi", "-"]
    r = kubera(capsys, apiserver, "get", "quota", "-n", "team-a")
    assert r.out.splitlines()[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]


RS_MANIFEST = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: x}]}
"""


@pytest.mark.parametrize(
    ("cascade", "finalizer"), [("orphan", "orphan"), ("foreground", "foregroundDeletion")]
)
def test_delete_cascade_sends_the_propagation_policy(
    apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, cascade: str, finalizer: str
) -> None:
    assert kubera(capsys, apiserver, "apply", "-f", write(tmp_path, "rs.yaml", RS_MANIFEST)).rc == 0
    r = kubera(capsys, apiserver, "delete", "rs", "rs", f"--cascade={cascade}")
    assert r.rc == 0 and 'replicaset.apps "rs" deleted' in r.out, r.err

    async def held() -> list[str]:
        async with Client(apiserver, timeout=10) as client:
            rs = await client.get(RS, "rs", "default")
            return list(rs.metadata.finalizers)  # type: ignore[attr-defined]

    assert asyncio.run(held()) == [finalizer]
