"""Leader election on etcd with a fencing token, in client-go's shape.

`LeaderElector(storage, config, callbacks).run(stop)` campaigns for `config.key`, runs
`callbacks.on_started_leading(term_over)` while it leads, and exposes `fencing_token` —
(key, create_revision) — for every write only the leader may make. See elector.py for the
state machine and lock.py for the etcd transactions. `LeaseTimings` (timings.py) is the one
shape of the lease timings, validated like client-go's; `LeaderElectionSettings`
(settings.py) is the one shape a deployment's election settings travel in, from the command
line and the configuration files down to the replica that turns it into the elector's config.
"""

from services.leaderelection.config import Callbacks, LeaderElectionConfig, LeaderElectionRecord
from services.leaderelection.elector import LeaderElector
from services.leaderelection.lock import Lock, LockRecord, StorageLock
from services.leaderelection.publish import LeasePublisher
from services.leaderelection.settings import LeaderElectionSettings
from services.leaderelection.timings import (
    JITTER_FACTOR,
    LeaseTimings,
    TimingOverrides,
    Violation,
    violations,
)

__all__ = [
    "JITTER_FACTOR",
    "Callbacks",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElectionSettings",
    "LeaderElector",
    "LeasePublisher",
    "LeaseTimings",
    "Lock",
    "LockRecord",
    "StorageLock",
    "TimingOverrides",
    "Violation",
    "violations",
]
