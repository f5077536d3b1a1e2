"""`get nodes [-o wide]` and `describe node`: kubectl's columns and sections, plus kubera's
CONDITIONS / TAINTS / CPU / MEMORY / PODS wide columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubera.printing import tables
from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import LIST_ALL
from services.api.printers import columns as printcolumns
from services.client import Client
from tests.cli.helpers import kubera, pod, write

NODE_KIND = BY_KIND["Node"]

NODES = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {node-role.kubernetes.io/worker: ""}
spec:
  taints:
  - {key: dedicated, value: accel, effect: NoSchedule}
  - {key: spot, effect: PreferNoSchedule}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110", example.com/gpu: "2"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110", example.com/gpu: "2"}
  addresses:
  - {type: InternalIP, address: 10.0.0.1}
  - {type: ExternalIP, address: 203.0.113.1}
  nodeInfo:
    kubeletVersion: v1.30.0-kubera
    osImage: Hollow Linux
    kernelVersion: 6.1.0
    containerRuntimeVersion: kubera://0.1
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: kubelet is posting ready status
    lastHeartbeatTime: "2030-01-01T00:00:00Z"
    lastTransitionTime: "2029-12-31T00:00:00Z"
  - {type: MemoryPressure, status: "True", reason: KubeletHasInsufficientMemory, message: low}
  - {type: DiskPressure, status: "True", reason: KubeletHasDiskPressure, message: full}
  - {type: PIDPressure, status: "False", reason: KubeletHasSufficientPID, message: ok}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {unschedulable: true}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "10"}
  conditions:
  - {type: Ready, status: "False", reason: KubeletNotReady, message: down}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
"""

REQUESTS = "    resources:\n      requests: {cpu: 500m, memory: 1Gi}\n      limits: {cpu: '1', memory: 2Gi}\n"
#: An init container asking for more than the app: the pod's effective cpu request is 3.
BIG_INIT = (
    "  initContainers:\n  - name: init\n    image: busybox\n"
    "    resources:\n      requests: {cpu: '3', memory: 5Gi}\n"
)


def _pods() -> str:
    with_requests = pod("web", extra="  nodeName: n1\n").replace(
        "pause:3.8\n", "pause:3.8\n" + REQUESTS
    )
    return "---\n".join(
        [
            with_requests,
            pod("batch", namespace="kube-system", extra="  nodeName: n1\n" + BIG_INIT),
            pod("unbound"),  # pending pods count against no node
        ]
    )


@pytest.fixture
def cluster(apiserver: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    path = write(tmp_path, "cluster.yaml", NODES + "---\n" + _pods())
    r = kubera(capsys, apiserver, "apply", "-f", path)
    assert r.rc == 0, r.err
    return apiserver


@pytest.fixture
def pinned_age(monkeypatch: pytest.MonkeyPatch) -> None:
    """AGE is wall-clock time since the server created the object: pin it."""
    monkeypatch.setattr(printcolumns, "human_duration", lambda seconds: "5m")


# ------------------------------------------------------------ get nodes


def test_get_nodes_prints_kubectls_five_columns(
    cluster: str, capsys: pytest.CaptureFixture[str], pinned_age: None
) -> None:
    r = kubera(capsys, cluster, "get", "nodes")
    assert (r.rc, r.err) == (0, "")
    assert r.out.splitlines() == [
        "NAME   STATUS                        ROLES    AGE   VERSION",
        "n1     Ready                         worker   5m    v1.30.0-kubera",
        "n2     NotReady,SchedulingDisabled   <none>   5m    <none>",
        "n3     Unknown                       <none>   5m    <none>",
    ]


def test_get_nodes_wide_adds_kubectls_and_kuberas_columns(
    cluster: str, capsys: pytest.CaptureFixture[str], pinned_age: None
) -> None:
    r = kubera(capsys, cluster, "get", "nodes", "-o", "wide")
    assert (r.rc, r.err) == (0, "")
    # Each output line is split over several literals at its column gaps.
    assert r.out.splitlines() == [
        "NAME   STATUS                        ROLES    AGE   VERSION          INTERNAL-IP   "
        "EXTERNAL-IP   OS-IMAGE       KERNEL-VERSION   CONTAINER-RUNTIME   "
        "CONDITIONS                    TAINTS                                             "
        "CPU        MEMORY     PODS",
        "n1     Ready                         worker   5m    v1.30.0-kubera   10.0.0.1      "
        "203.0.113.1   Hollow Linux   6.1.0            kubera://0.1        "
        "MemoryPressure,DiskPressure   dedicated=accel:NoSchedule,spot:PreferNoSchedule   "
        "3500m/4    6Gi/8Gi    2/110",
        "n2     NotReady,SchedulingDisabled   <none>   5m    <none>           <none>        "
        "<none>        <unknown>      <unknown>        <unknown>           "
        "<none>                        <none>                                             "
        "0/2        0/4Gi      0/10",
        "n3     Unknown                       <none>   5m    <none>           <none>        "
        "<none>        <unknown>      <unknown>        <unknown>           "
        "<none>                        <none>                                             "
        "0/<none>   0/<none>   0/<none>",
    ]


@pytest.mark.parametrize(
    ("argv", "lists"),
    [
        (
            ["get", "nodes", "-o", "wide"],
            [
                ("nodes", ""),
                ("pods", "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"),
            ],
        ),
        (
            ["get", "node", "n1", "-o", "wide"],
            [("pods", "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed")],
        ),
        (["get", "nodes"], [("nodes", "")]),
    ],
    ids=["one-pod-list-for-all-nodes", "one-node-lists-only-its-pods", "narrow-table-lists-none"],
)
def test_get_nodes_wide_lists_pods_once_never_per_node(
    cluster: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    lists: list[tuple[str, str]],
) -> None:
    calls: list[tuple[str, str]] = []
    real_list = Client.list

    async def recording_list(self, kind, **kw):  # type: ignore[no-untyped-def]
        calls.append((kind.resource, kw.get("options", LIST_ALL).field_selector))
        return await real_list(self, kind, **kw)

    monkeypatch.setattr(Client, "list", recording_list)
    r = kubera(capsys, cluster, *argv)
    assert r.rc == 0, r.err
    assert calls == lists


# ------------------------------------------------------- the cells, offline


def _node(*conditions: tuple[str, str]) -> core_pb2.Node:
    n = core_pb2.Node()
    n.metadata.name = "n"
    for type_, status in conditions:
        n.status.conditions.add(type=type_, status=status)
    return n


@pytest.mark.parametrize(
    ("conditions", "shown"),
    [
        ([("Ready", "True")], "<none>"),
        ([("Ready", "True"), ("MemoryPressure", "False")], "<none>"),
        (
            [("Ready", "True"), ("MemoryPressure", "True"), ("DiskPressure", "True")],
            "MemoryPressure,DiskPressure",
        ),
        (
            [("PIDPressure", "True"), ("NetworkUnavailable", "True")],
            "PIDPressure,NetworkUnavailable",
        ),
        ([("Ready", "False"), ("KernelDeadlock", "True")], "KernelDeadlock"),
        ([("DiskPressure", "Unknown")], "<none>"),
    ],
    ids=[
        "ready-only-is-none",
        "false-pressure-is-none",
        "true-pressures-in-node-order",
        "network-unavailable-counts",
        "any-non-ready-condition-that-is-true",
        "unknown-is-not-true",
    ],
)
def test_conditions_column_lists_true_conditions_other_than_ready(
    conditions: list[tuple[str, str]], shown: str
) -> None:
    assert tables.node_problems(_node(*conditions)) == shown


@pytest.mark.parametrize(
    ("resource", "amount", "shown"),
    [
        ("cpu", 3500, "3500m"),
        ("cpu", 4000, "4"),
        ("cpu", 0, "0"),
        ("memory", 6 * 2**30, "6Gi"),
        ("memory", 1536 * 2**20, "1536Mi"),
        ("memory", 1_500_000_000, "1500M"),
        ("ephemeral-storage", 10 * 2**30, "10Gi"),
        ("hugepages-2Mi", 4 * 2**20, "4Mi"),
        ("pods", 3, "3"),
        ("example.com/gpu", 2, "2"),
    ],
    ids=[
        "cpu-milli",
        "cpu-whole-cores",
        "zero",
        "memory-binary",
        "memory-largest-exact-binary-suffix",
        "memory-decimal-when-not-whole-ki",
        "ephemeral-storage-binary",
        "hugepages-binary",
        "pods-count",
        "extended-count",
    ],
)
def test_amounts_print_as_canonical_quantities(resource: str, amount: int, shown: str) -> None:
    assert tables.format_amount(resource, amount) == shown


def _pod(node: str, phase: str = "Running", **requests: str) -> core_pb2.Pod:
    p = core_pb2.Pod()
    p.metadata.name = f"p-{node}-{phase}"
    p.spec.node_name = node
    p.status.phase = phase
    c = p.spec.containers.add(name="app")
    c.resources.requests.update(requests)
    return p


def test_node_usage_sums_effective_requests_of_non_terminated_bound_pods() -> None:
    init = _pod("n1", cpu="100m", memory="1Gi")
    init.spec.init_containers.add(name="init").resources.requests.update(cpu="2")
    init.spec.overhead.update(cpu="250m", memory="64Mi")
    pods = [
        _pod("n1", cpu="500m", memory="1Gi"),
        init,  # max(100m, init 2) + 250m overhead = 2250m; 1Gi + 64Mi
        _pod("n1", "Succeeded", cpu="8"),  # finished: frees its requests
        _pod("n1", "Failed", cpu="8"),
        _pod("", cpu="8"),  # not bound
        _pod("n2"),
    ]
    usage = tables.node_usage(pods)
    assert (usage["n1"].pods, usage["n1"].requested.milli_cpu) == (2, 2750)
    assert usage["n1"].requested.memory == 2 * 2**30 + 64 * 2**20
    assert (usage["n2"].pods, usage["n2"].requested.milli_cpu) == (1, 0)
    assert set(usage) == {"n1", "n2"}


@pytest.mark.parametrize(
    ("usage", "cells"),
    [
        (None, ["<unknown>", "<unknown>", "<unknown>"]),
        ({}, ["0/4", "0/8Gi", "0/110"]),
        ({"n": tables.NodeUsage(pods=3)}, ["0/4", "0/8Gi", "3/110"]),
    ],
    ids=["not-listed-says-unknown", "no-pods-is-zero", "pods-without-requests"],
)
def test_usage_cells_without_pod_data_are_unknown_not_zero(
    usage: dict[str, tables.NodeUsage] | None, cells: list[str]
) -> None:
    n = _node(("Ready", "True"))
    n.status.allocatable.update(cpu="4", memory="8Gi", pods="110")
    _, rows = tables.table(NODE_KIND, [n], now=0, wide=True, usage=usage)
    assert rows[0][-3:] == cells


def test_allocatable_falls_back_to_capacity() -> None:
    n = _node()
    n.status.capacity.update(cpu="2000m", memory="4Gi", pods="10")
    _, rows = tables.table(NODE_KIND, [n], now=0, wide=True, usage={})
    assert rows[0][-3:] == ["0/2", "0/4Gi", "0/10"]


# -------------------------------------------------------- describe node


def _section(out: str, title: str, until: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith(until))
    return lines[start:end]


LEASE = """\
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: n1, namespace: kube-node-lease}
spec:
  holderIdentity: n1
  leaseDurationSeconds: 40
  renewTime: "2030-01-01T00:00:05.123456Z"
"""


def test_describe_node_shows_its_lease(
    cluster: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert kubera(capsys, cluster, "apply", "-f", write(tmp_path, "l.yaml", LEASE)).rc == 0
    r = kubera(capsys, cluster, "describe", "node", "n1")
    assert r.rc == 0, r.err
    assert _section(r.out, "Taints:", "Conditions:") == [
        "Taints:             dedicated=accel:NoSchedule",
        "                    spot:PreferNoSchedule",
        "Unschedulable:      false",
        "Lease:",
        "  HolderIdentity:  n1",
        "  AcquireTime:     <unset>",
        "  RenewTime:       Tue, 01 Jan 2030 00:00:05 +0000",
    ]


def test_describe_node_without_lease_says_so_as_kubectl(
    cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = kubera(capsys, cluster, "describe", "node", "n2")
    assert r.rc == 0, r.err
    assert _section(r.out, "Taints:", "Conditions:") == [
        "Taints:             <none>",
        "Unschedulable:      true",
        'Lease:              Failed to get lease: leases.coordination.k8s.io "n2" not found',
    ]


def test_describe_node_conditions_table(cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    r = kubera(capsys, cluster, "describe", "node", "n1")
    assert _section(r.out, "Conditions:", "Addresses:") == [
        "Conditions:",
        "  Type            Status  LastHeartbeatTime                LastTransitionTime"
        "               Reason                        Message",
        "  ----            ------  -----------------                ------------------"
        "               ------                        -------",
        "  Ready           True    Tue, 01 Jan 2030 00:00:00 +0000  Mon, 31 Dec 2029 00:00:00 +0000"
        "  KubeletReady                  kubelet is posting ready status",
        "  MemoryPressure  True    <none>                           <none>"
        "                           KubeletHasInsufficientMemory  low",
        "  DiskPressure    True    <none>                           <none>"
        "                           KubeletHasDiskPressure        full",
        "  PIDPressure     False   <none>                           <none>"
        "                           KubeletHasSufficientPID       ok",
    ]


def test_describe_node_pods_and_allocated_resources_as_kubectl(
    cluster: str, capsys: pytest.CaptureFixture[str], pinned_age: None
) -> None:
    r = kubera(capsys, cluster, "describe", "node", "n1")
    assert r.rc == 0, r.err
    assert _section(r.out, "Capacity:", "Non-terminated Pods:") == [
        "Capacity:",
        "  cpu:              4",
        "  example.com/gpu:  2",
        "  memory:           8Gi",
        "  pods:             110",
        "Allocatable:",
        "  cpu:              4",
        "  example.com/gpu:  2",
        "  memory:           8Gi",
        "  pods:             110",
        "System Info:",
        "  Machine ID:".ljust(30),  # an empty value keeps its padding, as kubectl's
        "  System UUID:".ljust(30),
        "  Boot ID:".ljust(30),
        "  Kernel Version:             6.1.0",
        "  OS Image:                   Hollow Linux",
        "  Operating System:".ljust(30),
        "  Architecture:".ljust(30),
        "  Container Runtime Version:  kubera://0.1",
        "  Kubelet Version:            v1.30.0-kubera",
    ]
    # The init container's 3 cpu / 5Gi is the batch pod's request (max of init and sum).
    assert _section(r.out, "Non-terminated Pods:", "Events:") == [
        "Non-terminated Pods:          (2 in total)",
        "  Namespace                   Name     CPU Requests  CPU Limits  Memory Requests"
        "  Memory Limits  Age",
        "  ---------                   ----     ------------  ----------  ---------------"
        "  -------------  ---",
        "  default                     web      500m (12%)    1 (25%)     1Gi (12%)"
        "        2Gi (25%)      5m",
        "  kube-system                 batch    3 (75%)       0 (0%)      5Gi (62%)"
        "        0 (0%)         5m",
        "Allocated resources:",
        "  (Total limits may be over 100 percent, i.e., overcommitted.)",
        "  Resource           Requests     Limits",
        "  --------           --------     ------",
        "  cpu                3500m (87%)  1 (25%)",
        "  memory             6Gi (75%)    2Gi (25%)",
        "  ephemeral-storage  0 (0%)       0 (0%)",
        "  example.com/gpu    0            0",
    ]
