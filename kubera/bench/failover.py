"""`kubera bench failover`: how long the control plane cannot schedule after its leader
dies. A cluster with K scheduler replicas and hollow nodes gets a steady stream of pods;
the leader is SIGKILLed again and again, and each time we time

    kill → the election key names a new holder   (takeover)
    kill → the first bind carrying the new term's fencing token, seen on a pod watch

the second being the figure that matters (a takeover that does not schedule helps no one).
Between kills the killed replica comes back (Ray re-creates the actor; the supervisor
starts it as a standby) so every kill finds K replicas. Bound pods are deleted at once,
so the load stays small however many kills are asked for.

`--target apiserver` SIGKILLs the apiserver instead (`kubera.chaos.kill_apiserver`)
under the same load, and times

    kill → the first write through the apiserver's address that succeeds
    kill → the first bind written to etcd after the kill

each kill waiting for the load to be bound again before the next.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import time
from pathlib import Path

from kubera.bench.harness import pod as bench_pod
from kubera.errors import CliError
from kubera.testing import Cluster

LEASE = "kube-system/kube-scheduler"


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "failover",
        help="leader (or apiserver) SIGKILL → first bind (and first write), over many kills",
    )
    p.add_argument(
        "--target",
        choices=("scheduler", "apiserver"),
        default="scheduler",
        help="whose process to kill: the scheduler leader (default) or the apiserver",
    )
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--schedulers", type=int, default=3, help="replicas (one leader)")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--rate", type=float, default=20.0, help="pods created per second")
    p.add_argument("--lease-duration", default="2s")
    p.add_argument("--renew-deadline", default="1500ms")
    p.add_argument("--retry-period", default="500ms")
    p.add_argument(
        "--k8s-defaults",
        action="store_true",
        help="kube-scheduler's defaults instead (15s / 10s / 2s)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="keep the bound pods and run `kubera check` on the cluster after the kills "
        "(scheduler target)",
    )
    p.add_argument("--output", default="", help="also write the figures as JSON here")
    p.set_defaults(func=cmd_bench_failover)


def _pod(name: str, namespace: str):
    pod = bench_pod(name, namespace)
    pod.spec.containers[0].resources.requests["cpu"] = "1m"
    pod.spec.containers[0].resources.requests["memory"] = "1Mi"
    return pod


class _PodLoad:
    """The bench's steady load in namespace `ns`: `rate` pods/s created until stopped, and
    each pod deleted once it is seen bound (so the load stays small over many kills).
    Errors during an outage are dropped: the load goes on through the fault."""

    def __init__(self, client, ns: str, rate: float, *, keep: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.client, self.ns, self.rate = client, ns, rate
        #: Keep bound pods (for `--check`: the checker judges every bind at the end).
        self.keep = keep
        self.stop = asyncio.Event()
        self.deleting: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()

    async def generate(self) -> None:
        from services.api.machinery.errors import ApiError

        i = 0
        t0 = time.monotonic()
        while not self.stop.is_set():
            i += 1
            with contextlib.suppress(ApiError):
                await self.client.create(_pod(f"p{i}", self.ns))
            delay = t0 + i / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    def bound(self, name: str) -> bool:
        """Delete `name` in the background, once; False when it was seen bound before."""
        if name in self.deleting:
            return False
        self.deleting.add(name)
        if self.keep:
            return True
        task = asyncio.create_task(self._delete(name))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return True

    async def _delete(self, name: str) -> None:
        from services.api.machinery.errors import ApiError
        from services.api.machinery.kinds import BY_KIND

        with contextlib.suppress(ApiError):
            await self.client.delete(BY_KIND["Pod"], name, self.ns, grace_period_seconds=0)


async def _measure(ctx: dict, args: argparse.Namespace, timings: tuple[float, float, float]):
    from kubera import chaos
    from protos.kubera.v1 import core_pb2
    from services.api.helpers.fencing import BOUND_BY, parse_bound_by
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client
    from services.storage.etcd import EtcdStorage
    from services.storage.keys import election_key, replica_key

    lease_duration = timings[0]
    storage = EtcdStorage(ctx["etcd"], timeout=5)
    await storage.connect()
    client = Client(ctx["apiserver"], timeout=30)
    ns = "failover"
    await client.create(core_pb2.Namespace(metadata={"name": ns}))
    binds: list[tuple[float, int]] = []  # (monotonic arrival, term)
    #: The election key's changes as seen on an etcd watch: (monotonic arrival, type, term).
    key_events: list[tuple[float, str, int]] = []
    new_bind = asyncio.Event()
    POD = BY_KIND["Pod"]
    load = _PodLoad(client, ns, args.rate, keep=args.check)

    def on_pod(kind: str, pod) -> None:  # type: ignore[no-untyped-def]
        if kind not in ("ADDED", "MODIFIED") or not pod.spec.node_name:
            return
        mode, _, term = parse_bound_by(pod.metadata.annotations.get(BOUND_BY, ""))
        # A bind is the first sighting of the pod bound; later changes of a bound pod (its
        # status, its deletion) carry its old term and are not binds. A pod first seen
        # bound on a restarted watch's list (ADDED) is not timed: its bind was missed.
        if load.bound(pod.metadata.name) and mode == "fenced" and kind == "MODIFIED":
            binds.append((time.monotonic(), term))
            new_bind.set()

    async def watch() -> None:
        """The pods' watch, resumed when it breaks (the apiserver is busy or restarting):
        a bench whose watch died would wait in vain for the next bind."""
        from services.api.machinery.errors import GoneError

        rv = ""
        for _restart in range(10_000):  # bounded; cancelled at the end of the run
            try:
                async for ev in client.watch(POD, namespace=ns, resource_version=rv):
                    rv = ev.object.metadata.resource_version  # type: ignore[attr-defined]
                    on_pod(ev.type, ev.object)
            except GoneError:
                rv = ""  # too old: list again (as ADDED) and watch on
            except Exception as e:  # noqa: BLE001 - a broken stream: resume it
                logging.getLogger(__name__).info("bench: pod watch broke (%s); resuming", e)
            await asyncio.sleep(0.1)

    async def watch_key() -> None:
        key = election_key(*LEASE.split("/"))
        _, rev = await storage.list(key)
        async for batch in storage.watch(key, rev + 1):
            now = time.monotonic()
            for ev in batch.events:
                if ev.kv.key != key:
                    continue
                kv = ev.prev if ev.type == "DELETE" and ev.prev is not None else ev.kv
                key_events.append((now, ev.type, kv.create_revision))

    def key_split(t_kill: float, old_term: int, new_term: int) -> dict[str, float | None]:
        """kill → the old term's key deleted (its etcd lease expired, or a standby expired
        it) and kill → the new term's key created (the campaign won), as an etcd watch saw
        them."""
        deleted = next(
            (t for t, kind, term in key_events if t >= t_kill and kind == "DELETE"
             and term == old_term),
            None,
        )  # fmt: skip
        created = next(
            (t for t, kind, term in key_events if t >= t_kill and kind == "PUT"
             and term == new_term),
            None,
        )  # fmt: skip
        return {
            "key_deleted_s": None if deleted is None else deleted - t_kill,
            "key_created_s": None if created is None else created - t_kill,
        }

    async def term_split(identity: str, term: int, w_kill: float) -> dict[str, float | None]:
        """The new leader's own account of its takeover (wall clock, relative to the kill;
        the replica adds it to its record after its first bind): the key found free, the
        term won, the Scheduler leading, the first bind accepted. Free of this process's
        delays in seeing events, which a loaded machine makes large."""
        namespace, name = LEASE.split("/")
        key = replica_key(namespace, name, identity)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            kv = await storage.get(key)
            term_rec = json.loads(kv.value).get("last_term", {}) if kv is not None else {}
            if term_rec.get("token") == term:
                return {
                    f"{name}_s": term_rec[f"{name}_at"] - w_kill
                    for name in ("free", "acquired", "started", "first_bind")
                }
            await asyncio.sleep(0.05)
        return dict.fromkeys(("free_s", "acquired_s", "started_s", "first_bind_s"))

    async def first_bind_after(
        since: float, old_term: int, timeout: float, *, same: bool = False
    ) -> tuple[float, int]:
        """The first bind seen after `since` of a term other than `old_term` (or, with
        `same`, of that very term)."""
        deadline = time.monotonic() + timeout
        while True:
            hit = next(
                (
                    (t, term)
                    for t, term in binds
                    if t >= since and (term == old_term if same else term != old_term)
                ),
                None,
            )
            if hit is not None:
                return hit
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CliError(f"bench: no bind by a new leader within {timeout:.0f}s of a kill")
            new_bind.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(new_bind.wait(), remaining)

    async def replicas_back(n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(await chaos.replicas(storage, LEASE)) < n:
            if time.monotonic() > deadline:
                raise CliError(
                    f"bench: fewer than {n} scheduler replicas {timeout:.0f}s after a kill"
                )
            await asyncio.sleep(0.1)

    tasks = [
        asyncio.create_task(load.generate()),
        asyncio.create_task(watch()),
        asyncio.create_task(watch_key()),
    ]
    rows = []
    try:
        await chaos.wait_leader(storage, LEASE, 60)
        await first_bind_after(time.monotonic(), 0, 60)
        for k in range(args.kills):
            await replicas_back(args.schedulers, 120)
            target = await chaos.wait_leader(storage, LEASE, 60)
            # the leader has bound under its term: it is a steady leader, not a new one
            await first_bind_after(0, target.term, 60, same=True)
            t_kill, w_kill = time.monotonic(), time.time()
            await chaos.kill(target)
            new = await chaos.wait_leader(
                storage, LEASE, 10 * lease_duration + 30, not_term=target.term
            )
            t_elected = time.monotonic()
            t_bind, term = await first_bind_after(t_kill, target.term, 10 * lease_duration + 30)
            split = key_split(t_kill, target.term, term)
            leader_split = {
                f"leader_{k}": v for k, v in (await term_split(new.identity, term, w_kill)).items()
            }
            row = {
                "kill": k + 1,
                "takeover_s": t_elected - t_kill,
                "first_bind_s": t_bind - t_kill,
                "old_term": target.term,
                "new_term": term,
                "new_leader": new.identity,
                # ≠ new_term when the first leader after the kill lost its term unbound
                "takeover_term": new.term,
                **split,
                **leader_split,
            }
            rows.append(row)
            print(
                f"  kill {k + 1:>2}: takeover {row['takeover_s']:.2f}s, "
                f"first bind by the new leader {row['first_bind_s']:.2f}s "
                f"(key deleted {_secs(split['key_deleted_s'])}, "
                f"new key {_secs(split['key_created_s'])}); the new leader's own times: "
                f"key free {_secs(leader_split['leader_free_s'])}, won "
                f"{_secs(leader_split['leader_acquired_s'])}, leading "
                f"{_secs(leader_split['leader_started_s'])}, first bind accepted "
                f"{_secs(leader_split['leader_first_bind_s'])}",
                flush=True,
            )
    finally:
        load.stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
        await storage.close()
    return rows


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _secs(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}s"


async def _measure_apiserver(home: str, args: argparse.Namespace) -> list[dict]:
    from kubera import chaos
    from kubera.launch.context import Context
    from protos.kubera.v1 import core_pb2
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client, Handlers, Informer

    # Its broken watch at each kill is the point, not news: keep the figures readable.
    logging.getLogger("services.client.informer").setLevel(logging.ERROR)

    def load() -> Context:
        return Context(**json.loads((Path(home) / "context.json").read_text()))

    POD = BY_KIND["Pod"]
    ns = "failover"
    client = Client(load().apiserver, timeout=10)
    await client.create(core_pb2.Namespace(metadata={"name": ns}))
    bound_at: list[float] = []  # monotonic times binds were seen (through the informer)
    pods = _PodLoad(client, ns, args.rate)

    def on_pod(pod) -> None:  # type: ignore[no-untyped-def]
        if pod.spec.node_name and pods.bound(pod.metadata.name):
            bound_at.append(time.monotonic())

    informer = Informer(client, POD, namespace=ns)
    informer.add_handlers(Handlers(on_add=on_pod, on_update=lambda _o, p: on_pod(p)))

    async def bound_since(t: float, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not (bound_at and bound_at[-1] >= t):
            if time.monotonic() > deadline:
                raise CliError(f"bench: the load was not bound again within {timeout:.0f}s")
            await asyncio.sleep(0.05)

    tasks = [asyncio.create_task(pods.generate()), asyncio.create_task(informer.run())]
    rows = []
    try:
        await bound_since(time.monotonic(), 60)
        for k in range(args.kills):
            r = await chaos.kill_apiserver(load(), timeout=60, context_loader=load)
            # steady again: the load's pods are bound through the new apiserver
            await bound_since(time.monotonic(), 60)
            row = {
                "kill": k + 1,
                "first_write_s": r.first_write_s,
                "first_bind_s": r.first_bind_s,
                "pid": r.pid,
                "new_pid": r.new_pid,
            }
            rows.append(row)
            bind = f"{r.first_bind_s:.2f}s" if r.first_bind_s is not None else "none"
            print(
                f"  kill {k + 1:>2}: first write {r.first_write_s:.2f}s, first bind {bind}",
                flush=True,
            )
            await asyncio.sleep(1.0)  # a steady second of load before the next kill
    finally:
        pods.stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
    return rows


def _check(cluster: Cluster) -> dict:
    """`kubera check --json` on the bench's cluster: its verdict (or why there is none)."""
    r = cluster.run("check", "--json", "--settle", "30s", timeout=300)
    try:
        return json.loads(r.stdout[r.stdout.index("{") :])  # type: ignore[no-any-return]
    except ValueError:
        return {"ok": False, "error": (r.stderr or r.stdout).strip()[-500:]}


def _apiserver_report(rows: list[dict]) -> dict:
    writes = [r["first_write_s"] for r in rows]
    binds = [r["first_bind_s"] for r in rows if r["first_bind_s"] is not None]
    report = {
        "target": "apiserver",
        "kills": len(rows),
        "first_write_median_s": statistics.median(writes),
        "first_write_max_s": max(writes),
        "first_bind_median_s": statistics.median(binds) if binds else None,
        "first_bind_max_s": max(binds) if binds else None,
        "kills_without_bind": len(rows) - len(binds),
        "rows": rows,
    }
    bind = (
        f"median {report['first_bind_median_s']:.2f}s, max {report['first_bind_max_s']:.2f}s"
        if binds
        else "none seen"
    )
    print(
        f"apiserver SIGKILL over {len(rows)} kills: → first write median "
        f"{report['first_write_median_s']:.2f}s, max {report['first_write_max_s']:.2f}s; "
        f"→ first bind {bind}"
    )
    return report


def cmd_bench_failover(args: argparse.Namespace) -> int:
    from services.api.machinery.duration import parse_duration

    if args.target == "apiserver":
        return _bench_apiserver(args)
    if args.kills < 1 or args.schedulers < 2:
        raise CliError("bench failover: needs --kills >= 1 and --schedulers >= 2")
    if args.k8s_defaults:
        flags = ("15s", "10s", "2s")
    else:
        flags = (args.lease_duration, args.renew_deadline, args.retry_period)
    timings = tuple(parse_duration(f) for f in flags)
    cluster = Cluster()
    try:
        up = cluster.up(
            "--nodes", str(args.nodes),
            "--schedulers", str(args.schedulers),
            "--no-controllers",
            "--leader-elect-lease-duration", flags[0],
            "--leader-elect-renew-deadline", flags[1],
            "--leader-elect-retry-period", flags[2],
        )  # fmt: skip
        print(
            f"failover: {args.schedulers} scheduler replicas, leases {flags[0]} / renew "
            f"{flags[1]} / retry {flags[2]}, {args.nodes} hollow nodes, {args.rate:g} pods/s "
            f"(up in {up:.1f}s)",
            flush=True,
        )
        rows = asyncio.run(_measure(cluster.context, args, timings))  # type: ignore[arg-type]
        verdict = _check(cluster) if args.check else None
    finally:
        cluster.down()
    first = [r["first_bind_s"] for r in rows]
    take = [r["takeover_s"] for r in rows]
    report = {
        "kills": len(rows),
        "lease_duration": flags[0],
        "renew_deadline": flags[1],
        "retry_period": flags[2],
        "first_bind_median_s": statistics.median(first),
        "first_bind_max_s": max(first),
        "first_bind_min_s": min(first),
        "takeover_median_s": statistics.median(take),
        "takeover_max_s": max(take),
        # Medians of each part, kill → …, as the new leader stamped them (None: unknown).
        "leader_split_median_s": {
            part: _median([r[f"leader_{part}_s"] for r in rows])
            for part in ("free", "acquired", "started", "first_bind")
        },
        "rows": rows,
    }
    if verdict is not None:
        report["check"] = verdict
        counts = verdict.get("counts", {})
        print(
            f"kubera check: {'OK' if verdict.get('ok') else 'FAILED'}, violations "
            f"{verdict.get('violation_counts', {})}, fenced binds by holder "
            f"{len(counts.get('binds_by_holder', {}))} holders / "
            f"{sum(counts.get('binds_by_holder', {}).values())} binds"
        )
    split = report["leader_split_median_s"]
    print(
        "the new leader's own times, medians from the kill: key free "
        f"{_secs(split['free'])}, term won {_secs(split['acquired'])}, Scheduler leading "
        f"{_secs(split['started'])}, first bind accepted {_secs(split['first_bind'])}"
    )
    print(
        f"leader SIGKILL → first bind by the new leader over {len(rows)} kills: "
        f"median {report['first_bind_median_s']:.2f}s, max {report['first_bind_max_s']:.2f}s "
        f"(min {report['first_bind_min_s']:.2f}s); takeover median "
        f"{report['takeover_median_s']:.2f}s, max {report['takeover_max_s']:.2f}s"
    )
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2))
    return 0


def _bench_apiserver(args: argparse.Namespace) -> int:
    if args.kills < 1 or args.schedulers < 1:
        raise CliError("bench failover: needs --kills >= 1 and --schedulers >= 1")
    cluster = Cluster()
    try:
        up = cluster.up(
            "--nodes", str(args.nodes),
            "--schedulers", str(args.schedulers),
            "--no-controllers",
        )  # fmt: skip
        print(
            f"failover: apiserver kills, {args.schedulers} scheduler replica(s), {args.nodes} "
            f"hollow nodes, {args.rate:g} pods/s (up in {up:.1f}s)",
            flush=True,
        )
        rows = asyncio.run(_measure_apiserver(str(cluster.home), args))
    finally:
        cluster.down()
    report = _apiserver_report(rows)
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2))
    return 0
