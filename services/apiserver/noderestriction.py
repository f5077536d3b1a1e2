"""NodeRestriction: what a node may change on its own Node object and on the status of
its pods (upstream's admission plugin of that name, plugin/pkg/admission/noderestriction,
for Node writes and pods/status).

The authorizer (services/auth/authorizer.py) already lets a node write only its own Node;
this admission step, which sees the old and the new object, limits what it may change
there, so a kubelet cannot steer workloads to itself:

- on create: no label it may not set (below);
- on update: not its taints (a kubelet sets them at registration only), not its
  ownerReferences, and no label it may not set, added, changed or removed; its
  status.volumesAttached is kept as stored, whatever the node sends: the attach/detach
  controller writes it, and kubera's kubelets send their node's whole status where
  upstream's patch the fields they own (a kubelet's write would otherwise erase it).

On a pod's status (the authorizer already limits a node to pods bound to it): not its
status.resourceClaimStatuses, which only the resourceclaim controller records; the
scheduler and the kubelet trust them to name the pod's claims, so a node that rewrote
them could make a pod use another pod's claim. A write that carries none keeps the
stored ones: kubera's kubelets send the whole status where upstream's patch the fields
they own, so an empty list means "not mine", not "clear" (a kubelet whose cache has not
yet seen the controller's write would otherwise erase it). (Pod labels cannot change
through kubera's status writes at all, so upstream's label rule has nothing to check.)

The labels a node may not set are upstream's: every `node-restriction.kubernetes.io/`
label, and every label in the `kubernetes.io` / `k8s.io` namespaces except the well-known
node labels kubelets set themselves (hostname, os, arch, instance type, zone, region) and
the `kubelet.kubernetes.io/` and `node.kubernetes.io/` prefixes.

The caller is `services.auth.CURRENT_USER`, set by both edges once a request is
authenticated; without one (the in-process servers of tests, the admin, a component)
nothing is checked here.
"""

from __future__ import annotations

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import PermissionDeniedError
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.auth import CURRENT_USER, is_node, node_names

RESTRICTION_PREFIX = "node-restriction.kubernetes.io/"
#: kubernetes.io / k8s.io labels a kubelet may set on its own Node (upstream's
#: kubeletapis.KubeletLabels and the allowed namespaces).
ALLOWED_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
    }
)
ALLOWED_PREFIXES = ("kubelet.kubernetes.io/", "node.kubernetes.io/")


def forbidden_label(key: str) -> bool:
    """Whether a node may not set label `key` on its own Node."""
    if key.startswith(RESTRICTION_PREFIX):
        return True
    if "/" not in key:
        return False
    domain = key.split("/", 1)[0]
    in_k8s = domain in ("kubernetes.io", "k8s.io") or domain.endswith((".kubernetes.io", ".k8s.io"))
    if not in_k8s or key in ALLOWED_LABELS:
        return False
    return not key.startswith(ALLOWED_PREFIXES)


def _modified(new: dict[str, str], old: dict[str, str]) -> set[str]:
    return {k for k in new.keys() | old.keys() if new.get(k) != old.get(k)}


def admit_node(new: Message, old: Message | None) -> None:
    """Refuse (ForbiddenError, upstream's wording) a node's create (`old` None) or update
    of its own Node that changes what it may not, and keep the stored volumesAttached in
    `new` (the merged object about to be written); nothing when the caller is no node."""
    user = CURRENT_USER.get()
    if user is None or not is_node(user):
        return
    new = narrow(new, core_pb2.Node)
    old = narrow_optional(old, core_pb2.Node)
    name = new.metadata.name
    node = name if name in node_names(user) else user.name
    new_labels = dict(new.metadata.labels)
    if old is None:
        bad = sorted(k for k in new_labels if forbidden_label(k))
        if bad:
            raise PermissionDeniedError(
                f'nodes "{name}" is forbidden: node "{node}" is not allowed to set the '
                f"following labels: {', '.join(bad)}"
            )
        return
    if list(new.spec.taints) != list(old.spec.taints):
        raise PermissionDeniedError(
            f'nodes "{name}" is forbidden: node "{node}" is not allowed to modify taints'
        )
    if list(new.metadata.owner_references) != list(old.metadata.owner_references):
        raise PermissionDeniedError(
            f'nodes "{name}" is forbidden: node "{node}" is not allowed to modify ownerReferences'
        )
    bad = sorted(k for k in _modified(new_labels, dict(old.metadata.labels)) if forbidden_label(k))
    if bad:
        raise PermissionDeniedError(
            f'nodes "{name}" is forbidden: is not allowed to modify labels: {", ".join(bad)}'
        )
    # the attach/detach controller's, never the kubelet's (see the module docstring)
    del new.status.volumes_attached[:]
    new.status.volumes_attached.extend(old.status.volumes_attached)


def admit_pod_status(new: Message, old: Message) -> None:
    """Refuse (ForbiddenError, upstream's wording) a node's pods/status write that changes
    status.resourceClaimStatuses; one that sends none keeps the stored ones (in `new`, the
    merged object about to be written). Nothing when the caller is no node."""
    user = CURRENT_USER.get()
    if user is None or not is_node(user):
        return
    new, old = narrow(new, core_pb2.Pod), narrow(old, core_pb2.Pod)
    stored = old.status.resource_claim_statuses
    sent = new.status.resource_claim_statuses
    if list(sent) == list(stored):
        return
    if not sent:
        sent.extend(stored)
        return
    bound = old.spec.node_name
    node = bound if bound in node_names(user) else user.name
    raise PermissionDeniedError(
        f'pods "{object_meta(new).name}" is forbidden: node "{node}" cannot update '
        "resource claim statuses"
    )
