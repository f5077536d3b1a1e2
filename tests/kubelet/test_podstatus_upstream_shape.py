"""Every pod status a hollow kubelet writes (creating, running, finished) is what upstream's
kubelet writes, as the strict official client reads it: hostIPs beside hostIP, podIPs beside
podIP, and the container statuses' required fields (restartCount 0, ready false, imageID)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client as k8s

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import Stages
from services.api.machinery import codec
from services.kubelet import podstatus
from services.kubelet.state import PodState


def _state() -> PodState:
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace = "p", "default"
    pod.spec.node_name = "n"
    pod.spec.containers.add(name="c", image="nginx")
    node: Any = SimpleNamespace(ordinal=3)
    return PodState(uid="0123456789abcdef", pod=pod, node=node, stages=Stages())


_WRITES = {
    "creating": lambda st: podstatus.creating(st, 100.0),
    "running": lambda st: podstatus.running(st, 100.0, "10.1.0.5"),
    "succeeded": lambda st: podstatus.finished(
        st, 100.0, "Succeeded", "", "", exit_code=0, evicted=False
    ),
    "evicted": lambda st: podstatus.finished(
        st, 100.0, "Failed", "Evicted", "low on memory", exit_code=137, evicted=True
    ),
}


@pytest.mark.parametrize("stage", sorted(_WRITES))
def test_each_status_the_kubelet_writes_reads_with_the_strict_client(stage: str) -> None:
    st = _state()
    st.pod.status.start_time = "2026-01-01T00:00:00Z"
    pod = _WRITES[stage](st)
    pod.spec.CopyFrom(st.pod.spec)
    v1 = k8s.V1Pod.from_dict(codec.encode(pod))
    assert v1.status.host_ips is not None
    assert [h.ip for h in v1.status.host_ips] == [v1.status.host_ip]


def test_a_running_pod_reports_its_host_and_pod_ips_as_lists() -> None:
    status = codec.encode(podstatus.running(_state(), 100.0, "10.1.0.5"))["status"]
    assert status["hostIPs"] == [{"ip": status["hostIP"]}]
    assert status["podIPs"] == [{"ip": "10.1.0.5"}]
    cs = status["containerStatuses"][0]
    assert (cs["restartCount"], cs["ready"], cs["name"]) == (0, True, "c")
