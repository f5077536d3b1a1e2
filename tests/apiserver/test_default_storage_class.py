"""The default StorageClass `kubera up` asks its apiserver for (ApiServerConfig
default_storage_class, as kind ships `standard`): made once, when a new cluster's apiserver
first starts, so a class the user deletes stays deleted when an apiserver restarts; none
when not asked for (experiments, as scheduler_perf)."""

from __future__ import annotations

import pytest

from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.storage.memory import MemoryStorage

CLASSES = BY_KIND["StorageClass"]


async def _started(storage: MemoryStorage, name: str) -> ApiServer:
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=50, default_storage_class=name))
    await api.start()
    return api


async def test_a_new_cluster_gets_the_default_class_once() -> None:
    storage = MemoryStorage()
    api = await _started(storage, "standard")
    try:
        sc = await api.get(CLASSES, "", "standard")
        assert sc.provisioner == "hollow.kubera.io"  # type: ignore[attr-defined]
        assert sc.volume_binding_mode == "WaitForFirstConsumer"  # type: ignore[attr-defined]
        assert sc.reclaim_policy == "Delete"  # type: ignore[attr-defined]
        assert sc.metadata.annotations == {"storageclass.kubernetes.io/is-default-class": "true"}  # type: ignore[attr-defined]
        await api.delete(CLASSES, "", "standard")
    finally:
        await api.stop()
    again = await _started(storage, "standard")  # a restart on the same store
    try:
        with pytest.raises(NotFoundError):
            await again.get(CLASSES, "", "standard")
    finally:
        await again.stop()


async def test_none_when_not_asked_for() -> None:
    api = await _started(MemoryStorage(), "")
    try:
        items, _ = await api.list(CLASSES)
        assert items == []
    finally:
        await api.stop()
