from protos.kubera.v1 import core_pb2 as _core_pb2
from protos.kubera.v1 import meta_pb2 as _meta_pb2
from protos.kubera.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ServicePort(_message.Message):
    __slots__ = ("name", "protocol", "app_protocol", "port", "target_port", "node_port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
    NODE_PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    protocol: str
    app_protocol: str
    port: int
    target_port: str
    node_port: int
    def __init__(self, name: _Optional[str] = ..., protocol: _Optional[str] = ..., app_protocol: _Optional[str] = ..., port: _Optional[int] = ..., target_port: _Optional[str] = ..., node_port: _Optional[int] = ...) -> None: ...

class ClientIPConfig(_message.Message):
    __slots__ = ("timeout_seconds",)
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    timeout_seconds: int
    def __init__(self, timeout_seconds: _Optional[int] = ...) -> None: ...

class SessionAffinityConfig(_message.Message):
    __slots__ = ("client_ip",)
    CLIENT_IP_FIELD_NUMBER: _ClassVar[int]
    client_ip: ClientIPConfig
    def __init__(self, client_ip: _Optional[_Union[ClientIPConfig, _Mapping]] = ...) -> None: ...

class ServiceSpec(_message.Message):
    __slots__ = ("ports", "selector", "cluster_ip", "cluster_ips", "type", "external_ips", "session_affinity", "load_balancer_ip", "load_balancer_source_ranges", "external_name", "external_traffic_policy", "health_check_node_port", "publish_not_ready_addresses", "session_affinity_config", "ip_family_policy", "ip_families", "allocate_load_balancer_node_ports", "load_balancer_class", "internal_traffic_policy", "traffic_distribution")
    class SelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PORTS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_IP_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_IPS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_IPS_FIELD_NUMBER: _ClassVar[int]
    SESSION_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_IP_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_SOURCE_RANGES_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_CHECK_NODE_PORT_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_NOT_READY_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    SESSION_AFFINITY_CONFIG_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILY_POLICY_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATE_LOAD_BALANCER_NODE_PORTS_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_CLASS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[ServicePort]
    selector: _containers.ScalarMap[str, str]
    cluster_ip: str
    cluster_ips: _containers.RepeatedScalarFieldContainer[str]
    type: str
    external_ips: _containers.RepeatedScalarFieldContainer[str]
    session_affinity: str
    load_balancer_ip: str
    load_balancer_source_ranges: _containers.RepeatedScalarFieldContainer[str]
    external_name: str
    external_traffic_policy: str
    health_check_node_port: int
    publish_not_ready_addresses: bool
    session_affinity_config: SessionAffinityConfig
    ip_family_policy: str
    ip_families: _containers.RepeatedScalarFieldContainer[str]
    allocate_load_balancer_node_ports: bool
    load_balancer_class: str
    internal_traffic_policy: str
    traffic_distribution: str
    def __init__(self, ports: _Optional[_Iterable[_Union[ServicePort, _Mapping]]] = ..., selector: _Optional[_Mapping[str, str]] = ..., cluster_ip: _Optional[str] = ..., cluster_ips: _Optional[_Iterable[str]] = ..., type: _Optional[str] = ..., external_ips: _Optional[_Iterable[str]] = ..., session_affinity: _Optional[str] = ..., load_balancer_ip: _Optional[str] = ..., load_balancer_source_ranges: _Optional[_Iterable[str]] = ..., external_name: _Optional[str] = ..., external_traffic_policy: _Optional[str] = ..., health_check_node_port: _Optional[int] = ..., publish_not_ready_addresses: _Optional[bool] = ..., session_affinity_config: _Optional[_Union[SessionAffinityConfig, _Mapping]] = ..., ip_family_policy: _Optional[str] = ..., ip_families: _Optional[_Iterable[str]] = ..., allocate_load_balancer_node_ports: _Optional[bool] = ..., load_balancer_class: _Optional[str] = ..., internal_traffic_policy: _Optional[str] = ..., traffic_distribution: _Optional[str] = ...) -> None: ...

class PortStatus(_message.Message):
    __slots__ = ("port", "protocol", "error")
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    port: int
    protocol: str
    error: str
    def __init__(self, port: _Optional[int] = ..., protocol: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class LoadBalancerIngress(_message.Message):
    __slots__ = ("ip", "hostname", "ip_mode", "ports")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    IP_MODE_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    ip_mode: str
    ports: _containers.RepeatedCompositeFieldContainer[PortStatus]
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ..., ip_mode: _Optional[str] = ..., ports: _Optional[_Iterable[_Union[PortStatus, _Mapping]]] = ...) -> None: ...

class LoadBalancerStatus(_message.Message):
    __slots__ = ("ingress",)
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    ingress: _containers.RepeatedCompositeFieldContainer[LoadBalancerIngress]
    def __init__(self, ingress: _Optional[_Iterable[_Union[LoadBalancerIngress, _Mapping]]] = ...) -> None: ...

class ServiceStatus(_message.Message):
    __slots__ = ("load_balancer", "conditions")
    LOAD_BALANCER_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    load_balancer: LoadBalancerStatus
    conditions: _containers.RepeatedCompositeFieldContainer[_meta_pb2.Condition]
    def __init__(self, load_balancer: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ..., conditions: _Optional[_Iterable[_Union[_meta_pb2.Condition, _Mapping]]] = ...) -> None: ...

class Service(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "spec", "status")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    spec: ServiceSpec
    status: ServiceStatus
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ServiceSpec, _Mapping]] = ..., status: _Optional[_Union[ServiceStatus, _Mapping]] = ...) -> None: ...

class ConfigMap(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "data", "binary_data", "immutable")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class BinaryDataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    BINARY_DATA_FIELD_NUMBER: _ClassVar[int]
    IMMUTABLE_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    data: _containers.ScalarMap[str, str]
    binary_data: _containers.ScalarMap[str, bytes]
    immutable: bool
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., data: _Optional[_Mapping[str, str]] = ..., binary_data: _Optional[_Mapping[str, bytes]] = ..., immutable: _Optional[bool] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "data", "string_data", "type", "immutable")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    class StringDataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    STRING_DATA_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    IMMUTABLE_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    data: _containers.ScalarMap[str, bytes]
    string_data: _containers.ScalarMap[str, str]
    type: str
    immutable: bool
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., data: _Optional[_Mapping[str, bytes]] = ..., string_data: _Optional[_Mapping[str, str]] = ..., type: _Optional[str] = ..., immutable: _Optional[bool] = ...) -> None: ...

class LocalObjectReference(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ServiceAccount(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "secrets", "image_pull_secrets", "automount_service_account_token")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_SECRETS_FIELD_NUMBER: _ClassVar[int]
    AUTOMOUNT_SERVICE_ACCOUNT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    secrets: _containers.RepeatedCompositeFieldContainer[_core_pb2.ObjectReference]
    image_pull_secrets: _containers.RepeatedCompositeFieldContainer[LocalObjectReference]
    automount_service_account_token: bool
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., secrets: _Optional[_Iterable[_Union[_core_pb2.ObjectReference, _Mapping]]] = ..., image_pull_secrets: _Optional[_Iterable[_Union[LocalObjectReference, _Mapping]]] = ..., automount_service_account_token: _Optional[bool] = ...) -> None: ...

class EndpointAddress(_message.Message):
    __slots__ = ("ip", "hostname", "node_name", "target_ref")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    node_name: str
    target_ref: _core_pb2.ObjectReference
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ..., node_name: _Optional[str] = ..., target_ref: _Optional[_Union[_core_pb2.ObjectReference, _Mapping]] = ...) -> None: ...

class CoreEndpointPort(_message.Message):
    __slots__ = ("name", "port", "protocol", "app_protocol")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: int
    protocol: str
    app_protocol: str
    def __init__(self, name: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[str] = ..., app_protocol: _Optional[str] = ...) -> None: ...

class EndpointSubset(_message.Message):
    __slots__ = ("addresses", "not_ready_addresses", "ports")
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    NOT_READY_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[EndpointAddress]
    not_ready_addresses: _containers.RepeatedCompositeFieldContainer[EndpointAddress]
    ports: _containers.RepeatedCompositeFieldContainer[CoreEndpointPort]
    def __init__(self, addresses: _Optional[_Iterable[_Union[EndpointAddress, _Mapping]]] = ..., not_ready_addresses: _Optional[_Iterable[_Union[EndpointAddress, _Mapping]]] = ..., ports: _Optional[_Iterable[_Union[CoreEndpointPort, _Mapping]]] = ...) -> None: ...

class Endpoints(_message.Message):
    __slots__ = ("api_version", "kind", "metadata", "subsets")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBSETS_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    metadata: _meta_pb2.ObjectMeta
    subsets: _containers.RepeatedCompositeFieldContainer[EndpointSubset]
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., subsets: _Optional[_Iterable[_Union[EndpointSubset, _Mapping]]] = ...) -> None: ...
