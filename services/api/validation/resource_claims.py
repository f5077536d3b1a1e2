"""Validation of ResourceClaim (spec, status), ResourceClaimTemplate and a pod's resource
claims, after upstream's pkg/apis/resource/validation (claims and templates) and
pkg/apis/core/validation (the pod's spec.resourceClaims, its containers'
resources.claims and status.resourceClaimStatuses).

Why this module exists apart from ``resource``: a claim is where requests, constraints
and configs must agree (every reference names a request, or "request/subrequest"), and
where the status invariants the scheduler and kubelets rely on are kept; ``resource``
holds the vocabulary both share (names, selectors, opaque configuration, limits). The
deliberate adaptations are listed in ``resource``'s docstring.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from protos.kubera.v1 import core_pb2, meta_pb2, resource_pb2
from services.api.dra.claims import RESERVED_FOR_MAX
from services.api.machinery import names
from services.api.machinery.errors import (
    NOT_FOUND,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    IS_NOT_POSITIVE,
    Errors,
    Shown,
    child,
    field_quantity,
    index,
    label_map,
    show,
    validate_annotations,
)
from services.api.validation.pod_scheduling import validate_node_selector
from services.api.validation.resource import (
    ALLOCATION_MODES,
    ALLOCATION_RESULTS_MAX,
    CONFIG_SOURCES,
    DEVICE_CONFIG_MAX,
    DEVICE_CONSTRAINTS_MAX,
    DEVICE_REQUESTS_MAX,
    FIRST_AVAILABLE_MAX,
    ONE_REQUEST_TYPE,
    REQUEST_REF,
    by_itself,
    dns_label,
    dns_subdomain,
    validate_driver_name,
    validate_fully_qualified_name,
    validate_list,
    validate_opaque_holder,
    validate_pool_name,
    validate_qualified_name,
    validate_selectors,
)
from services.api.validation.resource_status import validate_device_statuses
from services.api.validation.resource_taints import validate_device_tolerations

# ----------------------------------------------------------------------------- ResourceClaim


RequestNames = dict[str, frozenset[str]]

#: upstream's words when a constraint sets neither (with DRAConsumableCapacity on).
ONE_CONSTRAINT = (
    'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple '
    "fields are set"
)


def request_names(claim: resource_pb2.DeviceClaim) -> RequestNames:
    """Each request's name -> the names of its firstAvailable subrequests (empty for
    `exactly`)."""
    return {r.name: frozenset(s.name for s in r.first_available) for r in claim.requests}


def _has_request(names_: RequestNames, ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in names_:
        return False
    return len(parts) == 1 or parts[1] in names_[parts[0]]


def _validate_request_ref(path: str, ref: str, names_: RequestNames) -> Errors:
    parts = ref.split("/")
    if len(parts) > 2:
        return [invalid(path, ref, REQUEST_REF)]
    errs: Errors = []
    for part in parts:
        errs += dns_label(path, part)
    if not _has_request(names_, ref):
        errs.append(invalid(path, ref, REQUEST_REF))
    return errs


def _validate_refs(path: str, refs: Sequence[str], names_: RequestNames) -> Errors:
    return validate_list(
        path,
        refs,
        DEVICE_REQUESTS_MAX,
        lambda p, r: _validate_request_ref(p, r, names_),
        by_itself,
    )


def _validate_allocation_mode(path: str, mode: str, count: int) -> Errors:
    """validateDeviceAllocationMode, on the undefaulted request: "" is ExactCount and a
    count of 0 is its default of 1."""
    count_path = child(path, "count")
    if mode == "All":
        if count != 0:
            return [
                invalid(count_path, count, "must not be specified when allocationMode is 'All'")
            ]
        return []
    if mode in ("", "ExactCount"):
        return [invalid(count_path, count, IS_NOT_POSITIVE)] if count < 0 else []
    return [unsupported(child(path, "allocationMode"), mode, ALLOCATION_MODES)]


def _validate_device_class_ref(path: str, name: str) -> Errors:
    return [required(path)] if not name else dns_subdomain(path, name)


def _validate_exact(path: str, req: resource_pb2.ExactDeviceRequest) -> Errors:
    errs = _validate_device_class_ref(child(path, "deviceClassName"), req.device_class_name)
    errs += validate_selectors(child(path, "selectors"), req.selectors)
    errs += validate_device_tolerations(child(path, "tolerations"), req.tolerations)
    errs += _validate_capacity(child(path, "capacity"), req)
    return errs + _validate_allocation_mode(path, req.allocation_mode, req.count)


def _validate_subrequest(path: str, sub: resource_pb2.DeviceSubRequest) -> Errors:
    errs = dns_label(child(path, "name"), sub.name)
    errs += _validate_device_class_ref(child(path, "deviceClassName"), sub.device_class_name)
    errs += validate_selectors(child(path, "selectors"), sub.selectors)
    errs += validate_device_tolerations(child(path, "tolerations"), sub.tolerations)
    errs += _validate_capacity(child(path, "capacity"), sub)
    return errs + _validate_allocation_mode(path, sub.allocation_mode, sub.count)


def _validate_capacity(
    path: str, req: resource_pb2.ExactDeviceRequest | resource_pb2.DeviceSubRequest
) -> Errors:
    """dracounters: capacity.requests names qualified capacities with quantities."""
    errs: Errors = []
    requests = req.capacity.requests
    for name in sorted(requests):
        kp = index(child(path, "requests"), name)
        errs += validate_qualified_name(kp, name)
        field_quantity(kp, requests[name], errs)
    return errs


def _validate_request(path: str, req: resource_pb2.DeviceRequest) -> Errors:
    errs = dns_label(child(path, "name"), req.name)
    has_exactly, has_first = req.HasField("exactly"), len(req.first_available) > 0
    if not has_exactly and not has_first:
        errs.append(required(path, ONE_REQUEST_TYPE))
    elif has_exactly and has_first:
        errs.append(
            invalid(path, Shown("null"), ONE_REQUEST_TYPE + ", but multiple fields are set")
        )
    elif has_first:
        errs += validate_list(
            child(path, "firstAvailable"),
            req.first_available,
            FIRST_AVAILABLE_MAX,
            _validate_subrequest,
            lambda s: (s.name, "name"),
        )
    else:
        errs += _validate_exact(child(path, "exactly"), req.exactly)
    return errs


def _validate_constraint(
    path: str, c: resource_pb2.DeviceConstraint, names_: RequestNames
) -> Errors:
    errs = _validate_refs(child(path, "requests"), c.requests, names_)
    if c.HasField("match_attribute"):
        errs += validate_fully_qualified_name(child(path, "matchAttribute"), c.match_attribute)
    elif c.HasField("distinct_attribute"):
        # dracounters: DRAConsumableCapacity (on by default, as upstream's words assume)
        p = child(path, "distinctAttribute")
        errs += validate_fully_qualified_name(p, c.distinct_attribute)
    else:
        errs.append(required(path, ONE_CONSTRAINT))
    return errs


def validate_claim_spec(path: str, spec: resource_pb2.ResourceClaimSpec) -> Errors:
    """validateResourceClaimSpec: requests, then constraints and configs naming them."""
    devices = spec.devices
    p = child(path, "devices")
    names_ = request_names(devices)
    errs = validate_list(
        child(p, "requests"),
        devices.requests,
        DEVICE_REQUESTS_MAX,
        _validate_request,
        lambda r: (r.name, "name"),
    )
    errs += validate_list(
        child(p, "constraints"),
        devices.constraints,
        DEVICE_CONSTRAINTS_MAX,
        lambda q, c: _validate_constraint(q, c, names_),
    )
    errs += validate_list(
        child(p, "config"),
        devices.config,
        DEVICE_CONFIG_MAX,
        lambda q, c: (
            _validate_refs(child(q, "requests"), c.requests, names_) + validate_opaque_holder(q, c)
        ),
    )
    return errs


def _validate_consumer(path: str, ref: resource_pb2.ResourceClaimConsumerReference) -> Errors:
    errs: Errors = []
    for field, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid)):
        if not value:
            errs.append(required(child(path, field)))
    return errs


def _validate_result(
    path: str, r: resource_pb2.DeviceRequestAllocationResult, names_: RequestNames
) -> Errors:
    errs = _validate_request_ref(child(path, "request"), r.request, names_)
    errs += validate_driver_name(child(path, "driver"), r.driver)
    errs += validate_pool_name(child(path, "pool"), r.pool)
    errs += validate_device_tolerations(child(path, "tolerations"), r.tolerations)
    return errs + dns_label(child(path, "device"), r.device)


def _validate_allocation_config(
    path: str, c: resource_pb2.DeviceAllocationConfiguration, names_: RequestNames
) -> Errors:
    errs: Errors = []
    if not c.source:
        errs.append(required(child(path, "source")))
    elif c.source not in CONFIG_SOURCES:
        errs.append(unsupported(child(path, "source"), c.source, CONFIG_SOURCES))
    errs += _validate_refs(child(path, "requests"), c.requests, names_)
    return errs + validate_opaque_holder(path, c)


def _validate_allocation(
    path: str, a: resource_pb2.AllocationResult, names_: RequestNames
) -> Errors:
    p = child(path, "devices")
    errs = validate_list(
        child(p, "results"),
        a.devices.results,
        ALLOCATION_RESULTS_MAX,
        lambda q, r: _validate_result(q, r, names_),
    )
    errs += validate_list(
        child(p, "config"),
        a.devices.config,
        2 * DEVICE_CONFIG_MAX,
        lambda q, c: _validate_allocation_config(q, c, names_),
    )
    if a.HasField("node_selector"):
        errs += validate_node_selector(child(path, "nodeSelector"), a.node_selector)
    return errs


def validate_claim_status(
    claim: resource_pb2.ResourceClaim, old: resource_pb2.ResourceClaim | None = None
) -> Errors:
    """validateResourceClaimStatusUpdate (`old` None: a new claim, against an empty
    status): reservedFor holds at most 256 complete consumers with unique uids, only
    while allocated, and gains none while the claim is being deleted; an allocation is
    validated when it is set, never changed in place (only removed, then set again), and
    a stored one is not validated again (rules for new results may be stricter)."""
    status = claim.status
    old_status = old.status if old is not None else resource_pb2.ResourceClaimStatus()
    errs = validate_list(
        "status.reservedFor",
        status.reserved_for,
        RESERVED_FOR_MAX,
        _validate_consumer,
        lambda r: (r.uid, "uid"),
    )
    allocated = status.HasField("allocation")
    if status.reserved_for:
        if not allocated:
            errs.append(
                forbidden("status.reservedFor", "may not be specified when `allocated` is not set")
            )
        elif claim.metadata.deletion_timestamp:
            before = {r.SerializeToString(deterministic=True) for r in old_status.reserved_for}
            if any(
                r.SerializeToString(deterministic=True) not in before for r in status.reserved_for
            ):
                errs.append(
                    forbidden(
                        "status.reservedFor",
                        "new entries may not be added while `deallocationRequested` or "
                        "`deletionTimestamp` are set",
                    )
                )
    if allocated and old_status.HasField("allocation"):
        if status.allocation != old_status.allocation:
            errs.append(invalid("status.allocation", show(status.allocation), FIELD_IMMUTABLE))
    elif allocated:
        names_ = request_names(claim.spec.devices)
        errs += _validate_allocation("status.allocation", status.allocation, names_)
    return errs + validate_device_statuses(claim)


def validate_resource_claim(claim: resource_pb2.ResourceClaim) -> Errors:
    return validate_claim_spec("spec", claim.spec) + validate_claim_status(claim)


def validate_resource_claim_update(
    new: resource_pb2.ResourceClaim, old: resource_pb2.ResourceClaim
) -> Errors:
    """The whole update (the create rules are not run again, see rules.py): the spec never
    changes and is valid; the status keeps its invariants against the stored one."""
    errs: Errors = []
    if new.spec != old.spec:
        errs.append(invalid("spec", show(new.spec), FIELD_IMMUTABLE))
    errs += validate_claim_spec("spec", new.spec)
    return errs + validate_claim_status(new, old)


# ----------------------------------------------------------------------------- ResourceClaimTemplate


_TEMPLATE_META_ALLOWED = frozenset({"labels", "annotations"})


def _validate_template_meta(path: str, meta: meta_pb2.ObjectMeta) -> Errors:
    """ValidateTemplateObjectMeta: labels and annotations, and nothing else may be set."""
    errs = validate_annotations(child(path, "annotations"), meta.annotations)
    errs += label_map(child(path, "labels"), meta.labels)
    for f, _ in meta.ListFields():
        if f.name not in _TEMPLATE_META_ALLOWED:
            errs.append(forbidden(child(path, f.json_name), "cannot be set for a template"))
    return errs


def validate_resource_claim_template(t: resource_pb2.ResourceClaimTemplate) -> Errors:
    errs = _validate_template_meta("spec.metadata", t.spec.metadata)
    return errs + validate_claim_spec("spec.spec", t.spec.spec)


def validate_resource_claim_template_update(
    new: resource_pb2.ResourceClaimTemplate, old: resource_pb2.ResourceClaimTemplate
) -> Errors:
    if new.spec != old.spec:
        return [invalid("spec", show(new.spec), FIELD_IMMUTABLE)]
    return []


# ----------------------------------------------------------------------------- pods


def validate_pod_resource_claims(path: str, claims: Iterable[core_pb2.PodResourceClaim]) -> Errors:
    """validatePodResourceClaims: unique DNS-label names, exactly one source each."""
    errs: Errors = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        p = index(path, i)
        if not claim.name:
            errs.append(required(child(p, "name")))
        elif claim.name in seen:
            errs.append(duplicate(child(p, "name"), claim.name))
        else:
            errs += dns_label(child(p, "name"), claim.name)
            seen.add(claim.name)
        by_name = claim.HasField("resource_claim_name")
        by_template = claim.HasField("resource_claim_template_name")
        if by_name and by_template:
            errs.append(
                invalid(
                    p,
                    show(claim),
                    "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
                )
            )
        if not by_name and not by_template:
            errs.append(
                invalid(
                    p,
                    show(claim),
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                )
            )
        if by_name:
            errs += dns_subdomain(child(p, "resourceClaimName"), claim.resource_claim_name)
        if by_template:
            errs += dns_subdomain(
                child(p, "resourceClaimTemplateName"), claim.resource_claim_template_name
            )
    return errs


def validate_container_claims(
    path: str, claims: Iterable[core_pb2.ContainerResourceClaim], pod_claims: Mapping[str, Any]
) -> Errors:
    """validateResourceClaimNames: each names an entry of spec.resourceClaims, once per
    container (a name with a request counts as that pair)."""
    errs: Errors = []
    seen: set[str] = set()
    known = ", ".join(sorted(pod_claims))
    for i, claim in enumerate(claims):
        p = index(path, i)
        if not claim.name:
            errs.append(required(p))
            continue
        key = claim.name
        if claim.request:
            errs += dns_label(child(p, "request"), claim.request)
            key += "/" + claim.request
        if key in seen:
            errs.append(duplicate(p, key))
        seen.add(key)
        if claim.name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += f": {known}" if known else " which is empty"
            errs.append(FieldError(p, NOT_FOUND, detail, claim.name))
    return errs


def validate_pod_claim_statuses(
    path: str,
    statuses: Iterable[core_pb2.PodResourceClaimStatus],
    pod_claims: Mapping[str, Any],
) -> Errors:
    """validatePodResourceClaimStatuses: each names an entry of spec.resourceClaims, once."""
    errs: Errors = []
    seen: set[str] = set()
    for i, st in enumerate(statuses):
        p = child(index(path, i), "name")
        if st.name not in pod_claims:
            errs.append(
                invalid(p, st.name, "must match the name of an entry in `spec.resourceClaims`")
            )
        if st.name in seen:
            errs.append(duplicate(p, st.name))
        seen.add(st.name)
        if st.HasField("resource_claim_name"):
            errs += [
                invalid(p, st.resource_claim_name, m)
                for m in names.dns1123_subdomain(st.resource_claim_name)
            ]
    return errs
