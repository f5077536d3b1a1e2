"""Validation of device binding parameters (a ResourceSlice's Device) and of a
ResourceClaim's status.devices, after upstream's pkg/apis/resource/validation
(validateDeviceBindingParameters, validateDeviceStatus, validateNetworkDeviceData) and
metav1validation.ValidateConditions (drabinding lane; services/api/dra/bindingconditions.py).

    Device            bindingConditions and bindingFailureConditions: at most 4 each,
                      label names, no duplicates, no type in both, one list needs the
                      other (validate_binding_parameters, in ``resource``)
    status.devices    one entry per (driver, pool, device, shareID), each an allocated
                      device of the claim; at most 8 conditions (ValidateConditions); data
                      a JSON object of at most 10 KiB; networkData: interfaceName at most
                      256 characters, hardwareAddress 128, at most 16 unique ips, each an
                      interface address (CIDR)
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence

from google.protobuf import json_format

from protos.kubera.v1 import meta_pb2, resource_pb2
from services.api.machinery.errors import duplicate, invalid, required, too_long, unsupported
from services.api.validation.common import Errors, child, index, label_name, nonnegative
from services.api.validation.resource import (
    dns_label,
    too_many,
    validate_driver_name,
    validate_list,
    validate_pool_name,
)

#: Upstream AllocatedDeviceStatusMaxConditions, AllocatedDeviceStatusDataMaxLength,
#: NetworkDeviceDataInterfaceNameMaxLength, NetworkDeviceDataHardwareAddressMaxLength,
#: NetworkDeviceDataMaxIPs.
STATUS_MAX_CONDITIONS = 8
STATUS_DATA_MAX_LENGTH = 10 * 1024
INTERFACE_NAME_MAX_LENGTH = 256
HARDWARE_ADDRESS_MAX_LENGTH = 128
MAX_IPS = 16

CONDITION_STATUSES = ("False", "True", "Unknown")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
REASON_MAX_LENGTH = 1024
MESSAGE_MAX_LENGTH = 32768


# ----------------------------------------------------------------------------- conditions


def validate_conditions(path: str, conditions: Sequence[meta_pb2.Condition]) -> Errors:
    """metav1validation.ValidateConditions: unique types, each condition complete."""
    errs: Errors = []
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        p = index(path, i)
        errs += _validate_condition(p, c)
        if c.type in seen:
            errs.append(duplicate(child(p, "type"), c.type))
        seen.add(c.type)
    return errs


def _validate_condition(path: str, c: meta_pb2.Condition) -> Errors:
    errs = label_name(child(path, "type"), c.type)
    if c.status not in CONDITION_STATUSES:
        errs.append(unsupported(child(path, "status"), c.status, CONDITION_STATUSES))
    errs += nonnegative(child(path, "observedGeneration"), c.observed_generation)
    if not c.last_transition_time:
        errs.append(required(child(path, "lastTransitionTime"), "must be set"))
    rp = child(path, "reason")
    if not c.reason:
        errs.append(required(rp, "must be set"))
    else:
        if not _REASON.match(c.reason):
            errs.append(
                invalid(
                    rp,
                    c.reason,
                    "a condition reason must start with alphabetic character, optionally "
                    "followed by a string of alphanumeric characters or '_,:', and must end "
                    "with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  "
                    "or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used "
                    "for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                )
            )
        if len(c.reason) > REASON_MAX_LENGTH:
            errs.append(too_long(rp, REASON_MAX_LENGTH))
    if len(c.message) > MESSAGE_MAX_LENGTH:
        errs.append(too_long(child(path, "message"), MESSAGE_MAX_LENGTH))
    return errs


# ----------------------------------------------------------------------------- status.devices


def status_key(st: resource_pb2.AllocatedDeviceStatus) -> tuple[str, str, str, str | None]:
    share = st.share_id if st.HasField("share_id") else None
    return (st.driver, st.pool, st.device, share)


def validate_device_statuses(claim: resource_pb2.ResourceClaim) -> Errors:
    """status.devices of a claim (validateSet with the (driver, pool, device, shareID) key);
    each must be a device of the allocation, a share by its shareID (upstream
    gatherAllocatedDevices' SharedDeviceID)."""
    allocated = {
        (r.driver, r.pool, r.device, r.share_id if r.HasField("share_id") else None)
        for r in claim.status.allocation.devices.results
        if claim.status.HasField("allocation")
    }
    return validate_list(
        "status.devices",
        claim.status.devices,
        -1,
        lambda p, st: _validate_device_status(p, st, allocated),
        lambda st: (_shown(status_key(st)), ""),
    )


def _shown(key: tuple[str, str, str, str | None]) -> str:
    driver, pool, device, share = key
    return f"{driver}/{pool}/{device}" + (f"/{share}" if share is not None else "")


def _validate_device_status(
    path: str,
    st: resource_pb2.AllocatedDeviceStatus,
    allocated: set[tuple[str, str, str, str | None]],
) -> Errors:
    errs = validate_driver_name(child(path, "driver"), st.driver)
    errs += validate_pool_name(child(path, "pool"), st.pool)
    errs += dns_label(child(path, "device"), st.device)
    if status_key(st) not in allocated:
        errs.append(
            invalid(path, _shown(status_key(st)), "must be an allocated device in the claim")
        )
    cp = child(path, "conditions")
    if len(st.conditions) > STATUS_MAX_CONDITIONS:
        errs.append(too_many(cp, len(st.conditions), STATUS_MAX_CONDITIONS))
    errs += validate_conditions(cp, st.conditions)
    if st.HasField("data"):
        errs += _validate_data(child(path, "data"), st.data)
    if st.HasField("network_data"):
        errs += _validate_network_data(child(path, "networkData"), st.network_data)
    return errs


def _validate_data(path: str, data: object) -> Errors:
    raw = json.dumps(json_format.MessageToDict(data), separators=(",", ":"))  # type: ignore[arg-type]
    if len(raw) > STATUS_DATA_MAX_LENGTH:
        return [too_long(path, STATUS_DATA_MAX_LENGTH)]
    if raw == "null":
        return [required(path)]
    if not raw.startswith("{"):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _validate_network_data(path: str, nd: resource_pb2.NetworkDeviceData) -> Errors:
    errs: Errors = []
    if len(nd.interface_name) > INTERFACE_NAME_MAX_LENGTH:
        errs.append(too_long(child(path, "interfaceName"), INTERFACE_NAME_MAX_LENGTH))
    if len(nd.hardware_address) > HARDWARE_ADDRESS_MAX_LENGTH:
        errs.append(too_long(child(path, "hardwareAddress"), HARDWARE_ADDRESS_MAX_LENGTH))
    errs += validate_list(
        child(path, "ips"), list(nd.ips), MAX_IPS, _validate_interface_address, lambda ip: (ip, "")
    )
    return errs


def _validate_interface_address(path: str, address: str) -> Errors:
    """IsValidInterfaceAddress: an IP with its prefix length, canonical."""
    try:
        iface = ipaddress.ip_interface(address)
    except ValueError:
        return [
            invalid(
                path,
                address,
                "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            )
        ]
    if "/" not in address:
        return [
            invalid(
                path,
                address,
                "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            )
        ]
    if str(iface) != address:
        return [invalid(path, address, f'must be in canonical form ("{iface}")')]
    return []
