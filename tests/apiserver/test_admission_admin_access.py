"""DRA admin access is admission's to grant (upstream's AuthorizedForAdmin): a
ResourceClaim or ResourceClaimTemplate asking for `adminAccess: true` on a request is
created only in a namespace labelled resource.kubernetes.io/admin-access=true, and is
refused elsewhere with upstream's words at spec.devices.requests[i].adminAccess."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.dra.claims import ADMIN_ACCESS_NAMESPACE_LABEL
from services.api.machinery.errors import InvalidError
from services.apiserver.registry import ApiServer
from services.storage.memory import MemoryStorage
from tests.apiserver.conftest import running_apiserver
from tests.builders import exact_request, resource_claim, resource_claim_template

REFUSAL = (
    "spec.devices.requests[1].adminAccess: Forbidden: admin access to devices requires the "
    "`resource.kubernetes.io/admin-access: true` label on the containing namespace"
)


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with running_apiserver(MemoryStorage()) as server:
        for name, labels in (
            ("ops", {ADMIN_ACCESS_NAMESPACE_LABEL: "true"}),
            ("team", {}),
            ("almost", {ADMIN_ACCESS_NAMESPACE_LABEL: "yes"}),
        ):
            ns = core_pb2.Namespace()
            ns.metadata.name = name
            ns.metadata.labels.update(labels)
            await server.create(ns)
        yield server


def _claim(namespace: str, admin: bool | None) -> Any:
    return resource_claim(
        "c", namespace, exact_request("plain", "gpu"), exact_request("debug", "gpu", admin=admin)
    )


def _template(namespace: str, admin: bool | None) -> Any:
    return resource_claim_template(
        "t", namespace, exact_request("plain", "gpu"), exact_request("debug", "gpu", admin=admin)
    )


@pytest.mark.parametrize(
    "make", [_claim, _template], ids=["ResourceClaim", "ResourceClaimTemplate"]
)
@pytest.mark.parametrize(
    ("namespace", "admin", "allowed"),
    [
        ("ops", True, True),
        ("team", True, False),
        ("almost", True, False),
        ("team", False, True),
        ("team", None, True),
    ],
    ids=["labelled", "unlabelled", "label-not-true", "admin-false", "admin-unset"],
)
async def test_admin_access_needs_the_namespace_label(
    api: ApiServer, make: Any, namespace: str, admin: bool | None, allowed: bool
) -> None:
    obj = make(namespace, admin)
    if allowed:
        created: Any = await api.create(obj)
        assert created.metadata.uid
        return
    with pytest.raises(InvalidError) as refused:
        await api.create(obj)
    assert [str(e) for e in refused.value.errors] == [REFUSAL]
