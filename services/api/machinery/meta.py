"""Object keys: how informers, work queues, caches and the scheduler name an object
(upstream client-go cache.MetaNamespaceKeyFunc).
"""

from __future__ import annotations

from google.protobuf.message import Message

from services.api.machinery.kubeobject import object_meta


def object_key(obj: Message) -> str:
    """`<namespace>/<name>`, or `<name>` for a cluster-scoped object."""
    meta = object_meta(obj)
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def pod_key(pod: Message) -> str:
    """`<namespace>/<name>` of a pod (always namespaced: the separator is always there)."""
    meta = object_meta(pod)
    return f"{meta.namespace}/{meta.name}"
