"""What `kubera up` starts, by concern: the settings the flags of `kubera up` fill and the
supervisor runs (in the foreground, or detached with the options as JSON: `options_json`,
`UpOptions.from_dict`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from services.leaderelection import TimingOverrides


@dataclass(frozen=True)
class ClusterOptions:
    """Where the cluster runs and what runs beside the scheduler."""

    #: An existing etcd's URL ("" = start an embedded one).
    etcd: str = ""
    #: An existing Ray cluster's address ("" = start a local one on loopback).
    ray_address: str = ""
    #: The apiserver's port (0 = any free one; a restarted apiserver keeps it). With
    #: several apiservers, replica 0's (the others take any free one).
    apiserver_port: int = 0
    #: Active-active apiserver replicas on the one etcd (apiservers.py).
    apiservers: int = 1
    #: Seconds between BOOKMARK events on idle watches.
    bookmark_interval: float = 5.0
    #: Services' cluster IPs and node ports (kube-apiserver's --service-cluster-ip-range,
    #: kubeadm's default, and --service-node-port-range).
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    #: The default StorageClass a new cluster gets, as kind ships one ("": none).
    default_storage_class: str = "standard"
    #: Admission plugins the apiservers do not run (kube-apiserver's
    #: --disable-admission-plugins; `kubera experiment` passes upstream scheduler_perf's).
    disable_admission_plugins: tuple[str, ...] = ()
    #: Simulated durations are divided by this (kubelets and controllers).
    time_scale: float = 1.0
    #: False: no controller-manager actor.
    with_controllers: bool = True
    #: Controller-manager replicas: one leader, the others standbys.
    controller_managers: int = 1
    #: The controllers they run (`--controllers`, services.controllers.select_controllers);
    #: (): all.
    controllers: tuple[str, ...] = ()
    #: The Ray namespace of kubera's named actors ("" = $KUBERA_RAY_NAMESPACE, else
    #: "kubera"): two control planes on one Ray cluster need two namespaces.
    ray_namespace: str = ""
    #: The Ray custom resources that mark control-plane nodes (apiserver, schedulers,
    #: controller-managers) and node-pool nodes; one no node has places nothing. None:
    #: the default name (placement.CONTROL_PLANE / NODE_POOL), not reported when missing.
    control_plane_resource: str | None = None
    node_pool_resource: str | None = None
    #: Issue credentials (kubera/launch/credentials.py): tokens on both APIs, HTTPS, etcd
    #: with client certificates. False: everything open, as before (`--insecure`).
    secure: bool = True
    #: TLS on every component's gRPC server (apiservers, schedulers, controller-managers,
    #: node pools), their certificates signed by the cluster CA and verified by every
    #: client (`--component-tls`). Always on when the Ray cluster has more than one node
    #: (components then talk across machines); off by default on one node, where they
    #: talk on loopback. Needs `secure`.
    component_tls: bool = False
    #: Where the apiservers listen (gRPC and HTTP); "": 127.0.0.1 in the embedded mode,
    #: the Ray node's address on a Ray cluster.
    bind_address: str = ""
    #: An existing etcd's TLS files (with `etcd`): its CA, and a client certificate.
    etcd_cafile: str = ""
    etcd_certfile: str = ""
    etcd_keyfile: str = ""


@dataclass(frozen=True)
class SchedulingOptions:
    """The scheduler deployments and how their replicas share the work."""

    #: False: no scheduler actor (bring your own, or profile one in-process).
    enabled: bool = True
    #: KubeSchedulerConfiguration YAML text ("" = the defaults).
    config: str = ""
    #: More scheduler deployments (KubeSchedulerConfiguration texts), each with its own
    #: schedulerName(s) and its own Lease, running beside the first.
    extra_configs: tuple[str, ...] = ()
    #: Replicas per scheduler deployment.
    replicas: int = 1
    #: Seeds the schedulers' tie-breaking (None: random).
    seed: int | None = None
    #: "leader": one elected leader per deployment binds, fenced; "shared-state" (Omega):
    #: every replica schedules, binds checked against node allocation records.
    mode: Literal["leader", "shared-state"] = "leader"
    #: shared-state: every replica competes for every pod ("none") or pods are split by
    #: UID hash ("hash").
    partition: Literal["none", "hash"] = "none"
    #: The schedulers' feature gate overrides (kube-scheduler's --feature-gates), e.g.
    #: {"SchedulerAsyncAPICalls": True}; services/api/features.py has the defaults.
    feature_gates: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeOptions:
    """The hollow nodes and the pool actors that run them."""

    #: How many hollow nodes (0: none).
    count: int = 0
    #: Node template YAML text ("" = the default template).
    template: str = ""
    #: Hollow nodes per node-pool actor.
    per_pool: int = 1000
    #: One pod watch per hollow node instead of one per pool.
    watch_per_node: bool = False


@dataclass(frozen=True)
class UpOptions:
    """What `kubera up` starts, by concern (the flags of `kubera up` fill it)."""

    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    scheduling: SchedulingOptions = field(default_factory=SchedulingOptions)
    #: --leader-elect-* (seconds), for the schedulers and the controller-manager; an unset
    #: one keeps the scheduler configuration's (else 15 s / 10 s / 2 s).
    election: TimingOverrides = field(default_factory=TimingOverrides)
    nodes: NodeOptions = field(default_factory=NodeOptions)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UpOptions:
        """The inverse of `dataclasses.asdict` (the detached supervisor's argument)."""
        scheduling = dict(data.get("scheduling", {}))
        scheduling["extra_configs"] = tuple(scheduling.get("extra_configs", ()))
        cluster = dict(data.get("cluster", {}))
        cluster["disable_admission_plugins"] = tuple(cluster.get("disable_admission_plugins", ()))
        cluster["controllers"] = tuple(cluster.get("controllers", ()))
        return cls(
            cluster=ClusterOptions(**cluster),
            scheduling=SchedulingOptions(**scheduling),
            election=TimingOverrides(**data.get("election", {})),
            nodes=NodeOptions(**data.get("nodes", {})),
        )


def options_json(opts: UpOptions) -> str:
    return json.dumps(asdict(opts))
