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
import json
import re
from typing import Any

from kubera.fuzz.grpc_inputs import example_objects
from kubera.testing import Cluster
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND, BY_TYPE_URL, KINDS, Kind
from tests.e2e.helpers import kubectl

#: Name prefix of every object these tests create.
PREFIX = "cl-"

_POD_SPEC = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}

#: Kinds no manifest of examples/ holds, as the upstream docs write them.
EXTRA: dict[str, dict[str, Any]] = {
    # upstream's scheduling.k8s.io/v1beta1 PodGroup (examples/ has scheduler-plugins' only)
    "PodGroup.scheduling.k8s.io": {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}},
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
    # Every newer DRA field a driver writes: a partitionable GPU consuming a counter set of
    # the pool's other slice (MORE), with a taint and binding conditions, and a NIC shared
    # by several requests with a capacity request policy.
    "ResourceSlice": {
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "cl-pool", "generation": 1, "resourceSliceCount": 2},
            "allNodes": True,
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "A100"},
                        "index": {"int": 0},
                        "nvlink": {"bool": True},
                        "driverVersion": {"version": "1.2.3"},
                    },
                    "capacity": {"memory": {"value": "40Gi"}},
                    "consumesCounters": [
                        {"counterSet": "cl-gpu-0", "counters": {"memory": {"value": "40Gi"}}}
                    ],
                    "taints": [
                        {
                            "key": "example.com/cl",
                            "value": "yes",
                            "effect": "None",
                            "timeAdded": "2026-01-02T03:04:05Z",
                        }
                    ],
                    "bindsToNode": True,
                    "bindingConditions": ["gpu.example.com/is-prepared"],
                    "bindingFailureConditions": ["gpu.example.com/preparing-failed"],
                },
                {
                    "name": "nic-0",
                    "allowMultipleAllocations": True,
                    "capacity": {
                        "bandwidth": {
                            "value": "10Gi",
                            "requestPolicy": {
                                "default": "1Gi",
                                "validRange": {"min": "1Gi", "max": "10Gi", "step": "1Gi"},
                            },
                        }
                    },
                },
            ],
        },
    },
    # A claim with every kind of request: capacity and tolerations, firstAvailable, a
    # distinctAttribute constraint; its status (STATUS) allocates a share of the NIC.
    "ResourceClaim": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "req-0",
                        "exactly": {
                            "deviceClassName": "cl-deviceclass",
                            "capacity": {"requests": {"bandwidth": "1Gi"}},
                            "tolerations": [
                                {
                                    "key": "example.com/cl",
                                    "operator": "Exists",
                                    "effect": "NoSchedule",
                                }
                            ],
                        },
                    },
                    {
                        "name": "req-1",
                        "firstAvailable": [
                            {"name": "big", "deviceClassName": "cl-deviceclass", "count": 2},
                            {"name": "small", "deviceClassName": "cl-deviceclass"},
                        ],
                    },
                ],
                "constraints": [
                    {"requests": ["req-0"], "distinctAttribute": "gpu.example.com/index"}
                ],
            }
        },
    },
    # drataints: a rule of effect None on a driver no node has (it taints nothing).
    "DeviceTaintRule": {
        "spec": {
            "deviceSelector": {"driver": "cl.example.com", "pool": "cl-pool", "device": "gpu-0"},
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
        if kind.name not in out:
            out[kind.name] = codec.encode(codec.unpack(a))
    return out


def object_of(kind: Kind) -> dict[str, Any]:
    """A new object of `kind` named `cl-<kind>` (in `default` where namespaced)."""
    found = EXTRA.get(kind.name, _examples().get(kind.name, {}))
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


#: Objects beyond one of every kind: the counter sets of cl-pool (upstream keeps a pool's
#: sharedCounters in a slice without devices).
MORE: list[dict[str, Any]] = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{PREFIX}resourceslice-counters"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "cl-pool", "generation": 1, "resourceSliceCount": 2},
            "allNodes": True,
            "sharedCounters": [{"name": "cl-gpu-0", "counters": {"memory": {"value": "80Gi"}}}],
        },
    },
]

#: Statuses written once the objects exist (the status subresource, as a scheduler and a
#: driver write them): cl-resourceclaim allocated a share of the NIC (shareID,
#: consumedCapacity) with binding conditions, and the driver's device status of it.
STATUS: dict[str, dict[str, Any]] = {
    "ResourceClaim": {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "req-0",
                        "driver": "gpu.example.com",
                        "pool": "cl-pool",
                        "device": "nic-0",
                        "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                        "consumedCapacity": {"bandwidth": "1Gi"},
                        "tolerations": [
                            {"key": "example.com/cl", "operator": "Exists", "effect": "NoSchedule"}
                        ],
                        "bindingConditions": ["gpu.example.com/is-prepared"],
                        "bindingFailureConditions": ["gpu.example.com/preparing-failed"],
                    }
                ]
            },
            "allocationTimestamp": "2026-01-02T03:04:05Z",
        },
        "devices": [
            {
                "driver": "gpu.example.com",
                "pool": "cl-pool",
                "device": "nic-0",
                "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                "conditions": [
                    {
                        "type": "gpu.example.com/is-prepared",
                        "status": "True",
                        "reason": "Prepared",
                        "message": "ready",
                        "lastTransitionTime": "2026-01-02T03:04:06Z",
                    }
                ],
                "data": {"vendor": "example"},
                "networkData": {
                    "interfaceName": "eth1",
                    "ips": ["10.9.8.7/24"],
                    "hardwareAddress": "ea:9f:1c:2d:3e:4f",
                },
            }
        ],
    },
}


def all_objects() -> list[dict[str, Any]]:
    """`object_of` every kind, in KINDS order (namespaces and nodes first), then MORE."""
    return [object_of(k) for k in KINDS] + copy.deepcopy(MORE)


def write_statuses(k: Cluster) -> None:
    """Write STATUS into the objects of all_objects (kubectl patch --subresource=status)."""
    for kind_name, status in STATUS.items():
        doc = object_of(BY_KIND[kind_name])
        meta = doc["metadata"]
        ns = ("-n", meta["namespace"]) if "namespace" in meta else ()
        patch = json.dumps({"status": status})
        kind = BY_KIND[kind_name]
        kubectl(
            k,
            "patch",
            f"{kind.resource}.{kind.group}",
            meta["name"],
            *ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            patch,
        )


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


#: Kinds (by `Kind.name`) no upstream client has a model for: the scheduler-plugins CRD
#: PodGroup, which kubera serves built in, scheduling.k8s.io/v1alpha1 Workload (1.35's
#: alpha; the clients of 1.36+ carry only its later versions) and DeviceTaintRule at
#: resource.k8s.io/v1 (the clients' models stop at v1beta2). The clients list them through
#: their generic (custom object) path.
NO_CLIENT_MODEL = frozenset({"PodGroup", "Workload", "DeviceTaintRule"})
#: kubernetes-asyncio's models also lack scheduling.k8s.io/v1beta1 PodGroup (the official
#: client 37 and lightkube have it).
NO_ASYNCIO_MODEL = NO_CLIENT_MODEL | {"PodGroup.scheduling.k8s.io"}
#: So do @kubernetes/client-node 1.4's (the newest that runs on node 20).
NO_JS_MODEL = NO_ASYNCIO_MODEL


#: The kinds each client creates, patches, watches and deletes: pods and one more.
VERB_KINDS = ("Pod", "PodDisruptionBudget")


def named(kind_name: str, name: str) -> dict[str, Any]:
    """`object_of` the kind named `kind_name`, renamed `name`."""
    doc = object_of(BY_KIND[kind_name])
    doc["metadata"]["name"] = name
    return doc


# The newer DRA fields a strict client must keep: (object, path, value), the path through
# the client's own JSON of its model (None: present, any value, for timestamps a client
# re-renders as it likes).
_SHARE = STATUS["ResourceClaim"]["allocation"]["devices"]["results"][0]["shareID"]
DRA_FIELDS: list[tuple[str, tuple[str | int, ...], Any]] = [
    (
        "claim",
        ("spec", "devices", "requests", 0, "exactly", "capacity", "requests"),
        {"bandwidth": "1Gi"},
    ),
    (
        "claim",
        ("spec", "devices", "requests", 0, "exactly", "tolerations", 0, "operator"),
        "Exists",
    ),
    ("claim", ("spec", "devices", "requests", 1, "firstAvailable", 0, "count"), 2),
    ("claim", ("spec", "devices", "constraints", 0, "distinctAttribute"), "gpu.example.com/index"),
    ("claim", ("status", "allocation", "devices", "results", 0, "shareID"), _SHARE),
    (
        "claim",
        ("status", "allocation", "devices", "results", 0, "consumedCapacity"),
        {"bandwidth": "1Gi"},
    ),
    (
        "claim",
        ("status", "allocation", "devices", "results", 0, "bindingConditions"),
        ["gpu.example.com/is-prepared"],
    ),
    (
        "claim",
        ("status", "allocation", "devices", "results", 0, "bindingFailureConditions"),
        ["gpu.example.com/preparing-failed"],
    ),
    (
        "claim",
        ("status", "allocation", "devices", "results", 0, "tolerations", 0, "key"),
        "example.com/cl",
    ),
    ("claim", ("status", "allocation", "allocationTimestamp"), None),
    ("claim", ("status", "devices", 0, "shareID"), _SHARE),
    ("claim", ("status", "devices", 0, "conditions", 0, "type"), "gpu.example.com/is-prepared"),
    ("claim", ("status", "devices", 0, "data"), {"vendor": "example"}),
    ("claim", ("status", "devices", 0, "networkData", "ips"), ["10.9.8.7/24"]),
    ("slice", ("spec", "devices", 0, "consumesCounters", 0, "counterSet"), "cl-gpu-0"),
    ("slice", ("spec", "devices", 0, "consumesCounters", 0, "counters", "memory", "value"), "40Gi"),
    ("slice", ("spec", "devices", 0, "taints", 0, "effect"), "None"),
    ("slice", ("spec", "devices", 0, "taints", 0, "timeAdded"), None),
    ("slice", ("spec", "devices", 0, "bindsToNode"), True),
    ("slice", ("spec", "devices", 0, "bindingConditions"), ["gpu.example.com/is-prepared"]),
    ("slice", ("spec", "devices", 0, "attributes", "driverVersion", "version"), "1.2.3"),
    ("slice", ("spec", "devices", 1, "allowMultipleAllocations"), True),
    ("slice", ("spec", "devices", 1, "capacity", "bandwidth", "requestPolicy", "default"), "1Gi"),
    (
        "slice",
        ("spec", "devices", 1, "capacity", "bandwidth", "requestPolicy", "validRange", "step"),
        "1Gi",
    ),
    ("counters", ("spec", "sharedCounters", 0, "counters", "memory", "value"), "80Gi"),
]


def dra_field_problems(objects: dict[str, Any]) -> list[str]:
    """The DRA_FIELDS a client lost or changed: `objects` maps "claim" (cl-resourceclaim),
    "slice" (cl-resourceslice) and "counters" (cl-resourceslice-counters) to the client's
    JSON of its model of each; [] when every field came through."""
    problems = []
    for name, path, want in DRA_FIELDS:
        got: Any = objects[name]
        for step in path:
            try:
                got = got[step]
            except (KeyError, IndexError, TypeError):
                got = None
                break
        if got is None or (want is not None and got != want):
            problems.append(f"{name}.{'.'.join(map(str, path))}: {got!r}")
    return problems
