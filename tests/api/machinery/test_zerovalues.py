"""Upstream's zero values: the fields its Go types always write are in kubera's JSON, so the
official Python client's strict models read kubera's objects; the table is upstream's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format, symbol_database
from kubernetes import client as k8s

from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.zerovalues import ALWAYS_WRITTEN

ROOT = Path(__file__).resolve().parents[3]


def test_the_table_is_what_the_generator_makes_from_upstreams_openapi() -> None:
    r = subprocess.run(
        [sys.executable, "scripts/genzerovalues.py", "--check"], cwd=ROOT, capture_output=True
    )
    assert r.returncode == 0, r.stderr.decode()


def test_no_field_upstream_requires_is_missing_from_kubera_messages() -> None:
    r = subprocess.run(
        [sys.executable, "scripts/genzerovalues.py", "--missing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert r.stdout.split() == []


def _running_pod() -> core_pb2.Pod:
    pod = core_pb2.Pod(api_version="v1", kind="Pod")
    pod.metadata.name, pod.metadata.namespace = "p", "default"
    pod.spec.containers.add(name="c", image="nginx")
    pod.status.phase = "Running"
    pod.status.container_statuses.add(name="c", image="nginx")  # ready false, restartCount 0
    pod.status.conditions.add(type="Ready", status="False")
    return pod


def test_a_container_status_carries_its_zero_restart_count_and_readiness() -> None:
    d = codec.encode(_running_pod())
    cs = d["status"]["containerStatuses"][0]
    assert (cs["restartCount"], cs["ready"], cs["imageID"]) == (0, False, "")


def test_the_strict_python_client_reads_a_pod_kubera_writes() -> None:
    with pytest.raises(ValueError, match="restartCount"):  # the client is strict indeed
        k8s.V1Pod.from_dict({"status": {"containerStatuses": [{"name": "c", "image": "x"}]}})
    pod = k8s.V1Pod.from_dict(codec.encode(_running_pod()))
    assert pod.status.container_statuses[0].restart_count == 0


@pytest.mark.parametrize("full_name", sorted(ALWAYS_WRITTEN))
def test_zero_values_read_back_as_what_was_written(full_name: str) -> None:
    cls = symbol_database.Default().GetSymbol(full_name)
    d = codec.encode(cls())
    assert set(ALWAYS_WRITTEN[full_name]) <= set(d)
    back = cls()
    json_format.ParseDict(d, back, ignore_unknown_fields=False)
    assert codec.encode(back) == d
