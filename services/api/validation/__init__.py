"""Create and update validation for kubera's kinds, with Kubernetes' rules and wording.

Why this package exists: the apiserver must refuse exactly what Kubernetes' apiserver
refuses, worded the same way (clients, tests and people compare the text, e.g.
``spec.containers[0].resources.requests[cpu]: Invalid value: "5x": quantities must
match ...``), and everything downstream (scheduler, controllers) may then trust that a
stored object is well formed: quantities parse, selectors compile, operators are known,
Gt/Lt values are integers. Rules and messages are carried over from upstream's
pkg/apis/{core,apps,policy,scheduling,resource}/validation and apimachinery's metadata checks.

Why this package's ``__init__`` exists: it is the package's only public face and
re-exports the entry points of ``rules``: :func:`validate_create`, :func:`validate_update`
and :func:`validate_grace_period_seconds`. The submodules, split by responsibility (each
imports only the ones below it, never this package):

* ``rules``: the table, one row per kind, and the entry points;
* ``common``: field paths, name/label/quantity/selector checks, object metadata;
* ``pod``: the pod spec as a whole, the Pod kind and the pod update rules;
* ``pod_containers``: containers, init containers, their ports and resources;
* ``pod_scheduling``: node and pod affinity, tolerations, topology spread, scheduling
  gates and preemption policy;
* ``workloads``: ReplicaSet, Deployment and PodDisruptionBudget;
* ``policy``: ResourceQuota and LimitRange;
* ``cluster``: Node, Namespace, PriorityClass, RuntimeClass, Lease and Event;
* ``resource``: DeviceClass, ResourceSlice and PodGroup, and the DRA vocabulary (names,
  CEL selectors, opaque configuration, upstream's limits);
* ``resource_claims``: ResourceClaim (spec and status), ResourceClaimTemplate and a pod's
  resource claims (``pod`` calls it).

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

from services.api.validation.rules import (
    validate_create,
    validate_grace_period_seconds,
    validate_update,
)

__all__ = ["validate_create", "validate_grace_period_seconds", "validate_update"]
