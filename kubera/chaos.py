"""Fault injection on a running cluster, for `kubera chaos` and the benchmarks: find the
leader of an election from etcd, then kill it (SIGKILL), pause it (SIGSTOP … SIGCONT),
cut it off from etcd and the apiserver (its partition relays, through its chaos control
RPC), restart etcd, kill the apiserver (and time its recovery), kill a node pool, kill or
revive hollow nodes (through the pools' gRPC API), or run a scripted mix of these
(`RunPlan`). `kubera.cli.chaos` is the command line over these; the benches use them too.

The leader of record is the value of the election key (`/kubera/leaderelection/<ns>/<name>`);
replicas register their process id and control address under `/kubera/replicas/…`
(services/hosts/replica.py), so nothing here needs Ray.

A PID is signalled only when its process is in our PID namespace (same kernel boot id
and PID namespace as this process: services.chaos.is_local, from the replica's record or
the node pool's Status) — the most faithful fault, and checked against the process's
start time so a reused PID is never hit. A process elsewhere (another machine of a Ray
cluster, another container) is killed or paused through its chaos control RPCs (Kill,
Pause), which it carries out on itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import signal
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kubera.errors import CliError
from kubera.launch import procs
from kubera.launch.context import Context, load_context
from kubera.launch.credentials import admin_channel
from protos.kubera.v1 import chaos_pb2, chaos_pb2_grpc, core_pb2
from protos.kubera.v1 import nodepool_pb2 as npb
from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc
from services.api.machinery.errors import AlreadyExistsError, ApiError
from services.api.machinery.kinds import BY_KIND
from services.chaos import control_status, is_local, replica_records
from services.client import Client, first_address
from services.storage import StorageUnavailableError
from services.storage.etcd import EtcdStorage
from services.storage.keys import ELECTION_PREFIX

#: Where the chaos actions report progress (`kubera chaos` prints it).
Say = Callable[[str], None]


def _say(line: str) -> None:
    print(line, flush=True)


#: Seconds to wait for a component's chaos control to answer.
CONTROL_TIMEOUT = 5.0

#: `--component` names → the Lease their replicas elect on.
COMPONENT_LEASES = {
    "scheduler": "kube-system/kube-scheduler",
    "controller-manager": "kube-system/kube-controller-manager",
}


@dataclass(frozen=True)
class Leader:
    lease: str  # namespace/name
    identity: str
    term: int  # the election key's create_revision: the fencing token of the term
    pid: int
    control: str
    record: dict


async def replicas(storage: EtcdStorage, lease: str = "") -> list[dict]:
    """The live replicas registered for `lease` ("namespace/name"; "": every lease), each
    record with its "lease" added (records of dead processes skipped)."""
    found = await replica_records(storage, lease)
    live = await asyncio.gather(*(replica_alive(rec) for rec in found))
    return [rec for rec, ok in zip(found, live, strict=True) if ok]


async def replica_alive(rec: dict) -> bool:
    """Whether a replica record's process runs: in /proc when it is in our PID namespace
    (its start time checked), else whether its chaos control answers as that process."""
    pid = int(rec.get("pid", 0))
    if is_local(rec):
        return procs.alive(pid, int(rec.get("start_ticks", 0)))
    answer = await status(str(rec.get("control", "")), timeout=2.0)
    return answer is not None and answer.pid == pid


async def status(address: str, timeout: float = CONTROL_TIMEOUT) -> chaos_pb2.StatusResponse | None:
    """A process's chaos control Status (its figures, where it runs), or None when it
    does not answer within `timeout`."""
    return await control_status(address, timeout)


async def leader(storage: EtcdStorage, lease: str) -> Leader | None:
    """The current holder of `lease`'s election and its process, or None."""
    kv = await storage.get(f"{ELECTION_PREFIX}{lease}")
    if kv is None:
        return None
    identity = kv.value.decode(errors="replace")
    for rec in await replicas(storage, lease):
        if rec.get("identity") == identity:
            return Leader(lease, identity, kv.create_revision, int(rec["pid"]), rec["control"], rec)
    return None


async def wait_leader(
    storage: EtcdStorage, lease: str, timeout: float, *, not_term: int = 0
) -> Leader:
    """The leader of `lease` once there is one (of a term other than `not_term`)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = await leader(storage, lease)
        except StorageUnavailableError:
            found = None  # etcd restarting (another fault of the same run): ask again
        if found is not None and found.term != not_term:
            return found
        if time.monotonic() >= deadline:
            raise CliError(
                f"no leader for Lease {lease} within {timeout:g}s"
                + (" (is it running in shared-state mode, or not at all?)" if not found else "")
            )
        await asyncio.sleep(0.05)


def local_pid(target: Leader) -> int:
    """The leader's PID when it may be signalled from here (in our PID namespace and still
    the process that registered); 0 when it runs elsewhere. A local process that is gone
    is an error."""
    if not is_local(target.record):
        return 0
    if not procs.alive(target.pid, int(target.record.get("start_ticks", 0))):
        raise CliError(f"leader {target.identity} (pid {target.pid}) is not running")
    return target.pid


async def kill(target: Leader) -> None:
    """SIGKILL the leader: a signal when it is local, its chaos control's Kill otherwise."""
    pid = local_pid(target)
    if pid:
        os.kill(pid, signal.SIGKILL)
        return
    async with admin_channel(target.control) as ch:
        await chaos_pb2_grpc.ChaosStub(ch).Kill(chaos_pb2.KillRequest(), timeout=CONTROL_TIMEOUT)


async def pause(target: Leader, seconds: float) -> None:
    """SIGSTOP, wait, SIGCONT (SIGCONT even if the wait is cancelled). A leader on another
    machine pauses itself (its chaos control's Pause: its own watchdog resumes it); this
    waits the pause out the same way."""
    pid = local_pid(target)
    if not pid:
        async with admin_channel(target.control) as ch:
            await chaos_pb2_grpc.ChaosStub(ch).Pause(
                chaos_pb2.PauseRequest(seconds=seconds), timeout=CONTROL_TIMEOUT
            )
        await asyncio.sleep(seconds)
        return
    os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


async def partition(target: Leader, seconds: float) -> float:
    """Cut the leader off from etcd and the apiserver for `seconds` (its relays hold all
    traffic, then deliver it); returns the seconds the partition lasts."""
    async with admin_channel(target.control) as ch:
        resp = await chaos_pb2_grpc.ChaosStub(ch).Partition(
            chaos_pb2.PartitionRequest(seconds=seconds), timeout=10
        )
    return resp.until_seconds_from_now


def restart_etcd(ctx: Context, timeout: float = 60.0) -> int:
    """SIGTERM the embedded etcd (SIGKILL can corrupt etcd 3.5.0–3.5.2's data, see
    etcd-io/etcd#13766); the supervisor starts it again on the same ports and data dir.
    Returns the new etcd's PID once the supervisor has recorded it and it answers."""
    pid = ctx.pids.get("etcd")
    if not pid:
        raise CliError(
            "this cluster's etcd was not started by kubera (--etcd): restart it yourself"
        )
    if not procs.alive(pid, ctx.started.get(str(pid), 0)):
        raise CliError(f"etcd (pid {pid}) is not running")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        new = load_context().pids.get("etcd", 0)
        if new and new != pid and procs.alive(new):
            asyncio.run(_apiserver_reaches_etcd(ctx.apiserver, deadline))
            return new
    raise CliError(f"etcd did not come back within {timeout:g}s (see the supervisor's log)")


async def _apiserver_reaches_etcd(address: str, deadline: float) -> None:
    """Until the apiserver's Health (an etcd read) succeeds: etcd is back only when the
    apiserver, whose etcd channel redials on its own, can read it again."""
    client = Client(address)
    try:
        await _until_ok(
            lambda: client.health(timeout=1.0),
            deadline,
            "the apiserver does not reach the restarted etcd",
            interval=0.05,
        )
    finally:
        await client.close()


async def _until_ok(
    call: Callable[[], Awaitable[object]], deadline: float, failure: str, *, interval: float
) -> None:
    """Await `call()` until it succeeds (an AlreadyExists counts: an earlier try landed);
    an ApiError past `deadline` is a CliError starting with `failure`."""
    while True:
        try:
            await call()
            return
        except AlreadyExistsError:
            return
        except ApiError as e:
            if time.monotonic() >= deadline:
                raise CliError(f"{failure}: {e}") from None
            await asyncio.sleep(interval)


def kill_pool(ctx: Context, name: str) -> dict:
    pools = {p["name"]: p for p in ctx.node_pools}
    if name.isdigit() and f"pool-{name}" in pools:
        name = f"pool-{name}"
    pool = pools.get(name)
    if pool is None:
        raise CliError(f"no node pool {name!r}; this cluster has: {', '.join(pools) or 'none'}")
    pid = int(pool["pid"])
    # Where it runs: its own word (Status on its gRPC port), else what the context recorded.
    answer = asyncio.run(status(str(pool.get("address", ""))))
    where: object = answer if answer is not None and answer.pid == pid else pool
    if is_local(where):
        started = int(ctx.started.get(str(pid), 0) or pool.get("start_ticks", 0))
        if not procs.alive(pid, started):
            raise CliError(f"node pool {name} (pid {pid}) is not running")
        os.kill(pid, signal.SIGKILL)
        return pool
    if answer is None or answer.pid != pid:
        raise CliError(f"node pool {name} (pid {pid} at {pool.get('address')}) does not answer")
    asyncio.run(_kill_at(str(pool["address"])))
    return pool


async def _kill_at(address: str) -> None:
    async with admin_channel(address) as ch:
        await chaos_pb2_grpc.ChaosStub(ch).Kill(chaos_pb2.KillRequest(), timeout=CONTROL_TIMEOUT)


#: Where kill-apiserver's probe pod goes (it is deleted once the recovery is timed).
PROBE_NAMESPACE = "default"
PODS_PREFIX = BY_KIND["Pod"].prefix()


@dataclass(frozen=True)
class ApiServerRecovery:
    """One kill of the apiserver and how the cluster came back, in seconds from the kill."""

    pid: int  # the process killed
    new_pid: int  # the process serving afterwards (0: not recorded within the wait)
    address: str
    #: The first write through the apiserver that succeeded (the probe pod's create).
    first_write_s: float
    #: The first bind (a pod's nodeName set) written after the kill; None: none in time.
    first_bind_s: float | None


async def apiserver_pid(
    ctx: Context, timeout: float, load: Callable[[], Context] | None = None
) -> tuple[int, Context]:
    """The apiserver actor's running process (checked against its recorded start time)
    and the context naming it, waiting up to `timeout` for the supervisor to record a
    restarted one."""
    if not ctx.apiserver_pid:
        raise CliError(
            "this cluster's context names no apiserver process (started by an older kubera?)"
        )
    deadline = time.monotonic() + timeout
    while True:
        pid = ctx.apiserver_pid
        if procs.alive(pid, ctx.started.get(str(pid), 0)) or await serving_elsewhere(
            first_address(ctx.apiserver), pid
        ):
            return pid, ctx
        if load is None or time.monotonic() >= deadline:
            raise CliError(f"the apiserver (pid {pid}) is not running (still restarting?)")
        await asyncio.sleep(0.05)
        with contextlib.suppress(Exception):  # the supervisor may be rewriting it
            ctx = load()


async def serving_elsewhere(address: str, pid: int) -> bool:
    """Whether process `pid` of another PID namespace (another machine, another
    container) serves `address` (its chaos control's Status says so)."""
    answer = await status(address, timeout=2.0)
    return answer is not None and answer.pid == pid and not is_local(answer)


def _probe_pod(name: str) -> core_pb2.Pod:
    pod = core_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace = name, PROBE_NAMESPACE
    pod.metadata.labels["kubera.io/chaos-probe"] = "true"
    c = pod.spec.containers.add()
    c.name, c.image = "probe", "registry.k8s.io/pause:3.9"
    c.resources.requests["cpu"] = "1m"
    c.resources.requests["memory"] = "1Mi"
    return pod


def is_bind(kv_value: bytes, prev_value: bytes | None) -> bool:
    """Whether a pod write set spec.nodeName (a bind): the new value has it, the old not."""
    new, old = core_pb2.Pod(), core_pb2.Pod()
    try:
        new.ParseFromString(kv_value)
        if prev_value is not None:
            old.ParseFromString(prev_value)
    except Exception:  # noqa: BLE001 - an undecodable value is no bind we can time
        return False
    return bool(new.spec.node_name) and not old.spec.node_name


async def _first_bind(storage: EtcdStorage, after_revision: int) -> float:
    """The monotonic time at which the first bind written after `after_revision` is seen."""
    async for batch in storage.watch(PODS_PREFIX, after_revision + 1):
        for e in batch.events:
            if e.type == "PUT" and is_bind(e.kv.value, e.prev.value if e.prev else None):
                return time.monotonic()
    raise CliError("the etcd watch for binds ended")


async def _first_write(client: Client, pod: core_pb2.Pod, deadline: float) -> None:
    """Create `pod` until it is created (an AlreadyExists means an earlier try was)."""
    await _until_ok(
        lambda: client.create(pod),
        deadline,
        "no write through the apiserver succeeded after its kill",
        interval=0.02,
    )


async def kill_apiserver(
    ctx: Context,
    *,
    timeout: float = 60.0,
    bind_timeout: float = 30.0,
    context_loader: Callable[[], Context] | None = None,
) -> ApiServerRecovery:
    """SIGKILL the apiserver actor's process, then time the cluster's recovery: the first
    write that succeeds through the apiserver's address (a probe pod's create, retried)
    and the first bind written to etcd after the kill (the probe's, or any pod's). The
    bind is read from etcd directly, so it is timed where it happens, not when a watch
    through the restarted apiserver delivers it. Returns once the supervisor has recorded
    the new process too (`new_pid`), so the next kill finds it."""

    load = context_loader or load_context
    pid, ctx = await apiserver_pid(ctx, timeout, load)
    started = ctx.started.get(str(pid), 0)
    # the first replica's (`kubera up --apiservers K`); the probe's client may use any
    killed = first_address(ctx.apiserver)
    storage = EtcdStorage(ctx.etcd, timeout=5)
    await storage.connect()
    client = Client(ctx.apiserver, timeout=2)
    name = f"kubera-chaos-probe-{secrets.token_hex(4)}"
    try:
        # apiserver_pid() found it in our /proc (its start time checked) or answering from
        # another PID namespace
        elsewhere = not procs.alive(pid, started)
        if elsewhere:
            await _kill_at(killed)  # it kills itself: its PID is not ours to signal
        else:
            os.kill(pid, signal.SIGKILL)
        t_kill = time.monotonic()
        # gone before we read the revision it left
        while await serving_elsewhere(killed, pid) if elsewhere else procs.alive(pid, started):
            await asyncio.sleep(0.005)
        # Binds after this revision were written by the apiserver's next incarnation.
        revision = await storage.revision()
        bind = asyncio.create_task(_first_bind(storage, revision))
        try:
            await _first_write(client, _probe_pod(name), t_kill + timeout)
            t_write = time.monotonic()
            t_bind: float | None = None
            # none in time, or etcd itself went away meanwhile: no bind to report
            with contextlib.suppress(TimeoutError, StorageUnavailableError):
                t_bind = await asyncio.wait_for(asyncio.shield(bind), bind_timeout)
        finally:
            bind.cancel()
            await asyncio.gather(bind, return_exceptions=True)
        with contextlib.suppress(ApiError):
            await client.delete(BY_KIND["Pod"], name, PROBE_NAMESPACE, grace_period_seconds=0)
        new_pid = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                new_pid = load().apiserver_pid
            if new_pid and new_pid != pid:
                break
            new_pid = 0
            await asyncio.sleep(0.05)
    finally:
        await client.close()
        await storage.close()
    return ApiServerRecovery(
        pid=pid,
        new_pid=new_pid,
        address=killed,
        first_write_s=t_write - t_kill,
        first_bind_s=None if t_bind is None else t_bind - t_kill,
    )


# ------------------------------------------------------------ hollow nodes


async def set_alive(pools: list[dict], nodes: list[str], alive: bool) -> tuple[set[str], set[str]]:
    """Kill or revive hollow nodes, asking every pool; returns (changed, already so)."""
    changed: set[str] = set()
    unchanged: set[str] = set()

    async def one(address: str) -> None:
        async with admin_channel(address) as ch:
            resp = await npb_grpc.NodePoolStub(ch).SetAlive(
                npb.SetAliveRequest(nodes=nodes, alive=alive), timeout=15
            )
            changed.update(resp.changed)
            unchanged.update(resp.unchanged)

    await asyncio.gather(*(one(p["address"]) for p in pools))
    return changed, unchanged


# ---------------------------------------------------------- leader faults


async def connect_storage(ctx: Context) -> EtcdStorage:
    """A connected client of the cluster's etcd (5 s timeout); the caller closes it."""
    storage = EtcdStorage(ctx.etcd, timeout=5)
    await storage.connect()
    return storage


async def leader_fault(
    ctx: Context, lease: str, fault: str, seconds: float, wait: float, say: Say = _say
) -> str:
    """Kill, pause or partition the current leader of `lease`; a line saying what was done."""
    storage = await connect_storage(ctx)
    try:
        target = await wait_leader(storage, lease, wait)
    finally:
        await storage.close()
    who = f"leader {target.identity} (pid {target.pid}, term {target.term}) of Lease {lease}"
    if fault == "kill":
        await kill(target)
        return f"killed {who}"
    if fault == "pause":
        say(f"pausing {who} for {seconds:g}s")
        await pause(target, seconds)
        return f"resumed {who}"
    lasts = await partition(target, seconds)
    return f"partitioned {who} from etcd and the apiserver for {lasts:g}s"


def describe_recovery(r: ApiServerRecovery) -> str:
    """One line: the kill, the first write and bind after it, the new PID."""
    bind = f"{r.first_bind_s:.2f}s" if r.first_bind_s is not None else "none within the wait"
    back = f"pid {r.new_pid}" if r.new_pid else "its new pid not recorded yet"
    return (
        f"killed apiserver (pid {r.pid}) at {r.address}: first successful write after "
        f"{r.first_write_s:.2f}s, first bind after {bind}; back as {back}"
    )


# ------------------------------------------------------------- a scripted run


#: `chaos run --kinds`: leader faults (kill, pause, partition) and cluster faults.
RUN_KINDS = ("kill", "pause", "partition", "restart-etcd", "kill-apiserver")


@dataclass(frozen=True)
class RunPlan:
    """A scripted mix of faults (`kubera chaos run`)."""

    #: Fault kinds to draw from (RUN_KINDS).
    kinds: tuple[str, ...]
    #: How many faults, one every `interval` seconds.
    faults: int
    interval: float
    #: How long a pause or partition lasts; 0: 1.5 × the Lease's duration.
    seconds: float
    #: Seed of the draw, so a run can be repeated.
    seed: int
    #: Seconds to wait for a leader (and for a new one after each fault).
    wait: float


async def run(ctx: Context, plan: RunPlan, lease: str, say: Say = _say) -> dict[str, int]:
    """Run `plan` against the leader of `lease` and the cluster; faults done per kind. Each
    leader fault waits for the next leader, so the next fault hits a new one."""
    rng = random.Random(plan.seed)
    storage = await connect_storage(ctx)
    kinds = list(plan.kinds)
    counts = dict.fromkeys(kinds, 0)
    recoveries: list[ApiServerRecovery] = []
    background: set[asyncio.Task[None]] = set()
    # Read once, while the apiserver is surely up (not during one of our kills).
    published = 0.0
    if not plan.seconds and any(k in ("pause", "partition") for k in kinds):
        published = await lease_seconds(ctx, lease)
    try:
        for i in range(plan.faults):
            kind = rng.choice(kinds)
            ctx = load_context()  # etcd's and the apiserver's PIDs change with their restarts
            if kind == "restart-etcd":
                pid = await asyncio.to_thread(restart_etcd, ctx)
                say(f"[{i + 1}/{plan.faults}] restarted etcd (pid {pid})")
                await storage.close()
                storage = await connect_storage(ctx)
            elif kind == "kill-apiserver":
                recovery = await kill_apiserver(ctx, timeout=plan.wait)
                recoveries.append(recovery)
                say(f"[{i + 1}/{plan.faults}] {describe_recovery(recovery)}")
            else:
                target = await wait_leader(storage, lease, plan.wait)
                seconds = plan.seconds or 1.5 * published
                who = f"{target.identity} (pid {target.pid}, term {target.term})"
                if kind == "kill":
                    await kill(target)
                    say(f"[{i + 1}/{plan.faults}] killed {who}")
                elif kind == "pause":
                    task = asyncio.create_task(pause(target, seconds))
                    background.add(task)
                    task.add_done_callback(background.discard)
                    say(f"[{i + 1}/{plan.faults}] paused {who} for {seconds:g}s")
                else:
                    await partition(target, seconds)
                    say(f"[{i + 1}/{plan.faults}] partitioned {who} for {seconds:g}s")
                # the next fault hits the next leader, not the one just hit
                await wait_leader(storage, lease, plan.wait + seconds, not_term=target.term)
            counts[kind] += 1
            if i + 1 < plan.faults:
                await asyncio.sleep(plan.interval)
    finally:
        for task in list(background):
            await task  # every paused process gets its SIGCONT
        await storage.close()
    if recoveries:
        say(recovery_summary(recoveries))
    return counts


def recovery_summary(recoveries: list[ApiServerRecovery]) -> str:
    """Median and max of kill → first write and kill → first bind over apiserver kills."""
    writes = [r.first_write_s for r in recoveries]
    binds = [r.first_bind_s for r in recoveries if r.first_bind_s is not None]
    line = (
        f"apiserver kills: {len(recoveries)}; kill → first write median "
        f"{statistics.median(writes):.2f}s, max {max(writes):.2f}s"
    )
    if binds:
        line += f"; kill → first bind median {statistics.median(binds):.2f}s, max {max(binds):.2f}s"
    missing = len(recoveries) - len(binds)
    return line + (f" ({missing} with no bind within the wait)" if missing else "")


async def lease_seconds(ctx: Context, lease: str) -> float:
    """The Lease's leaseDurationSeconds as published (15 if it has none yet)."""
    namespace, name = lease.split("/")
    async with Client(ctx.apiserver) as c:
        try:
            obj = await c.get(BY_KIND["Lease"], name, namespace)
        except ApiError:
            return 15.0
    return float(obj.spec.lease_duration_seconds or 15)  # type: ignore[attr-defined]
