"""The `kubera.io/stages` pod annotation and the stages it overrides: how a pod's life plays
on a hollow kubelet (kwok's stages as data).

A node template gives every node kind its stages (services/kubelet/template.py); a pod's
annotation overrides them key by key, e.g. ``{"startDelay": "5s", "runDuration": "1m"}``.
How a container ends is three keys, for every container or per container name under
``containers`` (a Job's pods carry the annotation of the Job's pod template)::

    {"runDuration": "30s", "exitCode": 0, "failureRate": 0.1,
     "containers": {"worker": {"runDuration": "5s", "exitCode": 3}}}

A container runs ``runDuration`` (0: until it is stopped; an init container then completes
at once) and exits with ``exitCode``, or, with probability ``failureRate``, fails (with
``exitCode`` when that is non-zero, else 1).
The apiserver's admission validates the annotation (`Stages().for_pod`), the kubelet plays
it: both import it from here. `TemplateError` is the one error for a node template or a
stages annotation that cannot be used; its message names the field.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.api.machinery.duration import parse_duration
from services.api.machinery.limits import DepthError, loads_json

STAGES_ANNOTATION = "kubera.io/stages"


class TemplateError(ValueError):
    """A node template (or a stages annotation) that cannot be used; names the field."""


#: kubera's bound on a stage's duration, as on every duration it takes: an int32 of seconds.
MAX_DURATION_SECONDS = 2**31 - 1


def duration(path: str, value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        d = float(value)
    else:
        try:
            d = parse_duration(str(value))
        except ValueError:
            raise TemplateError(
                f'{path}: {value!r}: expected a duration like "2s", "500ms" or "1m30s"'
            ) from None
    if not math.isfinite(d):  # JSON's NaN and Infinity, 1e400
        raise TemplateError(f"{path}: {value!r}: expected a finite duration")
    if d < 0:
        raise TemplateError(f"{path}: {value!r}: must not be negative")
    if d > MAX_DURATION_SECONDS:
        raise TemplateError(
            f"{path}: {value!r}: must be at most {MAX_DURATION_SECONDS}s (kubera's limit)"
        )
    return d


def mapping(path: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TemplateError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def known(path: str, doc: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for k in doc:
        if k not in allowed:
            raise TemplateError(f"{path}.{k}: unknown field (expected one of {', '.join(allowed)})")


#: Exit codes are what a process can return: 0 to 255.
MAX_EXIT_CODE = 255


@dataclass(frozen=True)
class ContainerStages:
    """How one container runs and ends (the per-container keys of the stages)."""

    run_duration: float = 0.0
    exit_code: int = 0
    failure_rate: float = 0.0

    FIELDS = ("runDuration", "exitCode", "failureRate")

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], path: str, base: ContainerStages, *, only: bool = True
    ) -> ContainerStages:
        if only:
            known(path, doc, cls.FIELDS)
        rate = doc.get("failureRate", base.failure_rate)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise TemplateError(f"{path}.failureRate: {rate!r}: expected a number from 0 to 1")
        code = doc.get("exitCode", base.exit_code)
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= MAX_EXIT_CODE:
            raise TemplateError(
                f"{path}.exitCode: {code!r}: expected an integer from 0 to {MAX_EXIT_CODE}"
            )
        return cls(
            run_duration=duration(f"{path}.runDuration", doc.get("runDuration", base.run_duration)),
            exit_code=code,
            failure_rate=float(rate),
        )

    def draw_exit_code(self, rng: random.Random) -> int:
        """The code this run exits with: a failure drawn with `failure_rate`."""
        if self.failure_rate and rng.random() < self.failure_rate:
            return self.exit_code or 1
        return self.exit_code


@dataclass(frozen=True)
class Stages:
    """How a pod's life plays on a hollow kubelet."""

    #: Bound → ContainerCreating (the kubelet noticed it, sandbox being made).
    creating_delay: float = 0.5
    #: ContainerCreating → Running (image pulled, containers started).
    start_delay: float = 1.0
    #: Up to this much extra delay, uniformly drawn, on each step.
    jitter: float = 0.5
    #: How long containers run before they exit; 0 = until deleted. Pods with
    #: restartPolicy Always are restarted when they exit (restartCount + 1).
    run_duration: float = 0.0
    #: The chance that a container exits with an error (code 1) instead of 0.
    failure_rate: float = 0.0
    #: The code a container exits with after its run duration (0: success).
    exit_code: int = 0
    #: Per container name: its own run duration, exit code and failure rate.
    containers: tuple[tuple[str, ContainerStages], ...] = ()
    #: How long a Job's pod runs when its stages give it no run duration (kwok's
    #: pod-complete stage for Job-owned pods: the docs' pi Job completes as on a node).
    job_run_duration: float = 10.0

    FIELDS = (
        "creatingDelay",
        "startDelay",
        "jitter",
        "runDuration",
        "failureRate",
        "exitCode",
        "containers",
        "jobRunDuration",
    )

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], path: str, base: Stages | None = None) -> Stages:
        known(path, doc, cls.FIELDS)
        b = base or cls()
        own = ContainerStages.from_dict(
            doc,
            path,
            ContainerStages(b.run_duration, b.exit_code, b.failure_rate),
            only=False,
        )
        containers = dict(b.containers)
        for name, raw in mapping(f"{path}.containers", doc.get("containers")).items():
            sub = f"{path}.containers.{name}"
            containers[name] = ContainerStages.from_dict(mapping(sub, raw), sub, own)
        return cls(
            creating_delay=duration(
                f"{path}.creatingDelay", doc.get("creatingDelay", b.creating_delay)
            ),
            start_delay=duration(f"{path}.startDelay", doc.get("startDelay", b.start_delay)),
            jitter=duration(f"{path}.jitter", doc.get("jitter", b.jitter)),
            job_run_duration=duration(
                f"{path}.jobRunDuration", doc.get("jobRunDuration", b.job_run_duration)
            ),
            run_duration=own.run_duration,
            failure_rate=own.failure_rate,
            exit_code=own.exit_code,
            containers=tuple(sorted(containers.items())),
        )

    def for_container(self, name: str) -> ContainerStages:
        """How the container called `name` runs and ends."""
        for n, c in self.containers:
            if n == name:
                return c
        return self._every_container

    @functools.cached_property
    def _every_container(self) -> ContainerStages:
        return ContainerStages(self.run_duration, self.exit_code, self.failure_rate)

    def for_pod(self, annotations: Mapping[str, str], *, job: bool = False) -> Stages:
        """These stages overridden by the pod's `kubera.io/stages` annotation; for a Job's
        pod (`job`) with no run duration from either, `jobRunDuration` is its run duration."""
        text = annotations.get(STAGES_ANNOTATION)
        doc: Any = {}
        if text:
            try:
                doc = loads_json(text, STAGES_ANNOTATION)
            except json.JSONDecodeError as e:
                raise TemplateError(f"{STAGES_ANNOTATION}: not valid JSON: {e}") from None
            except DepthError as e:
                raise TemplateError(str(e)) from None
            doc = mapping(STAGES_ANNOTATION, doc)
        base = self
        if job and not self.run_duration and "runDuration" not in doc:
            base = dataclasses.replace(self, run_duration=self.job_run_duration, containers=())
            base = Stages.from_dict(
                {"containers": {n: _as_doc(c, self) for n, c in self.containers}}, "", base
            )
        if not doc:
            return base
        return Stages.from_dict(doc, STAGES_ANNOTATION, base)

    def delay(self, base: float, rng: random.Random) -> float:
        return base + (rng.uniform(0, self.jitter) if self.jitter else 0.0)


def _as_doc(c: ContainerStages, stages: Stages) -> dict[str, Any]:
    """A per-container entry as the keys it set (its run duration only if its own)."""
    doc: dict[str, Any] = {"exitCode": c.exit_code, "failureRate": c.failure_rate}
    if c.run_duration != stages.run_duration:
        doc["runDuration"] = c.run_duration
    return doc
