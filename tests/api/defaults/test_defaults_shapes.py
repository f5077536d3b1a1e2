"""The defaulters of kinds kubera gains in parallel work (Job, StatefulSet, Service), run now on
stand-in messages of upstream's shape: a throwaway .proto compiled at test time, in its own
proto package (the defaults match messages by name, so kubera.v1's own Job, once it exists,
takes the same rows; test_defaults.py then runs upstream's cases on it)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import json_format

from services.api import defaults

_PROTO = """
syntax = "proto3";
package defaultsfixture.v1;
message Meta { string name = 1; map<string, string> labels = 2; }
message Template { Meta metadata = 1; }
message PodFailurePolicyOnPodConditionsPattern { string type = 1; string status = 2; }
message PodFailurePolicyRule {
  string action = 1;
  repeated PodFailurePolicyOnPodConditionsPattern on_pod_conditions = 2;
}
message PodFailurePolicy { repeated PodFailurePolicyRule rules = 1; }
message JobSpec {
  optional int32 parallelism = 1;
  optional int32 completions = 2;
  optional int32 backoff_limit = 3;
  optional int32 backoff_limit_per_index = 4;
  optional string completion_mode = 5;
  optional bool suspend = 6;
  optional bool manual_selector = 7;
  optional string pod_replacement_policy = 8;
  PodFailurePolicy pod_failure_policy = 9;
  Template template = 10;
}
message Job { Meta metadata = 1; JobSpec spec = 2; }
message RollingUpdateStatefulSetStrategy { optional int32 partition = 1; }
message StatefulSetUpdateStrategy {
  string type = 1;
  RollingUpdateStatefulSetStrategy rolling_update = 2;
}
message StatefulSetPersistentVolumeClaimRetentionPolicy {
  string when_deleted = 1;
  string when_scaled = 2;
}
message StatefulSetSpec {
  optional int32 replicas = 1;
  string pod_management_policy = 2;
  StatefulSetUpdateStrategy update_strategy = 3;
  optional int32 revision_history_limit = 4;
  StatefulSetPersistentVolumeClaimRetentionPolicy persistent_volume_claim_retention_policy = 5;
}
message StatefulSet { Meta metadata = 1; StatefulSetSpec spec = 2; }
message ServicePort { string protocol = 1; int32 port = 2; string target_port = 3; }
message ClientIPConfig { optional int32 timeout_seconds = 1; }
message SessionAffinityConfig { ClientIPConfig client_ip = 1 [json_name = "clientIP"]; }
message ServiceSpec {
  repeated ServicePort ports = 1;
  string type = 2;
  string session_affinity = 3;
  SessionAffinityConfig session_affinity_config = 4;
  optional string internal_traffic_policy = 5;
  string external_traffic_policy = 6;
  optional bool allocate_load_balancer_node_ports = 7;
}
message Service { Meta metadata = 1; ServiceSpec spec = 2; }
message LimitRangeItem {
  string type = 1;
  map<string, string> max = 2;
  map<string, string> min = 3;
  map<string, string> default = 4;
  map<string, string> default_request = 5;
}
message LimitRangeSpec { repeated LimitRangeItem limits = 1; }
message LimitRange { Meta metadata = 1; LimitRangeSpec spec = 2; }
message PersistentVolumeClaimSpec { optional string volume_mode = 1; }
message PersistentVolumeClaimStatus { string phase = 1; }
message PersistentVolumeClaim {
  Meta metadata = 1;
  PersistentVolumeClaimSpec spec = 2;
  PersistentVolumeClaimStatus status = 3;
}
"""


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("defaultsfixture")
    (out / "defaultsfixture.proto").write_text(_PROTO)
    assert protoc.main(["protoc", f"-I{out}", f"--python_out={out}", "defaultsfixture.proto"]) == 0
    spec = importlib.util.spec_from_file_location(
        "defaultsfixture_pb2", out / "defaultsfixture_pb2.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["defaultsfixture_pb2"] = module
    spec.loader.exec_module(module)
    return module


def _run(cls: Any, d: dict[str, Any]) -> dict[str, Any]:
    m = cls()
    json_format.ParseDict(d, m)
    defaults.apply(m)
    out: dict[str, Any] = json_format.MessageToDict(m)
    return out


def test_an_unspecified_job_gets_upstreams_defaults(fx: ModuleType) -> None:
    got = _run(
        fx.Job,
        {"metadata": {"name": "j"}, "spec": {"template": {"metadata": {"labels": {"t": "l"}}}}},
    )
    assert got["metadata"]["labels"] == {"t": "l"}
    assert got["spec"] | {"template": None} == {
        "parallelism": 1,
        "completions": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "manualSelector": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "template": None,
    }


def test_a_job_with_per_index_backoff_and_a_failure_policy(fx: ModuleType) -> None:
    rules = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    spec = {"backoffLimitPerIndex": 1, "completions": 2, "podFailurePolicy": {"rules": rules}}
    got = _run(fx.Job, {"spec": spec})["spec"]
    assert (got["backoffLimit"], got["parallelism"], got["completions"]) == (2**31 - 1, 1, 2)
    assert got["podReplacementPolicy"] == "Failed"
    assert got["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ({}, {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
        ({"type": "OnDelete"}, {"type": "OnDelete"}),
        ({"type": "RollingUpdate"}, {"type": "RollingUpdate"}),  # given without rollingUpdate
        (
            {"rollingUpdate": {"partition": 2}},
            {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
        ),
    ],
)
def test_a_stateful_set_update_strategy(fx: ModuleType, strategy: dict, expected: dict) -> None:
    got = _run(fx.StatefulSet, {"spec": {"updateStrategy": strategy} if strategy else {}})["spec"]
    assert got["updateStrategy"] == expected
    assert (got["replicas"], got["podManagementPolicy"], got["revisionHistoryLimit"]) == (
        1,
        "OrderedReady",
        10,
    )
    assert got["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"ports": [{"port": 80}]},
            {
                "ports": [{"protocol": "TCP", "port": 80, "targetPort": "80"}],
                "type": "ClusterIP",
                "sessionAffinity": "None",
                "internalTrafficPolicy": "Cluster",
            },
        ),
        (
            {
                "type": "LoadBalancer",
                "sessionAffinity": "ClientIP",
                "ports": [{"port": 80, "targetPort": "http"}],
            },
            {
                "ports": [{"protocol": "TCP", "port": 80, "targetPort": "http"}],
                "type": "LoadBalancer",
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                "internalTrafficPolicy": "Cluster",
                "externalTrafficPolicy": "Cluster",
                "allocateLoadBalancerNodePorts": True,
            },
        ),
        ({"type": "ExternalName"}, {"type": "ExternalName", "sessionAffinity": "None"}),
        (
            {
                "sessionAffinity": "None",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}},
            },
            {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"},
        ),
    ],
)
def test_a_service(fx: ModuleType, spec: dict, expected: dict) -> None:
    assert _run(fx.Service, {"spec": spec})["spec"] == expected


def test_a_limit_range_container_item(fx: ModuleType) -> None:
    item = {
        "type": "Container",
        "max": {"cpu": "2", "memory": "1Gi"},
        "min": {"ephemeral-storage": "1Gi"},
        "default": {"memory": "512Mi"},
    }
    got = _run(fx.LimitRange, {"spec": {"limits": [item, {"type": "Pod", "max": {"cpu": "4"}}]}})
    container, pod = got["spec"]["limits"]
    assert container["default"] == {"cpu": "2", "memory": "512Mi"}
    assert container["defaultRequest"] == {
        "cpu": "2",
        "memory": "512Mi",
        "ephemeral-storage": "1Gi",
    }
    assert "default" not in pod and "defaultRequest" not in pod


def test_a_claim_is_pending_with_a_filesystem_volume(fx: ModuleType) -> None:
    got = _run(fx.PersistentVolumeClaim, {"metadata": {"name": "c"}, "spec": {}})
    assert got["spec"] == {"volumeMode": "Filesystem"}
    assert got["status"] == {"phase": "Pending"}
