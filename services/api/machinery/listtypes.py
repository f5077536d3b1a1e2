"""How each list and map field of kubera's kinds merges: the schema facts that strategic
merge patch, server-side apply and the OpenAPI document all need.

Upstream keeps these facts in the Go struct tags of k8s.io/api (`patchStrategy`,
`patchMergeKey`) and in the `+listType`/`+listMapKey`/`+mapType` markers that become the
OpenAPI extensions x-kubernetes-patch-strategy, x-kubernetes-patch-merge-key,
x-kubernetes-list-type, x-kubernetes-list-map-keys and x-kubernetes-map-type. kubera's
protobuf messages carry no such tags, so this one table carries them, keyed by
(message full name, JSON field name); `strategy()` answers for one field and `schema_for()`
walks a kind's message tree for the patch code.

Invariants: a field missing from the table is atomic when it is a list (upstream's
default for an untagged list) and granular when it is a map; a list with patch strategy
"merge" and a merge key is a list of objects merged by that key, a list with "merge" and
no key is a set of scalars. Fields typed google.protobuf.Struct are schemaless below them
(kubera does not model volumes or probes): their maps merge and their lists replace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from google.protobuf.descriptor import Descriptor

MAP = "map"
SET = "set"
ATOMIC = "atomic"
GRANULAR = "granular"


@dataclass(frozen=True)
class ListStrategy:
    """The merge facts of one list (or map, or struct) field.

    list_type: "map" | "set" | "atomic" for lists, "" for maps and structs
    keys: the list map keys (x-kubernetes-list-map-keys) when list_type is "map"
    patch_strategy: "merge" | "replace" | "retainKeys" | "merge,retainKeys" | ""
    merge_key: the strategic-merge key (x-kubernetes-patch-merge-key) of a list of objects
    map_type: "granular" | "atomic" for map fields (x-kubernetes-map-type), "" otherwise
    """

    list_type: str = ""
    keys: tuple[str, ...] = ()
    patch_strategy: str = ""
    merge_key: str = ""
    map_type: str = ""

    @property
    def merges(self) -> bool:
        """Whether strategic merge patch merges this list (rather than replacing it)."""
        return "merge" in self.patch_strategy.split(",")

    @property
    def retains_keys(self) -> bool:
        return "retainKeys" in self.patch_strategy.split(",")


def _keyed(*keys: str, merge_key: str = "", retain: bool = False) -> ListStrategy:
    strategy = "merge,retainKeys" if retain else "merge"
    return ListStrategy(MAP, tuple(keys), strategy, merge_key or keys[0])


_SET_MERGE = ListStrategy(SET, (), "merge")
_SET = ListStrategy(SET)
_ATOMIC = ListStrategy(ATOMIC)
_ATOMIC_MAP = ListStrategy(map_type=ATOMIC)
_BY_TYPE = _keyed("type")

_P = "kubera.v1."

#: (message full name, json name) -> strategy, as k8s.io/api's tags and markers say.
TABLE: dict[tuple[str, str], ListStrategy] = {
    # meta/v1 ObjectMeta, LabelSelector, Condition
    (_P + "ObjectMeta", "finalizers"): _SET_MERGE,
    (_P + "ObjectMeta", "ownerReferences"): _keyed("uid"),
    (_P + "ObjectMeta", "managedFields"): _ATOMIC,
    (_P + "LabelSelector", "matchExpressions"): _ATOMIC,
    (_P + "LabelSelectorRequirement", "values"): _ATOMIC,
    # core/v1 Namespace, Node
    (_P + "NamespaceSpec", "finalizers"): _ATOMIC,
    (_P + "LimitRangeSpec", "limits"): _ATOMIC,
    (_P + "ResourceQuotaSpec", "scopes"): _ATOMIC,
    (_P + "ScopeSelector", "matchExpressions"): _ATOMIC,
    (_P + "ScopedResourceSelectorRequirement", "values"): _ATOMIC,
    (_P + "NodeSpec", "taints"): _ATOMIC,
    (_P + "NodeSpec", "podCIDRs"): _SET_MERGE,
    (_P + "NodeStatus", "conditions"): _BY_TYPE,
    (_P + "NamespaceStatus", "conditions"): _BY_TYPE,
    (_P + "NodeStatus", "addresses"): _BY_TYPE,
    (_P + "NodeStatus", "images"): _ATOMIC,
    (_P + "NodeStatus", "volumesInUse"): _ATOMIC,
    (_P + "NodeStatus", "volumesAttached"): _ATOMIC,
    (_P + "NodeStatus", "declaredFeatures"): _ATOMIC,
    (_P + "ContainerImage", "names"): _ATOMIC,
    # core/v1 PodSpec, Container
    (_P + "PodSpec", "containers"): _keyed("name"),
    (_P + "PodSpec", "initContainers"): _keyed("name"),
    (_P + "PodSpec", "volumes"): _keyed("name", retain=True),
    (_P + "PodSpec", "imagePullSecrets"): _keyed("name"),
    (_P + "PodSpec", "tolerations"): _ATOMIC,
    (_P + "PodSpec", "topologySpreadConstraints"): _keyed(
        "topologyKey", "whenUnsatisfiable", merge_key="topologyKey"
    ),
    (_P + "PodSpec", "schedulingGates"): _keyed("name"),
    (_P + "PodSpec", "nodeSelector"): _ATOMIC_MAP,
    (_P + "PodSpec", "resourceClaims"): _keyed("name", retain=True),
    (_P + "Container", "command"): _ATOMIC,
    (_P + "Container", "args"): _ATOMIC,
    (_P + "Container", "ports"): _keyed("containerPort", "protocol"),
    (_P + "Container", "env"): _keyed("name"),
    (_P + "Container", "envFrom"): _ATOMIC,
    (_P + "Container", "volumeMounts"): _keyed("mountPath"),
    # +listType=map +listMapKey=name and no patch strategy: strategic merge replaces it.
    (_P + "ResourceRequirements", "claims"): ListStrategy(MAP, ("name",)),
    # core/v1 affinity
    (_P + "NodeSelector", "nodeSelectorTerms"): _ATOMIC,
    (_P + "NodeSelectorTerm", "matchExpressions"): _ATOMIC,
    (_P + "NodeSelectorTerm", "matchFields"): _ATOMIC,
    (_P + "NodeSelectorRequirement", "values"): _ATOMIC,
    (_P + "NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): _ATOMIC,
    (_P + "PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution"): _ATOMIC,
    (_P + "PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): _ATOMIC,
    (_P + "PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"): _ATOMIC,
    (_P + "PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution"): _ATOMIC,
    (_P + "PodAffinityTerm", "namespaces"): _SET,
    (_P + "PodAffinityTerm", "matchLabelKeys"): _ATOMIC,
    (_P + "PodAffinityTerm", "mismatchLabelKeys"): _ATOMIC,
    (_P + "TopologySpreadConstraint", "matchLabelKeys"): _ATOMIC,
    # core/v1 PodStatus
    (_P + "PodStatus", "conditions"): _BY_TYPE,
    (_P + "PodStatus", "podIPs"): _keyed("ip"),
    (_P + "PodStatus", "hostIPs"): _keyed("ip"),
    (_P + "PodStatus", "containerStatuses"): _ATOMIC,
    (_P + "PodStatus", "initContainerStatuses"): _ATOMIC,
    (_P + "PodStatus", "resourceClaimStatuses"): _keyed("name", retain=True),
    # policy/v1, apps/v1, node/v1
    (_P + "PodDisruptionBudgetStatus", "conditions"): _BY_TYPE,
    (_P + "ReplicaSetStatus", "conditions"): _BY_TYPE,
    (_P + "DeploymentStatus", "conditions"): _BY_TYPE,
    (_P + "DeploymentSpec", "strategy"): ListStrategy(patch_strategy="retainKeys"),
    (_P + "DaemonSetStatus", "conditions"): _BY_TYPE,
    (_P + "StatefulSetStatus", "conditions"): _BY_TYPE,
    (_P + "StatefulSetSpec", "volumeClaimTemplates"): _ATOMIC,
    # core/v1 PersistentVolumeClaim
    (_P + "PersistentVolumeClaimSpec", "accessModes"): _ATOMIC,
    (_P + "PersistentVolumeClaimStatus", "accessModes"): _ATOMIC,
    (_P + "PersistentVolumeClaimStatus", "conditions"): _BY_TYPE,
    # core/v1 PersistentVolume and storage.k8s.io/v1: atomic lists, but a CSIDriver's
    # lifecycle modes (a set) and a CSINode's drivers (merged by name).
    (_P + "PersistentVolumeSpec", "accessModes"): _ATOMIC,
    (_P + "PersistentVolumeSpec", "mountOptions"): _ATOMIC,
    (_P + "StorageClass", "mountOptions"): _ATOMIC,
    (_P + "StorageClass", "allowedTopologies"): _ATOMIC,
    (_P + "TopologySelectorTerm", "matchLabelExpressions"): _ATOMIC,
    (_P + "TopologySelectorLabelRequirement", "values"): _ATOMIC,
    (_P + "CSIDriverSpec", "volumeLifecycleModes"): _SET,
    (_P + "CSIDriverSpec", "tokenRequests"): _ATOMIC,
    (_P + "CSINodeSpec", "drivers"): _keyed("name"),
    (_P + "CSINodeDriver", "topologyKeys"): _ATOMIC,
    # scheduling.k8s.io/v1alpha1: a Workload's pod groups are +listType=map by name, with
    # no patch strategy (strategic merge patch replaces the list).
    (_P + "WorkloadSpec", "podGroups"): ListStrategy(MAP, ("name",)),
    # scheduling.k8s.io/v1beta1 PodGroup: claims and their statuses merge by name (retaining
    # keys), conditions by type, the topology constraints are atomic.
    (_P + "SchedulingPodGroupSpec", "resourceClaims"): _keyed("name", retain=True),
    (_P + "PodGroupSchedulingConstraints", "topology"): _ATOMIC,
    (_P + "SchedulingPodGroupStatus", "conditions"): _BY_TYPE,
    (_P + "SchedulingPodGroupStatus", "resourceClaimStatuses"): _keyed("name", retain=True),
    # batch/v1: Job conditions merge by type under strategic merge patch but are
    # +listType=atomic for server-side apply; the other lists are atomic, or sets.
    (_P + "JobStatus", "conditions"): ListStrategy(ATOMIC, (), "merge", "type"),
    (_P + "UncountedTerminatedPods", "succeeded"): _SET,
    (_P + "UncountedTerminatedPods", "failed"): _SET,
    (_P + "PodFailurePolicy", "rules"): _ATOMIC,
    (_P + "PodFailurePolicyRule", "onPodConditions"): _ATOMIC,
    (_P + "PodFailurePolicyOnExitCodesRequirement", "values"): _SET,
    (_P + "SuccessPolicy", "rules"): _ATOMIC,
    (_P + "CronJobStatus", "active"): _ATOMIC,
    (_P + "Scheduling", "nodeSelector"): _ATOMIC_MAP,
    (_P + "Scheduling", "tolerations"): _ATOMIC,
    # draext: the scheduler's mappings of a pod's extended resources (+listType=atomic)
    (_P + "PodExtendedResourceClaimStatus", "requestMappings"): _ATOMIC,
    # resource.k8s.io/v1: every list is +listType=atomic but reservedFor (map by uid,
    # patchStrategy=merge); scheduling.x-k8s.io/v1alpha1 PodGroup has no lists.
    (_P + "DeviceClassSpec", "selectors"): _ATOMIC,
    (_P + "DeviceClassSpec", "config"): _ATOMIC,
    (_P + "ResourceSliceSpec", "devices"): _ATOMIC,
    # dracounters: partitionable devices and consumable capacity (atomic too)
    (_P + "ResourceSliceSpec", "sharedCounters"): _ATOMIC,
    (_P + "Device", "consumesCounters"): _ATOMIC,
    (_P + "CapacityRequestPolicy", "validValues"): _ATOMIC,
    # dracore: list-type attribute values (atomic, as upstream's +listType=atomic)
    (_P + "DeviceAttribute", "ints"): _ATOMIC,
    (_P + "DeviceAttribute", "bools"): _ATOMIC,
    (_P + "DeviceAttribute", "strings"): _ATOMIC,
    (_P + "DeviceAttribute", "versions"): _ATOMIC,
    (_P + "DeviceClaim", "requests"): _ATOMIC,
    (_P + "DeviceClaim", "constraints"): _ATOMIC,
    (_P + "DeviceClaim", "config"): _ATOMIC,
    (_P + "DeviceRequest", "firstAvailable"): _ATOMIC,
    (_P + "ExactDeviceRequest", "selectors"): _ATOMIC,
    (_P + "DeviceSubRequest", "selectors"): _ATOMIC,
    (_P + "DeviceConstraint", "requests"): _ATOMIC,
    (_P + "DeviceClaimConfiguration", "requests"): _ATOMIC,
    (_P + "DeviceAllocationResult", "results"): _ATOMIC,
    (_P + "DeviceAllocationResult", "config"): _ATOMIC,
    (_P + "DeviceAllocationConfiguration", "requests"): _ATOMIC,
    (_P + "ResourceClaimStatus", "reservedFor"): _keyed("uid"),
    # drataints: taints and tolerations are atomic; a rule's conditions map by type.
    (_P + "Device", "taints"): _ATOMIC,
    (_P + "ExactDeviceRequest", "tolerations"): _ATOMIC,
    (_P + "DeviceSubRequest", "tolerations"): _ATOMIC,
    (_P + "DeviceRequestAllocationResult", "tolerations"): _ATOMIC,
    (_P + "DeviceTaintRuleStatus", "conditions"): _BY_TYPE,
    # drabinding: binding conditions (atomic) and status.devices (map by driver, device,
    # pool, shareID; its conditions by type).
    (_P + "Device", "bindingConditions"): _ATOMIC,
    (_P + "Device", "bindingFailureConditions"): _ATOMIC,
    (_P + "DeviceRequestAllocationResult", "bindingConditions"): _ATOMIC,
    (_P + "DeviceRequestAllocationResult", "bindingFailureConditions"): _ATOMIC,
    (_P + "ResourceClaimStatus", "devices"): ListStrategy(
        MAP, ("driver", "device", "pool", "shareID")
    ),
    (_P + "AllocatedDeviceStatus", "conditions"): ListStrategy(MAP, ("type",)),
    (_P + "NetworkDeviceData", "ips"): _ATOMIC,
    # core/v1 Service, ServiceAccount; discovery.k8s.io/v1 EndpointSlice
    (_P + "ServiceSpec", "ports"): _keyed("port", "protocol"),
    (_P + "Endpoints", "subsets"): _ATOMIC,
    (_P + "EndpointSubset", "addresses"): _ATOMIC,
    (_P + "EndpointSubset", "notReadyAddresses"): _ATOMIC,
    (_P + "EndpointSubset", "ports"): _ATOMIC,
    (_P + "ServiceSpec", "clusterIPs"): _ATOMIC,
    (_P + "ServiceSpec", "externalIPs"): _ATOMIC,
    (_P + "ServiceSpec", "loadBalancerSourceRanges"): _ATOMIC,
    (_P + "ServiceSpec", "ipFamilies"): _ATOMIC,
    (_P + "ServiceStatus", "conditions"): _BY_TYPE,
    (_P + "LoadBalancerStatus", "ingress"): _ATOMIC,
    (_P + "LoadBalancerIngress", "ports"): _ATOMIC,
    (_P + "ServiceAccount", "secrets"): _keyed("name"),
    (_P + "ServiceAccount", "imagePullSecrets"): _ATOMIC,
    (_P + "EndpointSlice", "endpoints"): _ATOMIC,
    (_P + "EndpointSlice", "ports"): _ATOMIC,
    (_P + "Endpoint", "addresses"): _SET,
    (_P + "EndpointHints", "forZones"): _ATOMIC,
    (_P + "EndpointHints", "forNodes"): _ATOMIC,
}


def strategy(message_full_name: str, json_name: str) -> ListStrategy | None:
    """The merge facts of one field, or None when the table says nothing (then: a list
    is atomic, a map granular, a message merges field by field)."""
    return TABLE.get((message_full_name, json_name))


class PatchSchema(Protocol):
    """What the patch and apply code asks at each level of an object: the strategy of a
    field and the schema below it. Upstream's LookupPatchMeta, reduced to what kubera uses."""

    def field(self, name: str) -> tuple[ListStrategy | None, PatchSchema]:
        """(strategy of `name`, schema of its value — of an item, for a list)."""
        ...


class Untyped:
    """A schemaless level (google.protobuf.Struct, unknown fields): maps merge, lists are atomic."""

    def field(self, name: str) -> tuple[ListStrategy | None, PatchSchema]:
        return None, UNTYPED


UNTYPED = Untyped()


class MessageSchema:
    """The schema of a protobuf message, read from its descriptor and TABLE."""

    def __init__(self, desc: Descriptor) -> None:
        self.desc = desc
        self._by_json = {f.json_name: f for f in desc.fields}

    def field(self, name: str) -> tuple[ListStrategy | None, PatchSchema]:
        f = self._by_json.get(name)
        if f is None:
            return None, UNTYPED
        st = TABLE.get((self.desc.full_name, name))
        mt = f.message_type
        if mt is None:
            if st is None and f.is_repeated:
                st = _ATOMIC
            return st, UNTYPED
        if mt.GetOptions().map_entry:
            value = mt.fields_by_name["value"].message_type
            st = st or ListStrategy(map_type=GRANULAR)
            return st, _schema(value)
        if st is None and f.is_repeated:
            st = _ATOMIC
        return st, _schema(mt)


_CACHE: dict[str, MessageSchema] = {}


def _schema(desc: Descriptor | None) -> PatchSchema:
    if desc is None or not desc.full_name.startswith("kubera."):
        return UNTYPED
    got = _CACHE.get(desc.full_name)
    if got is None:
        got = _CACHE[desc.full_name] = MessageSchema(desc)
    return got


def schema_for(desc: Descriptor) -> PatchSchema:
    """The patch schema of a kind's message (its DESCRIPTOR)."""
    return _schema(desc)


def strategy_at(desc: Descriptor, path: tuple[str, ...]) -> ListStrategy | None:
    """The strategy of the field at a JSON path of field names from the kind's root
    (list items are stepped over: ("spec", "containers", "env") is each container's env)."""
    schema: PatchSchema = _schema(desc)
    st: ListStrategy | None = None
    for name in path:
        st, schema = schema.field(name)
    return st


def fields_without_entry(desc: Descriptor) -> list[tuple[str, str]]:
    """The list fields reachable from `desc` that TABLE does not name (a completeness
    check: every list of every kind should be decided, not defaulted)."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(d: Descriptor | None) -> None:
        if d is None or d.full_name in seen or not d.full_name.startswith("kubera."):
            return
        seen.add(d.full_name)
        for f in d.fields:
            mt = f.message_type
            is_map = mt is not None and mt.GetOptions().map_entry
            if f.is_repeated and not is_map and (d.full_name, f.json_name) not in TABLE:
                out.append((d.full_name, f.json_name))
            if mt is not None:
                walk(mt.fields_by_name["value"].message_type if is_map else mt)

    walk(desc)
    return out
