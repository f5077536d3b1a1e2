"""The process `kubera up` runs (in the foreground, or detached with --detach): it starts
etcd, Ray and the actors, writes the context file, and on SIGTERM/SIGINT stops them all
and removes what it wrote. `kubera down` signals it, then stops by PID whatever is left.

    kubera up ─┬─ (foreground) Supervisor.run()
               └─ (--detach) python -m kubera.launch.supervisor … in its own session; the
                  parent waits for context.json to name it ready, prints, exits.

What it starts comes as `UpOptions` (options.py); how it joins or starts Ray is ray.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from typing import Any

from kubera.launch import placement, procs
from kubera.launch.apiservers import ApiServerReplicas, replica_name
from kubera.launch.components import PROCESS_FIELDS, Components, record_in_context
from kubera.launch.context import Context, context_path, home
from kubera.launch.credentials import (
    Credentials,
    apiserver_fields,
    component_fields,
    context_fields,
    controller_manager_name,
    issue_credentials,
    kubeconfig_path,
    owns_pki,
    pki_dir,
    pool_nodes,
    scheduler_name,
    write_kubeconfig,
)
from kubera.launch.etcd import EtcdProcess
from kubera.launch.options import ClusterOptions, UpOptions
from kubera.launch.ray import (
    join_cluster,
    node_ip,
    ray_namespace,
    ray_nodes,
    ray_temp_dir,
    start_local_head,
)
from kubera.launch.revive import ActorTable, Reviver
from services.storage.etcd import EtcdTLS


def ray_actor_class(shell: type) -> Any:
    """The Ray actor class an actors/ shell is (`@ray.remote(...) class XActor(X)`). The
    decorator replaces the class with a Ray ActorClass, which type checkers cannot see
    through a class decorator; its `.options(...).remote(...)` handles are dynamic."""
    return shell


#: Seconds between looks at where the components run (Ray's actor table).
PLACEMENT_REFRESH = 1.0

#: The line prefix with which a detached supervisor reports why it could not start.
FAILED_MARK = "kubera up failed: "


class Supervisor:
    def __init__(self, opts: UpOptions) -> None:
        self.opts = opts
        self.cluster_dir = home() / "cluster"
        self.etcd: EtcdProcess | None = None
        self.ray_tmp = ""
        #: The processes start() ran here (etcd, a local Ray head's), for `kubera down`.
        self.pids: dict[str, int] = {}
        #: The apiserver replicas (their actors, ports, processes).
        self.apiservers = ApiServerReplicas()
        #: Components handed an apiserver list so far (their rotation, see above).
        self._components_started = 0
        self.schedulers: list = []
        self.pools: list = []
        self.controllers: list = []
        self.context: Context | None = None
        #: What `issue_credentials` made (None: an open cluster).
        self.credentials: Credentials | None = None
        #: etcd's CA and client certificate for every component (None: plain etcd).
        self.etcd_tls: EtcdTLS | None = None
        #: Every component's gRPC server serves TLS (`component_tls_wanted`).
        self.component_tls = False
        self.placement = placement.Placement()
        #: Every actor above, by name: where it runs, its process and addresses.
        self.components = Components()
        #: Ray's actor table, read in a thread; the replicas and pools it brings back.
        self.table = ActorTable()
        self.reviver = Reviver()
        self._refresh_failing = False
        self._stop = threading.Event()
        #: The cluster clock's origin (epoch seconds), set when start() begins.
        self.time_origin = 0.0
        #: Children this process had before start(): not ours to stop.
        self._children_before = set(procs.descendants(os.getpid()))

    def start(self) -> Context:
        """Start the cluster, step by step (the order matters: see each step)."""
        # The cluster clock's epoch, first: every component that stamps times gets it
        # (services/clock.py: one cluster clock, the same origin and scale everywhere).
        time_origin = self.time_origin = time.time()
        self._fresh_cluster_dir()
        if self.opts.cluster.ray_address:
            self._join_ray_cluster()
        nodes = [n for n in ray_nodes() if n["alive"]] if self.opts.cluster.ray_address else []
        self.component_tls = component_tls_wanted(self.opts.cluster, max(1, len(nodes)))
        self._issue_credentials()
        etcd = self._start_etcd()
        if not self.opts.cluster.ray_address:
            self._start_local_ray()
        self._plan_placement()
        self._start_apiservers(etcd)
        scheduler = ("", "")
        if self.opts.scheduling.enabled:
            scheduler = self._start_schedulers(etcd)
        if self.opts.cluster.with_controllers:
            self._start_controllers(etcd, time_origin)
        node_pools = self._start_pools(time_origin) if self.opts.nodes.count else []
        self.components.refresh(wait=30)
        return self._write_context(etcd, scheduler, time_origin, node_pools)

    # -- the steps of start(), in order ---------------------------------------------------

    def _fresh_cluster_dir(self) -> None:
        if self.cluster_dir.exists():
            shutil.rmtree(self.cluster_dir)
        self.cluster_dir.mkdir(parents=True, mode=0o700)

    def _join_ray_cluster(self) -> None:
        """Connect to the given Ray cluster — first of all: its nodes' addresses go into the
        certificates, and they decide whether the embedded etcd may serve them."""
        join_cluster(self.opts.cluster.ray_address, ray_namespace(self.opts.cluster))
        if not self.opts.cluster.etcd:
            # before anything starts: the embedded etcd would listen on loopback
            placement.require_one_host(ray_nodes(), node_ip())

    def _start_etcd(self) -> str:
        """The given etcd (with its TLS files, if any), else a started embedded one; returns
        its endpoint."""
        c = self.opts.cluster
        if c.etcd:
            if c.etcd_cafile:
                self.etcd_tls = EtcdTLS.from_files(c.etcd_cafile, c.etcd_certfile, c.etcd_keyfile)
            return c.etcd
        creds = self.credentials
        # Assigned before it starts, so stop() can end a half-started etcd too.
        self.etcd = EtcdProcess(
            self.cluster_dir / "etcd",
            log_path=self.cluster_dir / "etcd.log",
            tls=creds.etcd_server() if creds is not None else None,
        )
        if creds is not None:
            self.etcd_tls = creds.etcd_client()
        self.etcd.start()
        self.pids["etcd"] = self.etcd.pid
        return self.etcd.endpoint

    def _start_local_ray(self) -> None:
        """A one-node Ray cluster on loopback, its processes recorded for `kubera down`."""
        self.ray_tmp = ray_temp_dir()
        self.pids.update(start_local_head(self.ray_tmp, ray_namespace(self.opts.cluster)))

    def _plan_placement(self) -> None:
        cp, pools = self.opts.cluster.control_plane_resource, self.opts.cluster.node_pool_resource
        self.placement = placement.plan(
            ray_nodes(),
            placement.CONTROL_PLANE if cp is None else cp,
            placement.NODE_POOL if pools is None else pools,
            named=tuple(r for r in (cp, pools) if r),
        )

    def _start_apiservers(self, etcd: str) -> None:
        from actors.apiserver import ApiServerActor
        from services.hosts.apiserver import ApiServerHostConfig

        o = self.opts.cluster
        self.apiservers.start(
            o.apiservers,
            lambda name, options: self._spawn(
                ApiServerActor,
                name,
                "apiserver",
                options,
                ApiServerHostConfig(
                    etcd=etcd,
                    port=o.apiserver_port if name == replica_name(0) else 0,
                    bookmark_interval=o.bookmark_interval,
                    service_cluster_ip_range=o.service_cluster_ip_range,
                    service_node_port_range=o.service_node_port_range,
                    default_storage_class=o.default_storage_class,
                    disable_admission_plugins=o.disable_admission_plugins,
                    time_scale=o.time_scale,
                    time_origin=self.time_origin,
                    **self._apiserver_security(),
                ),
            ),
            lambda i: self.placement.apiserver() if i == 0 else self.placement.replica(i),
        )

    def _write_context(
        self, etcd: str, scheduler: tuple[str, str], time_origin: float, node_pools: list[dict]
    ) -> Context:
        """The context file (what later commands dial and stop) and the kubeconfig."""
        dirs = [str(self.cluster_dir)] + ([self.ray_tmp] if self.ray_tmp else [])
        me = os.getpid()
        pids = self.pids
        self.context = Context(
            apiserver=self.apiservers.address,
            http=self.apiservers.first.http_address,
            etcd=etcd,
            supervisor_pid=me,
            pids=pids,
            started={
                **{str(pid): procs.start_time(pid) for pid in [me, *pids.values()]},
                # as they report themselves (they may run on another machine)
                **{str(r.pid): r.start_ticks for r in self.apiservers.items},
                **{str(p["pid"]): int(p.get("start_ticks") or 0) for p in node_pools},
            },
            apiserver_pid=self.apiservers.first.pid,
            apiservers=self.apiservers.records(),
            dirs=dirs,
            ray_address=self.opts.cluster.ray_address or "local",
            started_at=time.time(),
            scheduler=scheduler[0],
            scheduler_metrics=scheduler[1],
            node_pools=node_pools,
            time_scale=self.opts.cluster.time_scale,
            time_origin=time_origin,
            components=self.components.records(),
            placement={
                "control_plane": self.placement.control_plane,
                "node_pool": self.placement.node_pool,
                "missing": ", ".join(self.placement.missing),
            },
            **self._context_security(),
        )
        if hasattr(self.context, "http") and not self.context.http:  # type: ignore[has-type]
            self.context.http = self._first_http()  # type: ignore[has-type]
        self.context.save()
        write_kubeconfig(self.context)
        return self.context

    # -- credentials (kubera/launch/credentials.py) ---------------------------------------

    def _issue_credentials(self) -> None:
        """Certificates and tokens for every component `start` will run (none without
        `secure`), by the names the _start_* methods give them."""
        o, s = self.opts, self.opts.scheduling
        if not o.cluster.secure:
            return
        hosts = [o.cluster.bind_address] if o.cluster.bind_address else []
        if o.cluster.ray_address:
            hosts += [str(n["ip"]) for n in ray_nodes()]
        self.credentials = issue_credentials(
            hosts=[h for h in hosts if h],
            schedulers=[
                scheduler_name(d, i)
                for d in range(1 + len(s.extra_configs))
                for i in range(s.replicas)
            ]
            if s.enabled
            else [],
            controller_managers=[
                controller_manager_name(i) for i in range(o.cluster.controller_managers)
            ]
            if o.cluster.with_controllers
            else [],
            pools=pool_nodes(o.nodes.template, o.nodes.count, o.nodes.per_pool),
        )

    def _token(self, component: str) -> str:
        return self.credentials.tokens.token_for(component) if self.credentials else ""

    def _admin_sha256(self) -> str:
        return self.credentials.admin_sha256 if self.credentials else ""

    def _apiserver_security(self) -> dict[str, Any]:
        return apiserver_fields(
            self.credentials,
            self.etcd_tls,
            self.opts.cluster.bind_address,
            component_tls=self.component_tls,
        )

    def _component_security(self, name: str) -> dict[str, Any]:
        """A replica's or pool's TLS fields (its apiserver client's CA, its servers'
        certificate) when the components serve TLS."""
        return component_fields(self.credentials, name, component_tls=self.component_tls)

    def _context_security(self) -> dict[str, Any]:
        c = self.opts.cluster
        return context_fields(
            self.credentials,
            embedded_etcd=self.etcd is not None,
            etcd_files=(c.etcd_cafile, c.etcd_certfile, c.etcd_keyfile),
            component_tls=self.component_tls,
        )

    def _first_http(self) -> str:
        """The first apiserver replica's HTTP address, as its health() reports it."""
        import ray

        try:
            health = ray.get(self.apiservers.first.actor.health.remote(), timeout=30)
        except Exception:  # noqa: BLE001 - no HTTP address to write a kubeconfig for
            return ""
        return str(health.get("http_address", "") or "")

    def _spawn(self, shell: type, name: str, kind: str, options: dict, config: Any) -> Any:
        """The named actor of an actors/ shell, placed by `options`, recorded as a component."""
        actor = ray_actor_class(shell).options(name=name, **options).remote(config)
        self.components.add(name, kind, actor)
        return actor

    def _apiserver_for_next(self) -> str:
        """The apiserver list for the next component started: with K replicas, component j
        dials replica j mod K first (the others are its failover order)."""
        self._components_started += 1
        return self.apiservers.for_component(self._components_started - 1)

    def _start_schedulers(self, etcd: str) -> tuple[str, str]:
        """`schedulers` replicas of every scheduler deployment; returns the first
        replica's gRPC and metrics addresses (`kubera explain` finds the leader itself)."""
        import ray

        from actors.scheduler import SchedulerActor
        from services.hosts.scheduler import SchedulerReplicaConfig

        o = self.opts.scheduling
        deployments = [o.config, *o.extra_configs]
        for d, config_yaml in enumerate(deployments):
            for i in range(o.replicas):
                name = scheduler_name(d, i)
                cfg = SchedulerReplicaConfig(
                    apiserver=self._apiserver_for_next(),
                    etcd=etcd,
                    token=self._token(name),
                    admin_sha256=self._admin_sha256(),
                    etcd_tls=self.etcd_tls,
                    config_yaml=config_yaml,
                    seed=o.seed,
                    feature_gates=dict(o.feature_gates),
                    election=self.opts.election,
                    mode=o.mode,
                    replica=i,
                    replicas=o.replicas,
                    partition=o.partition,
                    time_scale=self.opts.cluster.time_scale,
                    time_origin=self.time_origin,
                    **self._component_security(name),
                )
                self.schedulers.append(
                    self._spawn(SchedulerActor, name, "scheduler", self.placement.replica(i), cfg)
                )
        addresses = ray.get([a.start.remote() for a in self.schedulers], timeout=180)
        metrics = ray.get(self.schedulers[0].health.remote(), timeout=30)["metrics"]
        return addresses[0], metrics

    def _start_controllers(self, etcd: str, time_origin: float) -> None:
        import ray

        from actors.controllers import ControllerManagerActor
        from services.hosts.controllermanager import ControllerManagerReplicaConfig
        from services.leaderelection import LeaderElectionSettings

        o = self.opts.cluster
        election = LeaderElectionSettings(lease_name="kube-controller-manager").with_timings(
            self.opts.election
        )
        for i in range(o.controller_managers):
            name = controller_manager_name(i)
            cfg = ControllerManagerReplicaConfig(
                apiserver=self._apiserver_for_next(),
                etcd=etcd,
                time_scale=o.time_scale,
                time_origin=time_origin,
                election=election,
                token=self._token(name),
                admin_sha256=self._admin_sha256(),
                etcd_tls=self.etcd_tls,
                controllers=tuple(o.controllers),
                **self._component_security(name),
            )
            self.controllers.append(
                self._spawn(
                    ControllerManagerActor,
                    name,
                    "controller-manager",
                    self.placement.replica(i),
                    cfg,
                )
            )
        ray.get([a.start.remote() for a in self.controllers], timeout=120)

    def _start_pools(self, time_origin: float) -> list[dict]:
        """ceil(nodes / nodes_per_pool) pool actors, spread over the Ray cluster's
        node-pool nodes (any node when none is marked)."""
        import ray

        from actors.nodepool import NodePoolActor
        from services.hosts.nodepool import NodePoolHostConfig
        from services.kubelet import PoolConfig

        o = self.opts.nodes
        total, per = o.count, max(1, o.per_pool)
        slices = [(first, min(per, total - first)) for first in range(0, total, per)]
        for i, (first, count) in enumerate(slices):
            cfg = NodePoolHostConfig(
                apiserver=self._apiserver_for_next(),
                template_yaml=o.template,
                total_nodes=total,
                first=first,
                count=count,
                pool=PoolConfig(
                    name=f"pool-{i}",
                    watch_per_node=o.watch_per_node,
                    first_ordinal=first,
                ),
                time_scale=self.opts.cluster.time_scale,
                time_origin=time_origin,
                token=self._token(f"pool-{i}"),
                admin_sha256=self._admin_sha256(),
                **self._component_security(f"pool-{i}"),
            )
            self.pools.append(
                self._spawn(NodePoolActor, f"pool-{i}", "node-pool", self.placement.pool(i), cfg)
            )
        addresses = ray.get([a.start.remote() for a in self.pools], timeout=600)
        health = ray.get([a.health.remote() for a in self.pools], timeout=60)
        # Each pool's process as it reports itself: its start time (so `kubera chaos
        # kill-pool` never signals a reused PID) and where it runs (whether its PID is
        # ours to signal at all).
        return [
            {
                "name": f"pool-{i}",
                "address": addr,
                "first": first,
                "count": count,
                **{k: h.get(k, "") for k in PROCESS_FIELDS},
            }
            for i, (addr, (first, count), h) in enumerate(
                zip(addresses, slices, health, strict=True)
            )
        ]

    def wait(self) -> None:
        """Until asked to stop: bring back what chaos took down — etcd (restarted on its
        ports and data dir), the apiserver and the replicas and pools Ray re-created after
        a kill (started again; the apiserver on its first port; see revive.py)."""
        refreshed = time.monotonic()
        self.reviver.add([*self.schedulers, *self.controllers, *self.pools])
        self.table.start()
        while not self._stop.wait(0.2):
            self._revive_etcd()
            if not self._stop.is_set():
                self.apiservers.revive(self.context)
            self.reviver.step(self.table.latest())
            if time.monotonic() - refreshed >= PLACEMENT_REFRESH:
                refreshed = time.monotonic()
                self._refresh_components()

    def _refresh_components(self) -> None:
        """Where every component runs now (the actor table's latest read, each new
        process's addresses), saved in the context when anything changed."""
        table = self.table.latest()
        if self.context is None or self._stop.is_set() or table is None:
            return
        try:
            changed = self.components.refresh(table=table)
        except Exception as e:  # noqa: BLE001 - a health() probe Ray could not wait on
            if not self._refresh_failing:
                print(f"components refresh failed (retrying): {type(e).__name__}: {e}", flush=True)
            self._refresh_failing = True
            return
        if self._refresh_failing:
            print("components refresh works again", flush=True)
            self._refresh_failing = False
        if not changed:
            return
        for line in record_in_context(self.context, self.components.records()):
            print(line, flush=True)
        self.context.save()

    def _revive_etcd(self) -> None:
        if self.etcd is None or self.etcd.running or self._stop.is_set():
            return
        self.etcd.restart()
        if self.context is not None:
            self.context.pids["etcd"] = self.etcd.pid
            self.context.started[str(self.etcd.pid)] = procs.start_time(self.etcd.pid)
            self.context.save()

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self) -> None:
        import ray

        self.table.stop()
        # What this process started, found while it is still below us in the process tree:
        # Ray's workers outlive their raylet for a while once ray.shutdown() has killed it,
        # and are no longer our descendants then.
        started = procs.started_below(os.getpid(), self._children_before)
        actors = [*self.pools, *self.controllers, *self.schedulers]
        refs = []
        for actor in actors:  # all at once: a standby must not take over from a stopping leader
            with contextlib.suppress(Exception):
                refs.append(actor.stop.remote())
        with contextlib.suppress(Exception):
            ray.wait(refs, num_returns=len(refs), timeout=20)
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.apiservers.stop()
        with contextlib.suppress(Exception):
            ray.shutdown()
        if self.etcd is not None:
            self.etcd.stop()
        # A start interrupted inside ray.init() can leave processes Ray had spawned but not
        # yet recorded (ray.shutdown() stops only a head it finished starting), and Ray's
        # workers can outlive their raylet: stop whatever this process started that still
        # runs, by PID and start time.
        procs.stop_all({**started, **procs.started_below(os.getpid(), self._children_before)})
        if self.context is not None:
            with contextlib.suppress(FileNotFoundError):
                data = json.loads(context_path().read_text())
                if data.get("supervisor_pid") == os.getpid():
                    context_path().unlink()
        for d in (self.cluster_dir, self.ray_tmp):
            if d:
                shutil.rmtree(d, ignore_errors=True)
        if self.credentials is not None and owns_pki(self.credentials):
            # the tokens and the kubeconfig are void once the cluster is gone (and only
            # ours: a later `up` in this home has written its own)
            shutil.rmtree(pki_dir(), ignore_errors=True)
            kubeconfig_path().unlink(missing_ok=True)


def component_tls_wanted(cluster: ClusterOptions, ray_nodes: int) -> bool:
    """Whether every component's gRPC server serves TLS: asked for (`--component-tls`),
    or the Ray cluster has more than one node (components may talk across machines, and
    their calls carry bearer tokens). Not without credentials (`--insecure`): asked for,
    that is an error; on several nodes, the cluster stays as open as it was asked to be."""
    if cluster.component_tls and not cluster.secure:
        raise ValueError("--component-tls needs the cluster's certificates: drop --insecure")
    return cluster.secure and (cluster.component_tls or ray_nodes > 1)


class StartupInterrupted(BaseException):
    """SIGTERM/SIGINT arrived while the cluster was still starting."""


class StartupError(Exception):
    """The cluster could not start; the message is one line for the user."""


def run_foreground(opts: UpOptions, *, on_ready=None) -> int:
    """Start, wait for SIGTERM/SIGINT, stop — stopping also when a signal or an error
    interrupts the start, so nothing is left running either way."""
    sup = Supervisor(opts)
    starting = True

    def on_signal(signum: int, frame: object) -> None:
        if starting:
            raise StartupInterrupted()
        sup.request_stop()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            ctx = sup.start()
        except StartupInterrupted:
            return 130
        except Exception as e:  # noqa: BLE001 - one line for the user; the log has the rest
            raise StartupError(f"{type(e).__name__}: {e}".splitlines()[0]) from e
        # ray.init() put its own SIGTERM handler (sys.exit) in place of ours: ours again, so
        # SIGTERM (`kubera down`, `docker compose stop`) stops the cluster in order, exit 0.
        signal.signal(signal.SIGTERM, on_signal)
        starting = False
        if on_ready is not None:
            on_ready(ctx)
        sup.wait()
    finally:
        starting = False
        sup.stop()
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the detached supervisor (`python -m kubera.launch.supervisor OPTIONS_JSON`)."""
    parser = argparse.ArgumentParser(prog="kubera.launch.supervisor")
    parser.add_argument("options_json")
    args = parser.parse_args(argv)
    opts = UpOptions.from_dict(json.loads(args.options_json))
    try:
        return run_foreground(opts)
    except StartupError as e:
        import traceback

        traceback.print_exc()
        print(f"{FAILED_MARK}{e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
