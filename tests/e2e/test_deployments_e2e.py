"""End to end: two scheduler deployments (two KubeSchedulerConfigurations, different
schedulerNames and leaderElection.resourceName) run side by side over the same nodes, two
replicas each. Each elects its own leader and publishes its own Lease; each binds only the
pods of its schedulerName, fenced by its own election key."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

DEPLOYMENTS = {"alpha-scheduler": "alpha", "beta-scheduler": "beta"}  # schedulerName: Lease


def _config(scheduler_name: str, lease: str) -> str:
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: true\n  leaseDuration: 2s\n  renewDeadline: 1500ms\n"
        f"  retryPeriod: 500ms\n  resourceName: {lease}\n  resourceNamespace: kube-system\n"
        f"profiles:\n- schedulerName: {scheduler_name}\n"
    )


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    tmp = tmp_path_factory.mktemp("deployments")
    args = ["--nodes", "3", "--schedulers", "2"]
    for name, lease in DEPLOYMENTS.items():
        cfg = tmp / f"{lease}.yaml"
        cfg.write_text(_config(name, lease))
        args += ["--scheduler-config", str(cfg)]
    return tuple(args)


def _pods(tmp: Path) -> Path:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{lease}-{i}"},
            "spec": {
                "schedulerName": name,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ],
            },
        }
        for name, lease in DEPLOYMENTS.items()
        for i in range(4)
    ]
    path = tmp / "pods.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _lease_holder(k: Cluster, name: str) -> str:
    """Read with kubectl (a poll through `kubera get` starts a Python each time)."""
    r = kubectl(k, "get", "lease", name, "-n", "kube-system", "-o", "json", check=False)
    if r.returncode != 0:
        return ""
    return json.loads(r.stdout)["spec"].get("holderIdentity", "")  # type: ignore[no-any-return]


def test_each_deployment_elects_its_own_leader_and_binds_its_own_pods(
    cluster: Cluster, tmp_path: Path
) -> None:
    # Each Lease and `kubera schedulers` are read one after the other, and a 2 s lease may
    # change hands between the reads on a loaded machine: poll until one reading agrees.
    deadline = time.monotonic() + 60
    while True:
        holders = {lease: _lease_holder(cluster, lease) for lease in DEPLOYMENTS.values()}
        r = cluster("schedulers", "-o", "json")
        assert r.returncode == 0, r.stderr
        by_lease: dict[str, list[dict]] = {}
        for row in json.loads(r.stdout):
            by_lease.setdefault(row["lease"], []).append(row)
        leaders = {
            lease.split("/")[1]: [row["identity"] for row in replicas if row["leading"]]
            for lease, replicas in by_lease.items()
        }
        if all(holders.values()) and leaders == {k: [v] for k, v in holders.items()}:
            break
        assert time.monotonic() < deadline, (holders, by_lease)
        time.sleep(0.2)
    assert len(set(holders.values())) == 2  # two different processes lead
    assert sorted(by_lease) == [f"kube-system/{lease}" for lease in sorted(DEPLOYMENTS.values())]
    for replicas in by_lease.values():
        assert len(replicas) == 2

    r = cluster("apply", "-f", str(_pods(tmp_path)))
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    while True:
        items = json.loads(cluster("get", "pods", "-o", "json").stdout)["items"]
        bound = [p for p in items if p["spec"].get("nodeName")]
        if len(bound) == 8:
            break
        assert time.monotonic() < deadline, f"only {len(bound)}/8 pods bound"
        time.sleep(0.2)
    for p in bound:
        lease = p["metadata"]["name"].split("-")[0]
        mark = p["metadata"]["annotations"]["kubera.io/bound-by"]
        assert mark.startswith(f"fenced /kubera/leaderelection/kube-system/{lease}@"), mark

    r = cluster("check")
    assert r.returncode == 0, r.stdout + r.stderr
    for lease in DEPLOYMENTS.values():
        assert f"leader terms: /kubera/leaderelection/kube-system/{lease}: " in r.stdout
