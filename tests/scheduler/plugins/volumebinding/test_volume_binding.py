"""VolumeBinding step by step (upstream volume_binding_test.go TestVolumeBinding: its cases
by name; PreFilter → the state it leaves → Filter per node → PreScore → Score per node).

Upstream runs its table with the capacity scoring gate as each case sets it
(`fts`); `scoring` here is that gate, and `shape` the args' shape (upstream's
defaultShapePoint, 0% -> 0 and 100% -> 10, when the case turns scoring on without its own).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.config import ConfigError, load_config
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    Args,
    UtilizationShapePoint,
    VolumeBinding,
    new,
)
from services.scheduler.plugins.volumebinding.plugin import STATE_KEY
from tests.scheduler.plugins._fakes import fake_handle
from tests.scheduler.plugins.volumebinding._fakes import (
    HOSTNAME,
    PV,
    PVC,
    FakeVolumeAPI,
    capacity,
    csi_driver,
    make_binder,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)

IMMEDIATE, WAIT, WAIT_HDD = "immediate-sc", "wait-sc", "wait-hdd-sc"
CLASSES = [
    storage_class(IMMEDIATE, "Immediate"),
    storage_class(WAIT, "WaitForFirstConsumer"),
    storage_class(WAIT_HDD, "WaitForFirstConsumer"),
]
DEFAULT_SHAPE = [UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)]
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
SKIP = "skip"


@dataclass
class Case:
    name: str
    pod: core_pb2.Pod
    nodes: list[core_pb2.Node]
    pvcs: list[PVC] = field(default_factory=list)
    pvs: list[PV] = field(default_factory=list)
    scoring: bool = False
    shape: list[UtilizationShapePoint] | None = None
    #: PreFilter: None = Success, SKIP, else (Code, message)
    want_pre_filter: tuple[Code, str] | str | None = None
    #: (bound, delayed, {class: [volume names]}) after PreFilter
    want_state: tuple[list[str], list[str], dict[str, list[str]]] | None = None
    #: per node: None = Success, else the reasons (UnschedulableAndUnresolvable)
    want_filter: list[tuple[str, ...] | None] = field(default_factory=list)
    want_pre_score_skip: bool = True
    want_scores: list[int] = field(default_factory=list)
    extra: dict[str, list] = field(default_factory=dict)  # type: ignore[type-arg]


def _local(name: str, sc: str, cap: str, host: str) -> PV:
    return pv(name, sc, capacity=cap, affinity={HOSTNAME: [host]})


def _zonal(name: str, cap: str, zone: str, region: str) -> PV:
    return pv(name, WAIT, capacity=cap, affinity={REGION: [region], ZONE: [zone]})


ZONE_NODES = [
    node(f"zone-{z}-node-{n}", {REGION: f"region-{z}", ZONE: f"zone-{z}"})
    for z in "abc"
    for n in "ab"
]
ZONAL_PVS = [
    _zonal("pv-a-0", "200Gi", "zone-a", "region-a"),
    _zonal("pv-a-1", "200Gi", "zone-a", "region-a"),
    _zonal("pv-b-0", "100Gi", "zone-b", "region-b"),
    _zonal("pv-b-1", "100Gi", "zone-b", "region-b"),
]
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

CASES = [
    Case("pod has not pvcs", pod("pod-a"), [node("node-a")], want_pre_filter=SKIP),
    Case(
        "all bound",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a")],
        pvs=[pv("pv-a", WAIT)],
        want_state=(["pvc-a"], [], {}),
        want_filter=[None],
    ),
    # upstream once answered a PreFilterResult {node-a} here (later reverted): no result now
    Case(
        "all bound with local volumes",
        pod("pod-a", ["pvc-a", "pvc-b"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a"), pvc("pvc-b", WAIT, bound_pv="pv-b")],
        pvs=[
            pv("pv-a", WAIT, phase="Bound", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b", WAIT, phase="Bound", affinity={HOSTNAME: ["node-a"]}),
        ],
        want_state=(["pvc-a", "pvc-b"], [], {}),
        want_filter=[None],
    ),
    Case(
        "PVC does not exist",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        want_pre_filter=(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'),
    ),
    Case(
        "Part of PVCs do not exist",
        pod("pod-a", ["pvc-a", "pvc-b"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a")],
        want_pre_filter=(UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'),
    ),
    Case(
        "immediate claims not bound",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", IMMEDIATE)],
        want_pre_filter=(UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    ),
    Case(
        "unbound claims no matches",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT)],
        want_state=([], ["pvc-a"], {WAIT: []}),
        want_filter=[(ERR_REASON_BIND_CONFLICT,)],
    ),
    Case(
        "bound and unbound unsatisfied",
        pod("pod-a", ["pvc-a", "pvc-b"]),
        [node("node-a", {"foo": "barbar"})],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a"), pvc("pvc-b", WAIT)],
        pvs=[pv("pv-a", WAIT, affinity={"foo": ["bar"]})],
        want_state=(["pvc-a"], ["pvc-b"], {WAIT: ["pv-a"]}),
        want_filter=[(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
    ),
    Case(
        "pvc not found",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        want_pre_filter=(UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'),
    ),
    Case(
        "pv not found",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a")],
        want_state=(["pvc-a"], [], {}),
        want_filter=[(ERR_REASON_PV_NOT_EXIST,)],
    ),
    Case(
        "pv not found claim lost",
        pod("pod-a", ["pvc-a"]),
        [node("node-a")],
        pvcs=[pvc("pvc-a", WAIT, bound_pv="pv-a", phase="Lost")],
        want_pre_filter=(
            UNRESOLVABLE,
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
        ),
    ),
    Case(
        "local volumes with close capacity are preferred",
        pod("pod-a", ["pvc-a"]),
        [node("node-a"), node("node-b"), node("node-c")],
        pvcs=[pvc("pvc-a", WAIT, size="50Gi")],
        pvs=[
            _local("pv-a-0", WAIT, "200Gi", "node-a"),
            _local("pv-a-1", WAIT, "200Gi", "node-a"),
            _local("pv-b-0", WAIT, "100Gi", "node-b"),
            _local("pv-b-1", WAIT, "100Gi", "node-b"),
        ],
        scoring=True,
        want_state=([], ["pvc-a"], {WAIT: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[None, None, (ERR_REASON_BIND_CONFLICT,)],
        want_pre_score_skip=False,
        want_scores=[25, 50, 0],
    ),
    Case(
        "local volumes with close capacity are preferred (multiple pvcs)",
        pod("pod-a", ["pvc-0", "pvc-1"]),
        [node("node-a"), node("node-b"), node("node-c")],
        pvcs=[pvc("pvc-0", WAIT, size="50Gi"), pvc("pvc-1", WAIT_HDD, size="100Gi")],
        pvs=[
            _local("pv-a-0", WAIT, "200Gi", "node-a"),
            _local("pv-a-1", WAIT, "200Gi", "node-a"),
            _local("pv-a-2", WAIT_HDD, "200Gi", "node-a"),
            _local("pv-a-3", WAIT_HDD, "200Gi", "node-a"),
            _local("pv-b-0", WAIT, "100Gi", "node-b"),
            _local("pv-b-1", WAIT, "100Gi", "node-b"),
            _local("pv-b-2", WAIT_HDD, "100Gi", "node-b"),
            _local("pv-b-3", WAIT_HDD, "100Gi", "node-b"),
        ],
        scoring=True,
        want_state=(
            [],
            ["pvc-0", "pvc-1"],
            {
                WAIT: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
                WAIT_HDD: ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
            },
        ),
        want_filter=[None, None, (ERR_REASON_BIND_CONFLICT,)],
        want_pre_score_skip=False,
        want_scores=[38, 75, 0],
    ),
    Case(
        "zonal volumes with close capacity are preferred",
        pod("pod-a", ["pvc-a"]),
        ZONE_NODES,
        pvcs=[pvc("pvc-a", WAIT, size="50Gi")],
        pvs=ZONAL_PVS,
        scoring=True,
        want_state=([], ["pvc-a"], {WAIT: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[
            None,
            None,
            None,
            None,
            (ERR_REASON_BIND_CONFLICT,),
            (ERR_REASON_BIND_CONFLICT,),
        ],
        want_pre_score_skip=False,
        want_scores=[25, 25, 50, 50, 0, 0],
    ),
    Case(
        "zonal volumes with close capacity are preferred (custom shape)",
        pod("pod-a", ["pvc-a"]),
        ZONE_NODES,
        pvcs=[pvc("pvc-a", WAIT, size="50Gi")],
        pvs=ZONAL_PVS,
        scoring=True,
        shape=[
            UtilizationShapePoint(0, 0),
            UtilizationShapePoint(50, 3),
            UtilizationShapePoint(100, 5),
        ],
        want_state=([], ["pvc-a"], {WAIT: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[
            None,
            None,
            None,
            None,
            (ERR_REASON_BIND_CONFLICT,),
            (ERR_REASON_BIND_CONFLICT,),
        ],
        want_pre_score_skip=False,
        want_scores=[15, 15, 30, 30, 0, 0],
    ),
    # kubera's: StorageCapacityScoring's own case, dynamic provisioning with the default
    # shape (0% -> 10, 100% -> 0): the node whose CSIStorageCapacity is emptiest wins.
    Case(
        "provisioning capacity: the emptiest storage is preferred (default shape)",
        pod("pod-a", ["pvc-a"]),
        [
            node("node-a", {"pool": "a"}),
            node("node-b", {"pool": "b"}),
            node("node-c", {"pool": "c"}),
        ],
        pvcs=[pvc("pvc-a", "csi-sc", size="10Gi")],
        scoring=True,
        shape=Args().shape,
        want_state=([], ["pvc-a"], {"csi-sc": []}),
        want_filter=[None, None, ("node(s) did not have enough free storage",)],
        want_pre_score_skip=False,
        want_scores=[90, 80, 0],
        extra={
            "classes": [storage_class("csi-sc", "WaitForFirstConsumer", "csi.example.com")],
            "drivers": [csi_driver("csi.example.com", True)],
            "capacities": [
                capacity("cap-a", "csi-sc", {"pool": "a"}, "100Gi"),
                capacity("cap-b", "csi-sc", {"pool": "b"}, "50Gi"),
                capacity("cap-c", "csi-sc", {"pool": "c"}, "5Gi"),
            ],
        },
    ),
]


def _names(objs: list[object]) -> list[str]:
    return sorted(o.metadata.name for o in objs)  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_volume_binding(case: Case) -> None:
    api = FakeVolumeAPI()
    for obj in [*case.pvcs, *case.pvs]:
        api.add(obj)
    binder = make_binder(
        api,
        classes=[*CLASSES, *case.extra.get("classes", [])],
        nodes=case.nodes,
        drivers=case.extra.get("drivers", []),
        capacities=case.extra.get("capacities", []),
    )
    args = Args(300, case.shape or DEFAULT_SHAPE)
    plugin = VolumeBinding(args, binder, storage_capacity_scoring=case.scoring)
    state, pi = CycleState(), PodInfo(case.pod)
    infos = [NodeInfo(n) for n in case.nodes]

    result, st = plugin.pre_filter(state, pi, infos)
    assert result is None
    if case.want_pre_filter == SKIP:
        assert st.is_skip()
        return
    if case.want_pre_filter is not None:
        assert (st.code, st.message) == case.want_pre_filter
        return
    assert st.is_success(), st.message

    claims = state.read(STATE_KEY).claims
    bound, delayed, volumes = case.want_state or ([], [], {})
    assert _names(claims.bound_claims) == bound
    assert _names(claims.unbound_claims_delay_binding) == delayed
    assert {k: _names(v) for k, v in claims.unbound_volumes_delay_binding.items()} == volumes

    for ni, want in zip(infos, case.want_filter, strict=True):
        got = plugin.filter(state, pi, ni)
        if want is None:
            assert got.is_success(), (ni.name, got.message)
        else:
            assert (got.code, tuple(got.reasons)) == (UNRESOLVABLE, want), ni.name

    assert plugin.pre_score(state, pi, infos).is_skip() is case.want_pre_score_skip
    if not case.want_pre_score_skip:
        scores = [plugin.score(state, pi, ni)[0] for ni in infos]
        assert scores == case.want_scores


def test_reserve_prebind_write_the_choice_and_wait_for_the_pv_controller() -> None:
    """Reserve assumes the chosen volume (the next pod's Filter sees it taken), PreBind
    writes claimRef and selected-node and returns once the claims are bound; a second pod
    for the same single volume finds none while the first holds it."""
    api = FakeVolumeAPI()
    claim, other = pvc("pvc-a", WAIT, size="1Gi", rv="1"), pvc("pvc-b", WAIT, size="1Gi", rv="1")
    for obj in (claim, other, _local("pv-a", WAIT, "5Gi", "node-a")):
        obj.metadata.resource_version = "1"
        api.add(obj)
    n = node("node-a", {HOSTNAME: "node-a"})
    first, second = pod("p1", ["pvc-a"]), pod("p2", ["pvc-b"])
    binder = make_binder(api, classes=CLASSES, nodes=[n], pods=[first, second])
    plugin = VolumeBinding(Args(), binder)
    ni = NodeInfo(n)

    s1 = CycleState()
    assert plugin.pre_filter(s1, PodInfo(first), [ni])[1].is_success()
    assert plugin.filter(s1, PodInfo(first), ni).is_success()
    assert plugin.reserve(s1, PodInfo(first), "node-a").is_success()

    s2 = CycleState()
    assert plugin.pre_filter(s2, PodInfo(second), [ni])[1].is_success()
    assert tuple(plugin.filter(s2, PodInfo(second), ni).reasons) == (ERR_REASON_BIND_CONFLICT,)

    async def bind() -> None:
        task = asyncio.create_task(plugin.pre_bind(s1, PodInfo(first), "node-a"))
        await asyncio.sleep(0)
        written = api.pv_store["pv-a"]
        assert written.spec.claim_ref.name == "pvc-a"
        # the PV controller finishes the binding
        done = PVC()
        done.CopyFrom(api.pvc_store["default/pvc-a"])
        done.spec.volume_name = "pv-a"
        done.metadata.annotations["pv.kubernetes.io/bind-completed"] = "yes"
        api.add(done)
        st = await task
        assert st.is_success(), st.message

    asyncio.run(bind())
    assert api.calls == ["update pv pv-a"]


def test_unreserve_gives_the_volume_back() -> None:
    api = FakeVolumeAPI()
    for obj in (pvc("pvc-a", WAIT, size="1Gi"), pvc("pvc-b", WAIT, size="1Gi")):
        api.add(obj)
    api.add(_local("pv-a", WAIT, "5Gi", "node-a"))
    n = node("node-a", {HOSTNAME: "node-a"})
    binder = make_binder(api, classes=CLASSES, nodes=[n])
    plugin = VolumeBinding(Args(), binder)
    ni, first, second = NodeInfo(n), PodInfo(pod("p1", ["pvc-a"])), PodInfo(pod("p2", ["pvc-b"]))
    s1 = CycleState()
    plugin.pre_filter(s1, first, [ni])
    plugin.filter(s1, first, ni)
    plugin.reserve(s1, first, "node-a")
    plugin.unreserve(s1, first, "node-a")
    s2 = CycleState()
    plugin.pre_filter(s2, second, [ni])
    assert plugin.filter(s2, second, ni).is_success()


class _Informer:
    def __init__(self, store: dict[str, object]) -> None:
        self.store = store


class _Handle:
    """What the factory reads from the scheduler's handle: informers per kind, the pod
    informer, the snapshot, the clock and the client (fenced when the scheduler leads)."""

    def __init__(
        self, api: FakeVolumeAPI, nodes: list[core_pb2.Node], pods: list[core_pb2.Pod]
    ) -> None:
        self.client = api
        self.clock = FakeClock()
        self._snapshot = fake_handle(nodes).snapshot()
        self._stores = {
            "PersistentVolume": api.pv_store,
            "PersistentVolumeClaim": api.pvc_store,
            "StorageClass": {c.metadata.name: c for c in CLASSES},
        }
        self._pods = _Informer({f"{p.metadata.namespace}/{p.metadata.name}": p for p in pods})

    def informer(self, kind: str) -> _Informer:
        return _Informer(self._stores.setdefault(kind, {}))  # type: ignore[arg-type]

    def pod_informer(self) -> _Informer:
        return self._pods

    def snapshot(self) -> object:
        return self._snapshot


def test_the_factory_writes_through_the_schedulers_client() -> None:
    """new(args, handle): PreBind's writes go through handle.client (the scheduler's
    client, which carries the leader's fencing token), with the listers over the handle's
    informers and the pod found through its pod informer."""
    api = FakeVolumeAPI()
    api.add(pvc("pvc-a", WAIT, size="1Gi", rv="1"))
    api.add(_local("pv-a", WAIT, "5Gi", "node-a"))
    n, p = node("node-a"), pod("p1", ["pvc-a"])
    plugin = new(Args(bind_timeout_seconds=3), _Handle(api, [n], [p]))
    state, pi, ni = CycleState(), PodInfo(p), NodeInfo(n)
    assert plugin.pre_filter(state, pi, [ni])[1].is_success()
    assert plugin.filter(state, pi, ni).is_success()
    assert plugin.reserve(state, pi, "node-a").is_success()
    st = asyncio.run(plugin.pre_bind(state, pi, "node-a"))
    # nobody plays the PV controller here: the write happened, then the wait timed out
    assert api.calls == ["update pv pv-a"]
    assert st.code == Code.ERROR and "context deadline exceeded" in st.message


HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def _volume_binding_args(args: str) -> Args:
    conf = load_config(
        HEADER + "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n" + args
    )
    got: Args = conf.profiles[0].plugin_config["VolumeBinding"]
    return got


def test_args_from_the_configuration_with_upstreams_defaults() -> None:
    """VolumeBindingArgs: bindTimeoutSeconds defaults to 600 (an explicit 0 stays 0) and an
    absent or empty shape is StorageCapacityScoring's default."""
    got = _volume_binding_args("      bindTimeoutSeconds: 0\n")
    assert (got.bind_timeout_seconds, got.shape) == (0, Args().shape)
    assert Args().bind_timeout_seconds == 600
    assert [(p.utilization, p.score) for p in Args().shape] == [(0, 10), (100, 0)]
    shaped = _volume_binding_args(
        "      shape:\n      - {utilization: 0, score: 0}\n      - {utilization: 100, score: 7}\n"
    )
    assert [(p.utilization, p.score) for p in shaped.shape] == [(0, 0), (100, 7)]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            "      bindTimeoutSeconds: -1\n",
            "invalid BindTimeoutSeconds, should not be a negative value",
        ),
        (
            "      shape:\n      - {utilization: 50, score: 1}\n      - {utilization: 10, score: 2}\n",
            "values must be sorted in increasing order",
        ),
        ("      shape:\n      - {utilization: 0, score: 11}\n", "not in valid range [0, 10]"),
    ],
    ids=["negative timeout", "unsorted shape", "score out of range"],
)
def test_invalid_args_are_refused_with_upstreams_words(args: str, error: str) -> None:
    with pytest.raises(ConfigError) as info:
        _volume_binding_args(args)
    assert any(error in e for e in info.value.errors)
