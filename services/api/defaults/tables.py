"""Upstream's static API defaults, as data keyed by upstream schema name.

Two tables, by where upstream keeps the default:

- ``OPENAPI_DEFAULTS``: the non-zero `default`s upstream's release-1.37 OpenAPI carries (the
  `+default=` markers of staging/src/k8s.io/api: ContainerPort.protocol and ServicePort.protocol
  are "TCP"). Every other `default` in that OpenAPI is a zero value, which says a field is
  written, not what it defaults to (scripts/genzerovalues.py reads those). The pinned PyPI
  package that ships the 1.37 definitions (kubernetes-validate) strips `default`s, so these
  two are carried here and checked against upstream's types.go by hand.
- ``SET_DEFAULTS``: the unconditional part of upstream's ``SetDefaults_*`` functions
  (pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go, pkg/apis/batch/v1/defaults.go,
  pkg/apis/scheduling/v1/defaults.go,
  pkg/apis/storage/v1/defaults.go): "if the field is unset, set it to X". What depends on
  other fields (imagePullPolicy by tag, a strategy's rolling update, a Job's completions and
  backoff limit, a Service's traffic policies) is code, in ``setdefaults.py``.

A row applies to every kubera message whose upstream schema it names, wherever the message
sits (a PodSpec in a Pod, a Deployment's template or a Job's template), as upstream's
generated ``SetObjectDefaults_*`` do. A field a kubera message does not have is skipped, so a
row may name fields kubera does not model yet.
"""

from __future__ import annotations

from typing import Any

CORE = "io.k8s.api.core.v1"
APPS = "io.k8s.api.apps.v1"
BATCH = "io.k8s.api.batch.v1"
SCHEDULING = "io.k8s.api.scheduling.v1"
DISCOVERY = "io.k8s.api.discovery.v1"
RESOURCE = "io.k8s.api.resource.v1"
STORAGE = "io.k8s.api.storage.v1"

#: schema -> {JSON field: default}: the `+default=` markers of upstream's 1.37 OpenAPI.
OPENAPI_DEFAULTS: dict[str, dict[str, Any]] = {
    f"{CORE}.ContainerPort": {"protocol": "TCP"},
    f"{CORE}.ServicePort": {"protocol": "TCP"},
}

#: schema -> {JSON field: default}: SetDefaults_* that set a field unconditionally when unset.
SET_DEFAULTS: dict[str, dict[str, Any]] = {
    # SetDefaults_PodSpec (every PodSpec: pods and templates).
    f"{CORE}.PodSpec": {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler",
    },
    # SetDefaults_Container (imagePullPolicy is in setdefaults.py: it depends on the tag).
    f"{CORE}.Container": {
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    },
    # SetDefaults_Probe, SetDefaults_HTTPGetAction, SetDefaults_ObjectFieldSelector and the
    # volume sources: kubera keeps these as free-form JSON; setdefaults.py applies them there.
    f"{CORE}.Probe": {
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    },
    f"{CORE}.HTTPGetAction": {"path": "/", "scheme": "HTTP"},
    f"{CORE}.ObjectFieldSelector": {"apiVersion": "v1"},
    f"{CORE}.SecretVolumeSource": {"defaultMode": 420},
    f"{CORE}.ConfigMapVolumeSource": {"defaultMode": 420},
    f"{CORE}.DownwardAPIVolumeSource": {"defaultMode": 420},
    f"{CORE}.ProjectedVolumeSource": {"defaultMode": 420},
    f"{CORE}.ServiceAccountTokenProjection": {"expirationSeconds": 3600},
    f"{CORE}.HostPathVolumeSource": {"type": ""},
    f"{CORE}.AzureDiskVolumeSource": {
        "cachingMode": "ReadWrite",
        "fsType": "ext4",
        "readOnly": False,
        "kind": "Shared",
    },
    f"{CORE}.ISCSIVolumeSource": {"iscsiInterface": "default"},
    f"{CORE}.RBDVolumeSource": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    f"{CORE}.ScaleIOVolumeSource": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
    # SetDefaults_Secret, SetDefaults_NamespaceStatus, SetDefaults_PersistentVolumeClaimSpec.
    f"{CORE}.Secret": {"type": "Opaque"},
    f"{CORE}.NamespaceStatus": {"phase": "Active"},
    f"{CORE}.PersistentVolumeClaimSpec": {"volumeMode": "Filesystem"},
    # SetDefaults_Service's unconditional part.
    f"{CORE}.ServiceSpec": {"type": "ClusterIP", "sessionAffinity": "None"},
    # SetDefaults_ReplicaSet, SetDefaults_Deployment, SetDefaults_DaemonSet,
    # SetDefaults_StatefulSet: the fields set whatever else the object says.
    f"{APPS}.ReplicaSetSpec": {"replicas": 1},
    f"{APPS}.DeploymentSpec": {
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    f"{APPS}.DeploymentStrategy": {"type": "RollingUpdate"},
    f"{APPS}.DaemonSetSpec": {"revisionHistoryLimit": 10},
    f"{APPS}.DaemonSetUpdateStrategy": {"type": "RollingUpdate"},
    f"{APPS}.StatefulSetSpec": {
        "podManagementPolicy": "OrderedReady",
        "replicas": 1,
        "revisionHistoryLimit": 10,
    },
    f"{APPS}.StatefulSetPersistentVolumeClaimRetentionPolicy": {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    },
    # SetDefaults_Job's unconditional part, SetDefaults_CronJob,
    # SetDefaults_PodFailurePolicyOnPodConditionsPattern.
    f"{BATCH}.JobSpec": {
        "completionMode": "NonIndexed",
        "suspend": False,
        "manualSelector": False,
    },
    f"{BATCH}.CronJobSpec": {
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    },
    f"{BATCH}.PodFailurePolicyOnPodConditionsPattern": {"status": "True"},
    # discovery/v1 SetDefaults_EndpointPort (an EndpointSlice's ports).
    f"{DISCOVERY}.EndpointPort": {"name": "", "protocol": "TCP"},
    # SetDefaults_PriorityClass.
    f"{SCHEDULING}.PriorityClass": {"preemptionPolicy": "PreemptLowerPriority"},
    # pkg/apis/storage/v1: SetDefaults_StorageClass, and SetDefaults_CSIDriver's scalars
    # (its volumeLifecycleModes is in setdefaults.py: a list).
    f"{STORAGE}.StorageClass": {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
    f"{STORAGE}.CSIDriverSpec": {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
    },
}
