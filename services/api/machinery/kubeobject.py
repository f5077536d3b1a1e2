"""Any Kubernetes object, typed: what code that takes "an object of some kind" may read.

Generic code (the apiserver's registry and watch cache, informers, printers, the CLI) holds
objects as protobuf `Message`s, because a `Kind` names its message class only at run time.
Every kind's message has the same type and object meta (`api_version`, `kind`, an
`ObjectMeta` `metadata`), which `KubeObject` states once as a protocol: every generated kind
class satisfies it structurally. Two checked narrowings get from a `Message` to what it is:

- `object_meta(obj)`: its ObjectMeta, for code that only reads or writes metadata;
- `narrow(obj, core_pb2.Pod)`: the object as its kind's class, for code that knows the kind
  (a controller's informer of pods, a registry path for one kind). A mismatch is a bug and
  raises TypeError naming both types, instead of an AttributeError somewhere later.
"""

from __future__ import annotations

from typing import Protocol, TypeGuard, TypeVar

from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2

M = TypeVar("M", bound=Message)


class KubeObject(Protocol):
    """The type and object meta every kind's message has (upstream's metav1.Object +
    runtime.Object, as far as kubera's code reads them)."""

    api_version: str
    kind: str

    @property
    def metadata(self) -> meta_pb2.ObjectMeta: ...


def object_meta(obj: Message | KubeObject) -> meta_pb2.ObjectMeta:
    """`obj.metadata`, typed; TypeError when `obj` is no Kubernetes object (no ObjectMeta)."""
    meta = getattr(obj, "metadata", None)
    if not isinstance(meta, meta_pb2.ObjectMeta):
        raise TypeError(f"{type(obj).__name__} has no ObjectMeta metadata")
    return meta


def narrow(obj: Message, cls: type[M]) -> M:
    """`obj` as an instance of `cls` (its kind's message class); TypeError when it is not."""
    if not isinstance(obj, cls):
        raise TypeError(f"expected {cls.__name__}, got {type(obj).__name__}")
    return obj


def narrow_optional(obj: Message | None, cls: type[M]) -> M | None:
    """`narrow` for a lookup that may find nothing (None stays None)."""
    return None if obj is None else narrow(obj, cls)


def all_instances(objs: list[Message], cls: type[M]) -> TypeGuard[list[M]]:
    """Whether every one of `objs` is a `cls` (a store's list read as its kind's objects)."""
    return all(isinstance(o, cls) for o in objs)
