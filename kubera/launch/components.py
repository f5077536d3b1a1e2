"""The supervisor's record of every component it started: which Ray node runs it, its
process, its addresses, its state and restarts. The supervisor refreshes it from Ray's
actor table in its wait loop and keeps it in the context file (`Context.components`),
where `kubera components` reads it (and asks each component itself whether it answers).

One record (a plain dict, as the context holds it):

    name        apiserver, scheduler, scheduler-0-1, controller-manager, pool-0, …
    kind        apiserver | scheduler | controller-manager | node-pool
    actor_id    Ray's actor id
    node_id     the Ray node it runs on, and that node's address (node_ip)
    pid         its process (on that node)
    state       alive | restarting | dead | pending (Ray's view)
    restarts    how often Ray re-created it
    address     its gRPC API (a controller-manager: its chaos control)
    control     a replica's chaos control; metrics: a scheduler's /metrics host:port
    identity    a replica's leader-election identity (this incarnation's)
    start_ticks, host, boot_id, pid_ns
                its process as it reports itself: start time (clock ticks since its
                machine's boot), hostname, kernel boot id, PID namespace — whether its
                pid may be signalled from here (services.chaos.is_local)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubera.launch.context import Context
from kubera.launch.ray import actor_id, actor_table

#: The fields a component's health() gives that the record keeps.
HEALTH_FIELDS = ("address", "control", "metrics", "identity")
#: A process's own report (services.chaos.self_report) that the record keeps as given.
PROCESS_FIELDS = ("pid", "start_ticks", "host", "boot_id", "pid_ns")


@dataclass
class Component:
    name: str
    kind: str
    handle: Any
    record: dict[str, Any] = field(default_factory=dict)
    #: The health() call in flight, and the process whose addresses the record holds.
    probe: Any = None
    known_pid: int = -1


class Components:
    def __init__(self) -> None:
        self.items: list[Component] = []

    def add(self, name: str, kind: str, handle: Any) -> Component:
        c = Component(
            name,
            kind,
            handle,
            record={
                "name": name,
                "kind": kind,
                "actor_id": actor_id(handle),
                "node_id": "",
                "node_ip": "",
                "pid": 0,
                "state": "pending",
                "restarts": 0,
                "address": "",
            },
        )
        self.items.append(c)
        return c

    def get(self, name: str) -> Component | None:
        return next((c for c in self.items if c.name == name), None)

    def records(self) -> list[dict[str, Any]]:
        return [dict(c.record) for c in self.items]

    def refresh(self, *, wait: float = 0.0, table: dict[str, dict[str, Any]] | None = None) -> bool:
        """Ray's view of every component (`table`, else read now), and the addresses of
        each new process (from its health(), asked once per process; with `wait`, waited
        for up to that long). Returns whether any record changed."""
        import ray

        if table is None:
            table = actor_table()
        changed = False
        for c in self.items:
            info = table.get(c.record["actor_id"])
            if info is not None:
                if (info["pid"], info["node_id"]) != (c.record["pid"], c.record["node_id"]):
                    for key in (*HEALTH_FIELDS, *PROCESS_FIELDS[1:]):  # asked anew below
                        c.record.pop(key, None)
                    c.record["address"] = ""
                for key, value in info.items():
                    if c.record.get(key) != value:
                        c.record[key] = value
                        changed = True
            if c.probe is None and c.record["state"] == "alive" and c.known_pid != c.record["pid"]:
                c.probe = c.handle.health.remote()
        probes = [c.probe for c in self.items if c.probe is not None]
        if probes and wait:
            ray.wait(probes, num_returns=len(probes), timeout=wait)
        for c in self.items:
            if c.probe is None:
                continue
            done, _ = ray.wait([c.probe], timeout=0)
            if not done:
                continue
            try:
                health = ray.get(c.probe)
            except Exception:  # noqa: BLE001 - died meanwhile: the next process is asked
                health = None
            c.probe = None
            changed |= self._take(c, health)
        return changed

    @staticmethod
    def _take(c: Component, health: Any) -> bool:
        """Record a health() answer when it is the current process's, once it serves: at
        its own API address when it has one (a scheduler, a pool, the apiserver), else at
        its chaos control (a controller-manager serves only that). A replica's control
        server is up before its API (Replica.open() comes first in start()): an answer
        with a control address but no API address yet is a half-started one, not one to
        keep (its record would name the control server as its API for good)."""
        if not isinstance(health, dict) or int(health.get("pid", 0)) != c.record["pid"]:
            return False
        serving = health["address"] if "address" in health else health.get("control")
        if not serving or health.get("started") is False:
            return False  # not (re)started yet: asked again on the next refresh
        c.known_pid = c.record["pid"]
        changed = False
        for key in HEALTH_FIELDS:
            value = health.get(key)
            if key == "address" and "address" not in health:
                value = health.get("control")  # a controller-manager serves only that
            if value and c.record.get(key) != value:
                c.record[key] = str(value)
                changed = True
        for key in PROCESS_FIELDS[1:]:
            value = health.get(key)
            if value and c.record.get(key) != value:
                c.record[key] = value
                changed = True
        return changed


def record_in_context(ctx: Context, records: list[dict[str, Any]]) -> list[str]:
    """Put the records in `ctx`, with what other commands dial: a restarted node pool's
    address and process (`kubera chaos kill-pool/kill-node/revive-node`), the first
    scheduler's (`kubera explain`), the apiserver's when another node took it. Returns a
    line for the supervisor's log per move."""
    said = []
    by_name = {r["name"]: r for r in records}
    for pool in ctx.node_pools:
        rec = by_name.get(pool["name"])
        if not rec or not rec.get("address"):
            continue  # not serving yet
        if (rec["address"], rec["pid"]) != (pool["address"], pool.get("pid")):
            if rec["pid"] != pool.get("pid"):
                ctx.started.pop(str(pool.get("pid")), None)
                ctx.started[str(rec["pid"])] = int(rec.get("start_ticks") or 0)
            pool["address"], pool["pid"] = rec["address"], rec["pid"]
            for key in PROCESS_FIELDS[1:]:
                pool[key] = rec.get(key, "")
            said.append(
                f"node pool {pool['name']} restarted: pid {rec['pid']} on Ray node "
                f"{rec['node_ip']} ({rec['node_id'][:8]}), serving {rec['address']}"
            )
    first = by_name.get("scheduler")
    if first and first.get("address"):
        ctx.scheduler = first["address"]
        ctx.scheduler_metrics = first.get("metrics", ctx.scheduler_metrics)
    apis = [r for r in records if r["kind"] == "apiserver"]
    if apis and all(r.get("address") for r in apis):
        address = ",".join(r["address"] for r in apis)
        if address != ctx.apiserver:
            # Another node took an apiserver replica (its own died): the CLI follows the
            # new address; the components started with the old one keep dialling it (see
            # placement.py), or fail over to another replica.
            said.append(f"apiserver moved: {ctx.apiserver} -> {address}")
            ctx.apiserver = address
            for entry in ctx.apiservers:
                rec = by_name.get(entry.get("name", ""))
                if rec is not None:
                    entry["address"] = rec["address"]
    ctx.components = records
    return said
