"""Feature gates: upstream's names for features that change API fields or behaviour, with
upstream's defaults at the newest version kubera follows (pkg/features/kube_features.go).

kubera has one set of gates for the whole control plane (upstream sets them per
component; they must agree anyway). A gate is looked up with `enabled(gates, NAME)`;
`gates` is a mapping of overrides over DEFAULTS (an empty mapping or None: the defaults).

Upstream locks some GA gates to their default (LockToDefault); kubera has no emulated
version, so such a gate can still be overridden here, as an older emulated version would
allow upstream.

A running cluster takes overrides for the scheduler only (`kubera up --feature-gates`,
read by scheduler/batching.py); the rest of the control plane runs with DEFAULTS. The
allocator takes overrides (upstream's `structured.Features`; its tests turn gates off) and
then ignores what a disabled feature would need. Unlike upstream's strategies, the
apiserver does not drop a disabled feature's fields (docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Mapping

#: dracore: DeviceRequest.firstAvailable (alpha 1.33, beta 1.34, GA 1.36, locked on 1.37).
#: Off: a request with subrequests is an allocation error.
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
#: dracore: ExactDeviceRequest.adminAccess (alpha 1.32, beta 1.34, GA and locked on 1.36).
#: Off: a request asking for admin access is an allocation error.
DRA_ADMIN_ACCESS = "DRAAdminAccess"
#: dracore: DeviceAttribute ints/bools/strings/versions (alpha 1.36, off by default). On:
#: matchAttribute compares attribute values as sets (devices must share an element).
DRA_LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
#: dracounters: ResourceSlice sharedCounters, Device consumesCounters and per-device node
#: selection (alpha 1.33, beta and on by default since 1.36).
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
#: dracounters: Device allowMultipleAllocations, capacity requestPolicy, request
#: capacity, distinctAttribute constraints (alpha 1.34, beta and on by default since 1.36).
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"

#: drabinding: Device bindsToNode, bindingConditions, bindingFailureConditions (alpha 1.34,
#: beta and on by default since 1.36); it depends on DRAResourceClaimDeviceStatus.
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
#: drabinding: ResourceClaim status.devices (beta and on by default since 1.33).
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"

#: draext: DeviceClass extendedResourceName, extended resources a DeviceClass maps allocated
#: by the scheduler through a claim it makes (alpha 1.34, beta 1.36, GA and locked on 1.37).
#: Off: NodeResourcesFit checks such a request against the node like any extended resource.
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"

#: drataints: Device taints, request tolerations and DeviceTaintRule (alpha 1.33, GA and on
#: by default in 1.37). Off: taints are ignored and results carry no tolerations.
DRA_DEVICE_TAINTS = "DRADeviceTaints"

#: The apiserver copies the node's topology.kubernetes.io/zone and /region labels to a pod
#: at its binding (and to a pod created with spec.nodeName): PodTopologyLabels admission
#: (alpha 1.33, beta and on by default since 1.35).
POD_TOPOLOGY_LABELS_ADMISSION = "PodTopologyLabelsAdmission"
#: The pods/binding subresource clears status.nominatedNodeName (beta, on since 1.34).
CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING = "ClearingNominatedNodeNameAfterBinding"
#: The scheduler writes status.nominatedNodeName for a pod that waits at Permit or whose
#: PreBind has work to do, before the binding cycle waits (beta, on since 1.35).
NOMINATED_NODE_NAME_FOR_EXPECTATION = "NominatedNodeNameForExpectation"
#: The scheduler's writes (PodScheduled conditions, nominatedNodeName, FailedScheduling
#: events, binds) go through one API dispatcher that queues, merges and sends them in the
#: background (services/scheduler/dispatcher; beta 1.34, off by default through 1.37).
SCHEDULER_ASYNC_API_CALLS = "SchedulerAsyncAPICalls"
#: Node status.declaredFeatures, the kubelet's declaration and the scheduler's
#: NodeDeclaredFeatures filter (alpha 1.35, off by default).
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
#: The scheduler reuses one cycle's Filter and Score results for the next pod of the same
#: signature (scheduler/batching.py; beta and on by default since 1.35).
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"

DEFAULTS: dict[str, bool] = {
    DRA_PRIORITIZED_LIST: True,
    DRA_ADMIN_ACCESS: True,
    DRA_LIST_TYPE_ATTRIBUTES: False,
    DRA_PARTITIONABLE_DEVICES: True,
    DRA_CONSUMABLE_CAPACITY: True,
    DRA_DEVICE_BINDING_CONDITIONS: True,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    DRA_EXTENDED_RESOURCE: True,
    DRA_DEVICE_TAINTS: True,
    POD_TOPOLOGY_LABELS_ADMISSION: True,
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: True,
    NOMINATED_NODE_NAME_FOR_EXPECTATION: True,
    NODE_DECLARED_FEATURES: False,
    SCHEDULER_ASYNC_API_CALLS: False,
    OPPORTUNISTIC_BATCHING: True,
}

FeatureGates = Mapping[str, bool]

#: The gates a running cluster takes overrides of (`kubera up --feature-gates`): the
#: scheduler's. Experiments pass a workload's `featureGates` among these through.
CLUSTER_GATES = frozenset(
    {OPPORTUNISTIC_BATCHING, NOMINATED_NODE_NAME_FOR_EXPECTATION, SCHEDULER_ASYNC_API_CALLS}
)


def enabled(gates: FeatureGates | None, name: str) -> bool:
    """Whether the gate `name` is on: its override in `gates`, else its default."""
    if gates is not None and name in gates:
        return gates[name]
    return DEFAULTS[name]


def binding_and_status(gates: FeatureGates | None) -> bool:
    """Upstream's DeviceBindingAndStatus: binding conditions are honoured only with both
    DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on (the allocator's
    feature, the plugin's and DynamicResourcesArgs.bindingTimeout's checks)."""
    return enabled(gates, DRA_DEVICE_BINDING_CONDITIONS) and enabled(
        gates, DRA_RESOURCE_CLAIM_DEVICE_STATUS
    )


#: Go's strconv.ParseBool spellings (component-base's featuregate.Set parses with it).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse(spec: str) -> dict[str, bool]:
    """`--feature-gates` as upstream's components read it: `A=true,B=false` (spaces around
    names and values ignored). ValueError with component-base's words for a gate kubera does
    not know, a missing value, or a value that is not a Go bool."""
    out: dict[str, bool] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if value not in _TRUE | _FALSE:
            raise ValueError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax"
            )
        if name not in DEFAULTS:
            raise ValueError(f"unrecognized feature gate: {name}")
        out[name] = value in _TRUE
    return out
