"""Who may do what: kubera's authorizer, for both APIs (gRPC and HTTP).

Upstream runs a chain (Node authorizer, then RBAC with the bootstrap ClusterRoles) and
the NodeRestriction admission plugin after it. kubera has no RBAC objects; its identities
are fixed (services/auth/tokens.py), so the rules are fixed too, written as upstream's
bootstrap roles grant them, in one place:

    system:masters (the admin)          everything
    system:kube-scheduler               read everything; pods/binding; pods/status (its
                                        conditions, nominatedNodeName); delete pods
                                        (preemption victims); events; leases (its leader
                                        Lease; never a node's in kube-node-lease);
                                        resourceclaims and their status (its finalizer,
                                        allocation, reservedFor; create and delete the
                                        claims it makes for extended resources backed by
                                        DRA); podgroups/status (its
                                        PodGroupInitiallyScheduled); update persistentvolumes
                                        and persistentvolumeclaims (volume binding)
    system:kube-controller-manager      read everything; write what its controllers write:
                                        pods, replicasets, deployments, nodes (lifecycle:
                                        conditions, taints), poddisruptionbudgets,
                                        namespaces (and namespaces/finalize, the
                                        namespace controller), events, leases (not
                                        nodes'),
                                        resourceclaims and their status (the resourceclaim
                                        controller), podgroups/status,
                                        resourcequotas/status; daemonsets and
                                        statefulsets (their status), controllerrevisions,
                                        persistentvolumeclaims (a StatefulSet's claims,
                                        binding, protection), persistentvolumes (binding,
                                        provisioning, reclaim), volumeattachments (and
                                        their status: attach/detach, hollow attacher);
                                        endpoints and endpointslices (their controllers),
                                        serviceaccounts (the serviceaccount controller);
                                        devicetaintrules/status (device taint eviction);
                                        evictions;
                                        delete any kind (garbage collection), and
                                        update any kind when only ownerReferences
                                        and finalizers change (the collector)
    a node (system:node:N, or a pool    read what a kubelet reads (nodes, pods, leases,
    acting for its nodes)               namespaces, runtimeclasses, priorityclasses,
                                        events, resourceslices, deviceclasses,
                                        resourceclaims, configmaps, and for volumes
                                        persistentvolumeclaims, persistentvolumes,
                                        volumeattachments, csidrivers, csinodes); write
                                        its own Node and
                                        nodes/status, its own Lease (kube-node-lease/N),
                                        the status of pods bound to it, delete pods bound
                                        to it, evict them; create/update/patch events;
                                        create/update/patch/delete the ResourceSlices of
                                        its nodes (spec.nodeName); its own CSINodes, and
                                        the CSIDrivers and CSIStorageCapacities of hollow
                                        CSI drivers; update the status.devices (only)
                                        of claims allocated to its nodes by name (the
                                        hollow drivers' binding conditions). Never: other nodes'
                                        objects, bindings, pods of other nodes, pod specs.

What a node may touch is decided by the object: a pod is "its" when the pod as stored is
bound to one of its nodes (spec.nodeName), read through `lookup` (the apiserver's watch
cache); so `authorize` is a coroutine function (callers `await`). A node's create of a
Node or Lease is checked against the object it sends (`RequestAttributes.obj`).

A node's ResourceSlice write is checked against the slice as stored and as sent: both
must be of one of its nodes (upstream's NodeRestriction for slices). Nothing ties the
slice's pool name to the node, upstream neither: a node may publish a slice in a pool
named after another node. Pools are gathered per node from the slices that reach it, so
the other node's pool is not changed by it; but the allocator keys devices by (driver,
pool, device), as upstream's does, not by node, so a device of the same name in both
slices is one ID: allocated on either node, it counts as allocated on the other too (a
denial of service by a node against another's devices, accepted as upstream accepts it;
the slice names its node, so the culprit is known).

Deliberate differences from upstream: a node may change its own Node's taints (kubera's
hollow kubelets set the memory/disk/pid-pressure taints themselves; upstream's
NodeRestriction forbids nodes modifying taints); a node reads every ResourceClaim, as it
reads every pod (upstream's Node authorizer lets it get only the claims of its pods; a
node pool watches the claims allocated to its nodes to gate their pods), and every
ConfigMap (upstream: those its pods name; a pool watches them to hold back a pod naming
a missing one) but no Secret; a node writes the CSIDriver and CSIStorageCapacity objects
of the hollow CSI drivers its template declares (labelled kubera.io/hollow-csi-driver;
upstream an admin installs the CSIDriver and external-provisioner publishes capacity); no RBAC
objects, so these rules are not configurable; no mirror pods (a node may not create pods);
a node's report on a claim (status.devices) is allowed for claims allocated to its nodes
by name, and nothing else in the claim may change (upstream's
DRAResourceClaimGranularStatusAuthorization asks instead for the verb associated-node:update
on resourceclaims/driver, per driver name).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from services.api.dra.bindingconditions import allocated_nodes, without_device_status
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.auth import MASTERS, Decision, RequestAttributes, User, is_node, node_names
from services.auth.tokens import CONTROLLER_MANAGER_USER, SCHEDULER_USER

#: lookup(resource, namespace, name) -> the stored object, or None.
Lookup = Callable[[str, str, str], Awaitable[Any]]

READ_VERBS = frozenset({"get", "list", "watch"})
WRITE_VERBS = frozenset({"create", "update", "patch"})
NODE_LEASE_NAMESPACE = "kube-node-lease"

#: What a kubelet reads (upstream's system:node role, for the kinds kubera has).
NODE_READABLE = frozenset(
    {
        "nodes",
        "pods",
        "leases",
        "namespaces",
        "runtimeclasses",
        "priorityclasses",
        "events",
        "poddisruptionbudgets",
        "resourceslices",
        "deviceclasses",
        "resourceclaims",
        "configmaps",
        "persistentvolumeclaims",
        "persistentvolumes",
        "volumeattachments",
        "csidrivers",
        "csinodes",
    }
)
SLICE_WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
#: What a node's hollow CSI drivers write (`_node_csi`).
HOLLOW_CSI_RESOURCES = frozenset({"csinodes", "csidrivers", "csistoragecapacities"})
EVENT_VERBS = frozenset({"create", "update", "patch"})

#: The controller-manager's writes (resource -> verbs), beside reading everything and
#: deleting any kind (its garbage collector and namespace controller).
CONTROLLER_MANAGER_WRITES: dict[str, frozenset[str]] = {
    "pods": frozenset({"create", "update", "patch", "delete"}),
    "replicasets": frozenset({"create", "update", "patch", "delete"}),
    "deployments": frozenset({"create", "update", "patch", "delete"}),
    "nodes": frozenset({"update", "patch", "delete"}),
    "poddisruptionbudgets": frozenset({"update", "patch"}),
    "namespaces": frozenset({"create", "update", "patch", "delete"}),
    "events": frozenset({"create", "update", "patch", "delete"}),
    "leases": frozenset({"create", "update", "patch", "delete"}),
    "resourceclaims": frozenset({"create", "update", "patch", "delete"}),
    "podgroups": frozenset({"update", "patch"}),
    #: scheduling.k8s.io PodGroups (kubera's resource name): the resourceclaim controller
    #: records the claims it made for a group in its status.
    "podgroups.scheduling.k8s.io": frozenset({"update", "patch"}),
    "resourcequotas": frozenset({"update", "patch"}),
    "daemonsets": frozenset({"update", "patch"}),
    "statefulsets": frozenset({"update", "patch"}),
    "controllerrevisions": frozenset({"create", "update", "patch", "delete"}),
    "persistentvolumeclaims": frozenset({"create", "update", "patch", "delete"}),
    "persistentvolumes": frozenset({"create", "update", "patch", "delete"}),
    "volumeattachments": frozenset({"create", "update", "patch", "delete"}),
    "jobs": frozenset({"create", "update", "patch", "delete"}),
    "cronjobs": frozenset({"update", "patch"}),
    "endpointslices": frozenset({"create", "update", "patch", "delete"}),
    "endpoints": frozenset({"create", "update", "patch", "delete"}),
    "serviceaccounts": frozenset({"create", "update", "patch", "delete"}),
    "devicetaintrules": frozenset({"update", "patch"}),
}
#: Of those, the kinds it writes only through status (the podgroup controller records
#: phase and counts, the resource quota controller usage, the DaemonSet and StatefulSet
#: controllers their sets' status, the CronJob controller its active Jobs and schedule
#: times, the device taint eviction controller its rules' EvictionInProgress; the specs
#: are their users').
CONTROLLER_MANAGER_STATUS_ONLY = frozenset(
    {
        "podgroups",
        "podgroups.scheduling.k8s.io",
        "resourcequotas",
        "daemonsets",
        "statefulsets",
        "cronjobs",
        "devicetaintrules",
    }
)

ALLOWED = Decision(True)


def forbidden_message(attrs: RequestAttributes, reason: str = "") -> str:
    """Upstream's 403 message: `pods "x" is forbidden: User "u" cannot patch resource
    "pods/status" in API group "" in the namespace "default": <reason>`."""
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    who = f"User {_q(attrs.user.name)} cannot {attrs.verb} resource {_q(resource)}"
    where = f"in the namespace {_q(attrs.namespace)}" if attrs.namespace else "at the cluster scope"
    msg = f"{who} in API group {_q(attrs.api_group)} {where}"
    if reason:
        msg = f"{msg}: {reason}"
    qualified = attrs.resource + (f".{attrs.api_group}" if attrs.api_group else "")
    if attrs.name:
        return f"{qualified} {_q(attrs.name)} is forbidden: {msg}"
    return f"{qualified} is forbidden: {msg}"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _deny(reason: str) -> Decision:
    return Decision(False, reason)


class KuberaAuthorizer:
    """The rules of the module docstring. `lookup` reads stored objects (see above)."""

    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup

    async def authorize(self, attrs: RequestAttributes) -> Decision:
        user = attrs.user
        if MASTERS in user.groups:
            return ALLOWED
        if user.name == SCHEDULER_USER:
            return _scheduler(attrs)
        if user.name == CONTROLLER_MANAGER_USER:
            decision = _controller_manager(attrs)
            if not decision.allowed and await self._garbage_collector_update(attrs):
                return ALLOWED
            return decision
        if is_node(user):
            return await self._node(attrs, user)
        return _deny(f"no rule allows {user.name!r} (not the admin nor a kubera component)")

    async def _garbage_collector_update(self, attrs: RequestAttributes) -> bool:
        """The garbage collector's writes to kinds the controller-manager does not otherwise
        write: an update whose object differs from the stored one only in its
        ownerReferences and finalizers (upstream grants its collector update on every
        resource; kubera grants only what the collector changes, a node's Lease included:
        its renewals stay the kubelet's)."""
        if attrs.verb != "update" or attrs.subresource or attrs.obj is None:
            return False
        stored = await self._lookup(attrs.resource, attrs.namespace, attrs.name)
        if stored is None or type(stored) is not type(attrs.obj):
            return False
        return _without_gc_metadata(stored) == _without_gc_metadata(attrs.obj)

    async def _node(self, attrs: RequestAttributes, user: User) -> Decision:
        nodes = node_names(user)
        verb, resource, sub = attrs.verb, attrs.resource, attrs.subresource
        if not nodes:
            return _deny("unknown node: the identity names no node")
        if verb in READ_VERBS and not sub:
            if resource in NODE_READABLE:
                return ALLOWED
            return _deny(f"a node does not read {resource}")
        if resource == "resourceslices" and not sub and verb in SLICE_WRITE_VERBS:
            return await self._node_slice(attrs, nodes)
        if resource == "events" and verb in EVENT_VERBS:
            return ALLOWED
        if resource in HOLLOW_CSI_RESOURCES and not sub and verb in SLICE_WRITE_VERBS:
            return await self._node_csi(attrs, nodes)
        if resource == "nodes":
            name = attrs.name or _name_of(attrs.obj)
            if verb in WRITE_VERBS or verb == "delete":
                if name in nodes:
                    return ALLOWED
                return _deny(f"node(s) {_few(nodes)} may not modify node {name!r}")
            return _deny(f"a node may not {verb} nodes")
        if resource == "leases":
            name = attrs.name or _name_of(attrs.obj)
            if attrs.namespace != NODE_LEASE_NAMESPACE:
                return _deny(f"a node may write leases only in {NODE_LEASE_NAMESPACE}")
            if verb in WRITE_VERBS or verb == "delete":
                if name in nodes:
                    return ALLOWED
                return _deny(f"node(s) {_few(nodes)} may not modify the lease of node {name!r}")
            return _deny(f"a node may not {verb} leases")
        if resource == "resourceclaims" and sub == "status" and verb == "update":
            return await self._node_claim_status(attrs, nodes)
        if resource == "pods":
            ok_pod = (sub == "status" and verb in {"update", "patch"}) or (
                (not sub and verb == "delete") or (sub == "eviction" and verb == "create")
            )
            if not ok_pod:
                return _deny(f"a node may not {verb} pods{'/' + sub if sub else ''}")
            name = attrs.name or _name_of(attrs.obj)
            pod = await self._lookup("pods", attrs.namespace, name)
            if pod is None:
                # Nothing to act on: the registry answers 404 (a kubelet's status batch
                # that holds a pod deleted meanwhile must not fail as a whole). A pod
                # created under that name since carries another uid and resourceVersion,
                # which the kubelet's write names, so it cannot touch that one either.
                return ALLOWED
            bound = _node_of(pod)
            if bound not in nodes:
                return _deny(
                    f"can only modify pods bound to node(s) {_few(nodes)}; "
                    f"{attrs.namespace}/{name} is bound to {bound or 'no node'}"
                )
            new_bound = _node_of(attrs.obj)
            if attrs.obj is not None and new_bound and new_bound != bound:
                return _deny("a node may not move a pod to another node")
            return ALLOWED
        return _deny(f"a node may not {verb} {resource}{'/' + sub if sub else ''}")

    async def _node_claim_status(self, attrs: RequestAttributes, nodes: frozenset[str]) -> Decision:
        """A driver's report on a claim (drabinding): the claim as stored is allocated
        to one of the node's nodes by name, and the update changes status.devices only."""
        name = attrs.name or _name_of(attrs.obj)
        stored = await self._lookup("resourceclaims", attrs.namespace, name)
        if stored is None or not allocated_nodes(stored) & nodes:
            return _deny(
                f"node(s) {_few(nodes)} may only report on claims allocated to their nodes"
            )
        if attrs.obj is None or without_device_status(attrs.obj) != without_device_status(stored):
            return _deny("a node may only change status.devices of a resourceclaim")
        return ALLOWED

    async def _node_slice(self, attrs: RequestAttributes, nodes: frozenset[str]) -> Decision:
        """A ResourceSlice write: the slice as stored (update, patch, delete) and as sent
        (create, update) must both be of one of the node's nodes (spec.nodeName)."""
        sent = _slice_node(attrs.obj) if attrs.obj is not None else None
        if attrs.verb == "create":
            stored = sent
        else:
            name = attrs.name or _name_of(attrs.obj)
            current = await self._lookup("resourceslices", "", name)
            if current is None:
                return ALLOWED  # nothing to act on: the registry answers 404
            stored = _slice_node(current)
        for node in (stored, sent):
            if node is not None and node not in nodes:
                return _deny(
                    f"node(s) {_few(nodes)} may only modify resourceslices of their own nodes; "
                    f"this one is for {node or 'no single node'!s}"
                )
        if stored is None:
            return _deny("a node may only create resourceslices it sends")
        return ALLOWED

    async def _node_csi(self, attrs: RequestAttributes, nodes: frozenset[str]) -> Decision:
        """What a node's hollow CSI drivers publish: its own CSINodes (upstream's
        NodeRestriction), and CSIDrivers and CSIStorageCapacities (kube-system) labelled
        as hollow, as stored and as sent (a node may not touch a real driver's objects)."""
        sent = attrs.obj
        name = attrs.name or _name_of(sent)
        if attrs.resource == "csinodes":
            if name in nodes:
                return ALLOWED
            return _deny(f"node(s) {_few(nodes)} may not modify csinode {name!r}")
        if attrs.resource == "csistoragecapacities" and attrs.namespace != "kube-system":
            return _deny("a node may write csistoragecapacities only in kube-system")
        stored = None
        if attrs.verb != "create":
            stored = await self._lookup(attrs.resource, attrs.namespace, name)
        for obj in (stored, sent):
            if obj is not None and LABEL_HOLLOW_DRIVER not in obj.metadata.labels:
                return _deny(f"a node may only modify {attrs.resource} of hollow CSI drivers")
        if sent is None and stored is None:
            return _deny(f"a node may only create {attrs.resource} it sends")
        return ALLOWED


#: The controller-manager's leader Lease (kube-system), which only it writes; the
#: schedulers' Lease names come from their configurations (leaderElection.resourceName).
CONTROLLER_MANAGER_LEASE = "kube-controller-manager"


#: scheduling.k8s.io's PodGroup as the HTTP API names it (plural, with its group) and as
#: the gRPC API does (kubera's unique resource name, beside scheduler-plugins' podgroups).
POD_GROUP_RESOURCES = frozenset({"podgroups", "podgroups.scheduling.k8s.io"})


def _scheduler(attrs: RequestAttributes) -> Decision:
    verb, resource, sub = attrs.verb, attrs.resource, attrs.subresource
    if verb in READ_VERBS and not sub:
        return ALLOWED
    if resource == "pods":
        if sub == "binding" and verb == "create":
            return ALLOWED
        if sub == "status" and verb in {"update", "patch"}:
            return ALLOWED
        if not sub and verb == "delete":
            return ALLOWED
    if resource == "events" and verb in EVENT_VERBS:
        return ALLOWED
    if resource == "resourceclaims" and sub in ("", "status") and verb in {"update", "patch"}:
        return ALLOWED  # its finalizer on the claim; the allocation and reservedFor
    if resource == "resourceclaims" and not sub and verb in {"create", "delete"}:
        return ALLOWED  # DRAExtendedResource: the claim it makes for extended resources
    if resource in POD_GROUP_RESOURCES and sub == "status" and verb in {"update", "patch"}:
        return ALLOWED  # GangScheduling: a PodGroup's PodGroupInitiallyScheduled condition
    volumes = ("persistentvolumeclaims", "persistentvolumes")
    if resource in volumes and not sub and verb in {"update", "patch"}:
        return ALLOWED  # VolumeBinding: the selected-node annotation, PreBind's binding
    if resource == "leases" and verb in WRITE_VERBS:
        if attrs.namespace == NODE_LEASE_NAMESPACE:
            return _deny("the scheduler may not write nodes' leases")
        if (attrs.name or _name_of(attrs.obj)) == CONTROLLER_MANAGER_LEASE:
            return _deny("the scheduler may not write the controller-manager's lease")
        return ALLOWED
    what = f"{resource}/{sub}" if sub else resource
    return _deny(f"the scheduler may not {verb} {what}")


def _without_gc_metadata(obj: Any) -> Any:
    """A copy of `obj` without what the garbage collector changes (and the write's own
    bookkeeping): ownerReferences, finalizers, resourceVersion, managedFields."""
    copy = type(obj)()
    copy.CopyFrom(obj)
    for f in ("owner_references", "finalizers", "resource_version", "managed_fields"):
        copy.metadata.ClearField(f)
    return copy


def _controller_manager(attrs: RequestAttributes) -> Decision:
    verb, resource, sub = attrs.verb, attrs.resource, attrs.subresource
    if verb in READ_VERBS and not sub:
        return ALLOWED
    if verb in {"delete", "deletecollection"} and not sub:
        return ALLOWED  # garbage collector, namespace controller
    if resource == "pods" and sub == "binding":
        return _deny("the controller-manager does not bind pods")
    if resource == "pods" and sub == "eviction" and verb == "create":
        return ALLOWED
    if resource == "leases" and attrs.namespace == NODE_LEASE_NAMESPACE:
        return _deny("the controller-manager may not write nodes' leases (their kubelets do)")
    allowed = CONTROLLER_MANAGER_WRITES.get(resource, frozenset())
    subs = ("status",) if resource in CONTROLLER_MANAGER_STATUS_ONLY else ("", "status", "scale")
    if resource == "namespaces":
        subs = ("", "status", "finalize")
    if verb in allowed and sub in subs:
        return ALLOWED
    what = f"{resource}/{sub}" if sub else resource
    return _deny(f"the controller-manager may not {verb} {what}")


def _name_of(obj: Any) -> str:
    if obj is None:
        return ""
    meta = getattr(obj, "metadata", None)
    return str(getattr(meta, "name", "") or "")


def _slice_node(rs: Any) -> str:
    """A ResourceSlice's node ("" for one reached by a node selector or all nodes)."""
    spec = getattr(rs, "spec", None)
    return str(getattr(spec, "node_name", "") or "")


def _node_of(pod: Any) -> str:
    if pod is None:
        return ""
    spec = getattr(pod, "spec", None)
    return str(getattr(spec, "node_name", "") or "")


def _few(nodes: frozenset[str]) -> str:
    names = sorted(nodes)
    if len(names) <= 3:
        return ", ".join(repr(n) for n in names)
    return f"{', '.join(repr(n) for n in names[:3])} and {len(names) - 3} more"
