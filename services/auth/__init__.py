"""Who is calling and what they may do, for both of the apiserver's APIs (gRPC and HTTP).

The vocabulary both edges share: a caller's `User` (from its bearer token), the
`RequestAttributes` of one request (upstream's authorizer.Attributes), and the
`Authenticator` / `Authorizer` protocols the edges call. The implementations live in this
package's modules; `ALLOW_ALL` and `ADMIN` are for unit tests of an edge that is not about
auth:

    tokens.py      the static token file (--token-auth-file CSV) and the identities
                   `kubera up` issues (why a node pool has one token for its nodes)
    authorizer.py  who may do what (admin, scheduler, controller-manager, nodes), and
                   upstream's 403 message (`forbidden_message`); `authorize` is async
    grpcauth.py    the gRPC edge: the interceptor, the method -> attributes mapping, the
                   admin-only servers of the components, the client's token metadata
    certs.py       the CAs and certificates (apiserver serving; etcd server and client)
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

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
    #: The object a create/update/patch writes (the new one), when the edge has it: the
    #: authorizer checks a node's writes against it (the Node it registers, the pod
    #: whose status it sets). Not part of equality or the hash.
    obj: Any = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    #: Why not (or why), for the 403's message.
    reason: str = ""


class Authenticator(Protocol):
    def authenticate(self, token: str) -> User | None:
        """The user a bearer token belongs to; None for an unknown token."""


class Authorizer(Protocol):
    """`authorize` may be a coroutine function (services/auth/authorizer.py's is: it reads
    objects, is this pod bound to this node?): callers `await maybe_await(...)`."""

    def authorize(self, attrs: RequestAttributes) -> Decision | Awaitable[Decision]: ...


T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """`value`, awaited when it is awaitable (a sync or an async authorizer's answer)."""
    if inspect.isawaitable(value):
        return await value
    return value


def node_names(user: User) -> frozenset[str]:
    """The nodes `user` acts for: its own (system:node:NAME), or a node pool's (its groups
    system:node:NAME; services/auth/tokens.py says why); empty for anyone else."""
    names = {g[len(NODE_PREFIX) :] for g in user.groups if g.startswith(NODE_PREFIX)}
    if user.name.startswith(NODE_PREFIX):
        names.add(user.name[len(NODE_PREFIX) :])
    return frozenset(names)


def is_node(user: User) -> bool:
    return NODES in user.groups or user.name.startswith(NODE_PREFIX)


ADMIN = User("kubera-admin", groups=(MASTERS, AUTHENTICATED))

#: The caller of the request being served, set by both edges once it is authenticated
#: (None: a server without authentication, or work of the apiserver's own). Admission
#: that depends on who writes (services/apiserver/noderestriction.py) reads it.
CURRENT_USER: contextvars.ContextVar[User | None] = contextvars.ContextVar(
    "kubera_current_user", default=None
)


class AllowAll:
    """Every token is the admin; every request allowed (unit tests of the edges only)."""

    def authenticate(self, token: str) -> User | None:
        return ADMIN

    def authorize(self, attrs: RequestAttributes) -> Decision:
        return Decision(True)


ALLOW_ALL = AllowAll()
