"""The live web UI, served by every apiserver replica's HTTPS endpoint at /ui/.

Why it exists: a person watching a cluster of thousands of nodes needs to see it (the
nodes' allocation as a heatmap by zone, the pods by phase, why pending pods wait, one
pod's decision trace, the leaders) without polling lists. The page is one HTML file with
a script of its own and no third-party code (static/), fed by a server-sent-event stream
of small deltas from the apiserver's watch caches.

    app.py       the aiohttp sub-application: routes, login, static files, trace endpoint
    sessions.py  one-time login tokens (`kubera ui`) and the sessions they open
    stream.py    the event stream of one page: snapshots, then watch deltas
    deltas.py    what a delta of a node, pod, lease or event holds; coalescing; framing
    traces.py    a pod's decision trace, asked of the scheduler replicas
    replicas.py  the replicas of each replicated component (leaders and standbys)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.ui.app import build_ui

__all__ = ["build_ui"]

__getattr__ = lazy_exports(__name__, {"build_ui": "services.ui.app"})
