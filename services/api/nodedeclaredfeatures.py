"""Node declared features (NodeDeclaredFeatures, alpha in 1.35): the features under
development a node says it has (Node `status.declaredFeatures`), and the ones a pod needs.

Why this module exists: the kubelet (which declares) and the scheduler's
NodeDeclaredFeatures filter (which matches) must agree on one registry of features, as
upstream's k8s.io/component-helpers/nodedeclaredfeatures is shared by the kubelet, the
scheduler and the apiserver's admission. A feature is data with two questions: does a
node with this configuration provide it (`discover`), and does scheduling this pod need it
(`infer_for_scheduling`); past its `max_version` (the release whose skew policy makes every
node have it) it is neither declared nor required.

The registry is upstream 1.35's: one feature, GuaranteedQoSPodCPUResize, which matters only
to pod updates (in-place resize), so no pod needs any feature to be scheduled yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from protos.kubera.v1 import core_pb2

#: A Kubernetes version as (major, minor, patch).
Version = tuple[int, int, int]

#: The version kubera's components report to the framework (the seed's Kubernetes).
KUBERNETES_VERSION: Version = (1, 35, 0)

CPU_MANAGER_POLICY_NONE = "none"
CPU_MANAGER_POLICY_STATIC = "static"
#: The kubelet gate GuaranteedQoSPodCPUResize is discovered under with the static policy.
IPPR_EXCLUSIVE_CPUS_GATE = "InPlacePodVerticalScalingExclusiveCPUs"
GUARANTEED_QOS_POD_CPU_RESIZE = "GuaranteedQoSPodCPUResize"


def parse_version(text: str) -> Version:
    """ "1.35.0" (or "v1.35", "1.35.0-alpha.1") as a Version; ValueError otherwise."""
    core = text.strip().removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    parts = core.split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"invalid version {text!r}")
    nums = [int(p) for p in parts] + [0] * (3 - len(parts))
    return (nums[0], nums[1], nums[2])


@dataclass(frozen=True)
class NodeConfiguration:
    """What a node's features are discovered from (upstream NodeConfiguration)."""

    #: The kubelet's feature gates (a gate not named is off).
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    #: The kubelet's cpuManagerPolicy ("none" by default, or "static").
    cpu_manager_policy: str = CPU_MANAGER_POLICY_NONE
    version: Version = KUBERNETES_VERSION


class Feature(Protocol):
    """One declared feature (upstream nodedeclaredfeatures.Feature)."""

    @property
    def name(self) -> str: ...

    @property
    def max_version(self) -> Version | None:
        """The last version (inclusive) it matters in; None: no bound."""
        ...

    def discover(self, config: NodeConfiguration) -> bool: ...

    def infer_for_scheduling(self, spec: core_pb2.PodSpec) -> bool: ...


@dataclass(frozen=True)
class GuaranteedQoSPodCPUResize:
    """In-place CPU resize of Guaranteed pods: the "none" CPU manager policy, or "static"
    with InPlacePodVerticalScalingExclusiveCPUs. Needed by resizes only, never by
    scheduling."""

    name: str = GUARANTEED_QOS_POD_CPU_RESIZE
    max_version: Version | None = None

    def discover(self, config: NodeConfiguration) -> bool:
        policy = config.cpu_manager_policy
        gate = config.feature_gates.get(IPPR_EXCLUSIVE_CPUS_GATE, False)
        return policy == CPU_MANAGER_POLICY_NONE or (gate and policy == CPU_MANAGER_POLICY_STATIC)

    def infer_for_scheduling(self, spec: core_pb2.PodSpec) -> bool:
        return False


#: Every feature (upstream features.AllFeatures at 1.35).
ALL_FEATURES: tuple[Feature, ...] = (GuaranteedQoSPodCPUResize(),)


def _relevant(feature: Feature, version: Version) -> bool:
    return feature.max_version is None or version <= feature.max_version


def discover(config: NodeConfiguration, features: Sequence[Feature] = ALL_FEATURES) -> list[str]:
    """The features a node with `config` declares, sorted (its status.declaredFeatures)."""
    return sorted(f.name for f in features if _relevant(f, config.version) and f.discover(config))


def infer_for_pod_scheduling(
    spec: core_pb2.PodSpec,
    version: Version | None,
    features: Sequence[Feature] = ALL_FEATURES,
) -> frozenset[str]:
    """The features scheduling a pod with `spec` needs on its node, for a scheduler of
    `version`; ValueError without a version (upstream: "target version cannot be nil")."""
    if version is None:
        raise ValueError("target version cannot be nil")
    return frozenset(
        f.name for f in features if _relevant(f, version) and f.infer_for_scheduling(spec)
    )
