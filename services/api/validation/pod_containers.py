"""Container validation: the containers and init containers of a pod spec, their ports
and their resource requirements.

Why this module exists: containers are the part of a pod spec the kubelet runs and the
resource fit is computed from, and their rules (validateContainerCommon, ports and host
port collisions, validateResourceRequirements with its overcommit rule) are numerous
enough to read on their own. ``pod.validate_pod_spec`` calls :func:`validate_containers`.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.api.machinery import names
from services.api.machinery.errors import (
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.api.validation.common import (
    Errors,
    child,
    index,
    is_hugepages,
    name_errors,
    overcommit_allowed,
    port_name,
    port_number,
    resource_list,
)

# ----------------------------------------------------------------------------- constants

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")


# ----------------------------------------------------------------------------- resources


def _resources(path: str, res: core_pb2.ResourceRequirements) -> Errors:
    """validateResourceRequirements: names, quantities, request <= limit (== when no overcommit)."""
    errs: Errors = []
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits = resource_list(lim_path, res.limits, errs)
    requests = resource_list(req_path, res.requests, errs)
    for name, q in requests.items():
        limit = limits.get(name)
        if limit is not None:
            if q != limit and not overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {limit.canonical()}"
                errs.append(invalid(req_path, q.canonical(), detail))
            elif q > limit:
                detail = f"must be less than or equal to {name} limit of {limit.canonical()}"
                errs.append(invalid(req_path, q.canonical(), detail))
        elif name not in res.limits and not overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    all_names = set(res.limits) | set(res.requests)
    if any(is_hugepages(n) for n in all_names) and not all_names & {"cpu", "memory"}:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


# ----------------------------------------------------------------------------- containers


def _container_ports(path: str, ports: Sequence[core_pb2.ContainerPort]) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        p = index(path, i)
        if port.name:
            msgs = port_name(port.name)
            if msgs:
                errs += [invalid(child(p, "name"), port.name, m) for m in msgs]
            elif port.name in seen:
                errs.append(duplicate(child(p, "name"), port.name))
            seen.add(port.name)
        if port.container_port == 0:
            errs.append(required(child(p, "containerPort")))
        else:
            errs += port_number(child(p, "containerPort"), port.container_port)
        if port.host_port != 0:
            errs += port_number(child(p, "hostPort"), port.host_port)
        if port.protocol and port.protocol not in PORT_PROTOCOLS:
            errs.append(unsupported(child(p, "protocol"), port.protocol, PORT_PROTOCOLS))
    return errs


def _container(path: str, c: core_pb2.Container, init: bool) -> Errors:
    """validateContainerCommon plus the regular/init container differences."""
    errs: Errors = []
    if not c.name:
        errs.append(required(child(path, "name")))
    else:
        errs += name_errors(child(path, "name"), c.name, names.dns1123_label)
    if not c.image:
        errs.append(required(child(path, "image")))
    elif c.image != c.image.strip():
        errs.append(
            invalid(child(path, "image"), c.image, "must not have leading or trailing whitespace")
        )
    errs += _container_ports(child(path, "ports"), c.ports)
    for i, env in enumerate(c.env):
        if not env.name:
            errs.append(required(child(index(child(path, "env"), i), "name")))
    errs += _resources(child(path, "resources"), c.resources)
    if c.image_pull_policy and c.image_pull_policy not in PULL_POLICIES:
        errs.append(unsupported(child(path, "imagePullPolicy"), c.image_pull_policy, PULL_POLICIES))
    policy = c.termination_message_policy
    if policy and policy not in TERMINATION_MESSAGE_POLICIES:
        errs.append(
            unsupported(
                child(path, "terminationMessagePolicy"), policy, TERMINATION_MESSAGE_POLICIES
            )
        )
    if c.restart_policy:
        rp = child(path, "restartPolicy")
        if not init:
            errs.append(forbidden(rp, "may not be set for non-init containers"))
        elif c.restart_policy != "Always":
            errs.append(unsupported(rp, c.restart_policy, ("Always",)))
    return errs


def validate_containers(path: str, spec: core_pb2.PodSpec, is_pod: bool) -> Errors:
    errs: Errors = []
    containers_path = child(path, "containers")
    init_path = child(path, "initContainers")
    if not spec.containers:
        errs.append(required(containers_path))
    seen: set[str] = set()
    for group_path, group, init in (
        (containers_path, spec.containers, False),
        (init_path, spec.init_containers, True),
    ):
        for i, c in enumerate(group):
            p = index(group_path, i)
            errs += _container(p, c, init)
            if c.name in seen:
                errs.append(duplicate(child(p, "name"), c.name))
            elif c.name:
                seen.add(c.name)
    # Host ports may not collide across regular containers (init containers run one by one).
    host_ports: set[str] = set()
    for i, c in enumerate(spec.containers):
        for j, port in enumerate(c.ports):
            if port.host_port == 0:
                continue
            key = f"{port.protocol or 'TCP'}/{port.host_ip}/{port.host_port}"
            hp_path = child(index(child(index(containers_path, i), "ports"), j), "hostPort")
            if key in host_ports:
                errs.append(duplicate(hp_path, key))
            host_ports.add(key)
    if spec.host_network:
        for i, c in enumerate(spec.containers):
            for j, port in enumerate(c.ports):
                hp, cp = port.host_port, port.container_port
                if (is_pod or hp != 0) and hp != cp:
                    hp_path = child(index(child(index(containers_path, i), "ports"), j), "hostPort")
                    errs.append(
                        invalid(
                            hp_path, hp, "must match `containerPort` when `hostNetwork` is true"
                        )
                    )
    return errs
