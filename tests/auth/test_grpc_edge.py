"""The apiserver's gRPC edge with authentication on (services/auth/grpcauth.py), over real
gRPC on real etcd: no token -> UNAUTHENTICATED; a node's token on another node's objects
-> PERMISSION_DENIED naming who and what; the scheduler binds, a node cannot; a pool's
batch is checked item by item."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from protos.kubera.v1 import coordination_pb2
from services.api.machinery.errors import PermissionDeniedError, UnauthorizedError, UnavailableError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.auth.certs import new_pki
from services.auth.grpcauth import bearer
from services.auth.tokens import IssuedTokens, TokenAuthenticator, issue_tokens
from services.chaos import add_control
from services.client import Client
from services.hosts.apiserver import ApiServerHost, ApiServerHostConfig
from services.hosts.replica import Replica
from tests.builders import (
    MakeNode,
    MakePod,
    exact_request,
    gpu,
    pod,
    resource_claim,
    resource_slice,
)
from tests.harness import control_plane, etcd_store

pytestmark = pytest.mark.integration
PODS, NODES, LEASES = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]


@dataclass
class Cluster:
    address: str
    tokens: IssuedTokens
    api: ApiServer

    def client(self, component: str = "", token: str | None = None) -> Client:
        tok = token if token is not None else self.tokens.token_for(component)
        return Client(self.address, timeout=10, token=tok)


@pytest.fixture
async def cluster(etcd_server: EtcdProcess) -> AsyncIterator[Cluster]:
    tokens = issue_tokens(
        schedulers=["scheduler"],
        controller_managers=["controller-manager"],
        pools={"pool-0": ["n1", "n3"], "pool-1": ["n2"]},
    )
    config = ApiServerConfig(watch_cache_capacity=50, bookmark_interval=0.2)
    async with (
        etcd_store(etcd_server.endpoint, wipe_prefix="/registry/") as storage,
        control_plane(
            storage,
            config,
            authn=TokenAuthenticator(tokens.users),
            also=lambda s: add_control(s, [], "apiserver", "apiserver"),
        ) as cp,
    ):
        yield Cluster(cp.address, tokens, cp.api)


def lease(node: str) -> coordination_pb2.Lease:
    obj = coordination_pb2.Lease(api_version="coordination.k8s.io/v1", kind="Lease")
    obj.metadata.name, obj.metadata.namespace = node, "kube-node-lease"
    obj.spec.holder_identity = node
    return obj


async def test_a_call_without_a_token_is_unauthenticated(cluster: Cluster) -> None:
    async with cluster.client(token="") as c:
        with pytest.raises(UnauthorizedError, match="bearer token is required"):
            await c.list(PODS)


async def test_an_unknown_token_is_unauthenticated_also_on_watch_streams(
    cluster: Cluster,
) -> None:
    async with cluster.client(token="forged") as c:
        with pytest.raises(UnauthorizedError, match="not valid"):
            async for _ in c.watch(PODS):
                break


async def test_health_answers_without_a_token(cluster: Cluster) -> None:
    async with cluster.client(token="") as c:
        assert (await c.health()).ok


async def test_a_node_writes_its_own_lease_and_node_but_not_anothers(cluster: Cluster) -> None:
    async with cluster.client("node:n1") as n1, cluster.client("admin") as admin:
        await admin.create(MakeNode().typed().name("n2").obj())
        await n1.create(MakeNode().typed().name("n1").obj())
        await n1.create(lease("n1"))
        with pytest.raises(PermissionDeniedError) as e:
            await n1.create(lease("n2"))
        assert 'User "system:node:n1" cannot create resource "leases"' in str(e.value)
        assert 'in the namespace "kube-node-lease"' in str(e.value)
        with pytest.raises(PermissionDeniedError, match='nodes "n2" is forbidden'):
            await n1.patch(NODES, "n2", '{"metadata":{"labels":{"x":"y"}}}')
        with pytest.raises(PermissionDeniedError):
            await n1.create(MakeNode().typed().name("n9").obj())


async def test_a_node_sets_status_only_of_pods_bound_to_it(cluster: Cluster) -> None:
    async with cluster.client("node:n1") as n1, cluster.client("scheduler") as sched:
        async with cluster.client("admin") as admin:
            await admin.create(pod("mine"))
            await admin.create(pod("theirs"))
        await sched.bind("mine", "n1", "default")
        await sched.bind("theirs", "n2", "default")
        mine = await n1.get(PODS, "mine", "default")
        mine.status.phase = "Running"
        await n1.update_status(mine)
        theirs = await n1.get(PODS, "theirs", "default")
        theirs.status.phase = "Running"
        with pytest.raises(PermissionDeniedError) as e:
            await n1.update_status(theirs)
        assert 'pods "theirs" is forbidden: User "system:node:n1" cannot update resource ' in (
            str(e.value)
        )
        assert '"pods/status"' in str(e.value) and "bound to n2" in str(e.value)
        with pytest.raises(PermissionDeniedError):
            await n1.delete(PODS, "theirs", "default")


async def test_the_scheduler_binds_and_a_node_cannot(cluster: Cluster) -> None:
    async with cluster.client("admin") as admin:
        await admin.create(pod("p"))
        await admin.create(pod("q"))
    async with cluster.client("node:n1") as n1:
        with pytest.raises(PermissionDeniedError, match='cannot create resource "pods/binding"'):
            await n1.bind("p", "n1", "default")
    async with cluster.client("scheduler") as sched:
        bound = await sched.bind("p", "n1", "default")
        assert bound.spec.node_name == "n1"
        with pytest.raises(PermissionDeniedError, match="the scheduler may not create pods"):
            await sched.create(pod("r"))


async def test_a_pools_token_acts_for_its_nodes_and_is_refused_for_anothers(
    cluster: Cluster,
) -> None:
    async with cluster.client("pool-0") as pool:
        results = await pool.batch_create([lease("n1"), lease("n3")])
        assert [r.error for r in results] == [None, None]
        with pytest.raises(
            PermissionDeniedError, match='leases.coordination.k8s.io "n2" is forbidden'
        ):
            await pool.batch_create([lease("n2")])  # every item denied: the whole call
        await pool.create(MakeNode().typed().name("n3").obj())
        with pytest.raises(PermissionDeniedError):
            await pool.create(MakeNode().typed().name("n2").obj())


async def test_chaos_control_on_the_apiserver_is_the_admins_only(cluster: Cluster) -> None:
    async with grpc.aio.insecure_channel(cluster.address) as ch:
        stub = pb_grpc.ApiServerStub(ch)
        # a non-admin reaching a method outside the ApiServer service: refused (Partition:
        # the apiserver's control has no relays, so a wrongly allowed call would do nothing)
        call = ch.unary_unary("/kubera.v1.Chaos/Partition")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call(b"", metadata=bearer(cluster.tokens.token_for("scheduler")))
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call(b"")
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # the control's Status (a process's figures) is open
        assert await ch.unary_unary("/kubera.v1.Chaos/Status")(b"") is not None
        ok = await stub.Health(
            pb.HealthRequest(), metadata=bearer(cluster.tokens.token_for("node:n1"))
        )
        assert ok.ok


async def test_grpc_over_tls_with_a_token(etcd_server: EtcdProcess, tmp_path) -> None:
    """The TLS option: the serving certificate of services/auth/certs.py, a client trusting
    the CA, the token on top; a plaintext client is refused at the handshake."""
    pki = new_pki()
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(pki.ca.cert)
    tokens = issue_tokens()
    host = ApiServerHost(
        ApiServerHostConfig(
            etcd=etcd_server.endpoint,
            token_csv=tokens.csv(),
            grpc_tls_cert=pki.apiserver.cert,
            grpc_tls_key=pki.apiserver.key,
            bookmark_interval=0.2,
        )
    )
    await host.start()
    try:
        admin = tokens.admin
        async with Client(host.address, timeout=5, token=admin, ca_file=str(ca_file)) as c:
            _items, rv = await c.list(PODS)
            assert int(rv) > 0
        async with Client(host.address, timeout=5, token="", ca_file=str(ca_file)) as anon:
            with pytest.raises(UnauthorizedError):
                await anon.list(PODS)
        async with Client(host.address, timeout=2, token=admin) as plain:
            with pytest.raises(UnavailableError):
                await plain.list(PODS)
    finally:
        await host.stop()


@pytest.mark.parametrize(
    ("who", "code"),
    [
        ("", grpc.StatusCode.UNAUTHENTICATED),  # who asks comes first
        ("admin", grpc.StatusCode.INVALID_ARGUMENT),
        ("node:n1", grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
async def test_an_undecodable_request_is_answered_after_authentication(
    cluster: Cluster, who: str, code: grpc.StatusCode
) -> None:
    token = cluster.tokens.token_for(who) if who else ""
    async with grpc.aio.insecure_channel(cluster.address) as ch:
        call = ch.unary_unary("/kubera.v1.ApiServer/Create")
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call(b"\xff\xff\xff", metadata=bearer(token))
        assert e.value.code() == code


async def test_a_replica_reaches_a_tls_apiserver_through_its_relay(
    etcd_server: EtcdProcess,
) -> None:
    """The component side of the TLS option: a scheduler replica's client dials through
    its chaos relay (TCP, TLS passes through) with the CA and its own token."""
    pki = new_pki()
    tokens = issue_tokens(schedulers=["scheduler"])
    host = ApiServerHost(
        ApiServerHostConfig(
            etcd=etcd_server.endpoint,
            token_csv=tokens.csv(),
            grpc_tls_cert=pki.apiserver.cert,
            grpc_tls_key=pki.apiserver.key,
            bookmark_interval=0.2,
        )
    )
    await host.start()
    replica = Replica(
        component="kube-scheduler",
        etcd=etcd_server.endpoint,
        apiserver=host.address,
        group=("kube-system", "tls-test"),
        election=None,
        token=tokens.token_for("scheduler"),
        apiserver_ca=pki.ca.cert,
    )
    try:
        await replica.open()
        assert replica.client is not None
        _items, rv = await replica.client.list(PODS)
        assert int(rv) > 0
        with pytest.raises(PermissionDeniedError):
            await replica.client.create(MakeNode().typed().name("n-tls").obj())
    finally:
        await replica.close()
        await host.stop()


async def test_a_batch_is_authorized_item_by_item(cluster: Cluster) -> None:
    """A pool's batch holding another node's item: its own items are applied, the other
    one answers PERMISSION_DENIED in its place; BindBatch likewise for a node's binds."""
    async with cluster.client("pool-0") as pool:
        results = await pool.batch_create([lease("n1"), lease("n2"), lease("n3")])
        assert results[0].error is None and results[2].error is None
        assert isinstance(results[1].error, PermissionDeniedError)
        assert 'leases.coordination.k8s.io "n2" is forbidden' in str(results[1].error)
    async with cluster.client("admin") as admin:
        _items, _ = await admin.list(LEASES, namespace="kube-node-lease")
        assert sorted(i.metadata.name for i in _items) == ["n1", "n3"]


async def test_a_batch_over_the_limit_is_refused_before_its_items_are_authorized(
    cluster: Cluster,
) -> None:
    from services.api.machinery import codec
    from services.api.machinery.limits import MAX_BATCH_ITEMS

    request = pb.BatchUpdateRequest(
        resource="pods",
        status=True,
        objects=[
            codec.pack(MakePod().name(f"b{i}").namespace("default").node("n1").obj())
            for i in range(MAX_BATCH_ITEMS + 1)
        ],
    )
    async with grpc.aio.insecure_channel(cluster.address) as ch:
        stub = pb_grpc.ApiServerStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.BatchUpdate(request, metadata=bearer(cluster.tokens.token_for("node:n1")))
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"at most {MAX_BATCH_ITEMS}" in (e.value.details() or "")


async def test_a_pool_writes_the_resource_slices_of_its_nodes_only(cluster: Cluster) -> None:
    slices = BY_KIND["ResourceSlice"]
    async with cluster.client("pool-0") as pool0, cluster.client("pool-1") as pool1:
        await pool0.create(resource_slice("n1-gpu", node="n1", devices=[gpu("gpu-0")]))
        await pool0.create(resource_slice("n3-gpu", node="n3"))
        with pytest.raises(PermissionDeniedError) as e:
            await pool0.create(resource_slice("n2-gpu", node="n2"))
        assert 'cannot create resource "resourceslices" in API group "resource.k8s.io"' in str(
            e.value
        )
        await pool0.patch(slices, "n1-gpu", '{"spec":{"pool":{"generation":2}}}')
        with pytest.raises(PermissionDeniedError, match='resourceslices.resource.k8s.io "n1-gpu"'):
            await pool1.delete(slices, "n1-gpu")
        listed, _ = await pool1.list(slices)
        assert [s.metadata.name for s in listed] == ["n1-gpu", "n3-gpu"]  # type: ignore[attr-defined]
        await pool0.delete(slices, "n1-gpu")


async def test_the_scheduler_allocates_a_claim_and_a_node_reads_it(cluster: Cluster) -> None:
    claims = BY_KIND["ResourceClaim"]
    async with cluster.client("admin") as admin:
        await admin.create(pod("p"))
        await admin.create(resource_claim("c", "default", exact_request("gpu", "gpu")))
    async with cluster.client("scheduler") as sched:
        bound = await sched.bind("p", "n1", "default")
        claim = await sched.get(claims, "c", "default")
        claim.metadata.finalizers.append("resource.kubernetes.io/delete-protection")  # type: ignore[attr-defined]
        claim = await sched.update(claim)
        claim.status.allocation.devices.results.add(  # type: ignore[attr-defined]
            request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0"
        )
        claim.status.reserved_for.add(  # type: ignore[attr-defined]
            resource="pods", name="p", uid=bound.metadata.uid
        )
        await sched.update_status(claim)
    async with cluster.client("node:n1") as n1:
        got = await n1.get(claims, "c", "default")
        assert [r.uid for r in got.status.reserved_for] == [bound.metadata.uid]  # type: ignore[attr-defined]
        listed, _ = await n1.list(claims, namespace="default")
        assert len(listed) == 1
        with pytest.raises(
            PermissionDeniedError, match='cannot update resource "resourceclaims/status"'
        ):
            await n1.update_status(got)
