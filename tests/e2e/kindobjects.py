"""One valid object of every kind kubera serves (services/api/machinery/kinds.KINDS), as a
client sends it: the tests of the clients people use (tests/e2e/test_clients_e2e.py,
test_python_client_e2e.py) create them all on one cluster and list each kind back through
every client's own strict models.

The objects come from `EXTRA` where it names the kind (objects that leave the namespace
usable for the other kinds' tests: a quota that requires no limits, a LimitRange for claims
only, whatever examples/ holds), then from examples/ (the manifests the fuzz harness also
sends, kubera.fuzz.grpc_inputs.example_objects). A kind in neither gets a bare object (a name, in the `default` namespace where
namespaced), which is valid for the kinds whose spec has no required field; a kind whose
bare object the apiserver refuses fails the tests that create it: give it an example."""

from __future__ import annotations

import copy
import re
from typing import Any

from kubera.fuzz.grpc_inputs import example_objects
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND, BY_TYPE_URL, KINDS, Kind

#: Name prefix of every object these tests create.
PREFIX = "cl-"

_POD_SPEC = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}

#: Kinds no manifest of examples/ holds, as the upstream docs write them.
EXTRA: dict[str, dict[str, Any]] = {
    "Event": {
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "cl-pod"},
        "reason": "Tested",
        "message": "an event the client tests wrote",
        "type": "Normal",
        "source": {"component": "clients-e2e"},
        "count": 1,
    },
    "PodDisruptionBudget": {
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "cl-nothing"}}},
    },
    "ReplicaSet": {
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "cl-rs"}},
            "template": {"metadata": {"labels": {"app": "cl-rs"}}, "spec": _POD_SPEC},
        },
    },
    "Lease": {"spec": {"holderIdentity": "clients-e2e", "leaseDurationSeconds": 15}},
    "ResourceSlice": {
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "cl-pool", "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [{"name": "gpu-0"}],
        },
    },
    # drataints: a rule of effect None on a driver no node has (it taints nothing).
    "DeviceTaintRule": {
        "spec": {
            "deviceSelector": {"driver": "cl.example.com"},
            "taint": {"key": "example.com/cl", "value": "yes", "effect": "None"},
        },
    },
    # The kinds of issue 26 (used once KINDS has them; an example in examples/ comes first).
    "Job": {
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 4,
            "template": {"spec": {**_POD_SPEC, "restartPolicy": "Never"}},
        },
    },
    "CronJob": {
        "spec": {
            "schedule": "*/1 * * * *",
            "suspend": True,  # listed, never run: no Job every minute of the test
            "jobTemplate": {
                "spec": {"template": {"spec": {**_POD_SPEC, "restartPolicy": "OnFailure"}}}
            },
        },
    },
    "DaemonSet": {
        "spec": {
            "selector": {"matchLabels": {"app": "cl-ds"}},
            "template": {"metadata": {"labels": {"app": "cl-ds"}}, "spec": _POD_SPEC},
        },
    },
    "StatefulSet": {
        "spec": {
            "serviceName": "cl-service",
            "replicas": 1,
            "selector": {"matchLabels": {"app": "cl-sts"}},
            "template": {"metadata": {"labels": {"app": "cl-sts"}}, "spec": _POD_SPEC},
        },
    },
    "ControllerRevision": {"revision": 1, "data": {"spec": {"template": {"spec": _POD_SPEC}}}},
    "PersistentVolumeClaim": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    },
    "PersistentVolume": {
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/mnt/data"},
            "storageClassName": "manual",
        },
    },
    "StorageClass": {
        "provisioner": "hollow.kubera.io",
        "volumeBindingMode": "WaitForFirstConsumer",
    },
    "CSIDriver": {"spec": {"attachRequired": False}},
    "Workload": {"spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]}},
    "CSINode": {"spec": {"drivers": [{"name": "hollow.kubera.io", "nodeID": "cl-node"}]}},
    "CSIStorageCapacity": {"storageClassName": "cl-storageclass", "capacity": "10Gi"},
    "VolumeAttachment": {
        "spec": {
            "attacher": "hollow.kubera.io",
            "nodeName": "cl-node",
            "source": {"persistentVolumeName": "cl-persistentvolume"},
        },
    },
    "Service": {
        "spec": {"selector": {"app": "cl-sts"}, "ports": [{"port": 80, "targetPort": 8080}]},
    },
    "EndpointSlice": {
        "metadata": {"labels": {"kubernetes.io/service-name": "cl-service"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
        "endpoints": [{"addresses": ["10.1.2.3"]}],
    },
    "ConfigMap": {"data": {"key": "value"}},
    "Secret": {"type": "Opaque", "data": {"key": "dmFsdWU="}},
    "ServiceAccount": {},
    "ResourceQuota": {"spec": {"hard": {"pods": "100"}}},
    # PVCs only: the module's pods get no defaults and need no limits
    "LimitRange": {
        "spec": {
            "limits": [
                {
                    "type": "PersistentVolumeClaim",
                    "min": {"storage": "1Gi"},
                    "max": {"storage": "2Gi"},
                }
            ]
        },
    },
}


def _examples() -> dict[str, dict[str, Any]]:
    """The first example object of each kind, as JSON."""
    out: dict[str, dict[str, Any]] = {}
    for a in example_objects():
        kind = BY_TYPE_URL[a.type_url]
        if kind.kind not in out:
            out[kind.kind] = codec.encode(codec.unpack(a))
    return out


def object_of(kind: Kind) -> dict[str, Any]:
    """A new object of `kind` named `cl-<kind>` (in `default` where namespaced)."""
    found = EXTRA.get(kind.kind, _examples().get(kind.kind, {}))
    doc = copy.deepcopy(found)
    doc["apiVersion"] = kind.api_version
    doc["kind"] = kind.kind
    meta = {
        k: v
        for k, v in doc.get("metadata", {}).items()
        if k in ("labels", "annotations")  # not the example's name, namespace or status
    }
    meta["name"] = f"{PREFIX}{kind.singular}"
    if kind.namespaced:
        meta["namespace"] = "default"
    doc["metadata"] = meta
    doc.pop("status", None)
    if isinstance(doc.get("spec"), dict) and "replicas" in doc["spec"]:
        doc["spec"]["replicas"] = 1  # one pod is enough to list, and cheap
    return doc


def all_objects() -> list[dict[str, Any]]:
    """`object_of` every kind, in KINDS order (namespaces and nodes first)."""
    return [object_of(k) for k in KINDS]


def python_api(kind: Kind) -> tuple[str, str]:
    """The API class and the snake-case kind of the official client's generated code (and
    kubernetes-asyncio's, the same generator): `("AppsV1Api", "replica_set")`."""
    group = kind.group.split(".")[0] if kind.group else "core"
    # CSIDriver -> csi_driver, PersistentVolumeClaim -> persistent_volume_claim
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kind.kind).lower()
    return f"{group.capitalize()}{kind.version.capitalize()}Api", snake


def lightkube_module(kind: Kind) -> str:
    """The lightkube-models module of a kind's group and version: `lightkube.resources.apps_v1`."""
    group = kind.group.split(".")[0] if kind.group else "core"
    return f"lightkube.resources.{group}_{kind.version}"


#: Kinds no upstream client has a model for: the scheduler-plugins CRD PodGroup, which
#: kubera serves built in, scheduling.k8s.io/v1alpha1 Workload (1.35's alpha; the clients of
#: 1.36+ carry only its later versions) and DeviceTaintRule at resource.k8s.io/v1 (the
#: clients' models stop at v1beta2). The clients list them through their generic (custom
#: object) path.
NO_CLIENT_MODEL = frozenset({"PodGroup", "Workload", "DeviceTaintRule"})


#: The kinds each client creates, patches, watches and deletes: pods and one more.
VERB_KINDS = ("Pod", "PodDisruptionBudget")


def named(kind_name: str, name: str) -> dict[str, Any]:
    """`object_of` the kind named `kind_name`, renamed `name`."""
    doc = object_of(BY_KIND[kind_name])
    doc["metadata"]["name"] = name
    return doc
