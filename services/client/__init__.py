"""The apiserver's client and the informers built on it: what other components import.

`Client` (client.py) is the asyncio gRPC client with typed errors; `SharedInformers`,
`Informer` and `Handlers` (informer.py) are the list-watch caches with event handlers that
the scheduler, the controllers and the kubelet read the cluster through; `EventRecorder`
(events.py) is how every component writes Events (client-go's tools/record). An address
may name several apiserver replicas (endpoints.py: `host:port,host:port`, the helpers that
build and read such lists).
"""

from services.client.client import (
    BatchResult,
    Client,
    FencingSource,
    WatchEvent,
    batches,
    error_from_rpc,
)
from services.client.endpoints import (
    Endpoints,
    first_address,
    join_addresses,
    parse_addresses,
    rotated,
)
from services.client.events import EventCorrelator, EventRecorder, Pacer
from services.client.informer import Handlers, Informer, SharedInformers

__all__ = [
    "BatchResult",
    "Client",
    "Endpoints",
    "EventCorrelator",
    "EventRecorder",
    "FencingSource",
    "Handlers",
    "Informer",
    "Pacer",
    "SharedInformers",
    "WatchEvent",
    "batches",
    "error_from_rpc",
    "first_address",
    "join_addresses",
    "parse_addresses",
    "rotated",
]
