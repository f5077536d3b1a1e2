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

import functools
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from services.api.defaults.fields import by_json_name, set_field
from services.api.defaults.setdefaults import FUNCS, image_pull_policy
from services.api.defaults.tables import OPENAPI_DEFAULTS, SET_DEFAULTS
from services.api.machinery.zerovalues import STRUCT_WRITTEN

__all__ = ["FUNCS", "OPENAPI_DEFAULTS", "SET_DEFAULTS", "apply", "image_pull_policy", "schemas"]


def schemas() -> dict[str, str]:
    """Message name (JobSpec) -> the upstream schema whose defaults it takes."""
    return {s.rsplit(".", 1)[1]: s for s in (*OPENAPI_DEFAULTS, *SET_DEFAULTS, *FUNCS)}


_SCHEMAS = schemas()


def _ours(desc: Descriptor | None) -> bool:
    return desc is not None and not desc.full_name.startswith("google.protobuf.")


@functools.cache
def _defaulted(desc: Descriptor) -> bool:
    """Whether a message of this type, or one inside it, has defaults (schema only, cached;
    the walk never enters the rest: metadata, statuses, affinity)."""
    return _reaches(desc, set())


def _reaches(desc: Descriptor, seen: set[str]) -> bool:
    if desc.name in _SCHEMAS:
        return True
    if desc.full_name in seen:
        return False
    seen.add(desc.full_name)
    return any(_reaches(t, seen) for f in desc.fields if (t := _child(f)) is not None)


def _child(f: FieldDescriptor) -> Descriptor | None:
    """The message type a field holds (a map's value type), if it is one of ours."""
    mt = f.message_type
    if mt is not None and mt.GetOptions().map_entry:
        mt = mt.fields_by_name["value"].message_type
    return mt if _ours(mt) else None


#: A static row resolved to its field: (attribute, has presence, the unset value or None
#: when presence decides, the default, whether a plain setattr sets it).
_Row = tuple[str, bool, Any, Any, bool]
_MAP, _LIST, _ONE = 0, 1, 2


@functools.cache
def _plan(
    desc: Descriptor,
) -> tuple[tuple[_Row, ...], Callable[[Message], None] | None, dict[int, int]]:
    """What defaulting does with a message type (schema only, cached): its static rows, its
    conditional defaulter, and the fields to walk into (number -> map, list or one)."""
    schema = _SCHEMAS.get(desc.name)
    fields = by_json_name(desc)
    rows: list[_Row] = []
    for table in (OPENAPI_DEFAULTS, SET_DEFAULTS):
        for name, value in (table.get(schema, {}) if schema else {}).items():
            f = fields.get(name)
            if f is None or f.is_repeated:
                continue
            plain = f.message_type is None and (
                f.type != FieldDescriptor.TYPE_STRING or isinstance(value, str)
            )
            rows.append((f.name, f.has_presence, f.default_value, value, plain))
    walk: dict[int, int] = {}
    for f in desc.fields:
        t = _child(f)
        if t is not None and _defaulted(t):
            walk[f.number] = (
                _MAP if f.message_type.GetOptions().map_entry else _LIST if f.is_repeated else _ONE
            )
    return tuple(rows), FUNCS.get(schema) if schema else None, walk


@functools.cache
def _always(desc: Descriptor) -> tuple[str, ...]:
    """The struct fields of `desc` with defaults inside: Go always has them, so upstream
    defaults them even when the object leaves them out (a claim's `spec`, a Deployment's
    `strategy`); kubera reads `{}` there as unset and still walks in (STRUCT_WRITTEN)."""
    names = STRUCT_WRITTEN.get(desc.full_name, frozenset())
    walk = _plan(desc)[2]
    return tuple(f.name for f in desc.fields if f.json_name in names and walk.get(f.number) == _ONE)


def apply(obj: Message) -> None:
    """Upstream's defaults on `obj` and everything inside it, in place."""
    rows, fn, walk = _plan(obj.DESCRIPTOR)
    for attr, presence, unset, value, plain in rows:
        if obj.HasField(attr) if presence else getattr(obj, attr) != unset:
            continue
        if plain:
            setattr(obj, attr, value)
        else:
            set_field(obj, obj.DESCRIPTOR.fields_by_name[attr], value)
    if fn is not None:
        fn(obj)
    if not walk:
        return
    for name in _always(obj.DESCRIPTOR):
        if not obj.HasField(name):
            apply(getattr(obj, name))  # sets it only if a default lands inside
    for f, value in obj.ListFields():
        mode = walk.get(f.number)
        if mode is None:
            continue
        if mode == _ONE:
            apply(value)
        else:
            for item in value.values() if mode == _MAP else value:
                apply(item)
