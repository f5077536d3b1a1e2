"""The apiserver replicas a client may dial, and which one it uses now.

`kubera up --apiservers K` runs K active-active apiservers on one etcd, each with its own
watch cache (as kube-apiserver replicas behind a load balancer). A client is handed their
addresses as one string, `host:port[,host:port…]`, in the order it should try them: the
launcher rotates the list per component, so components spread over the replicas; a
`spread_key` (a stable hash of an identity) rotates it here instead, for callers that
get the plain list.

    Endpoints("a:1,b:2")      current = a:1
      a:1 unreachable (a call fails UNAVAILABLE) ─► failed("a:1") ─► current = b:2
      b:2 unreachable (a call fails UNAVAILABLE) ─► failed("b:2") ─► current = a:1 (round)

A client stays where it is while it works (as a connection through a load balancer
sticks to one backend): it moves only when its current replica is unreachable, then to
the next in its order. Only a transport failure counts (client.py's `transport_failure`):
an UNAVAILABLE the apiserver itself sends (its etcd unreachable, with no kubera-reason but
a "storage unavailable" message, or any error with a kubera-reason) means the replica was
reached, and every replica is on the same etcd.

This module retries nothing. The client (client.py, `_call` and `watch`) sends a call
again, to the next replica, only when it was never sent (`never_sent`: its channel could
not connect, gRPC's "failed to connect to all addresses"), at most once per replica; a
write is safe to resend then. A call that failed in flight may have been applied, so its
caller sees the UnavailableError as it did with one apiserver and retries (an informer
re-watches from its last resourceVersion at once, on the next replica, keeping its cache;
the replicas' revisions are etcd's, so a resourceVersion seen through one is valid at
every other).

Through a chaos relay (services/chaos/relay.py; scheduler and controller-manager replicas
dial the apiserver through one) the TCP connection is the relay's, accepted whatever the
apiserver's state. While healed the relay dials the apiserver per connection and, when
that is refused, closes the client's connection before the HTTP/2 handshake: gRPC
reports that as "failed to connect to all addresses" too (…"Socket closed"), so such a
call is resent to the next replica as on a direct dial (tests/client/
test_apiserver_failover.py checks it). While partitioned the relay holds the connection
without a handshake: calls wait out their deadline (DEADLINE_EXCEEDED, not unreachable)
and the client stays where it is, as behind a dropped network.

Connections are made lazily, one per address, and kept: a channel to a dead replica
redials by itself, so a later failover back to it finds it once it is up again.

Invariant: `failed(address)` moves on only when `address` is still the current one, so
many calls failing at once against one dead replica advance the client by one step, not
by as many as there were calls.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

C = TypeVar("C")

#: The separator between the addresses of one endpoint string.
SEPARATOR = ","


def parse_addresses(addresses: str | Sequence[str]) -> list[str]:
    """The addresses of `host:port[,host:port…]` (or of a list of such strings), in
    order, blanks and repeats dropped. ValueError when none is left."""
    parts = [addresses] if isinstance(addresses, str) else list(addresses)
    out: list[str] = []
    for part in parts:
        for a in part.split(SEPARATOR):
            a = a.strip()
            if a and a not in out:
                out.append(a)
    if not out:
        raise ValueError(f"no apiserver address in {addresses!r}")
    return out


def join_addresses(addresses: Iterable[str]) -> str:
    """The endpoint string of `addresses` (what `parse_addresses` reads back)."""
    return SEPARATOR.join(addresses)


def rotated(addresses: Sequence[str], index: int) -> list[str]:
    """`addresses` starting at `index` (mod their number), the others following in
    order: the list handed to the index-th component, so K replicas each get every K-th
    component first."""
    if not addresses:
        return []
    k = index % len(addresses)
    return [*addresses[k:], *addresses[:k]]


def first_address(addresses: str | Sequence[str]) -> str:
    """The first address of an endpoint string (the first replica's, as given); "" when
    it names none."""
    try:
        return parse_addresses(addresses)[0]
    except ValueError:
        return ""


def spread_index(key: str, n: int) -> int:
    """A stable index in [0, n) for `key` (crc32: the same in every process, unlike hash())."""
    return zlib.crc32(key.encode()) % n if n > 0 else 0


class Endpoints(Generic[C]):
    """An ordered address list, the one in use, and a connection per address.

    `dial(address)` makes the connection (a gRPC channel and its stub, or a fake in
    tests), once per address, when it is first used; `close(connection)` ends it."""

    def __init__(
        self,
        addresses: str | Sequence[str],
        dial: Callable[[str], C],
        *,
        spread_key: str = "",
    ) -> None:
        try:
            self.addresses = parse_addresses(addresses)
        except ValueError:
            # no address: one empty target, as a client of "" always had (its calls
            # fail; making it does not)
            self.addresses = [""]
        self._dial = dial
        self._index = spread_index(spread_key, len(self.addresses)) if spread_key else 0
        self._connections: dict[str, C] = {}
        #: How often this client moved to the next replica.
        self.failovers = 0

    @property
    def current(self) -> str:
        """The address calls go to now."""
        return self.addresses[self._index]

    def connection(self, address: str | None = None) -> C:
        """The connection to `address` (default: the current one), dialled on first use."""
        address = self.current if address is None else address
        conn = self._connections.get(address)
        if conn is None:
            conn = self._connections[address] = self._dial(address)
        return conn

    def failed(self, address: str) -> bool:
        """A call to `address` found it unreachable: move to the next address unless the
        client has moved on already. Returns whether it moved."""
        if len(self.addresses) < 2 or address != self.current:
            return False
        self._index = (self._index + 1) % len(self.addresses)
        self.failovers += 1
        return True

    def connections(self) -> list[C]:
        """Every connection dialled so far (to close them)."""
        return list(self._connections.values())
