"""Pod resource requests in the units the scheduler, the apiserver's allocation records,
the kubelet and the chaos checker count with (upstream component-helpers/resource and
framework.Resource).

`pod_requests` is what a pod asks of its node: max(containers + sidecars, each init container
+ the sidecars before it) + overhead. It never raises and every amount is at most MAX_AMOUNT (int64 milli-units), so a
stored value validation would have refused still counts (see `pod_requests`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from protos.kubera.v1 import core_pb2
from services.api.machinery.names import qualified_name
from services.api.machinery.quantity import (
    ERR_BEYOND_INT64_MILLI,
    MAX_MILLI_VALUE,
    QuantityError,
    parse_quantity,
)

CPU, MEMORY, EPHEMERAL, PODS = "cpu", "memory", "ephemeral-storage", "pods"
#: The requests the scheduler assumes for a container that sets none (for scoring only).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

#: The largest amount the scheduler counts, in any unit: its arrays are int64.
MAX_AMOUNT = MAX_MILLI_VALUE


def _amount(value: str, milli: bool, problems: list[str] | None = None, path: str = "") -> int:
    """A quantity in the scheduler's unit (thousandths for cpu, whole units otherwise).

    Never raises: a stored value validation would have refused (it came from an older
    apiserver or straight from etcd) counts as 0 when unparsable or negative and as
    MAX_AMOUNT when beyond int64 milli-units, and is described in `problems` if given, so a
    pending pod holding one is refused with the field named (see PodInfo.problems)."""
    amount, problem = _amount_of(value, milli)
    if problem and problems is not None:
        problems.append(f'{path}: Invalid value: "{value}": {problem}')
    return amount


@functools.lru_cache(maxsize=8192)
def _amount_of(value: str, milli: bool) -> tuple[int, str]:
    """(amount, what is wrong with it or ""): quantities repeat ("100m", "64Mi")."""
    try:
        q = parse_quantity(value)
    except QuantityError as e:
        return 0, str(e)
    if q.sign() < 0:
        return 0, "must be greater than or equal to 0"
    if not q.fits_int64_milli():
        return MAX_AMOUNT, ERR_BEYOND_INT64_MILLI
    return (q.milli_value() if milli else q.int_value()), ""


def _qty_milli(value: str) -> int:
    return _amount(value, True)


def _qty(value: str) -> int:
    return _amount(value, False)


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: domain-prefixed, not in the kubernetes.io/ namespace,
    no `requests.` prefix, and a qualified name with `requests.` before it (a quota key)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name("requests." + name)


def is_scalar_resource(name: str) -> bool:
    """Extended resources (domain-prefixed), hugepages and attachable volumes: counted, not scored."""
    return name not in (CPU, MEMORY, EPHEMERAL, PODS)


@dataclass
class Resource:
    """Resources in the units the scheduler computes with (upstream framework.Resource)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, rl: Mapping[str, str]) -> Resource:
        r = cls()
        r.add_list(rl)
        return r

    def add_list(
        self, rl: Mapping[str, str], problems: list[str] | None = None, path: str = ""
    ) -> None:
        """Add a resource list; values that are not representable go to `problems`
        (described under `path`) and count as `_amount` says."""
        for name, value in rl.items():
            amount = _amount(value, name == CPU, problems, f"{path}[{name}]")
            if name == CPU:
                self.milli_cpu += amount
            elif name == MEMORY:
                self.memory += amount
            elif name == EPHEMERAL:
                self.ephemeral_storage += amount
            elif name == PODS:
                self.allowed_pod_number += amount
            else:
                self.scalar[name] = self.scalar.get(name, 0) + amount

    def capped(self) -> Resource:
        """This resource with every amount at most MAX_AMOUNT (what fits the arrays)."""
        return Resource(
            min(self.milli_cpu, MAX_AMOUNT),
            min(self.memory, MAX_AMOUNT),
            min(self.ephemeral_storage, MAX_AMOUNT),
            min(self.allowed_pod_number, MAX_AMOUNT),
            {k: min(v, MAX_AMOUNT) for k, v in self.scalar.items()},
        )

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )


def is_restartable_init_container(c: core_pb2.Container) -> bool:
    """An init container with restartPolicy Always: a sidecar, which keeps running beside the
    regular containers (upstream isRestartableInitContainer)."""
    return c.restart_policy == "Always"


def _aggregate(
    pod: core_pb2.Pod, request_of: Callable[[core_pb2.Container, str], Resource]
) -> Resource:
    """The containers' requests combined as the sidecar KEP says (upstream
    aggregateContainerResourcesByFn): regular containers and sidecars add up; init
    container i needs its own request plus every sidecar started before it; the pod
    needs the larger of the two, per resource."""
    total = Resource()
    for i, c in enumerate(pod.spec.containers):
        total.add(request_of(c, f"spec.containers[{i}].resources.requests"))
    sidecars = Resource()
    init_peak = Resource()
    for i, c in enumerate(pod.spec.init_containers):
        own = request_of(c, f"spec.initContainers[{i}].resources.requests")
        if is_restartable_init_container(c):
            total.add(own)
            sidecars.add(own)
            init_peak.set_max(sidecars)
        else:
            own.add(sidecars)
            init_peak.set_max(own)
    total.set_max(init_peak)
    return total


def pod_requests(pod: core_pb2.Pod, problems: list[str] | None = None) -> Resource:
    """Effective requests (upstream resource.PodRequests): max(regular containers + sidecars,
    each init container + the sidecars started before it) + overhead.

    Never raises, and every amount is at most MAX_AMOUNT: a quantity validation would have
    refused counts as `_amount` says and is described in `problems` when given."""

    def request_of(c: core_pb2.Container, path: str) -> Resource:
        r = Resource()
        r.add_list(c.resources.requests, problems, path)
        return r

    total = _aggregate(pod, request_of)
    if pod.spec.overhead:
        total.add_list(pod.spec.overhead, problems, "spec.overhead")
    return total.capped()


def pod_non_zero_requests(pod: core_pb2.Pod) -> tuple[int, int]:
    """(milli-cpu, memory) as `pod_requests` combines them, with 100m / 200Mi for a
    container (sidecars and init containers included) that sets none; used by scoring so
    BestEffort pods still spread (upstream PodRequests with NonMissingContainerRequests)."""

    def request_of(c: core_pb2.Container, path: str) -> Resource:
        req = c.resources.requests
        return Resource(
            _qty_milli(req[CPU]) if CPU in req else DEFAULT_MILLI_CPU_REQUEST,
            _qty(req[MEMORY]) if MEMORY in req else DEFAULT_MEMORY_REQUEST,
        )

    total = _aggregate(pod, request_of)
    cpu, mem = total.milli_cpu, total.memory
    if pod.spec.overhead:
        cpu += _qty_milli(pod.spec.overhead.get(CPU, "0"))
        mem += _qty(pod.spec.overhead.get(MEMORY, "0"))
    return min(cpu, MAX_AMOUNT), min(mem, MAX_AMOUNT)
