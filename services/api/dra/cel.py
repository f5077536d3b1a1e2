"""Device selectors in CEL (upstream k8s.io/dynamic-resource-allocation/cel).

SKELETON (issue 16): the interface below is fixed; the helper that owns this module
implements it with the CEL library chosen by measurement.

A selector sees one variable, ``device``, with ``driver`` (string), ``attributes`` and
``capacity``: maps from a domain to a map of names (``device.attributes["gpu.example.com"].model``,
``device.capacity["gpu.example.com"].memory``); an attribute written "model" in a slice
belongs to the driver's domain, "other.io/model" to "other.io". Values are CEL int, bool,
string, semver (for version attributes) and quantity (capacities), with Kubernetes' CEL
library functions (quantity(), compareTo, isGreaterThan, ..., semver(), isSemver()).
"""

from __future__ import annotations

from protos.kubera.v1 import resource_pb2


class CELCompileError(ValueError):
    """The expression does not compile, is not a bool, or exceeds the cost limit; the
    message is upstream's wording, for validation's field errors."""


class CELRuntimeError(RuntimeError):
    """Evaluation failed for a device (e.g. a missing attribute that is not guarded)."""


class Selector:
    """One compiled selector: compile once (compile_selector caches by expression), match
    many devices."""

    expression: str

    def matches(self, driver: str, device: resource_pb2.Device) -> bool:
        """Whether the device satisfies the selector. Raises CELRuntimeError."""
        raise NotImplementedError


def compile_selector(expression: str) -> Selector:
    """The compiled selector (cached by expression). Raises CELCompileError."""
    raise NotImplementedError
