"""Upstream's API defaults (its ``SetDefaults_*`` and the `+default=` markers of its OpenAPI),
applied to an object of any kind: what the apiserver's defaulting does before admission.

Where each default comes from (release 1.37):

- from upstream's OpenAPI `default`s: ContainerPort.protocol and ServicePort.protocol "TCP"
  (``tables.OPENAPI_DEFAULTS``). Those are all the non-zero `default`s of the schemas kubera
  serves or is gaining; the OpenAPI's other `default`s are zero values (``zerovalues.py``).
- ported from ``SetDefaults_*`` as data: ``tables.SET_DEFAULTS`` (the Pod's dnsPolicy,
  restartPolicy, securityContext {}, terminationGracePeriodSeconds 30, schedulerName; each
  container's terminationMessagePath and terminationMessagePolicy; probes, HTTP handlers,
  volume sources; replicas, revisionHistoryLimit, progressDeadlineSeconds, the strategies'
  types; the Job's completionMode, suspend and manualSelector; the CronJob's; PriorityClass's
  preemptionPolicy; ...);
- ported from ``SetDefaults_*`` as small functions where a default depends on other fields:
  ``setdefaults.FUNCS`` (imagePullPolicy by tag, requests from limits and enableServiceLinks
  on a Pod, hostNetwork ports, rolling-update parameters, a StatefulSet's partition and claim
  retention policy, a Job's completions, parallelism, backoffLimit, labels and
  podReplacementPolicy, a Service's affinity, ports and traffic policies, a Namespace's
  kubernetes.io/metadata.name label, a Node's allocatable, a LimitRange item's default and
  defaultRequest, a PersistentVolume's and a claim's phase, a device request's allocation
  mode and count).

Both tables are keyed by upstream's schema name (io.k8s.api.batch.v1.JobSpec). A kubera
message takes the row of the schema with its name: every kubera message lives in one proto
package, so its name is unique, and tests/api/defaults/ checks that the schema a message
takes is the one openapischemas.schema_name gives it. Defaults for messages kubera does not
have yet are inert until they exist.

The walk is upstream's generated ``SetObjectDefaults_*`` order: a message's static rows, then
its function, then its children (a Pod, then its PodSpec, then each container).
"""

from __future__ import annotations

from google.protobuf.message import Message

from services.api.defaults.fields import default_field
from services.api.defaults.setdefaults import FUNCS, image_pull_policy
from services.api.defaults.tables import OPENAPI_DEFAULTS, SET_DEFAULTS

__all__ = ["FUNCS", "OPENAPI_DEFAULTS", "SET_DEFAULTS", "apply", "image_pull_policy", "schemas"]


def schemas() -> dict[str, str]:
    """Message name (JobSpec) -> the upstream schema whose defaults it takes."""
    return {s.rsplit(".", 1)[1]: s for s in (*OPENAPI_DEFAULTS, *SET_DEFAULTS, *FUNCS)}


_SCHEMAS = schemas()


def apply(obj: Message) -> None:
    """Upstream's defaults on `obj` and everything inside it, in place."""
    schema = _SCHEMAS.get(obj.DESCRIPTOR.name)
    if schema is not None:
        for table in (OPENAPI_DEFAULTS, SET_DEFAULTS):
            for name, value in table.get(schema, {}).items():
                default_field(obj, name, value)
        fn = FUNCS.get(schema)
        if fn is not None:
            fn(obj)
    for f, value in obj.ListFields():
        mt = f.message_type
        if mt is None or mt.full_name.startswith("google.protobuf."):
            continue
        if mt.GetOptions().map_entry:
            vt = mt.fields_by_name["value"].message_type
            if vt is not None and not vt.full_name.startswith("google.protobuf."):
                for item in value.values():
                    apply(item)
        elif f.is_repeated:
            for item in value:
                apply(item)
        else:
            apply(value)
