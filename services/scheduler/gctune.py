"""Garbage-collector settings for a process that runs a scheduler (the replica host,
services/hosts/scheduler.py; not tests or tools that build Schedulers in passing).

A scheduler holds a large, long-lived heap (every node's and pod's objects, NodeInfos,
PodInfos) and allocates many short-lived containers per pod it schedules. With CPython's
default thresholds (700, 10, 10) the young generations are collected every few pods and
the full collections traverse the whole long-lived heap: SchedulingBasic at 2,000 nodes
spent ~0.25 ms per pod in the collector (gc.callbacks, measured phase), 809 young, 73
middle and 7 full collections for 10,000 pods; with both settings below (frozen at the
measured phase's start there), 0.015 ms.

- `tune_gc()`: a young-generation threshold of GEN0_THRESHOLD allocations. Objects freed
  by reference counting (nearly all of a cycle's temporaries) never reach the collector;
  the price is that cyclic garbage waits longer, at most GEN0_THRESHOLD containers.
- `settle_gc()`: after the informers' initial sync, collect once and freeze what survived
  (gc.freeze: the synced state moves to a generation no collection traverses). It
  unfreezes first, so a replica's earlier terms, now garbage, are collected rather than
  kept frozen for the life of the process.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Raise the young-generation threshold (the other two are kept)."""
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)


def settle_gc() -> None:
    """Collect, then freeze the survivors (call once the informers have synced)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
