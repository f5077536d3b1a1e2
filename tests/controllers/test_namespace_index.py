"""NamespaceIndex: every index of one informer shares one map of keys, kept by one pair
of handlers, and each lists what the store holds in a namespace through adds, updates,
deletes, a client-side `keep` that drops an object, and a relist."""

from __future__ import annotations

import asyncio

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.client import Informer
from services.controllers.controller_utils import NamespaceIndex
from tests.builders import MakePod

PODS = BY_KIND["Pod"]


def _pod(ns: str, name: str, rv: str) -> core_pb2.Pod:
    pod = MakePod().typed().name(name).namespace(ns).container("c", "i").obj()
    pod.metadata.resource_version = rv
    return pod


def _names(index: NamespaceIndex[core_pb2.Pod], ns: str) -> list[str]:
    return sorted(p.metadata.name for p in index.list(ns))


def test_indexes_of_one_informer_share_one_map_and_one_handler_pair() -> None:
    async def run() -> None:
        inf = Informer(client=None, kind=PODS)  # type: ignore[arg-type]
        inf._apply("ADDED", _pod("a", "early", "1"))
        first = NamespaceIndex(inf, core_pb2.Pod)
        second = NamespaceIndex(inf, core_pb2.Pod)
        assert len(inf.handlers) == 1
        assert inf.handlers[0].on_update is None
        for rv, (ns, name) in enumerate([("a", "p1"), ("b", "p2"), ("a", "p3")], start=2):
            inf._apply("ADDED", _pod(ns, name, str(rv)))
        inf._apply("MODIFIED", _pod("a", "p1", "9"))
        inf._apply("DELETED", _pod("a", "p3", "10"))
        for index in (first, second):
            assert _names(index, "a") == ["early", "p1"]
            assert _names(index, "b") == ["p2"]
            assert index.has("b") and not index.has("c")

    asyncio.run(run())


def test_a_kept_object_dropped_and_a_relist_leave_the_index_as_the_store() -> None:
    async def run() -> None:
        inf = Informer(client=None, kind=PODS)  # type: ignore[arg-type]
        index = NamespaceIndex(inf, core_pb2.Pod)
        inf._apply("ADDED", _pod("a", "p1", "1"))
        inf._apply("ADDED", _pod("a", "p2", "2"))
        inf.keep = lambda o: o.metadata.name != "p2"  # type: ignore[attr-defined]
        inf._apply("MODIFIED", _pod("a", "p2", "3"))
        assert _names(index, "a") == ["p1"]
        assert not index.has("b")
        inf.keep = None

        class _Lister:
            async def list(self, *_: object, **__: object) -> tuple[list[core_pb2.Pod], str]:
                return [_pod("b", "p4", "5"), _pod("a", "p1", "4")], "5"

        inf.client = _Lister()  # type: ignore[assignment]
        await inf._list()
        assert _names(index, "a") == ["p1"]
        assert _names(index, "b") == ["p4"]

    asyncio.run(run())
