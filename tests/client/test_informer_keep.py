"""`Informer.keep` (a client-side selector) gives what the same selector applied by the
apiserver gives: the same handler calls in the same order, the same store."""

from __future__ import annotations

import asyncio
import contextlib

from services.api.machinery.listoptions import ListOptions
from services.client.informer import Informer
from tests.builders import pod
from tests.client.test_informer import PODS, Recorder, setup  # noqa: F401 - the fixture


def labeled(name: str, team: str):
    p = pod(name)
    p.metadata.labels["team"] = team
    return p


async def test_keep_is_a_label_selector_evaluated_by_the_client(setup) -> None:  # noqa: F811
    api, client = setup
    await api.create(labeled("mine-before", "a"))
    await api.create(labeled("other-before", "b"))
    by_server, by_client = Recorder(), Recorder()
    served = Informer(client, PODS, options=ListOptions(label_selector="team=a"))
    kept = Informer(client, PODS, keep=lambda p: p.metadata.labels.get("team") == "a")
    served.add_handlers(by_server.handlers())
    kept.add_handlers(by_client.handlers())
    tasks = [asyncio.create_task(i.run()) for i in (served, kept)]
    try:
        await asyncio.wait_for(asyncio.gather(served.synced.wait(), kept.synced.wait()), 10)
        await api.create(labeled("mine", "a"))
        await api.create(labeled("other", "b"))
        await api.patch(PODS, "default", "other", '{"metadata": {"labels": {"x": "1"}}}')
        await api.patch(PODS, "default", "mine", '{"metadata": {"labels": {"x": "1"}}}')
        # leaves the selection, then comes back, then is deleted
        await api.patch(PODS, "default", "mine", '{"metadata": {"labels": {"team": "b"}}}')
        await api.patch(PODS, "default", "other", '{"metadata": {"labels": {"team": "a"}}}')
        await api.delete(PODS, "default", "other")
        await api.delete(PODS, "default", "other-before")
        await api.create(labeled("last", "a"))
        for rec in (by_server, by_client):
            await rec.wait_for(lambda ev: ("add", "last") in ev)
        assert by_client.events == by_server.events
        assert by_client.events == [
            ("add", "mine-before"),
            ("add", "mine"),
            ("update", "mine"),
            ("delete", "mine"),
            ("add", "other"),
            ("delete", "other"),
            ("add", "last"),
        ]
        assert set(kept.store) == set(served.store) == {"default/mine-before", "default/last"}
    finally:
        for t in tasks:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await t
