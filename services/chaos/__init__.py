"""Chaos and its proof: the partition relay a replica's traffic goes through, the control
service `kubera chaos` drives, and the checker that replays etcd's history of a run.

Public API (other components and the layers above import these from this package): `Relay`
and `serve_control` / `add_control` (a replica's partition relays and their control
service, which node pools and the apiserver serve too, and `replica_records`, what the
replicas registered), `self_report` / `is_local` (a
process's own figures and whether its PID is in our PID namespace), and the
history check `check_history` / `wait_settled` / `HistoryCompactedError` with its
`Verdict`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.chaos.control import (
        add_control,
        control_status,
        replica_records,
        serve_control,
    )
    from services.chaos.history import HistoryCompactedError, check_history, wait_settled
    from services.chaos.process import is_local, self_report
    from services.chaos.relay import Relay
    from services.chaos.verdict import Verdict

__all__ = [
    "HistoryCompactedError",
    "Relay",
    "Verdict",
    "add_control",
    "check_history",
    "control_status",
    "is_local",
    "replica_records",
    "self_report",
    "serve_control",
    "wait_settled",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "serve_control": "services.chaos.control",
        "add_control": "services.chaos.control",
        "control_status": "services.chaos.control",
        "replica_records": "services.chaos.control",
        "is_local": "services.chaos.process",
        "self_report": "services.chaos.process",
        "HistoryCompactedError": "services.chaos.history",
        "check_history": "services.chaos.history",
        "wait_settled": "services.chaos.history",
        "Relay": "services.chaos.relay",
        "Verdict": "services.chaos.verdict",
    },
)
