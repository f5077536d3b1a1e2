"""What `kubectl get` shows for the service kinds: Service, EndpointSlice, ConfigMap,
Secret and ServiceAccount.

The columns and cells are upstream's (pkg/printers/internalversion/printers.go):
Service NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE (wide: SELECTOR), with
getServiceExternalIP, loadBalancerStatusStringer and makePortString; Endpoints NAME
ENDPOINTS AGE with formatEndpoints (ip:port, three at most); EndpointSlice NAME
ADDRESSTYPE PORTS ENDPOINTS AGE with formatDiscoveryPorts / formatDiscoveryEndpoints
(three at most, then "+ N more..."); ConfigMap NAME DATA AGE (data and binaryData
counted); Secret NAME TYPE DATA AGE (a secret's values are never printed, only their
count); ServiceAccount NAME SECRETS AGE.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.printers.columns import (
    AGE,
    INT,
    NAME,
    NONE,
    Column,
    Columns,
    S,
    age,
    wide_columns,
)

#: The most items a list cell shows before "+ N more...".
_LIST_MAX = 3


def service_external_ip(svc: Message, wide: bool = False) -> str:
    """upstream's getServiceExternalIP."""
    x: Any = svc
    spec = x.spec
    external = list(spec.external_ips)
    if spec.type in ("ClusterIP", "NodePort", ""):
        return ",".join(external) if external else NONE
    if spec.type == "LoadBalancer":
        lb = load_balancer_status(x.status.load_balancer, wide)
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if spec.type == "ExternalName":
        return str(spec.external_name)
    return "<unknown>"


def load_balancer_status(status: Any, wide: bool) -> str:
    """upstream's loadBalancerStatusStringer: ingress IPs or hostnames, cut to 16
    characters unless wide."""
    text = ",".join(i.ip or i.hostname for i in status.ingress if i.ip or i.hostname)
    if not wide and len(text) > 16:
        return text[:13] + "..."
    return text


def service_ports(ports: Any) -> str:
    """upstream's makePortString: port/protocol, or port:nodePort/protocol."""
    pieces = []
    for p in ports:
        if p.node_port > 0:
            pieces.append(f"{p.port}:{p.node_port}/{p.protocol}")
        else:
            pieces.append(f"{p.port}/{p.protocol}")
    return ",".join(pieces)


def _list_with_more(items: list[str], count: int) -> str:
    text = ",".join(items)
    if count > _LIST_MAX:
        return f"{text} + {count - _LIST_MAX} more..."
    return text or "<unset>"


def discovery_ports(ports: Any) -> str:
    """upstream's formatDiscoveryPorts: the port, its name when it has none, or "*"."""
    shown = []
    for p in list(ports)[:_LIST_MAX]:
        if p.HasField("port"):
            shown.append(str(p.port))
        elif p.HasField("name"):
            shown.append(p.name)
        else:
            shown.append("*")
    return _list_with_more(shown, len(ports))


def discovery_endpoints(endpoints: Any) -> str:
    """upstream's formatDiscoveryEndpoints: the addresses of every endpoint."""
    addresses = [a for e in endpoints for a in e.addresses]
    return _list_with_more(addresses[:_LIST_MAX], len(addresses))


def format_endpoints(ep: Any) -> str:
    """upstream's formatEndpoints: ip:port of each ready address and port (just the IPs of
    a subset without ports), three at most, "<none>" without subsets."""
    if not ep.subsets:
        return NONE
    shown: list[str] = []
    count = 0
    for ss in ep.subsets:
        if not ss.ports:
            for a in ss.addresses:
                if len(shown) < _LIST_MAX:
                    shown.append(a.ip)
                count += 1
            continue
        for p in ss.ports:
            for a in ss.addresses:
                if len(shown) < _LIST_MAX:
                    host = f"[{a.ip}]" if ":" in a.ip else a.ip
                    shown.append(f"{host}:{p.port}")
                count += 1
    text = ",".join(shown)
    return f"{text} + {count - _LIST_MAX} more..." if count > _LIST_MAX else text


def _endpoints_row(ep: Message, now: float, wide: bool) -> list[str]:
    x: Any = ep
    return [x.metadata.name, format_endpoints(x), age(x.metadata.creation_timestamp, now)]


def _service_row(svc: Message, now: float, wide: bool) -> list[str]:
    x: Any = svc
    row = [
        x.metadata.name,
        x.spec.type,
        x.spec.cluster_ip or NONE,
        service_external_ip(svc, wide),
        service_ports(x.spec.ports) or NONE,
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        selector = ",".join(f"{k}={v}" for k, v in sorted(x.spec.selector.items()))
        row.append(selector or NONE)
    return row


def _endpoint_slice_row(eps: Message, now: float, wide: bool) -> list[str]:
    x: Any = eps
    return [
        x.metadata.name,
        x.address_type,
        discovery_ports(x.ports),
        discovery_endpoints(x.endpoints),
        age(x.metadata.creation_timestamp, now),
    ]


def _config_map_row(cm: Message, now: float, wide: bool) -> list[str]:
    x: Any = cm
    count = len(x.data) + len(x.binary_data)
    return [x.metadata.name, str(count), age(x.metadata.creation_timestamp, now)]


def _secret_row(secret: Message, now: float, wide: bool) -> list[str]:
    x: Any = secret
    return [x.metadata.name, x.type, str(len(x.data)), age(x.metadata.creation_timestamp, now)]


def _service_account_row(sa: Message, now: float, wide: bool) -> list[str]:
    x: Any = sa
    return [x.metadata.name, str(len(x.secrets)), age(x.metadata.creation_timestamp, now)]


#: kind -> table, merged into printers.COLUMNS.
SERVICE_COLUMNS: dict[str, Columns] = {
    "Service": Columns(
        (
            NAME,
            Column("Type", S, "The type of the service."),
            Column("Cluster-IP", S, "The cluster IP of the service."),
            Column("External-IP", S, "The external IP of the service."),
            Column("Port(s)", S, "The ports of the service."),
            AGE,
            *wide_columns(Column("Selector", S, "The label selector of the service.")),
        ),
        _service_row,
    ),
    "EndpointSlice": Columns(
        (
            NAME,
            Column("AddressType", S, "The type of address held by the EndpointSlice."),
            Column("Ports", S, "The ports of the EndpointSlice."),
            Column("Endpoints", S, "The addresses of the endpoints."),
            AGE,
        ),
        _endpoint_slice_row,
    ),
    "Endpoints": Columns(
        (NAME, Column("Endpoints", S, "Endpoints of the service."), AGE), _endpoints_row
    ),
    "ConfigMap": Columns(
        (NAME, Column("Data", INT, "The number of keys in the ConfigMap."), AGE), _config_map_row
    ),
    "Secret": Columns(
        (
            NAME,
            Column("Type", S, "The type of the secret."),
            Column("Data", INT, "The number of keys in the secret."),
            AGE,
        ),
        _secret_row,
    ),
    "ServiceAccount": Columns(
        (NAME, Column("Secrets", INT, "The number of secrets of the service account."), AGE),
        _service_account_row,
    ),
}
