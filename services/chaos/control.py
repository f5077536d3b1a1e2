"""The chaos control service of one replica: partition, heal and report its relays.

A replica (scheduler, controller-manager) that dials etcd and the apiserver through
`Relay`s serves this on loopback, so `kubera chaos partition-leader` can cut exactly the
leader off while it still believes it leads. Bad requests are INVALID_ARGUMENT here, at
the gRPC edge; the relays themselves raise ValueError.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import grpc

from protos.kubera.v1 import chaos_pb2 as pb
from protos.kubera.v1 import chaos_pb2_grpc as pb_grpc
from services.chaos.relay import Relay
from services.grpcserver import start_server

#: The longest partition one call may ask for, in seconds.
MAX_PARTITION_SECONDS = 3600.0


def describe(relay: Relay) -> str:
    label = f"{relay.name} " if relay.name else ""
    return f"{label}{relay.address} -> {relay.target}"


class ChaosControl(pb_grpc.ChaosServicer):
    def __init__(self, relays: Sequence[Relay], identity: str, component: str) -> None:
        self.relays = list(relays)
        self.identity = identity
        self.component = component

    async def Partition(
        self, request: pb.PartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.PartitionResponse:
        seconds = request.seconds
        # Written so NaN fails too.
        if not 0 < seconds <= MAX_PARTITION_SECONDS:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"seconds: must be > 0 and <= {MAX_PARTITION_SECONDS:g}, got {seconds:g}",
            )
        for relay in self.relays:
            relay.partition(seconds)
        return pb.PartitionResponse(
            until_seconds_from_now=seconds, relays=[describe(r) for r in self.relays]
        )

    async def Heal(
        self, request: pb.HealRequest, context: grpc.aio.ServicerContext
    ) -> pb.HealResponse:
        was = [relay.heal() for relay in self.relays]
        return pb.HealResponse(was_partitioned=any(was))

    async def Status(
        self, request: pb.StatusRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        return pb.StatusResponse(
            partitioned=any(r.partitioned for r in self.relays),
            remaining_seconds=max((r.remaining() for r in self.relays), default=0.0),
            pid=os.getpid(),
            identity=self.identity,
            component=self.component,
        )


async def serve_control(
    relays: Sequence[Relay], identity: str, component: str, host: str = "127.0.0.1"
) -> tuple[grpc.aio.Server, int]:
    """A started Chaos server over `relays` on an ephemeral port; returns it and the port."""
    servicer = ChaosControl(relays, identity, component)
    return await start_server(
        lambda s: pb_grpc.add_ChaosServicer_to_server(servicer, s),
        f"the chaos control of {component} {identity}",
        host,
    )
