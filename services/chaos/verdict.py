"""What the safety checker (checker.py) finds: the verdict of a run, its violations and
counts, as values the CLI (`kubera check`) prints or writes as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PodRef:
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name} (uid {self.uid})"


@dataclass(frozen=True, slots=True)
class Violation:
    check: str
    #: The revision at which the violation happened (for lost-pod: the pod's last change).
    revision: int
    message: str
    pods: tuple[PodRef, ...] = ()
    node: str = ""
    #: Every revision the message refers to (e.g. both binds of a double bind).
    revisions: tuple[int, ...] = ()
    #: The etcd key concerned, where one is (corrupt-object).
    key: str = ""

    def __str__(self) -> str:
        return f"[{self.check}] revision {self.revision}: {self.message}"


@dataclass(slots=True)
class Counts:
    first_revision: int = 0
    last_revision: int = 0
    #: Revisions that had events under the replayed prefix.
    revisions: int = 0
    events: int = 0
    #: Pods (UIDs) that appeared in the history.
    pods_created: int = 0
    pods_deleted: int = 0
    binds: int = 0
    binds_fenced: int = 0
    binds_allocation: int = 0
    binds_unfenced: int = 0
    #: Distinct node names that existed at some revision.
    nodes: int = 0
    #: Per election key: how many terms (distinct create_revisions) it had.
    leader_terms: dict[str, int] = field(default_factory=dict)
    #: Per leader identity: the fenced binds made under its terms.
    binds_by_holder: dict[str, int] = field(default_factory=dict)
    pods_at_end: int = 0
    pods_bound_at_end: int = 0
    #: DRA devices newly held by a claim (exclusively), over the run.
    device_allocations: int = 0


@dataclass(slots=True)
class Verdict:
    counts: Counts
    #: The violations found, up to the checker's `max_violations`.
    violations: list[Violation]
    #: Every violation found per check (including any beyond `max_violations`).
    violation_counts: dict[str, int]
    allow_unfenced: bool = False

    @property
    def ok(self) -> bool:
        return not any(self.violation_counts.values())

    @property
    def total_violations(self) -> int:
        return sum(self.violation_counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "allow_unfenced": self.allow_unfenced,
            "counts": asdict(self.counts),
            "violation_counts": dict(self.violation_counts),
            "violations": [
                {
                    "check": v.check,
                    "revision": v.revision,
                    "revisions": list(v.revisions),
                    "node": v.node,
                    "key": v.key,
                    "pods": [asdict(p) for p in v.pods],
                    "message": v.message,
                }
                for v in self.violations
            ],
        }

    def lines(self) -> list[str]:
        """The human report: counts, each violation, then OK / FAILED."""
        c = self.counts
        out = [
            f"revisions: {c.first_revision}..{c.last_revision} ({c.revisions} with changes, "
            f"{c.events} events)",
            f"pods: {c.pods_created} created, {c.pods_deleted} deleted, {c.pods_at_end} at "
            f"the end ({c.pods_bound_at_end} bound)",
            f"binds: {c.binds} ({c.binds_fenced} fenced, {c.binds_allocation} allocation, "
            f"{c.binds_unfenced} unfenced)",
            f"nodes: {c.nodes}",
        ]
        if c.device_allocations:
            out.append(f"device allocations: {c.device_allocations}")
        for key, terms in sorted(c.leader_terms.items()):
            out.append(f"leader terms: {key}: {terms}")
        for holder, n in sorted(c.binds_by_holder.items()):
            out.append(f"fenced binds by {holder}: {n}")
        out.extend(str(v) for v in self.violations)
        shown = len(self.violations)
        if self.total_violations > shown:
            out.append(f"... and {self.total_violations - shown} more violations")
        if self.ok:
            unfenced = " (unfenced binds allowed)" if self.allow_unfenced else ""
            through = " or through a node's allocation record" if c.binds_allocation else ""
            devices = ", no device given twice" if c.device_allocations else ""
            out.append(
                f"OK: {c.binds} binds of {c.pods_created} pods over {c.revisions} revisions: "
                f"no double bind, no overcommit, every bind by the leader of record"
                f"{through}{unfenced}, no pod lost{devices}"
            )
        else:
            by = ", ".join(f"{n} {k}" for k, n in self.violation_counts.items() if n)
            out.append(f"FAILED: {self.total_violations} violations ({by})")
        return out
