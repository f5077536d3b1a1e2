"""The `kubera.io/stages` pod annotation and the stages it overrides: how a pod's life plays
on a hollow kubelet (kwok's stages as data).

A node template gives every node kind its stages (services/kubelet/template.py); a pod's
annotation overrides them key by key, e.g. ``{"startDelay": "5s", "runDuration": "1m"}``.
The apiserver's admission validates the annotation (`Stages().for_pod`), the kubelet plays
it: both import it from here. `TemplateError` is the one error for a node template or a
stages annotation that cannot be used; its message names the field.
"""

from __future__ import annotations

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

    FIELDS = ("creatingDelay", "startDelay", "jitter", "runDuration", "failureRate")

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], path: str, base: Stages | None = None) -> Stages:
        known(path, doc, cls.FIELDS)
        b = base or cls()
        rate = doc.get("failureRate", b.failure_rate)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise TemplateError(f"{path}.failureRate: {rate!r}: expected a number from 0 to 1")
        return cls(
            creating_delay=duration(
                f"{path}.creatingDelay", doc.get("creatingDelay", b.creating_delay)
            ),
            start_delay=duration(f"{path}.startDelay", doc.get("startDelay", b.start_delay)),
            jitter=duration(f"{path}.jitter", doc.get("jitter", b.jitter)),
            run_duration=duration(f"{path}.runDuration", doc.get("runDuration", b.run_duration)),
            failure_rate=float(rate),
        )

    def for_pod(self, annotations: Mapping[str, str]) -> Stages:
        """These stages overridden by the pod's `kubera.io/stages` annotation."""
        text = annotations.get(STAGES_ANNOTATION)
        if not text:
            return self
        try:
            doc = loads_json(text, STAGES_ANNOTATION)
        except json.JSONDecodeError as e:
            raise TemplateError(f"{STAGES_ANNOTATION}: not valid JSON: {e}") from None
        except DepthError as e:
            raise TemplateError(str(e)) from None
        return Stages.from_dict(mapping(STAGES_ANNOTATION, doc), STAGES_ANNOTATION, self)

    def delay(self, base: float, rng: random.Random) -> float:
        return base + (rng.uniform(0, self.jitter) if self.jitter else 0.0)
