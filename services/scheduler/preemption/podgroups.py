"""Pod-group preemption by disruption mode (upstream 1.37's PodGroup
`spec.disruptionMode`; scheduler_perf's PreemptionPodGroupDisruptionMode): a PodGroup whose
mode is `all` is disrupted whole. Once DefaultPreemption has chosen its victims on the
candidate node, every other bound pod of such a victim's group, on any node, is evicted with
them; `single` (the default) leaves the group's other pods alone, as any pod's preemption.

Upstream also weighs a whole group's disruption when it compares candidate nodes; kubera
compares them by the node's own victims, as for pods (docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from protos.kubera.v1 import core_pb2


def _group_key(pod: core_pb2.Pod) -> str:
    name = pod.spec.scheduling_group.pod_group_name
    return f"{pod.metadata.namespace}/{name}" if name else ""


def whole_groups(
    victims: Sequence[core_pb2.Pod], nodes: Iterable[Any], pod_groups: Mapping[str, Any]
) -> list[core_pb2.Pod]:
    """`victims`, then the other pods on `nodes` (NodeInfos) of every victim's PodGroup
    whose disruptionMode is `all`, in node order."""
    whole = {
        key
        for v in victims
        if (key := _group_key(v))
        and (pg := pod_groups.get(key)) is not None
        and pg.spec.disruption_mode.HasField("all")
    }
    if not whole:
        return list(victims)
    out = list(victims)
    seen = {v.metadata.uid for v in victims}
    for node in nodes:
        for info in node.pods:
            pod = info.pod
            if pod.metadata.uid not in seen and _group_key(pod) in whole:
                seen.add(pod.metadata.uid)
                out.append(pod)
    return out


def disruption_units(victims: Sequence[core_pb2.Pod], pod_groups: Mapping[str, Any]) -> int:
    """Upstream's NumPodGroupDisruptions: the preemption units among `victims` that affect
    pod groups. A PodGroup disrupted whole (disruptionMode `all`) is one unit however many
    of its pods go; any other member of a PodGroup is a unit of its own; a victim of no pod
    group is none."""
    whole: set[str] = set()
    units = 0
    for v in victims:
        key = _group_key(v)
        if not key:
            continue
        pg = pod_groups.get(key)
        if pg is not None and pg.spec.disruption_mode.HasField("all"):
            whole.add(key)
        else:
            units += 1
    return units + len(whole)
