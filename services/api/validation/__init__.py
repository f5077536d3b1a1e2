"""Create and update validation for kubera's kinds, with Kubernetes' rules and wording.

Why this package exists: the apiserver must refuse exactly what Kubernetes' apiserver
refuses, worded the same way (clients, tests and people compare the text, e.g.
``spec.containers[0].resources.requests[cpu]: Invalid value: "5x": quantities must
match ...``), and everything downstream (scheduler, controllers) may then trust that a
stored object is well formed: quantities parse, selectors compile, operators are known,
Gt/Lt values are integers. Rules and messages are carried over from upstream's
pkg/apis/{core,apps,policy,scheduling}/validation and apimachinery's metadata checks.

Why this module exists: it is the package's only public face. Entry points are
:func:`validate_create` and :func:`validate_update`. Each kind is one row in ``_RULES``
(name rule, a create function, optionally an update function), so adding a kind is one
function plus one row. Unknown kinds get metadata checks only. The rules themselves live
in the submodules, split by responsibility:

* ``common``: field paths, name/label/quantity/selector checks, object metadata;
* ``pod``: the pod spec as a whole, the Pod kind and the pod update rules;
* ``pod_containers``: containers, init containers, their ports and resources;
* ``pod_scheduling``: node and pod affinity, tolerations, topology spread, scheduling
  gates and preemption policy;
* ``workloads``: ReplicaSet, Deployment and PodDisruptionBudget;
* ``cluster``: Node, Namespace, PriorityClass, RuntimeClass, Lease and Event.

Deliberate adaptations (kubera has no defaulting pass before validation):
* fields upstream defaults and then requires (container port protocol, pull policy,
  restart policy, DNS policy, deployment strategy) are checked only when set;
* paths are always indexed/keyed the Kubernetes way (``spec.overhead[cpu]``,
  ``status.capacity[cpu]``, ``spec.taints[0]``) where upstream has historical quirks;
* on update an empty ``metadata.uid`` means "keep the stored one", as upstream's
  ``BeforeUpdate`` does, and ``spec.terminationGracePeriodSeconds`` of a pod may change.

Limits of kubera's own (upstream has none; each message says the limit is kubera's):
* every quantity must fit int64 milli-units (``QUANTITY_TOO_LARGE``), since the scheduler,
  the kubelet and the checker sum them as such; checked before the rules whose arithmetic
  assumes it (integer and hugepage multiples);
* durations kubera adds to the clock (``terminationGracePeriodSeconds``,
  ``tolerationSeconds``, a delete's ``gracePeriodSeconds``) are at most an int32 of
  seconds (``SECONDS_TOO_LARGE``), and rolling-update percentages an int32;
* integers written as strings (Gt/Lt values, int-or-percent) beyond int64 get upstream's
  "must be an integer" words, however many digits they have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.api import names
from services.api.errors import FieldError, invalid
from services.api.kinds import BY_KIND
from services.api.validation.cluster import (
    _event,
    _lease,
    _namespace,
    _node,
    _priority_class,
    _priority_class_update,
    _runtime_class,
    _runtime_class_update,
)
from services.api.validation.common import (
    MAX_INT32,
    SECONDS_TOO_LARGE,
    Errors,
    _no_update_rules,
    _object_meta,
    _object_meta_update,
)
from services.api.validation.pod import _pod, _pod_update
from services.api.validation.workloads import (
    _deployment,
    _pod_disruption_budget,
    _replica_set,
    _workload_update,
)

# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class _Rules:
    """How one kind is validated: its name rule, create checks and update checks (its scope is in kinds.py)."""

    create: Callable[[Any], Errors]
    update: Callable[[Any, Any], Errors] = _no_update_rules
    name: Callable[[str], list[str]] = names.dns1123_subdomain


_RULES: dict[str, _Rules] = {
    "Pod": _Rules(_pod, _pod_update),
    "Node": _Rules(_node),
    "Namespace": _Rules(_namespace, name=names.dns1123_label),
    "PriorityClass": _Rules(_priority_class, _priority_class_update),
    "PodDisruptionBudget": _Rules(_pod_disruption_budget),
    "ReplicaSet": _Rules(_replica_set, _workload_update),
    "Deployment": _Rules(_deployment, _workload_update),
    "RuntimeClass": _Rules(_runtime_class, _runtime_class_update),
    "Lease": _Rules(_lease),
    "Event": _Rules(_event),
}


def validate_create(kind: str, obj: Any) -> list[FieldError]:
    """Every problem with ``obj`` as a new object of ``kind`` (empty when valid)."""
    rules = _RULES.get(kind)
    known = BY_KIND.get(kind)
    errs = _object_meta(obj.metadata, rules, known.namespaced if known else None)
    if rules is not None:
        errs += rules.create(obj)
    return errs


def validate_update(kind: str, new: Any, old: Any) -> list[FieldError]:
    """Every problem with replacing ``old`` by ``new``: immutable fields, then ``new`` itself."""
    rules = _RULES.get(kind)
    errs = _object_meta_update(new.metadata, old.metadata)
    if rules is not None:
        errs += rules.update(new, old)
    return errs + validate_create(kind, new)


def validate_grace_period_seconds(value: int) -> list[FieldError]:
    """A delete's ``gracePeriodSeconds``: not negative, and (kubera's bound) an int32,
    since the deletion timestamp is now + grace."""
    if value < 0:
        return [invalid("gracePeriodSeconds", value, "must be >= 0")]
    if value > MAX_INT32:
        return [invalid("gracePeriodSeconds", value, SECONDS_TOO_LARGE)]
    return []
