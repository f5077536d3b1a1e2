"""The processes of a cluster, as plain asyncio classes: each takes its config, builds its
component and serves it — `X(config)`, `start()`, `stop()`, `health()` — and
actors/ runs each in a Ray actor that adds nothing but Ray's options.

    apiserver.py          ApiServerHost: EtcdStorage + ApiServer + its gRPC server
    nodepool.py           NodePoolHost: a slice of the hollow nodes + the pool's gRPC API
    scheduler.py          SchedulerReplica: a kube-scheduler replica (terms, metrics, config)
    controllermanager.py  ControllerManagerReplica: a kube-controller-manager replica
    replica.py            Replica: what every replicated component shares (partition
                          relays, chaos control, its record in etcd, election and Lease)
    address.py            where a component listens and the address it gives out
                          (its Ray node's; $KUBERA_BIND_HOST / $KUBERA_ADVERTISE_HOST)

Each module is imported on its own (a node pool's process need not load the scheduler).
"""
