"""Who is calling and what they may do, for both of the apiserver's APIs (gRPC and HTTP).

The vocabulary both edges share: a caller's `User` (from its bearer token), the
`RequestAttributes` of one request (upstream's authorizer.Attributes), and the
`Authenticator` / `Authorizer` protocols the edges call. The implementations (the static
token file, the node/scheduler/controller-manager/admin rules) live in this package's
modules; `ALLOW_ALL` and `ADMIN` are for unit tests of an edge that is not about auth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

#: kube-apiserver's group of every authenticated caller, and the admin group.
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
NODES = "system:nodes"
NODE_PREFIX = "system:node:"


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class RequestAttributes:
    """One request as the authorizer sees it (upstream's authorizer.AttributesRecord).

    `verb`: get, list, watch, create, update, patch, delete, deletecollection.
    `resource` is the plural ("pods"); `subresource` "status", "binding", "eviction",
    "scale" or "". `name` is "" for list/watch/create-without-name and deletecollection."""

    user: User
    verb: str
    resource: str
    api_group: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    #: Why not (or why), for the 403's message.
    reason: str = ""


class Authenticator(Protocol):
    def authenticate(self, token: str) -> User | None:
        """The user a bearer token belongs to; None for an unknown token."""


class Authorizer(Protocol):
    def authorize(self, attrs: RequestAttributes) -> Decision: ...


ADMIN = User("kubera-admin", groups=(MASTERS, AUTHENTICATED))


class AllowAll:
    """Every token is the admin; every request allowed (unit tests of the edges only)."""

    def authenticate(self, token: str) -> User | None:
        return ADMIN

    def authorize(self, attrs: RequestAttributes) -> Decision:
        return Decision(True)


ALLOW_ALL = AllowAll()
