"""The config gate (services/kubelet/configgate.py): a pod naming a missing ConfigMap or
Secret (or key) waits — ContainerCreating for a volume, CreateContainerConfigError for a
container's environment, with upstream's words — and starts once the object is created.
The docs' configmap/configure-pod.yaml and configmap/env-configmap.yaml are the cases."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, service_pb2
from services.kubelet.configgate import Blocked, blocked
from tests.kubelet.test_pool import _template, running
from tests.waiting import eventually

CONFIGS = {"default/game-demo": {"player_initial_lives", "game.properties"}}
SECRETS = {"default/test-secret": {"username", "password"}}


def _pod(spec: dict[str, Any]) -> core_pb2.Pod:
    pod = core_pb2.Pod()
    json_format.ParseDict({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}, pod)
    return pod


def _c(**extra: Any) -> dict[str, Any]:
    return {"name": "demo", "image": "alpine", **extra}


def _cm_key(name: str, key: str, **ref: Any) -> dict[str, Any]:
    return {"name": "X", "valueFrom": {"configMapKeyRef": {"name": name, "key": key, **ref}}}


CASES = [
    ("nothing named", {"containers": [_c()]}, None),
    ("every reference found", {
        "containers": [_c(env=[_cm_key("game-demo", "player_initial_lives")], envFrom=[{"secretRef": {"name": "test-secret"}}])],
        "volumes": [{"name": "config", "configMap": {"name": "game-demo", "items": [{"key": "game.properties", "path": "g"}]}}],
    }, None),
    ("configure-pod.yaml: the volume's ConfigMap is missing", {
        "containers": [_c(env=[_cm_key("nope", "k")])],
        "volumes": [{"name": "config", "configMap": {"name": "nope"}}],
    }, Blocked('MountVolume.SetUp failed for volume "config" : configmap "nope" not found')),
    ("a volume item's key is missing", {
        "containers": [_c()],
        "volumes": [{"name": "config", "configMap": {"name": "game-demo", "items": [{"key": "ui", "path": "u"}]}}],
    }, Blocked('MountVolume.SetUp failed for volume "config" : configmap references non-existent config key: ui')),
    ("a secret volume", {
        "containers": [_c()], "volumes": [{"name": "s", "secret": {"secretName": "gone"}}],
    }, Blocked('MountVolume.SetUp failed for volume "s" : secret "gone" not found')),
    ("a projected source", {
        "containers": [_c()], "volumes": [{"name": "all", "projected": {"sources": [{"secret": {"name": "gone"}}]}}],
    }, Blocked('MountVolume.SetUp failed for volume "all" : secret "gone" not found')),
    ("an optional volume waits for nothing", {
        "containers": [_c()], "volumes": [{"name": "s", "configMap": {"name": "nope", "optional": True}}],
    }, None),
    ("env-configmap.yaml: envFrom a missing ConfigMap", {
        "containers": [_c(envFrom=[{"configMapRef": {"name": "myconfigmap"}}])],
    }, Blocked('configmap "myconfigmap" not found', "demo")),
    ("a key the ConfigMap lacks", {
        "containers": [_c(env=[_cm_key("game-demo", "ui_properties_file_name")])],
    }, Blocked("couldn't find key ui_properties_file_name in ConfigMap default/game-demo", "demo")),
    ("a secret key", {
        "initContainers": [_c(name="init", env=[{"name": "P", "valueFrom": {"secretKeyRef": {"name": "test-secret", "key": "token"}}}])],
        "containers": [_c()],
    }, Blocked("couldn't find key token in Secret default/test-secret", "init")),
    ("an optional key waits for nothing", {
        "containers": [_c(env=[_cm_key("nope", "k", optional=True)])],
    }, None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "spec", "want"), CASES, ids=[c[0] for c in CASES])
def test_blocked(name: str, spec: dict[str, Any], want: Blocked | None) -> None:
    got = blocked(_pod(spec), CONFIGS.get, SECRETS.get)  # type: ignore[arg-type]
    assert got == want


async def test_a_pod_waits_for_its_config_map_then_starts() -> None:
    async with running(_template(count=1)) as env:
        node = env.pool.nodes[0].name
        spec = {
            "nodeName": node,
            "containers": [_c(envFrom=[{"configMapRef": {"name": "myconfigmap"}}])],
        }
        pod = _pod(spec)
        pod.metadata.name = "env-configmap"
        await env.api.create(pod)

        async def config_error() -> bool:
            got = await env.get("env-configmap")
            statuses = got.status.container_statuses if got else []
            states = [json_format.MessageToDict(cs.state) for cs in statuses]
            return any(
                s.get("waiting", {}).get("reason") == "CreateContainerConfigError"
                and s["waiting"]["message"] == 'configmap "myconfigmap" not found'
                for s in states
            )

        await eventually(config_error)
        assert await env.phase("env-configmap") == "Pending"
        cm = service_pb2.ConfigMap()
        cm.metadata.name, cm.metadata.namespace = "myconfigmap", "default"
        cm.data["k"] = "v"
        await env.client.create(cm)

        async def runs() -> bool:
            return await env.phase("env-configmap") == "Running"

        await eventually(runs)
        assert not env.pool.waiting_for_config


def test_without_a_secret_lookup_secrets_block_nothing() -> None:
    """The pool's case: a node may not read every Secret, so it checks ConfigMaps only."""
    spec = {"containers": [_c()], "volumes": [{"name": "s", "secret": {"secretName": "gone"}}]}
    assert blocked(_pod(spec), CONFIGS.get) is None  # type: ignore[arg-type]
