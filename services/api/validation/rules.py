"""The validation table: one row per kind, and the entry points the package re-exports.

Why this module exists: it holds the entry points (:func:`validate_create`,
:func:`validate_update`, :func:`validate_grace_period_seconds`) and the table they read.
Each kind is one row in ``_RULES`` (name rule, a create function, optionally an update
function), so adding a kind is one function plus one row. Unknown kinds get metadata
checks only. The rules themselves live in the sibling modules (see the package docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.api.machinery import names
from services.api.machinery.errors import FieldError, invalid
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.api.validation.batch import validate_cron_job, validate_job, validate_job_update
from services.api.validation.cluster import (
    validate_event,
    validate_lease,
    validate_namespace,
    validate_node,
    validate_priority_class,
    validate_priority_class_update,
    validate_runtime_class,
    validate_runtime_class_update,
)
from services.api.validation.common import (
    MAX_INT32,
    SECONDS_TOO_LARGE,
    Errors,
    no_update_rules,
    validate_object_meta,
    validate_object_meta_update,
)
from services.api.validation.pod import validate_pod, validate_pod_update
from services.api.validation.policy import validate_limit_range, validate_resource_quota
from services.api.validation.resource import (
    validate_device_class,
    validate_pod_group,
    validate_resource_slice,
    validate_resource_slice_update,
)
from services.api.validation.resource_claims import (
    validate_resource_claim,
    validate_resource_claim_template,
    validate_resource_claim_template_update,
    validate_resource_claim_update,
)
from services.api.validation.resource_taints import (
    validate_device_taint_rule,
    validate_device_taint_rule_update,
    validate_slice_taints,
)
from services.api.validation.scheduling import (
    validate_scheduling_pod_group,
    validate_scheduling_pod_group_update,
    validate_scheduling_workload,
    validate_scheduling_workload_update,
)
from services.api.validation.service import (
    validate_config_map,
    validate_config_map_update,
    validate_endpoint_slice,
    validate_endpoints,
    validate_secret,
    validate_secret_update,
    validate_service,
    validate_service_account,
    validate_service_update,
)
from services.api.validation.statefulapps import (
    validate_controller_revision,
    validate_controller_revision_update,
    validate_daemon_set,
    validate_daemon_set_update,
    validate_stateful_set,
    validate_stateful_set_update,
)
from services.api.validation.storage import (
    validate_csi_driver,
    validate_csi_driver_update,
    validate_csi_node,
    validate_csi_node_update,
    validate_csi_storage_capacity,
    validate_csi_storage_capacity_update,
    validate_persistent_volume,
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_update,
    validate_persistent_volume_update,
    validate_storage_class,
    validate_storage_class_update,
    validate_volume_attachment,
    validate_volume_attachment_update,
)
from services.api.validation.workloads import (
    validate_deployment,
    validate_pod_disruption_budget,
    validate_replica_set,
    validate_workload_update,
)

# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Rules:
    """How one kind is validated: its name rule, create checks and update checks (its scope is in kinds.py)."""

    create: Callable[[Any], Errors]
    update: Callable[[Any, Any], Errors] = no_update_rules
    name: Callable[[str], list[str]] = names.dns1123_subdomain
    #: The update function checks the new object whole (its create rules are not run
    #: again), for kinds whose stored parts must not be judged by rules for new ones
    #: (upstream: a claim's allocation, once stored, is not validated again).
    update_checks_all: bool = False


_RULES: dict[str, Rules] = {
    "Pod": Rules(validate_pod, validate_pod_update),
    "Node": Rules(validate_node),
    "Namespace": Rules(validate_namespace, name=names.dns1123_label),
    "PriorityClass": Rules(validate_priority_class, validate_priority_class_update),
    "Workload": Rules(validate_scheduling_workload, validate_scheduling_workload_update),
    SCHEDULING_POD_GROUP: Rules(
        validate_scheduling_pod_group, validate_scheduling_pod_group_update
    ),
    "PodDisruptionBudget": Rules(validate_pod_disruption_budget),
    "ReplicaSet": Rules(validate_replica_set, validate_workload_update),
    "Deployment": Rules(validate_deployment, validate_workload_update),
    "Job": Rules(validate_job, validate_job_update),
    "CronJob": Rules(validate_cron_job),
    "RuntimeClass": Rules(validate_runtime_class, validate_runtime_class_update),
    "Lease": Rules(validate_lease),
    "Event": Rules(validate_event),
    "DeviceClass": Rules(validate_device_class),
    "ResourceSlice": Rules(
        lambda rs: validate_resource_slice(rs) + validate_slice_taints(rs),
        validate_resource_slice_update,
    ),
    "ResourceClaim": Rules(
        validate_resource_claim, validate_resource_claim_update, update_checks_all=True
    ),
    "ResourceClaimTemplate": Rules(
        validate_resource_claim_template, validate_resource_claim_template_update
    ),
    "DeviceTaintRule": Rules(
        validate_device_taint_rule, validate_device_taint_rule_update, update_checks_all=True
    ),
    "PodGroup": Rules(validate_pod_group),
    "ResourceQuota": Rules(validate_resource_quota),
    "LimitRange": Rules(validate_limit_range),
    "DaemonSet": Rules(validate_daemon_set, validate_daemon_set_update),
    "StatefulSet": Rules(
        validate_stateful_set, validate_stateful_set_update, name=names.dns1123_label
    ),
    "ControllerRevision": Rules(validate_controller_revision, validate_controller_revision_update),
    "PersistentVolumeClaim": Rules(
        validate_persistent_volume_claim, validate_persistent_volume_claim_update
    ),
    "PersistentVolume": Rules(validate_persistent_volume, validate_persistent_volume_update),
    "StorageClass": Rules(validate_storage_class, validate_storage_class_update),
    "CSIDriver": Rules(validate_csi_driver, validate_csi_driver_update),
    "CSINode": Rules(validate_csi_node, validate_csi_node_update),
    "CSIStorageCapacity": Rules(
        validate_csi_storage_capacity, validate_csi_storage_capacity_update
    ),
    "VolumeAttachment": Rules(validate_volume_attachment, validate_volume_attachment_update),
    "Service": Rules(validate_service, validate_service_update, name=names.dns1035_label),
    "EndpointSlice": Rules(validate_endpoint_slice),
    "Endpoints": Rules(validate_endpoints),
    "ConfigMap": Rules(validate_config_map, validate_config_map_update),
    "Secret": Rules(validate_secret, validate_secret_update),
    "ServiceAccount": Rules(validate_service_account),
}


def _meta(kind: str, obj: Any) -> list[FieldError]:
    rules = _RULES.get(kind)
    known = BY_KIND.get(kind)
    return validate_object_meta(
        obj.metadata, rules.name if rules else None, known.namespaced if known else None
    )


def validate_create(kind: str, obj: Any) -> list[FieldError]:
    """Every problem with ``obj`` as a new object of ``kind`` (empty when valid)."""
    rules = _RULES.get(kind)
    errs = _meta(kind, obj)
    if rules is not None:
        errs += rules.create(obj)
    return errs


def validate_update(kind: str, new: Any, old: Any) -> list[FieldError]:
    """Every problem with replacing ``old`` by ``new``: immutable fields, then ``new`` itself."""
    rules = _RULES.get(kind)
    errs = validate_object_meta_update(new.metadata, old.metadata)
    if rules is not None:
        errs += rules.update(new, old)
        if rules.update_checks_all:
            return errs + _meta(kind, new)
    return errs + validate_create(kind, new)


def validate_grace_period_seconds(value: int) -> list[FieldError]:
    """A delete's ``gracePeriodSeconds``: not negative, and (kubera's bound) an int32,
    since the deletion timestamp is now + grace."""
    if value < 0:
        return [invalid("gracePeriodSeconds", value, "must be >= 0")]
    if value > MAX_INT32:
        return [invalid("gracePeriodSeconds", value, SECONDS_TOO_LARGE)]
    return []
