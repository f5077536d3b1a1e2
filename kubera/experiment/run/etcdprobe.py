"""The same-run yardstick: how many concurrent puts per second this run's etcd takes.

Before a run's first op, `put_rate` writes PUTS values of a pod's size (64 in flight, each
its own txn, as the apiserver writes a pod) under a key prefix no component and no checker
reads, then deletes them. A scheduling rate divided by it (the etcd ratio) says how much of
what the machine's etcd could take kubera reaches in the same conditions: the figure that
stays comparable between machines, where pods/s alone does not. `kubera bench` has always
reported it; now every experiment run does (DataItem `kubera_etcd`).
"""

from __future__ import annotations

import asyncio
import time

from services.storage import Delete, Put
from services.storage.etcd import EtcdStorage

#: Outside /registry/ and /kubera/: no informer, no checker and no clean-up of a run sees it.
PREFIX = "/kubera-etcd-probe/"
PUTS = 2000
IN_FLIGHT = 64
#: About the size of a serialized scheduler_perf pod.
PAYLOAD = b"p" * 300
DELETE_BATCH = 100


async def put_rate(endpoint: str, puts: int = PUTS, in_flight: int = IN_FLIGHT) -> float:
    """Puts per second of `puts` txns, `in_flight` at a time, on the etcd at `endpoint`."""
    storage = EtcdStorage(endpoint)
    await storage.connect()
    try:
        gate = asyncio.Semaphore(in_flight)

        async def one(i: int) -> None:
            async with gate:
                await storage.txn([], [Put(f"{PREFIX}{i}", PAYLOAD)])

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(puts)))
        rate = puts / (time.perf_counter() - t0)
        keys = [f"{PREFIX}{i}" for i in range(puts)]
        for i in range(0, len(keys), DELETE_BATCH):
            await storage.txn([], [Delete(k) for k in keys[i : i + DELETE_BATCH]])
        return rate
    finally:
        await storage.close()
