"""kube-scheduler, rebuilt: queue, cache, framework and default plugins (asyncio, no Ray)."""
