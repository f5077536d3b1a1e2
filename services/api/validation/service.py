"""Validation of the service kinds: Service, EndpointSlice, ConfigMap, Secret and
ServiceAccount, with upstream's rules and wording (pkg/apis/core/validation/validation.go:
ValidateService, validateServicePort, ValidateConfigMap, ValidateSecret and their Update
forms; pkg/apis/discovery/validation/validation.go: ValidateEndpointSlice).

Deliberate differences from upstream: dual-stack is not modelled (ipFamilies holds one
family, IPv4, and ipFamilyPolicy RequireDualStack is refused as on a single-stack
cluster); loadBalancerSourceRanges' annotation form is not checked.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from services.api.machinery import names
from services.api.machinery.errors import (
    TOO_MANY,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    Errors,
    child,
    index,
    label_map,
    name_errors,
    port_name,
    port_number,
)

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")
PROTOCOLS = ("SCTP", "TCP", "UDP")
IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
IP_FAMILIES = ("IPv4", "IPv6")
TRAFFIC_POLICIES = ("Cluster", "Local")
CLUSTER_IP_NONE = "None"
#: A ConfigMap's or a Secret's data, all keys and values together (upstream's MaxSecretSize).
MAX_DATA_SIZE = 1 * 1024 * 1024
#: The kubelet's port, which a LoadBalancer service may not expose.
KUBELET_PORT = 10250

SECRET_TYPES_REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.key", "tls.crt"),
}
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _target_port(path: str, raw: str) -> Errors:
    """ValidatePortNumOrName on an int-or-string kept as a string."""
    if raw.lstrip("-").isdigit():
        return port_number(path, int(raw))
    return [invalid(path, raw, msg) for msg in port_name(raw)]


def _service_port(p: Any, path: str, require_name: bool, seen_names: set[str]) -> Errors:
    errs: Errors = []
    if require_name and not p.name:
        errs.append(required(child(path, "name")))
    elif p.name:
        errs += name_errors(child(path, "name"), p.name, names.dns1123_label)
        if p.name in seen_names:
            errs.append(duplicate(child(path, "name"), p.name))
        seen_names.add(p.name)
    errs += port_number(child(path, "port"), p.port)
    if not p.protocol:
        errs.append(required(child(path, "protocol")))
    elif p.protocol not in PROTOCOLS:
        errs.append(unsupported(child(path, "protocol"), p.protocol, PROTOCOLS))
    if p.HasField("target_port"):
        errs += _target_port(child(path, "targetPort"), p.target_port)
    if p.node_port and not 0 < p.node_port <= 65535:
        errs += port_number(child(path, "nodePort"), p.node_port)
    return errs


def validate_service(svc: Any) -> Errors:
    """ValidateService."""
    spec = svc.spec
    errs: Errors = []
    headless = spec.cluster_ip == CLUSTER_IP_NONE
    if not spec.ports and not headless and spec.type != "ExternalName":
        errs.append(required("spec.ports"))
    if spec.type == "LoadBalancer":
        for i, p in enumerate(spec.ports):
            if p.port == KUBELET_PORT:
                errs.append(
                    invalid(
                        index("spec.ports", i),
                        p.port,
                        f"may not expose port {KUBELET_PORT} externally since it is used by kubelet",
                    )
                )
    if spec.type in ("LoadBalancer", "NodePort") and headless:
        errs.append(
            invalid(
                "spec.clusterIPs[0]",
                spec.cluster_ip,
                f"may not be None for {spec.type} services",
            )
        )
    if spec.type == "ExternalName":
        if spec.cluster_ip or spec.cluster_ips:
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.external_name:
            errs += name_errors("spec.externalName", spec.external_name, names.dns1123_subdomain)
        else:
            errs.append(required("spec.externalName"))
    seen: set[str] = set()
    for i, p in enumerate(spec.ports):
        errs += _service_port(p, index("spec.ports", i), len(spec.ports) > 1, seen)
    errs += label_map("spec.selector", spec.selector)
    if not spec.session_affinity:
        errs.append(required("spec.sessionAffinity"))
    elif spec.session_affinity not in SESSION_AFFINITIES:
        errs.append(unsupported("spec.sessionAffinity", spec.session_affinity, SESSION_AFFINITIES))
    elif spec.session_affinity == "None" and spec.HasField("session_affinity_config"):
        errs.append(
            forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")
        )
    elif spec.session_affinity == "ClientIP":
        cfg = spec.session_affinity_config.client_ip
        if cfg.HasField("timeout_seconds") and not 0 < cfg.timeout_seconds <= 86400:
            errs.append(
                invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    cfg.timeout_seconds,
                    "must be greater than 0 and less than 86400",
                )
            )
    if spec.cluster_ip and spec.cluster_ips and spec.cluster_ip != spec.cluster_ips[0]:
        errs.append(
            invalid("spec.clusterIPs", list(spec.cluster_ips), "first value must match `clusterIP`")
        )
    for i, ip in enumerate(spec.cluster_ips):
        if not (i == 0 and ip == CLUSTER_IP_NONE) and not _is_ip(ip):
            errs.append(invalid(index("spec.clusterIPs", i), ip, _NOT_AN_IP))
    for i, ip in enumerate(spec.external_ips):
        if not _is_ip(ip):
            errs.append(invalid(index("spec.externalIPs", i), ip, _NOT_AN_IP))
    if not spec.type:
        errs.append(required("spec.type"))
    elif spec.type not in SERVICE_TYPES:
        errs.append(unsupported("spec.type", spec.type, SERVICE_TYPES))
    if spec.type == "ClusterIP":
        for i, p in enumerate(spec.ports):
            if p.node_port:
                errs.append(
                    forbidden(
                        child(index("spec.ports", i), "nodePort"),
                        "may not be used when `type` is 'ClusterIP'",
                    )
                )
    node_ports: set[tuple[str, int]] = set()
    ports: set[tuple[str, int]] = set()
    for i, p in enumerate(spec.ports):
        path = index("spec.ports", i)
        if p.node_port:
            if (p.protocol, p.node_port) in node_ports:
                errs.append(duplicate(child(path, "nodePort"), p.node_port))
            node_ports.add((p.protocol, p.node_port))
        if (p.protocol, p.port) in ports:
            errs.append(
                duplicate(
                    path,
                    f"{{Name: Protocol:{p.protocol} AppProtocol:<nil> Port:{p.port} TargetPort:0 NodePort:0}}",
                )
            )
        ports.add((p.protocol, p.port))
    externally_accessible = spec.type in ("LoadBalancer", "NodePort") or (
        spec.type == "ClusterIP" and len(spec.external_ips) > 0
    )
    if spec.external_traffic_policy and not externally_accessible:
        errs.append(
            invalid(
                "spec.externalTrafficPolicy",
                spec.external_traffic_policy,
                "may only be set for externally-accessible services",
            )
        )
    elif spec.external_traffic_policy and spec.external_traffic_policy not in TRAFFIC_POLICIES:
        errs.append(
            unsupported(
                "spec.externalTrafficPolicy", spec.external_traffic_policy, TRAFFIC_POLICIES
            )
        )
    if spec.HasField("internal_traffic_policy") and (
        spec.internal_traffic_policy not in TRAFFIC_POLICIES
    ):
        errs.append(
            unsupported(
                "spec.internalTrafficPolicy", spec.internal_traffic_policy, TRAFFIC_POLICIES
            )
        )
    if spec.HasField("ip_family_policy") and spec.ip_family_policy not in IP_FAMILY_POLICIES:
        errs.append(unsupported("spec.ipFamilyPolicy", spec.ip_family_policy, IP_FAMILY_POLICIES))
    for i, fam in enumerate(spec.ip_families):
        if fam not in IP_FAMILIES:
            errs.append(unsupported(index("spec.ipFamilies", i), fam, IP_FAMILIES))
    return errs


def validate_service_update(new: Any, old: Any) -> Errors:
    """ValidateServiceUpdate: a service's cluster IP may not change once set (ExternalName
    services have none)."""
    if (
        new.spec.type != "ExternalName"
        and old.spec.type != "ExternalName"
        and old.spec.cluster_ip
        and new.spec.cluster_ip != old.spec.cluster_ip
    ):
        return [invalid("spec.clusterIPs[0]", new.spec.cluster_ip, "may not change once set")]
    return []


def config_key(path: str, key: str) -> Errors:
    """IsConfigMapKey: the key of a ConfigMap's or a Secret's data."""
    msgs: list[str] = []
    if len(key) > names.DNS1123_SUBDOMAIN_MAX_LENGTH:
        msgs.append(names.max_len_error(names.DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_KEY.match(key):
        msgs.append(
            names.regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                "[-._a-zA-Z0-9]+",
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if key == ".":
        msgs.append("must not be '.'")
    elif key == "..":
        msgs.append("must not be '..'")
    elif key.startswith(".."):
        msgs.append("must not start with '..'")
    return [invalid(f"{path}[{key}]", key, m) for m in msgs]


def _too_long(path: str) -> FieldError:
    return too_long(path, MAX_DATA_SIZE)


def _too_many(path: str, count: int, most: int) -> FieldError:
    return FieldError(path, TOO_MANY, f"must have at most {most} items", count)


def validate_config_map(cm: Any) -> Errors:
    """ValidateConfigMap."""
    errs: Errors = []
    size = 0
    for key in sorted(cm.data):
        errs += config_key("data", key)
        if key in cm.binary_data:
            errs.append(invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        size += len(key) + len(cm.data[key].encode())
    for key in sorted(cm.binary_data):
        errs += config_key("binaryData", key)
        size += len(key) + len(cm.binary_data[key])
    if size > MAX_DATA_SIZE:
        errs.append(_too_long(""))
    return errs


def _immutable_data(new: Any, old: Any, fields: tuple[str, ...]) -> Errors:
    if not (old.HasField("immutable") and old.immutable):
        return []
    errs: Errors = []
    if not (new.HasField("immutable") and new.immutable):
        errs.append(forbidden("immutable", _IMMUTABLE_WHEN_SET))
    for f in fields:
        if dict(getattr(new, f)) != dict(getattr(old, f)):
            json_name = "binaryData" if f == "binary_data" else f
            errs.append(forbidden(json_name, _IMMUTABLE_WHEN_SET))
    return errs


def validate_config_map_update(new: Any, old: Any) -> Errors:
    """ValidateConfigMapUpdate: an immutable ConfigMap keeps its data and stays immutable."""
    return _immutable_data(new, old, ("data", "binary_data"))


def validate_secret(secret: Any) -> Errors:
    """ValidateSecret: keys, the 1 MiB bound, and each well-known type's keys."""
    errs: Errors = []
    size = 0
    for key in sorted(secret.data):
        errs += config_key("data", key)
        size += len(key) + len(secret.data[key])
    if size > MAX_DATA_SIZE:
        errs.append(_too_long("data"))
    typ = secret.type
    if typ == "kubernetes.io/service-account-token":
        if not secret.metadata.annotations.get(SERVICE_ACCOUNT_NAME_KEY):
            errs.append(required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"))
    elif typ == "kubernetes.io/basic-auth" and not {"username", "password"} & set(secret.data):
        errs += [required("data[username]"), required("data[password]")]
    for key in SECRET_TYPES_REQUIRED_KEYS.get(typ, ()):
        if key not in secret.data:
            errs.append(required(f"data[{key}]"))
    if typ in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = SECRET_TYPES_REQUIRED_KEYS[typ][0]
        if key in secret.data:
            try:
                json.loads(secret.data[key])
            except ValueError as e:
                errs.append(invalid(f"data[{key}]", "<secret contents redacted>", str(e)))
    return errs


def validate_secret_update(new: Any, old: Any) -> Errors:
    """ValidateSecretUpdate: the type never changes; an immutable secret keeps its data."""
    errs: Errors = []
    if new.type != old.type:
        errs.append(invalid("type", new.type, FIELD_IMMUTABLE))
    return errs + _immutable_data(new, old, ("data",))


def validate_service_account(sa: Any) -> Errors:
    """ValidateServiceAccount: metadata only (the names it lists are references)."""
    return []


def validate_endpoints(ep: Any) -> Errors:
    """ValidateEndpoints: each subset's addresses are IPs (hostnames DNS labels), its
    ports named when there are several (DNS labels, unique), numbered 1 to 65535, with a
    supported protocol."""
    errs: Errors = []
    for i, subset in enumerate(ep.subsets):
        path = index("subsets", i)
        if not subset.addresses and not subset.not_ready_addresses:
            errs.append(
                required(
                    child(path, "addresses"), "must specify `addresses` or `notReadyAddresses`"
                )
            )
        for field_name, addrs in (
            ("addresses", subset.addresses),
            ("notReadyAddresses", subset.not_ready_addresses),
        ):
            for j, a in enumerate(addrs):
                apath = index(child(path, field_name), j)
                if not _is_ip(a.ip):
                    errs.append(invalid(child(apath, "ip"), a.ip, _NOT_AN_IP))
                if a.hostname:
                    errs += name_errors(child(apath, "hostname"), a.hostname, names.dns1123_label)
        seen: set[str] = set()
        for j, p in enumerate(subset.ports):
            ppath = index(child(path, "ports"), j)
            if len(subset.ports) > 1 and not p.name:
                errs.append(required(child(ppath, "name")))
            elif p.name:
                errs += name_errors(child(ppath, "name"), p.name, names.dns1123_label)
                if p.name in seen:
                    errs.append(duplicate(child(ppath, "name"), p.name))
                seen.add(p.name)
            errs += port_number(child(ppath, "port"), p.port)
            if not p.protocol:
                errs.append(required(child(ppath, "protocol")))
            elif p.protocol not in PROTOCOLS:
                errs.append(unsupported(child(ppath, "protocol"), p.protocol, PROTOCOLS))
    return errs


ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


def validate_endpoint_slice(eps: Any) -> Errors:
    """ValidateEndpointSlice: the address type, each endpoint's addresses (1 to 100, of
    that type), and the ports."""
    errs: Errors = []
    if eps.address_type not in ADDRESS_TYPES:
        if not eps.address_type:
            errs.append(required("addressType"))
        else:
            errs.append(unsupported("addressType", eps.address_type, ADDRESS_TYPES))
    if len(eps.endpoints) > MAX_ENDPOINTS:
        errs.append(_too_many("endpoints", len(eps.endpoints), MAX_ENDPOINTS))
    for i, e in enumerate(eps.endpoints):
        path = index("endpoints", i)
        if not e.addresses:
            errs.append(required(child(path, "addresses"), "must contain at least 1 address"))
        elif len(e.addresses) > MAX_ADDRESSES:
            errs.append(_too_many(child(path, "addresses"), len(e.addresses), MAX_ADDRESSES))
        for j, a in enumerate(e.addresses):
            apath = index(child(path, "addresses"), j)
            if eps.address_type == "IPv4" and not _is_ipv(a, 4):
                errs.append(invalid(apath, a, "must be a valid IPv4 address"))
            elif eps.address_type == "IPv6" and not _is_ipv(a, 6):
                errs.append(invalid(apath, a, "must be a valid IPv6 address"))
            elif eps.address_type == "FQDN":
                errs += name_errors(apath, a, names.dns1123_subdomain)
        if e.HasField("hostname"):
            errs += name_errors(child(path, "hostname"), e.hostname, names.dns1123_label)
    if len(eps.ports) > MAX_PORTS:
        errs.append(_too_many("ports", len(eps.ports), MAX_PORTS))
    seen: set[str] = set()
    for i, p in enumerate(eps.ports):
        path = index("ports", i)
        if p.HasField("name") and p.name:
            errs += name_errors(child(path, "name"), p.name, names.dns1123_label)
        if p.name in seen:
            errs.append(duplicate(child(path, "name"), p.name))
        seen.add(p.name)
        if p.HasField("protocol") and p.protocol not in PROTOCOLS:
            errs.append(unsupported(child(path, "protocol"), p.protocol, PROTOCOLS))
        if p.HasField("port"):
            errs += port_number(child(path, "port"), p.port)
    return errs


def _is_ipv(value: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(value).version == version
    except ValueError:
        return False
