"""Leader election on etcd with a fencing token, in client-go's shape.

`LeaderElector(storage, config, callbacks).run(stop)` campaigns for `config.key`, runs
`callbacks.on_started_leading(term_over)` while it leads, and exposes `fencing_token` —
(key, create_revision) — for every write only the leader may make. See elector.py for the
state machine and lock.py for the etcd transactions.
"""

from services.leaderelection.config import (
    JITTER_FACTOR,
    Callbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
)
from services.leaderelection.elector import LeaderElector
from services.leaderelection.lock import Lock, LockRecord, StorageLock

__all__ = [
    "JITTER_FACTOR",
    "Callbacks",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "Lock",
    "LockRecord",
    "StorageLock",
]
