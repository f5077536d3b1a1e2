"""A TCP relay a replica's connections go through, so chaos can partition one process.

`kubera chaos partition-leader` must cut the leading scheduler (or controller-manager) off
from etcd and the apiserver while it still believes it leads, portably: no iptables, no
root, no second network namespace. So every replica dials etcd and the apiserver through
its own `Relay`, and a partition makes the relays behave like a dropped network:

- bytes in flight, in either direction, are held: not delivered and not dropped. Like TCP
  retransmissions they arrive after the heal, if the peers have not given up by then (a
  deadline, a keepalive), which is the late-arrival case fencing must handle;
- a FIN is held like data: a peer that closes during a partition is seen closing after it;
- new client connections are accepted, but no upstream connection is made and nothing
  flows until the heal.

A partition ends by itself after its duration (a second `partition` replaces the
deadline) or by `heal()`.

Invariants: each direction of a connection is one task that reads a chunk, waits at the
gate (`_open`, set while healed), then writes it and waits for the writer to drain. So a
direction holds at most one chunk plus the stream's read buffer (which pauses reading from
the socket past its limit) and the transport's write buffer (`drain` blocks past its high
water mark): memory is bounded per connection, and a held sender sees TCP flow control,
never an error. Nothing polls: the pumps wait on sockets and on the gate. Every task is
tracked and cancelled by `close()`.
"""

from __future__ import annotations

import asyncio
import math

from services.clock import Clock, RealClock

#: How much one read takes off a socket; also the most a direction holds itself.
CHUNK = 64 * 1024


class Relay:
    """One listening socket on loopback forwarding every connection to one target.

    Start with `await Relay.start(host, port)`; dial `relay.address` instead of the target.
    """

    def __init__(
        self, target_host: str, target_port: int, *, name: str = "", clock: Clock | None = None
    ) -> None:
        self.target_host = target_host
        self.target_port = target_port
        #: What the relay leads to ("etcd", "apiserver"), for status and logs.
        self.name = name
        self._clock: Clock = clock or RealClock()
        self._server: asyncio.Server | None = None
        self._address = ""
        #: Set while healed; pumps and new upstream connections wait on it.
        self._open = asyncio.Event()
        self._open.set()
        #: The monotonic deadline (clock seconds) of the current partition, else None.
        self._until: float | None = None
        self._timer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._held = 0
        self._closed = False

    @classmethod
    async def start(
        cls,
        target_host: str,
        target_port: int,
        listen_host: str = "127.0.0.1",
        *,
        name: str = "",
        clock: Clock | None = None,
    ) -> Relay:
        """A relay listening on an ephemeral port of `listen_host`."""
        relay = cls(target_host, target_port, name=name, clock=clock)
        relay._server = await asyncio.start_server(relay._accept, listen_host, 0)
        host, port = relay._server.sockets[0].getsockname()[:2]
        relay._address = f"{host}:{port}"
        return relay

    @property
    def address(self) -> str:
        """ "host:port" to dial instead of the target."""
        return self._address

    @property
    def target(self) -> str:
        return f"{self.target_host}:{self.target_port}"

    @property
    def partitioned(self) -> bool:
        return not self._open.is_set()

    @property
    def until(self) -> float | None:
        """When the current partition ends, in the clock's monotonic seconds; None if healed."""
        return self._until

    def remaining(self) -> float:
        """Seconds left in the current partition (0 when healed)."""
        if self._until is None:
            return 0.0
        return max(0.0, self._until - self._clock.monotonic())

    @property
    def held_bytes(self) -> int:
        """Bytes read and held at the gate right now (more may wait in socket buffers)."""
        return self._held

    @property
    def connections(self) -> int:
        """Client connections being served (including ones waiting for the heal)."""
        return len(self._tasks)

    def partition(self, seconds: float) -> float:
        """Drop the network for `seconds` from now (replacing any current partition's end);
        returns the deadline in the clock's monotonic seconds."""
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"partition seconds must be positive and finite, got {seconds}")
        if self._closed:
            raise RuntimeError(f"relay to {self.target} is closed")
        self._cancel_timer()
        self._until = self._clock.monotonic() + seconds
        self._open.clear()
        self._timer = asyncio.create_task(self._heal_after(seconds))
        return self._until

    def heal(self) -> bool:
        """End the partition now: held bytes flow, waiting connections dial the target.
        Returns whether the relay was partitioned."""
        was = self.partitioned
        self._cancel_timer()
        self._until = None
        self._open.set()
        return was

    async def close(self) -> None:
        """Stop listening, close every connection and cancel every task."""
        self._closed = True
        self._cancel_timer()
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()
        if self._server is not None:
            await self._server.wait_closed()

    def __repr__(self) -> str:
        state = f"partitioned {self.remaining():.1f}s" if self.partitioned else "healed"
        label = f"{self.name} " if self.name else ""
        return f"<Relay {label}{self._address} -> {self.target} {state}>"

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer is not asyncio.current_task():
            self._timer.cancel()
        self._timer = None

    async def _heal_after(self, seconds: float) -> None:
        await self._clock.sleep(seconds)
        self._timer = None
        self.heal()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closed:
            writer.close()
            return
        self._writers.add(writer)
        task = asyncio.create_task(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        upstream_w: asyncio.StreamWriter | None = None
        try:
            await self._open.wait()
            try:
                upstream_r, upstream_w = await asyncio.open_connection(
                    self.target_host, self.target_port
                )
            except OSError:
                # The target refuses: the client sees its connection closed before any
                # byte came back, which gRPC reports as a failed connect ("failed to
                # connect to all addresses"), as on a direct dial.
                return
            self._writers.add(upstream_w)
            try:
                async with asyncio.TaskGroup() as pumps:
                    pumps.create_task(self._pump(client_r, upstream_w))
                    pumps.create_task(self._pump(upstream_r, client_w))
            except* OSError:
                pass  # a reset on either side ends both directions
        finally:
            for w in (client_w, upstream_w):
                if w is not None:
                    self._writers.discard(w)
                    w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy one direction until EOF, holding each chunk (and the EOF) at the gate."""
        while True:
            chunk = await reader.read(CHUNK)
            if not self._open.is_set():
                self._held += len(chunk)
                try:
                    await self._open.wait()
                finally:
                    self._held -= len(chunk)
            if not chunk:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(chunk)
            await writer.drain()
