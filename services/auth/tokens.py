"""Bearer tokens: kube-apiserver's static token file (--token-auth-file), read and written,
and the identities `kubera up` issues to every component.

The file is upstream's CSV, one identity a line:

    token,user,uid,"group1,group2"

(at least three columns; a fourth holds the groups, comma-separated; blank lines and an
empty token are skipped; a repeated token: the later line wins, as upstream). Every user
the file names is also in `system:authenticated`, as kube-apiserver's authenticator adds.

Who gets a token (`issue_tokens`):

    admin                  kubera-admin                  system:masters
    scheduler replica R    system:kube-scheduler (uid R)
    controller-manager R   system:kube-controller-manager (uid R)
    hollow node N          system:node:N                 system:nodes
    node pool P            kubera:node-pool:P            system:nodes, system:node:N for
                                                         each node N the pool runs

Why a node pool has its own identity: a pool runs hundreds of hollow kubelets in one
process and sends their writes batched (one BatchUpdate of many nodes' pod statuses, one
BatchCreate of many Leases), over one channel. Upstream has one credential per kubelet;
a batch signed by hundreds of tokens is no batch. So the pool's token authenticates as
the set of nodes it runs, named by groups `system:node:NAME` (the user name a node's own
token has), and the authorizer checks every item of a batch against that set: a pool acts
for its nodes and for no other, exactly as each of its kubelets would with its own token
("a pool's token is refused for another node's objects"). The per-node tokens are issued
too (a kubelet run on its own, a test, an operator acting as one node) and hold one node.
"""

from __future__ import annotations

import csv
import io
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from services.auth import AUTHENTICATED, MASTERS, NODE_PREFIX, NODES, User

ADMIN_USER = "kubera-admin"
SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
POOL_PREFIX = "kubera:node-pool:"


class TokenFileError(ValueError):
    pass


def node_user(node: str) -> str:
    return f"{NODE_PREFIX}{node}"


def parse_token_file(text: str, *, source: str = "token file") -> dict[str, User]:
    """token -> User of a --token-auth-file CSV (see the module docstring)."""
    users: dict[str, User] = {}
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    for n, record in enumerate(reader, start=1):
        if not record or all(not f.strip() for f in record):
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"{source}: record {n} must have at least 3 columns (token, user name, "
                f"user uid), found {len(record)}"
            )
        token = record[0].strip()
        if not token:
            continue
        groups: list[str] = []
        if len(record) >= 4:
            groups = [g.strip() for g in record[3].split(",") if g.strip()]
        if AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        users[token] = User(record[1].strip(), record[2].strip(), tuple(groups))
    return users


def format_token_file(entries: Iterable[tuple[str, User]]) -> str:
    """The CSV text of (token, user) pairs; `parse_token_file` reads it back."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for token, user in entries:
        groups = [g for g in user.groups if g != AUTHENTICATED]
        writer.writerow([token, user.name, user.uid, ",".join(groups)])
    return out.getvalue()


class TokenAuthenticator:
    """Authenticator of a static token file (upstream's tokenfile authenticator)."""

    def __init__(self, users: Mapping[str, User]) -> None:
        self._users = dict(users)

    @classmethod
    def from_text(cls, text: str) -> TokenAuthenticator:
        return cls(parse_token_file(text))

    @classmethod
    def from_file(cls, path: str | Path) -> TokenAuthenticator:
        return cls(parse_token_file(Path(path).read_text(), source=str(path)))

    def authenticate(self, token: str) -> User | None:
        if not token:
            return None
        return self._users.get(token)


@dataclass
class IssuedTokens:
    """Every identity `kubera up` issued: token per component name (see `issue_tokens`)."""

    admin: str
    #: component name ("scheduler", "scheduler-1", "controller-manager", "pool-0",
    #: "node:NAME") -> token
    by_component: dict[str, str] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)

    def token_for(self, component: str) -> str:
        return self.by_component[component]

    def csv(self) -> str:
        return format_token_file(self.users.items())


def issue_tokens(
    *,
    schedulers: Sequence[str] = (),
    controller_managers: Sequence[str] = (),
    pools: Mapping[str, Sequence[str]] | None = None,
    token_bytes: int = 32,
) -> IssuedTokens:
    """Fresh random tokens (secrets.token_urlsafe) for the admin, each named scheduler and
    controller-manager replica, each node pool (acting for its nodes, `pools`: pool name ->
    node names) and each of those nodes on its own."""

    def new() -> str:
        return secrets.token_urlsafe(token_bytes)

    admin = new()
    issued = IssuedTokens(admin=admin)
    issued.users[admin] = User(ADMIN_USER, "kubera-admin", (MASTERS, AUTHENTICATED))
    issued.by_component["admin"] = admin

    def add(component: str, user: User) -> None:
        token = new()
        issued.by_component[component] = token
        issued.users[token] = user

    for name in schedulers:
        add(name, User(SCHEDULER_USER, name, (AUTHENTICATED,)))
    for name in controller_managers:
        add(name, User(CONTROLLER_MANAGER_USER, name, (AUTHENTICATED,)))
    for pool, nodes in (pools or {}).items():
        add(
            pool,
            User(
                f"{POOL_PREFIX}{pool}",
                pool,
                (NODES, AUTHENTICATED, *(node_user(n) for n in nodes)),
            ),
        )
        for n in nodes:
            add(f"node:{n}", User(node_user(n), n, (NODES, AUTHENTICATED)))
    return issued


def write_private(path: str | Path, data: str | bytes) -> Path:
    """Write `data` to `path` readable by its owner only (0600 from the first byte)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return p
