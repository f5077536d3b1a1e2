"""Whether a hollow kubelet may start a pod's containers as far as its ConfigMaps and
Secrets go (upstream kubelet: the volume manager's WaitForAttachAndMount, then
makeEnvironmentVariables for each container it creates).

A pod whose configMap or secret volume (projected sources too) names an object, or a key
of it, that does not exist stays ContainerCreating (upstream: FailedMount, retried); one
whose containers' env or envFrom name a missing object or key (not `optional`) has that
container waiting with reason CreateContainerConfigError and upstream's message
(``configmap "x" not found``, ``couldn't find key k in ConfigMap ns/x``). Either way the
pod stays Pending and starts once the object appears: the pool retries it when a
ConfigMap or Secret of its namespace is added or changed.

Simplifications: every container is checked before the sandbox starts (upstream checks
each container as it creates it, so init containers before a bad app container would
have run first); Secrets are not checked by the pool (`blocked` takes no secret lookup
there): a node may not read them all (services/auth/authorizer.py), and upstream's
kubelet gets only its pods' ones, by name; a missing service account token or downward
API source blocks nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.client import Client, Handlers, Informer

CONFIG_MAPS = BY_KIND["ConfigMap"]
REASON_CONFIG_ERROR = "CreateContainerConfigError"
REASON_FAILED_MOUNT = "FailedMount"

#: "<namespace>/<name>" -> the object's keys, or None when it does not exist.
Keys = Callable[[str], set[str] | None]


@dataclass(frozen=True)
class Blocked:
    """Why a pod may not start: its volume (container None) or one container's config."""

    message: str
    container: str | None = None


def _struct(s: Any) -> dict[str, Any]:
    return MessageToDict(s) if s is not None else {}


def _volume_problem(
    ns: str, vol: dict[str, Any], configs: Keys, secrets: Keys | None
) -> str | None:
    sources = [vol]
    sources += [p for p in vol.get("projected", {}).get("sources", [])]
    for src in sources:
        for field, lookup, kind, ref in (
            ("configMap", configs, "configmap", "name"),
            ("secret", secrets, "secret", "secretName" if src is vol else "name"),
        ):
            spec = src.get(field)
            if spec is None or spec.get("optional") or lookup is None:
                continue
            name = spec.get(ref, "")
            keys = lookup(f"{ns}/{name}")
            if keys is None:
                return f'{kind} "{name}" not found'
            for item in spec.get("items", []):
                if item.get("key") not in keys:
                    noun = "config key" if kind == "configmap" else "secret key"
                    return f"{kind} references non-existent {noun}: {item.get('key')}"
    return None


def _env_problem(ns: str, c: core_pb2.Container, configs: Keys, secrets: Keys | None) -> str | None:
    for env_from in c.env_from:
        src = _struct(env_from)
        for field, lookup, kind in (
            ("configMapRef", configs, "configmap"),
            ("secretRef", secrets, "secret"),
        ):
            ref = src.get(field)
            if (
                ref is not None
                and lookup is not None
                and not ref.get("optional")
                and lookup(f"{ns}/{ref.get('name', '')}") is None
            ):
                return f'{kind} "{ref.get("name", "")}" not found'
    for env in c.env:
        if not env.HasField("value_from"):
            continue
        src = _struct(env.value_from)
        for field, lookup, kind, title in (
            ("configMapKeyRef", configs, "configmap", "ConfigMap"),
            ("secretKeyRef", secrets, "secret", "Secret"),
        ):
            ref = src.get(field)
            if ref is None or ref.get("optional") or lookup is None:
                continue
            name, key = ref.get("name", ""), ref.get("key", "")
            keys = lookup(f"{ns}/{name}")
            if keys is None:
                return f'{kind} "{name}" not found'
            if key not in keys:
                return f"couldn't find key {key} in {title} {ns}/{name}"
    return None


def blocked(pod: core_pb2.Pod, configs: Keys, secrets: Keys | None = None) -> Blocked | None:
    """None when the pod's volumes mount and every container's environment resolves;
    else why not (the first volume, else the first container in start order). Without
    `secrets`, Secrets are not checked."""
    ns = pod.metadata.namespace
    for v in pod.spec.volumes:
        vol = _struct(v)
        why = _volume_problem(ns, vol, configs, secrets)
        if why is not None:
            return Blocked(f'MountVolume.SetUp failed for volume "{vol.get("name", "")}" : {why}')
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        why = _env_problem(ns, c, configs, secrets)
        if why is not None:
            return Blocked(why, c.name)
    return None


def _keys(obj: Message | None, *fields: str) -> set[str] | None:
    if obj is None:
        return None
    return {k for f in fields for k in getattr(obj, f)}


class ConfigObjects:
    """The ConfigMaps a pool's pods may name (one informer, every namespace), and
    `blocked` over them; `on_change(namespace)` runs when one is added or changed."""

    def __init__(self, client: Client, on_change: Callable[[str], None]) -> None:
        self.config_maps = Informer(client, CONFIG_MAPS)
        self.config_maps.add_handlers(
            Handlers(
                on_add=lambda o: on_change(o.metadata.namespace),  # type: ignore[attr-defined]
                on_update=lambda _o, n: on_change(n.metadata.namespace),  # type: ignore[attr-defined]
            )
        )

    @property
    def informers(self) -> Iterable[Informer]:
        return (self.config_maps,)

    def blocked(self, pod: core_pb2.Pod) -> Blocked | None:
        spec = pod.spec
        if not spec.volumes and not any(
            c.env or c.env_from for c in (*spec.containers, *spec.init_containers)
        ):
            return None
        cms = self.config_maps.store
        return blocked(pod, lambda key: _keys(cms.get(key), "data", "binary_data"))
