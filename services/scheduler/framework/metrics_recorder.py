"""The framework's metrics recorder (upstream framework/runtime's metricsRecorder): how long
each extension point took, by status and profile, in
framework_extension_point_duration_seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from services.scheduler.framework.status import Code, Status

#: Extension point names as the framework_extension_point_duration_seconds label spells them.
EP_PRE_ENQUEUE = "PreEnqueue"
EP_PRE_FILTER = "PreFilter"
EP_FILTER = "Filter"
EP_POST_FILTER = "PostFilter"
EP_PRE_SCORE = "PreScore"
EP_SCORE = "Score"
EP_RESERVE = "Reserve"
EP_UNRESERVE = "Unreserve"
EP_PERMIT = "Permit"
EP_PRE_BIND = "PreBind"
EP_BIND = "Bind"
EP_POST_BIND = "PostBind"


def code_label(code: Code) -> str:
    """A Status code as upstream's Code.String() spells it ("UnschedulableAndUnresolvable")."""
    return "".join(part.capitalize() for part in code.name.split("_"))


class MetricsRecorder:
    """Times one profile's extension points. `metrics`: anything with a
    `framework_extension_point_duration_seconds` histogram (SchedulerMetrics), or None (then
    nothing is recorded); `timer`: perf_counter by default."""

    def __init__(
        self, profile_name: str, metrics: Any = None, timer: Callable[[], float] = time.perf_counter
    ) -> None:
        self.profile_name = profile_name
        self._histogram = getattr(metrics, "framework_extension_point_duration_seconds", None)
        self.timer = timer
        #: (point, code) -> the histogram's child (labels() resolved once, not per cycle).
        self._children: dict[tuple[str, Code], Any] = {}

    @property
    def enabled(self) -> bool:
        return self._histogram is not None

    def observe(self, point: str, status: Status, start: float) -> None:
        """Record that `point` ended with `status`, `start` being a `timer()` reading."""
        if self._histogram is None:
            return
        key = (point, status.code)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._histogram.labels(
                extension_point=point, status=code_label(status.code), profile=self.profile_name
            )
        child.observe(self.timer() - start)
