"""`ApiServerConfig`: what an apiserver is built with, `ApiServer(storage, config)`.

Why this module exists: the settings travel (from `kubera up` through the apiserver actor,
from the fuzz harness and the tests) as one typed, validated value instead of loose
keyword arguments. The defaults are the production ones; tests shorten the intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.apiserver.admission import DISABLEABLE
from services.apiserver.serviceips import ServiceNetwork
from services.apiserver.watchcache import TOO_LARGE_WAIT

__all__ = ["ApiServerConfig"]


@dataclass(frozen=True, slots=True)
class ApiServerConfig:
    """The apiserver's settings. Raises ValueError on construction when they do not fit."""

    #: Events each resource's watch cache keeps, for watches that resume from an older
    #: resourceVersion (older ones answer 410 Gone). At least 1.
    watch_cache_capacity: int = 10_000
    #: Seconds between BOOKMARK events on a quiet watch that asked for bookmarks. Above 0.
    bookmark_interval: float = 5.0
    #: Seconds a watch from a resourceVersion beyond the store's revision waits for it
    #: before ResourceVersionTooLargeError (upstream's cacher blockTimeout, 3 s). At least 0.
    resource_version_wait: float = TOO_LARGE_WAIT
    #: The service CIDR cluster IPs come from and the node port range (kube-apiserver's
    #: --service-cluster-ip-range, kubeadm's 10.96.0.0/12, and --service-node-port-range).
    service_network: ServiceNetwork = ServiceNetwork()
    #: The default StorageClass made when a new cluster's apiserver first starts (`kubera
    #: up`'s `standard`, services/api/helpers/volumes.default_storage_class); "": none.
    default_storage_class: str = ""
    #: Admission plugins that do not run (kube-apiserver's --disable-admission-plugins):
    #: names from `admission.DISABLEABLE`; upstream's scheduler_perf apiserver disables
    #: ServiceAccount, TaintNodesByCondition and Priority (`SCHEDULER_PERF_DISABLED`).
    disable_admission_plugins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(self.disable_admission_plugins - DISABLEABLE)
        if unknown:
            raise ValueError(
                f"unknown admission plugin(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(DISABLEABLE))}"
            )
        if self.watch_cache_capacity < 1:
            raise ValueError(
                f"watch_cache_capacity must be at least 1, not {self.watch_cache_capacity}"
            )
        if not self.bookmark_interval > 0:
            raise ValueError(f"bookmark_interval must be above 0, not {self.bookmark_interval}")
        if not self.resource_version_wait >= 0:
            raise ValueError(
                f"resource_version_wait must be at least 0, not {self.resource_version_wait}"
            )
