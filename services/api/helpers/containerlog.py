"""A hollow container's log: what `kubectl logs POD [-c C] [--previous]` answers.

Hollow containers run nothing, so their log is synthetic: the life the kubelet wrote into
the pod's status (started, exited with its code and reason, OOM-killed, restarted) and the
stages it plays (`kubera.io/stages`), each line stamped with its simulated time. It is
derived from the pod object alone, so any apiserver replica serves it without asking the
node. Which container, and the errors when there is none to read, follow upstream: the
apiserver's LogLocation (pkg/registry/core/pod/strategy.go) picks the container, the
kubelet's validateContainerLogStatus (pkg/kubelet/kubelet_pods.go) refuses a container
that has not started, or a --previous that has no terminated instance.

With ``follow`` the log streams as the kubelet's does: what there is, then each line the
container's instance adds as the kubelet writes its status (its exit), ending when that
instance terminates (its exit line written; a restart starts a new instance, which a new
``kubectl logs -f`` follows) or the pod goes. ``follow_lines`` decides this from the pod's
successive versions; the HTTP layer feeds it from a watch.

Differences from upstream: ``sinceSeconds``/``sinceTime`` are not applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import STAGES_ANNOTATION, Stages, TemplateError
from services.api.machinery.errors import BadRequestError, InvalidError, invalid


class LogError(BadRequestError):
    """No log to serve: a 400 BadRequest with upstream's message."""


def log_container(pod: core_pb2.Pod, container: str) -> str:
    """The container whose log is asked for: the named one, or the pod's only container
    (LogLocation)."""
    name = pod.metadata.name
    if not container:
        if len(pod.spec.containers) == 1:
            return pod.spec.containers[0].name
        if not pod.spec.containers:
            raise LogError(f"a container name must be specified for pod {name}")
        message = (
            f"a container name must be specified for pod {name}, choose one of: "
            f"[{' '.join(c.name for c in pod.spec.containers)}]"
        )
        if pod.spec.init_containers:
            message += (
                " or one of the init containers: "
                f"[{' '.join(c.name for c in pod.spec.init_containers)}]"
            )
        raise LogError(message)
    if not any(c.name == container for c in (*pod.spec.containers, *pod.spec.init_containers)):
        raise LogError(f"container {container} is not valid for pod {name}")
    return container


def _state(msg: Any) -> dict[str, Any]:
    return json_format.MessageToDict(msg) if msg.ListFields() else {}


def container_log(pod: core_pb2.Pod, container: str, *, previous: bool = False) -> list[str]:
    """The log lines of `container`'s current instance (or its previous one)."""
    name = pod.metadata.name
    statuses = [*pod.status.container_statuses, *pod.status.init_container_statuses]
    cs = next((s for s in statuses if s.name == container), None)
    if cs is None:
        raise LogError(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')
    state, last = _state(cs.state), _state(cs.last_state)
    if previous:
        run = last.get("terminated")
        if not run or not run.get("containerID"):
            raise LogError(f'previous terminated container "{container}" in pod "{name}" not found')
        return _lines(pod, container, cs.image, None, run, cs.restart_count - 1)
    if "running" in state:
        return _lines(pod, container, cs.image, state["running"], None, cs.restart_count)
    if "terminated" in state:
        run = state["terminated"]
        return _lines(pod, container, cs.image, None, run, cs.restart_count)
    if "terminated" in last:
        return _lines(pod, container, cs.image, None, last["terminated"], cs.restart_count - 1)
    reason = state.get("waiting", {}).get("reason", "")
    if reason:
        raise LogError(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    raise LogError(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')


def _plan(annotations: Mapping[str, str], container: str) -> str:
    try:
        c = Stages().for_pod(annotations).for_container(container)
    except TemplateError:
        return "the node's stages"
    if STAGES_ANNOTATION not in annotations:
        return "the node's stages"
    run = f"{c.run_duration:g}s" if c.run_duration else "until stopped"
    return f"runDuration {run}, exitCode {c.exit_code}, failureRate {c.failure_rate:g}"


def _lines(
    pod: core_pb2.Pod,
    container: str,
    image: str,
    running: Mapping[str, Any] | None,
    terminated: Mapping[str, Any] | None,
    restart: int,
) -> list[str]:
    started = (running or terminated or {}).get("startedAt", "")
    lines = [
        f"{started} [kubera] hollow container {container} started "
        f"(image {image}, restart {max(restart, 0)})",
        f"{started} [kubera] stages: {_plan(pod.metadata.annotations, container)}",
    ]
    if running is not None:
        lines.append(f"{started} [kubera] running")
    if terminated is not None:
        code = int(terminated.get("exitCode", 0))
        reason = terminated.get("reason", "")
        finished = terminated.get("finishedAt", "")
        if reason == "OOMKilled":
            lines.append(
                f"{finished} [kubera] memory usage passed the limit: killed "
                f"(exit code {code}, OOMKilled)"
            )
        else:
            lines.append(f"{finished} [kubera] exited with code {code} ({reason})")
    return lines


def _int_option(name: str, query: Mapping[str, str], key: str, minimum: int) -> int | None:
    raw = query.get(key)
    if raw is None:
        return None
    try:
        n = int(raw)
    except ValueError:
        raise BadRequestError(
            f'couldn\'t parse "{key}": strconv.ParseInt: parsing "{raw}": invalid syntax'
        ) from None
    if n < minimum:
        relation = "greater than or equal to 0" if minimum == 0 else "greater than 0"
        raise InvalidError("PodLogOptions", name, [invalid(key, n, f"must be {relation}")])
    return n


@dataclass(frozen=True)
class LogOptions:
    """The PodLogOptions kubera applies."""

    container: str = ""
    previous: bool = False
    follow: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None


def log_options(name: str, query: Mapping[str, str]) -> LogOptions:
    """PodLogOptions from the query, validated as upstream's ValidatePodLogOptions
    (tailLines >= 0, limitBytes >= 1) before anything is looked up."""
    return LogOptions(
        container=query.get("container", ""),
        previous=query.get("previous") == "true",
        follow=query.get("follow") == "true",
        timestamps=query.get("timestamps") == "true",
        tail_lines=_int_option(name, query, "tailLines", 0),
        limit_bytes=_int_option(name, query, "limitBytes", 1),
    )


def render(lines: list[str], options: LogOptions) -> str:
    """The log text under the options (the kubelet's timestamps prefix, tail, byte limit)."""
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines else []
    return render_more(lines, options, options.limit_bytes)[0]


def running(pod: core_pb2.Pod, container: str) -> bool:
    """Whether `container`'s current instance runs (its log may still grow)."""
    statuses = [*pod.status.container_statuses, *pod.status.init_container_statuses]
    cs = next((s for s in statuses if s.name == container), None)
    return cs is not None and "running" in _state(cs.state)


def follow_lines(pod: core_pb2.Pod, container: str, sent: list[str]) -> tuple[list[str], bool]:
    """(the lines of the followed instance not yet sent, whether the stream ends) for a new
    version of the pod. The followed instance is the one whose first line `sent` starts
    with: when the pod runs a later one, the followed one is its previous, and its exit line
    is the last to send."""
    try:
        lines = container_log(pod, container)
        current = lines[0] == sent[0]
        if not current:
            lines = container_log(pod, container, previous=True)
    except LogError:
        return [], True
    if lines[0] != sent[0]:
        return [], True  # restarted twice since: nothing more of the followed instance
    seen = set(sent)
    return [line for line in lines if line not in seen], not (current and running(pod, container))


def render_more(
    lines: list[str], options: LogOptions, budget: int | None
) -> tuple[str, int | None]:
    """Lines with the kubelet's timestamps prefix when asked, cut at `budget` bytes (None: no
    limit): the lines streamed after the first answer get what is left of limitBytes and no
    tail; (the text, the budget left)."""
    if options.timestamps:
        lines = [f"{line.split(' ', 1)[0]} {line}" for line in lines]
    text = "".join(line + "\n" for line in lines)
    if budget is None:
        return text, None
    data = text.encode()[:budget]
    return data.decode(errors="ignore"), budget - len(data)
