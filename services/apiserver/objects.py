"""Small rules about objects the registry applies: which objects a list or watch selects,
when finalizers still hold an object, status copying, conditions, and
the two refusals every write path words the Kubernetes way (not found, conflict)."""

from __future__ import annotations

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import BadRequestError, ConflictError, NotFoundError
from services.api.machinery.fields import FieldRequirement, field_matches, parse_field_selector
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.labels import Selector, SelectorError
from services.api.machinery.listoptions import LIST_ALL, ListOptions

#: How often a read-modify-write (update, delete, bind, patch) retries after losing a race
#: before it answers with a conflict.
MAX_RETRIES = 16


def meta(obj: Message):  # -> meta_pb2.ObjectMeta
    return object_meta(obj)


def conflict(kind: Kind, name: str) -> ConflictError:
    return ConflictError(
        f'Operation cannot be fulfilled on {kind.resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def not_found(kind: Kind, name: str) -> NotFoundError:
    return NotFoundError(f'{kind.resource} "{name}" not found')


class Filter:
    """A parsed label + field selector (and namespace) for list and watch."""

    def __init__(self, kind: Kind, namespace: str, options: ListOptions = LIST_ALL) -> None:
        label_selector, field_selector = options.label_selector, options.field_selector
        try:
            self.labels = Selector.parse(label_selector) if label_selector else None
        except SelectorError as e:
            raise BadRequestError(str(e)) from None
        allowed = sorted(kind.fields(kind.message()))
        try:
            self.fields: list[FieldRequirement] = (
                parse_field_selector(field_selector, allowed) if field_selector else []
            )
        except SelectorError as e:
            raise BadRequestError(
                f"{e} (supported for {kind.resource}: {', '.join(allowed)})"
            ) from None
        self.kind = kind
        self.namespace = namespace if kind.namespaced else ""

    def __call__(self, obj: Message) -> bool:
        m = meta(obj)
        if self.namespace and m.namespace != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(m.labels):
            return False
        if self.fields:
            values = self.kind.fields(obj)
            return field_matches(self.fields, lambda f: values.get(f, ""))
        return True


def held(kind: Kind, obj: Message) -> bool:
    """Whether finalizers still hold the object (a namespace also by its spec finalizers)."""
    if meta(obj).finalizers:
        return True
    return kind.kind == "Namespace" and bool(narrow(obj, core_pb2.Namespace).spec.finalizers)


def copy_status(dst: Message, src: Message) -> None:
    """dst.status = src.status, keeping "unset" unset (an empty status is not written)."""
    if src.HasField("status"):
        dst.status.CopyFrom(src.status)  # type: ignore[attr-defined]
    else:
        dst.ClearField("status")
