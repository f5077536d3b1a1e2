"""The etcd key layout: every key kubera writes, in one place.

    /registry/<resource>/<namespace>/<name>   API objects (no namespace segment when
                                              cluster-scoped), as kube-apiserver lays them out
    /kubera/leaderelection/<namespace>/<name> election keys, one per Lease: value = holder,
                                              create_revision = the term (the fencing token)
    /kubera/replicas/<namespace>/<name>/<id>  replica records (pid, control address) of the
                                              replicas electing on that Lease
    /kubera/allocations/<node>                shared-state (Omega) allocation records, one per
                                              node, written in the same txn as a bind
    /kubera/deviceallocations/<driver>/<pool>/<device>
                                              shared-state device allocation records, one
                                              per device, written in the same txn as the
                                              claim status that allocates it; value =
                                              the holding claim (services/apiserver/allocation.py)
    /kubera/serviceips/<ip>                   a Service's cluster IP, held from its create
    /kubera/servicenodeports/<port>           txn to its delete txn (services/apiserver/
                                              serviceips.py); value = <namespace>/<name>

The apiserver owns /registry/; the leader election, the replicas and the shared-state binds
own their /kubera/ subtrees; the chaos checker and `kubera chaos` read them all.
"""

from __future__ import annotations

#: Every key kubera writes starts with this (/registry/... and /kubera/...).
ROOT = "/"
#: API objects.
REGISTRY_PREFIX = "/registry/"
#: kubera's own records (not API objects).
KUBERA_PREFIX = "/kubera/"
#: Election keys: one per Lease, `<prefix><namespace>/<name>`.
ELECTION_PREFIX = KUBERA_PREFIX + "leaderelection/"
#: Replica records: `<prefix><namespace>/<lease name>/<identity>`.
REPLICAS_PREFIX = KUBERA_PREFIX + "replicas/"
#: Shared-state allocation records: `<prefix><node name>`.
ALLOCATIONS_PREFIX = KUBERA_PREFIX + "allocations/"
#: Shared-state device allocation records: `<prefix><driver>/<pool>/<device>` (a driver
#: and a device name hold no "/", a pool name may).
DEVICE_ALLOCATIONS_PREFIX = KUBERA_PREFIX + "deviceallocations/"
#: Services' cluster IPs and node ports: `<prefix><ip>`, `<prefix><port>`.
SERVICE_IPS_PREFIX = KUBERA_PREFIX + "serviceips/"
NODE_PORTS_PREFIX = KUBERA_PREFIX + "servicenodeports/"


def resource_prefix(resource: str) -> str:
    """/registry/<resource>/: where every object of one resource (e.g. "pods") lives."""
    return f"{REGISTRY_PREFIX}{resource}/"


def election_key(namespace: str, name: str) -> str:
    return f"{ELECTION_PREFIX}{namespace}/{name}"


def replica_key(namespace: str, name: str, identity: str) -> str:
    return f"{REPLICAS_PREFIX}{namespace}/{name}/{identity}"


def allocation_key(node_name: str) -> str:
    return ALLOCATIONS_PREFIX + node_name


def device_allocation_key(driver: str, pool: str, device: str) -> str:
    return f"{DEVICE_ALLOCATIONS_PREFIX}{driver}/{pool}/{device}"
