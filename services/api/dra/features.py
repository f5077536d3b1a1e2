"""The DRA feature gates kubera models, in one place, with upstream's defaults at the
newest version in the index (pkg/features/kube_features.go).

    DRAResourceClaimDeviceStatus   beta since 1.33, on: ResourceClaim status.devices
    DRADeviceBindingConditions     alpha 1.34, beta 1.36, on: Device.bindsToNode,
                                   bindingConditions, bindingFailureConditions; it
                                   depends on DRAResourceClaimDeviceStatus

Binding conditions take effect only with both on (upstream's allocator feature
DeviceBindingAndStatus, the plugin's and DynamicResourcesArgs.bindingTimeout's checks).
A component takes a `Features` (the defaults unless a test or an experiment says
otherwise); nothing reads a global switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: Upstream gate name -> default.
DEFAULTS: Mapping[str, bool] = {
    "DRAResourceClaimDeviceStatus": True,
    "DRADeviceBindingConditions": True,
}


@dataclass(frozen=True)
class Features:
    """The gates' values (upstream's names in `DEFAULTS`)."""

    device_binding_conditions: bool = DEFAULTS["DRADeviceBindingConditions"]
    resource_claim_device_status: bool = DEFAULTS["DRAResourceClaimDeviceStatus"]

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool]) -> Features:
        """From a featureGates map (upstream names); unknown names are a ValueError."""
        unknown = set(gates) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown feature gate(s) {sorted(unknown)}")
        values = {**DEFAULTS, **gates}
        return cls(
            device_binding_conditions=values["DRADeviceBindingConditions"],
            resource_claim_device_status=values["DRAResourceClaimDeviceStatus"],
        )

    @property
    def binding_and_status(self) -> bool:
        """Upstream's DeviceBindingAndStatus: binding conditions are honoured."""
        return self.device_binding_conditions and self.resource_claim_device_status


DEFAULT_FEATURES = Features()
