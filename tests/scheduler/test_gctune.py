"""gctune: the scheduler process's collector settings (no timing asserted)."""

from __future__ import annotations

import gc
import weakref

from services.hosts.scheduler import SchedulerReplica
from services.scheduler import gctune


def test_tune_raises_only_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        gctune.tune_gc()
        assert gc.get_threshold() == (gctune.GEN0_THRESHOLD, before[1], before[2])
    finally:
        gc.set_threshold(*before)


def test_settle_freezes_survivors_and_releases_earlier_frozen_garbage() -> None:
    class Cyclic:
        def __init__(self) -> None:
            self.me = self

    try:
        junk = Cyclic()
        ref = weakref.ref(junk)
        gctune.settle_gc()
        assert gc.get_freeze_count() > 0
        assert ref() is not None  # alive then: frozen with the rest
        # garbage of an earlier term, frozen: the next settle unfreezes before collecting
        del junk
        gctune.settle_gc()
        assert ref() is None
    finally:
        gc.unfreeze()


def test_only_the_actor_tunes_its_process() -> None:
    assert SchedulerReplica.gc_tuned is False
