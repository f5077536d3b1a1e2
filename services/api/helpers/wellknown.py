"""Well-known node labels and taint keys (upstream k8s.io/api/core/v1 well_known_labels.go and
well_known_taints.go).

The kubelet sets the labels, the node lifecycle controller and the apiserver's admission put
and tolerate the taints, the scheduler and the controllers read both: they are spelled here
once.
"""

from __future__ import annotations

# ------------------------------------------------------------------ labels

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
#: The deprecated zone and region labels, still read where upstream reads them.
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
#: `kubectl get nodes` shows a node's roles from the labels under this prefix.
LABEL_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
#: Nodes with this label do not count towards their zone's health (node lifecycle).
LABEL_EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"

# ------------------------------------------------------------------ Job pods
# (k8s.io/api/batch/v1 types.go)

#: The selector label the Job strategy generates, and its pods carry, with the Job's uid.
LABEL_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
#: The same labels in their legacy spelling, still added to pod templates.
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
#: An Indexed Job's pod index (annotation and label).
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: A pod's failure count of its index (backoffLimitPerIndex), as an annotation.
JOB_INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
JOB_INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
#: The finalizer that keeps a Job's finished pods until the Job has counted them.
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
#: The annotation a CronJob's Jobs carry with their scheduled time (RFC 3339).
CRONJOB_SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"

# ------------------------------------------------------------------ taints

#: The node's Ready condition is False (NoSchedule, then NoExecute).
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
#: The node's Ready condition is Unknown: its kubelet stopped reporting.
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
#: The node is cordoned (spec.unschedulable).
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
#: Put by an operator on a node known to be down: its pods may be deleted at once.
TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"

#: The namespace of the nodes' Leases (their heartbeats; each owned by its Node).
NODE_LEASE_NAMESPACE = "kube-node-lease"

#: apps/v1 keeps a DaemonSet's internal TemplateGeneration in this annotation (set by the
#: apiserver); the DaemonSet controller labels its pods with it (pod-template-generation).
DAEMON_SET_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"

#: The ServiceAccount every namespace gets (the serviceaccount controller) and every pod
#: created without one uses (the ServiceAccount admission plugin).
DEFAULT_SERVICE_ACCOUNT = "default"

#: A mirror pod (a kubelet's static pod, as the apiserver sees it) carries this annotation;
#: it may not reference service accounts.
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
