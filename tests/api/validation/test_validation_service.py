"""Validation of Service, ConfigMap, Secret and EndpointSlice (services/api/validation/
service.py), with the cases of upstream's pkg/apis/core/validation/validation_test.go
(TestValidateServiceCreate, TestValidateServiceUpdate, TestValidateConfigMap,
TestValidateConfigMapUpdate, TestValidateSecret, TestValidateSecretUpdate, the
dockercfg / basic-auth / ssh-auth / tls secret cases) and
pkg/apis/discovery/validation/validation_test.go (TestValidateEndpointSlice): the field
path and error type of each refusal, after the API defaults were applied as the
apiserver does before validating."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from services.api import validation
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver import admission

Json = dict[str, Any]


def _obj(kind: str, doc: Json) -> Any:
    full = {"apiVersion": BY_KIND[kind].api_version, "kind": kind, **doc}
    full.setdefault("metadata", {"name": "abc-123", "namespace": "default"})
    obj = codec.decode(full, validate="strict").obj
    admission.apply_defaults(BY_KIND[kind], obj)
    return obj


def errors(kind: str, doc: Json) -> list[tuple[str, str]]:
    return [(e.path, e.type) for e in validation.validate_create(kind, _obj(kind, doc))]


def update_errors(kind: str, old: Json, new: Json) -> list[tuple[str, str]]:
    o, n = _obj(kind, old), _obj(kind, new)
    n.metadata.resource_version = o.metadata.resource_version = "1"
    return [(e.path, e.type) for e in validation.validate_update(kind, n, o)]


def service(**spec: Any) -> Json:
    spec.setdefault("selector", {"key": "val"})
    spec.setdefault("ports", [{"name": "p", "protocol": "TCP", "port": 8675, "targetPort": 8675}])
    return {"spec": spec}


def port(name: str = "p", port: int = 8675, **extra: Any) -> Json:
    return {"name": name, "protocol": "TCP", "port": port, **extra}


REQ, INV, UNS, FORB, DUP = (
    "Required value",
    "Invalid value",
    "Unsupported value",
    "Forbidden",
    "Duplicate value",
)

SERVICE_CASES: list[tuple[str, Json, list[tuple[str, str]]]] = [
    ("valid", service(), []),
    ("invalid name", {**service(), "metadata": {"name": "a.b.c", "namespace": "d"}}, [("metadata.name", INV)]),
    ("missing ports", service(ports=[]), [("spec.ports", REQ)]),
    ("missing ports but headless", service(ports=[], clusterIP="None"), []),
    ("empty port[1] name", service(ports=[port("p"), port("", 12115)]), [("spec.ports[1].name", REQ)]),
    ("invalid port name", service(ports=[port("INVALID")]), [("spec.ports[0].name", INV)]),
    ("dup port name", service(ports=[port("p"), port("p", 2)]), [("spec.ports[1].name", DUP)]),
    ("invalid port", service(ports=[port(port=65536, targetPort=80)]), [("spec.ports[0].port", INV)]),
    ("invalid protocol", service(ports=[port(protocol="INVALID")]), [("spec.ports[0].protocol", UNS)]),
    ("invalid cluster ip", service(clusterIP="invalid"), [("spec.clusterIPs[0]", INV)]),
    ("invalid targetPort int", service(ports=[port(targetPort=65536)]), [("spec.ports[0].targetPort", INV)]),
    (
        "invalid targetPort name: not lowercase, no letter a-z",
        service(ports=[port(targetPort="INVALID")]),
        [("spec.ports[0].targetPort", INV), ("spec.ports[0].targetPort", INV)],
    ),
    ("invalid type", service(type="INVALID"), [("spec.type", UNS)]),
    ("invalid session affinity", service(sessionAffinity="INVALID"), [("spec.sessionAffinity", UNS)]),
    ("invalid selector", service(selector={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), [("spec.selector", INV)]),
    ("invalid external ip", service(externalIPs=["1.2.3.4.5"]), [("spec.externalIPs[0]", INV)]),
    ("nodePort with type ClusterIP", service(ports=[port(nodePort=30123)]), [("spec.ports[0].nodePort", FORB)]),
    ("dup port and protocol", service(ports=[port("a", 1), port("b", 1)]), [("spec.ports[1]", DUP)]),
    ("same port, two protocols", service(ports=[port("a", 53), port("b", 53, protocol="UDP")]), []),
    (
        "dup nodePort",
        service(type="NodePort", ports=[port("a", 1, nodePort=30001), port("b", 2, nodePort=30001)]),
        [("spec.ports[1].nodePort", DUP)],
    ),
    ("LoadBalancer exposing the kubelet port", service(type="LoadBalancer", ports=[port(port=10250)]), [("spec.ports[0]", INV)]),
    ("headless NodePort", service(type="NodePort", clusterIP="None"), [("spec.clusterIPs[0]", INV)]),
    ("ExternalName without a name", service(type="ExternalName", ports=[]), [("spec.externalName", REQ)]),
    ("ExternalName with a bad name", service(type="ExternalName", externalName="-bad-"), [("spec.externalName", INV)]),
    ("ExternalName with a cluster IP", service(type="ExternalName", externalName="x.com", clusterIP="1.2.3.4"), [("spec.clusterIPs", FORB)]),
    ("externalTrafficPolicy on ClusterIP", service(externalTrafficPolicy="Local"), [("spec.externalTrafficPolicy", INV)]),
    ("clusterIPs not matching clusterIP", service(clusterIP="10.0.0.1", clusterIPs=["10.0.0.2"]), [("spec.clusterIPs", INV)]),
    ("bad ipFamilyPolicy", service(ipFamilyPolicy="Maybe"), [("spec.ipFamilyPolicy", UNS)]),
    (
        "ClientIP affinity timeout out of range",
        service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}}),
        [("spec.sessionAffinityConfig.clientIP.timeoutSeconds", INV)],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("case", "doc", "want"), SERVICE_CASES, ids=[c[0] for c in SERVICE_CASES])
def test_validate_service_create(case: str, doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("Service", doc) == want


def test_service_update_keeps_cluster_ip() -> None:
    old = service(clusterIP="1.2.3.4")
    assert update_errors("Service", old, service(clusterIP="1.2.3.4", selector={"a": "b"})) == []
    assert update_errors("Service", old, service(clusterIP="1.2.3.5")) == [
        ("spec.clusterIPs[0]", INV)
    ]


CM_CASES: list[tuple[str, Json, list[tuple[str, str]]]] = [
    ("valid", {"data": {"key.name": "v", "KEY_NAME": "v", "key-name": "v"}}, []),
    ("bad key", {"data": {"a*b": "v"}}, [("data[a*b]", INV)]),
    ("dot key", {"data": {".": "v"}}, [("data[.]", INV)]),
    ("dot-dot prefix", {"data": {"..a": "v"}}, [("data[..a]", INV)]),
    ("key in data and binaryData", {"data": {"k": "v"}, "binaryData": {"k": "dg=="}}, [("data[k]", INV)]),
    ("too large", {"data": {"k": "x" * (1024 * 1024)}}, [("", "Too long")]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "doc", "want"), CM_CASES, ids=[c[0] for c in CM_CASES])
def test_validate_config_map(case: str, doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("ConfigMap", doc) == want


def test_immutable_config_map_and_secret_keep_their_data() -> None:
    old = {"data": {"k": "v"}, "immutable": True}
    assert update_errors("ConfigMap", old, {"data": {"k": "w"}, "immutable": True}) == [
        ("data", FORB)
    ]
    assert update_errors("ConfigMap", old, {"data": {"k": "v"}, "immutable": False}) == [
        ("immutable", FORB)
    ]
    assert update_errors("ConfigMap", {"data": {"k": "v"}}, {"data": {"k": "w"}}) == []
    sold = {"data": {"k": "dg=="}, "immutable": True}
    assert update_errors("Secret", sold, {"data": {"k": "dw=="}, "immutable": True}) == [
        ("data", FORB)
    ]


B64 = "dmFsdWU="

SECRET_CASES: list[tuple[str, Json, list[tuple[str, str]]]] = [
    ("opaque", {"data": {"k": B64}}, []),
    ("bad key", {"data": {"a b": B64}}, [("data[a b]", INV)]),
    ("too large", {"data": {"k": base64.b64encode(b"x" * 1024 * 1024).decode()}}, [("data", "Too long")]),
    (
        "service-account-token without its annotation",
        {"type": "kubernetes.io/service-account-token"},
        [("metadata.annotations[kubernetes.io/service-account.name]", REQ)],
    ),
    ("dockercfg without data", {"type": "kubernetes.io/dockercfg"}, [("data[.dockercfg]", REQ)]),
    ("dockercfg not JSON", {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": B64}}, [("data[.dockercfg]", INV)]),
    ("dockerconfigjson", {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}}, []),
    ("basic-auth without user or password", {"type": "kubernetes.io/basic-auth"}, [("data[username]", REQ), ("data[password]", REQ)]),
    ("basic-auth with a password", {"type": "kubernetes.io/basic-auth", "data": {"password": B64}}, []),
    ("ssh-auth without key", {"type": "kubernetes.io/ssh-auth"}, [("data[ssh-privatekey]", REQ)]),
    ("tls without cert", {"type": "kubernetes.io/tls", "data": {"tls.key": B64}}, [("data[tls.crt]", REQ)]),
    ("stringData keys are checked as data's", {"stringData": {"a b": "v"}}, [("data[a b]", INV)]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "doc", "want"), SECRET_CASES, ids=[c[0] for c in SECRET_CASES])
def test_validate_secret(case: str, doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("Secret", doc) == want


def test_secret_type_is_immutable() -> None:
    old = {"type": "Opaque", "data": {"k": B64}}
    new = {"type": "kubernetes.io/basic-auth", "data": {"password": B64}}
    assert update_errors("Secret", old, new) == [("type", INV)]


def test_invalid_dockercfg_error_never_shows_the_data() -> None:
    data = base64.b64encode(b"hunter2-not-json").decode()
    secret = _obj("Secret", {"type": "kubernetes.io/dockercfg", "data": {".dockercfg": data}})
    [err] = validation.validate_create("Secret", secret)
    assert "hunter2" not in str(err) and data not in str(err)


def eps(address_type: str = "IPv4", endpoints: Any = (), ports: Any = ()) -> Json:
    return {"addressType": address_type, "endpoints": list(endpoints), "ports": list(ports)}


SLICE_CASES: list[tuple[str, Json, list[tuple[str, str]]]] = [
    ("valid", eps(endpoints=[{"addresses": ["10.1.2.3"]}], ports=[{"name": "http", "port": 80, "protocol": "TCP"}]), []),
    ("bad address type", eps("IPv5"), [("addressType", UNS)]),
    ("endpoint without addresses", eps(endpoints=[{"addresses": []}]), [("endpoints[0].addresses", REQ)]),
    ("IPv6 address in an IPv4 slice", eps(endpoints=[{"addresses": ["::1"]}]), [("endpoints[0].addresses[0]", INV)]),
    ("FQDN", eps("FQDN", endpoints=[{"addresses": ["foo.example.com"]}]), []),
    ("bad port name", eps(ports=[{"name": "Bad_Name", "port": 80}]), [("ports[0].name", INV)]),
    ("dup port name", eps(ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}]), [("ports[1].name", DUP)]),
    ("bad protocol", eps(ports=[{"protocol": "QUIC"}]), [("ports[0].protocol", UNS)]),
    ("too many addresses", eps(endpoints=[{"addresses": [f"10.0.0.{i}" for i in range(101)]}]), [("endpoints[0].addresses", "Too many")]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "doc", "want"), SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
def test_validate_endpoint_slice(case: str, doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("EndpointSlice", doc) == want


def subset(addresses: Any = (), ports: Any = ()) -> Json:
    return {"addresses": [{"ip": a} for a in addresses], "ports": list(ports)}


ENDPOINTS_CASES: list[tuple[str, Json, list[tuple[str, str]]]] = [
    ("valid", {"subsets": [subset(["10.1.2.3"], [{"name": "a", "port": 8675, "protocol": "TCP"}])]}, []),
    ("empty subset", {"subsets": [subset()]}, [("subsets[0].addresses", REQ)]),
    ("bad ip", {"subsets": [subset(["[2001:db8::1]"], [{"port": 1, "protocol": "TCP"}])]}, [("subsets[0].addresses[0].ip", INV)]),
    (
        "two ports need names",
        {"subsets": [subset(["10.1.2.3"], [{"port": 1, "protocol": "TCP"}, {"name": "b", "port": 2, "protocol": "TCP"}])]},
        [("subsets[0].ports[0].name", REQ)],
    ),
    ("bad port", {"subsets": [subset(["10.1.2.3"], [{"port": 0, "protocol": "TCP"}])]}, [("subsets[0].ports[0].port", INV)]),
    ("bad protocol", {"subsets": [subset(["10.1.2.3"], [{"port": 1, "protocol": "X"}])]}, [("subsets[0].ports[0].protocol", UNS)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "doc", "want"), ENDPOINTS_CASES, ids=[c[0] for c in ENDPOINTS_CASES]
)
def test_validate_endpoints(case: str, doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("Endpoints", doc) == want
