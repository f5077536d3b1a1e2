"""Microbenchmark: the cost of one server-side apply, one strategic merge patch and one
managedFields update on a pod of C containers (default 3). Prints figures; asserts nothing.

    PYTHONPATH=. .venv/bin/python scripts/bench_apply.py [--containers 3] [--rounds 300]

The pod carries labels, annotations, tolerations, env, ports and resources, as a manifest
applied with `kubectl apply --server-side` would. Each apply changes one label and an
image, so merge, prune, compare and the FieldsV1 encoding all do real work.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from services.api.machinery import fieldmanager, patching
from services.api.machinery.kinds import BY_KIND

POD = BY_KIND["Pod"]


def manifest(containers: int, rev: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web", "rev": str(rev)},
            "annotations": {"team": "infra"},
        },
        "spec": {
            "containers": [
                {
                    "name": f"c{i}",
                    "image": f"nginx:1.{rev}",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80 + i, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
                for i in range(containers)
            ],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def timed(label: str, rounds: int, fn: Any) -> None:
    start = time.perf_counter()
    for i in range(rounds):
        fn(i)
    per = (time.perf_counter() - start) / rounds
    print(f"{label:<44} {per * 1e6:9.0f} µs/op")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--containers", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=300)
    args = ap.parse_args()
    now = "2026-01-01T00:00:00Z"
    live = fieldmanager.apply(
        POD, None, manifest(args.containers, 0), manager="kubectl", force=False, now=now
    )
    timed(
        f"apply (pod, {args.containers} containers)",
        args.rounds,
        lambda i: fieldmanager.apply(
            POD, live, manifest(args.containers, i), manager="kubectl", force=False, now=now
        ),
    )
    changed = json.loads(json.dumps(live))
    changed["metadata"]["labels"]["rev"] = "x"
    timed(
        "track_update (one label changed)",
        args.rounds,
        lambda i: fieldmanager.track_update(POD, live, changed, manager="edit", now=now),
    )
    body = json.dumps(
        {
            "metadata": {"labels": {"rev": "y"}},
            "spec": {"containers": [{"name": "c0", "image": "x"}]},
        }
    ).encode()
    timed(
        "strategic merge patch (label + image)",
        args.rounds,
        lambda i: patching.apply_patch(POD, live, patching.STRATEGIC_MERGE_PATCH, body),
    )


if __name__ == "__main__":
    main()
