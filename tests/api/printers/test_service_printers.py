"""kubectl's columns for the service kinds (services/api/printers/service.py), with the
cases of upstream's pkg/printers/internalversion/printers_test.go (TestPrintService,
TestPrintServiceLoadBalancer, TestPrintEndpointSlice, TestPrintConfigMap, TestPrintSecret,
TestPrintServiceAccount), and `kubera describe secret` printing sizes, never values."""

from __future__ import annotations

from typing import Any

import pytest

from kubera.printing.describe import describe_object
from protos.kubera.v1 import discovery_pb2, service_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.printers.printers import rows

NOW = 1_800_000_000.0


def svc(spec: dict[str, Any], status: dict[str, Any] | None = None) -> Any:
    doc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test1"}, "spec": spec}
    if status:
        doc["status"] = status
    return codec.decode(doc, validate="strict").obj


SERVICES = [
    (
        "ClusterIP",
        {"type": "ClusterIP", "ports": [{"protocol": "TCP", "port": 2233}], "clusterIP": "10.9.8.7", "selector": {"foo": "bar"}},
        None,
        ["ClusterIP", "10.9.8.7", "<none>", "2233/TCP"],
        "foo=bar",
    ),
    (
        "NodePort",
        {"type": "NodePort", "ports": [{"protocol": "TCP", "port": 8888, "nodePort": 9999}], "clusterIP": "10.9.8.7"},
        None,
        ["NodePort", "10.9.8.7", "<none>", "8888:9999/TCP"],
        "<none>",
    ),
    (
        "LoadBalancer pending",
        {"type": "LoadBalancer", "ports": [{"protocol": "TCP", "port": 8888}], "clusterIP": "10.9.8.7"},
        None,
        ["LoadBalancer", "10.9.8.7", "<pending>", "8888/TCP"],
        "<none>",
    ),
    (
        "LoadBalancer with ingress and external IPs",
        {"type": "LoadBalancer", "ports": [{"protocol": "TCP", "port": 8888}], "clusterIP": "10.9.8.7", "externalIPs": ["80.11.12.10"]},
        {"loadBalancer": {"ingress": [{"ip": "3.4.5.6"}]}},
        ["LoadBalancer", "10.9.8.7", "3.4.5.6,80.11.12.10", "8888/TCP"],
        "<none>",
    ),
    (
        "ExternalName",
        {"type": "ExternalName", "ports": [{"protocol": "TCP", "port": 8888}], "externalName": "my.database.example.com"},
        None,
        ["ExternalName", "<none>", "my.database.example.com", "8888/TCP"],
        "<none>",
    ),
    (
        "headless, several ports",
        {"type": "ClusterIP", "clusterIP": "None", "ports": [{"name": "a", "protocol": "TCP", "port": 80}, {"name": "b", "protocol": "UDP", "port": 53}]},
        None,
        ["ClusterIP", "None", "<none>", "80/TCP,53/UDP"],
        "<none>",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "spec", "status", "cells", "selector"), SERVICES, ids=[c[0] for c in SERVICES]
)
def test_service_columns(
    case: str, spec: dict[str, Any], status: Any, cells: list[str], selector: str
) -> None:
    [row] = rows(BY_KIND["Service"], [svc(spec, status)], now=NOW, wide=True)
    assert row[0] == "test1" and row[1:5] == cells and row[6] == selector


def _slice(endpoints: list[list[str]], ports: list[dict[str, Any]]) -> discovery_pb2.EndpointSlice:
    eps = discovery_pb2.EndpointSlice(address_type="IPv4")
    eps.metadata.name = "abcslice.123"
    for addrs in endpoints:
        eps.endpoints.add(addresses=addrs)
    for p in ports:
        eps.ports.add(**p)
    return eps


ENDPOINT_SLICES = [
    ("none", [], [], "<unset>", "<unset>"),
    ("one port, two endpoints", [["10.1.2.3"], ["2.3.4.5"]], [{"name": "http", "port": 80, "protocol": "TCP"}], "80", "10.1.2.3,2.3.4.5"),
    (
        "more than three",
        [["10.1.2.3", "2.3.4.5"], ["10.1.2.4"], ["10.1.2.5"]],
        [{"port": 80}, {"port": 443}, {"name": "dns"}, {}],
        "80,443,dns + 1 more...",
        "10.1.2.3,2.3.4.5,10.1.2.4 + 1 more...",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "endpoints", "ports", "port_cell", "endpoint_cell"),
    ENDPOINT_SLICES,
    ids=[c[0] for c in ENDPOINT_SLICES],
)
def test_endpoint_slice_columns(
    case: str,
    endpoints: list[list[str]],
    ports: list[dict[str, Any]],
    port_cell: str,
    endpoint_cell: str,
) -> None:
    [row] = rows(BY_KIND["EndpointSlice"], [_slice(endpoints, ports)], now=NOW)
    assert row[:4] == ["abcslice.123", "IPv4", port_cell, endpoint_cell]


def test_config_map_secret_and_service_account_columns() -> None:
    cm = service_pb2.ConfigMap(data={"a": "1"}, binary_data={"b": b"\x00"})
    cm.metadata.name = "cm"
    secret = service_pb2.Secret(type="kubernetes.io/tls", data={"tls.crt": b"c", "tls.key": b"k"})
    secret.metadata.name = "s"
    sa = service_pb2.ServiceAccount()
    sa.metadata.name = "default"
    assert rows(BY_KIND["ConfigMap"], [cm], now=NOW)[0][:2] == ["cm", "2"]
    assert rows(BY_KIND["Secret"], [secret], now=NOW)[0][:3] == ["s", "kubernetes.io/tls", "2"]
    assert rows(BY_KIND["ServiceAccount"], [sa], now=NOW)[0][:2] == ["default", "0"]


def test_describe_secret_prints_sizes_never_values() -> None:
    s = service_pb2.Secret(type="Opaque", data={"password": b"hunter2", "user": b"admin"})
    s.metadata.name, s.metadata.namespace = "s", "default"
    text = describe_object(s, [], NOW)
    assert "password:  7 bytes" in text and "user:      5 bytes" in text
    assert "hunter2" not in text and "aHVudGVyMg" not in text
