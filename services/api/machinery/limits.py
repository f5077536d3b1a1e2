"""The limits every input to kubera meets, one constant each, below the apiserver and the
CLI so both refuse the same things with the same words.

* Nesting depth (`MAX_DEPTH`): JSON and YAML from users (manifests, merge patches) are
  decoded by recursive code (the json module, PyYAML's composer, the merge patch, the
  codec's field walk, protobuf's ParseDict), and Python's stack is ~1,000 frames, several
  per level. 100 levels is the limit protobuf's own binary decoder already applies to
  every message the apiserver receives (upb's default max depth, in message levels), so a
  JSON document and a protobuf payload are capped alike; the deepest field path of any
  kubera kind is 13 levels (a Deployment's pod template; tests/api/machinery/test_limits.py
  keeps it under a quarter of the cap). Upstream's 10,000 is Go's json limit, with Go's
  growable stacks; Python's cannot reach it.
* Items per batch call (`MAX_BATCH_ITEMS`): twice the largest batch kubera's own
  components send (node-pool batchers and benches send 500), ten etcd txns of 100. The
  apiserver holds about 20 KB per in-flight pod (measured: 20,000 pods in one call took it
  from 114 MB to 509 MB), so one call stays near 20 MB; more is refused before any work.
* Request bytes (`MAX_REQUEST_BYTES`): what a client may send in one message. 16 MiB holds
  one object at etcd's own limit (1.5 MiB per request; upstream kube-apiserver reads at
  most 3 MiB of one request body for the same reason) many times over, and a full batch of
  1,000 objects of up to 16 KiB each (a pod is 0.5-2 KiB). gRPC refuses a larger message
  itself with RESOURCE_EXHAUSTED, naming both sizes.
* Response bytes (`MAX_RESPONSE_BYTES`): lists are not paginated yet, so a list of a whole
  large cluster is one message; what a client receives stays at 256 MiB.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100
MAX_BATCH_ITEMS = 1000
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class DepthError(ValueError):
    """A document nested deeper than MAX_DEPTH levels."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is nested too deeply (more than {MAX_DEPTH} levels)")


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether dicts/lists nest more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > limit:
            return True
        stack.extend((c, d + 1) for c in children if isinstance(c, dict | list))
    return False


def check_depth(value: Any, what: str) -> None:
    """Raise DepthError naming `what` when `value` nests more than MAX_DEPTH levels."""
    if depth_exceeds(value):
        raise DepthError(what)


def loads_json(text: str | bytes, what: str) -> Any:
    """json.loads with the depth cap: DepthError naming `what` past MAX_DEPTH levels
    (json.JSONDecodeError for text that is not JSON, as json.loads)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise DepthError(what) from None
    check_depth(value, what)
    return value
