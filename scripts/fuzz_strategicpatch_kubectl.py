"""Differential fuzzing of strategic merge patch against upstream: random patches on a pod
(containers merged by name with nested env, finalizers as a set, labels, directives
$patch/$setElementOrder/$deleteFromPrimitiveList) applied by kubera's apply_patch and by
`kubectl patch --local` (offline, apimachinery's code). Prints each disagreement; asserts
nothing. Known, documented disagreements (services/api/machinery/strategicpatch.py
docstring): a scalar both added and deleted by one patch (upstream: Go's random map order
decides).

    PYTHONPATH=. .venv/bin/python scripts/fuzz_strategicpatch_kubectl.py [--seed 1] [--cases 100]

The cases it found are kept as rows of tests/api/machinery/test_strategicpatch_kubectl.py.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from services.api.machinery.patching import STRATEGIC_MERGE_PATCH
from tests.api.machinery.test_strategicpatch_kubectl import (
    POD,
    kubectl_patch,
    kubera_patch,
    normalized,
)

NAMES = ["a", "b", "c", "d"]


class Gen:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)

    def env(self) -> list[dict[str, str]]:
        r = self.rnd
        return [
            {"name": r.choice("XYZ"), "value": str(r.randint(0, 3))} for _ in range(r.randint(0, 2))
        ]

    def container(self, name: str) -> dict[str, Any]:
        r = self.rnd.random()
        c: dict[str, Any] = {"name": name}
        if r < 0.3:
            c["image"] = f"{name}:{self.rnd.randint(1, 3)}"
        elif r < 0.5:
            c["env"] = self.env()
        elif r < 0.6:
            c["args"] = None
        elif r < 0.7:
            c["$patch"] = "delete"
        elif r < 0.8:
            order = self.rnd.sample("XYZ", self.rnd.randint(0, 3))
            c["$setElementOrder/env"] = [{"name": n} for n in order]
        return c

    def patch(self) -> dict[str, Any]:
        r = self.rnd
        p: dict[str, Any] = {}
        if r.random() < 0.5:
            items = [self.container(n) for n in r.sample(NAMES, r.randint(0, 3))]
            spec = p.setdefault("spec", {})
            spec["containers"] = items
            if r.random() < 0.4:
                plain = [c["name"] for c in items if "$patch" not in c]
                order = plain + [n for n in NAMES if n not in plain and r.random() < 0.5]
                spec["$setElementOrder/containers"] = [{"name": n} for n in order]
        if r.random() < 0.4:
            meta = p.setdefault("metadata", {})
            if r.random() < 0.5:
                meta["finalizers"] = r.sample(["x", "y", "z", "w"], r.randint(0, 3))
            if r.random() < 0.3:
                meta["$deleteFromPrimitiveList/finalizers"] = r.sample(["x", "y", "z"], 1)
            if r.random() < 0.3:
                meta["$setElementOrder/finalizers"] = r.sample(
                    ["x", "y", "z", "w"], r.randint(1, 4)
                )
        if r.random() < 0.3:
            labels = {r.choice("abc"): r.choice([None, "v"]) for _ in range(2)}
            p.setdefault("metadata", {})["labels"] = labels
        return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=100)
    args = ap.parse_args()
    gen = Gen(args.seed)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.cases):
            patch = gen.patch()
            ours = normalized(kubera_patch(POD, STRATEGIC_MERGE_PATCH, patch))
            theirs = normalized(kubectl_patch(Path(tmp), POD, "strategic", patch))
            if ours != theirs:
                bad += 1
                print("patch ", json.dumps(patch))
                print("kubera", json.dumps(ours))
                print("kubectl", json.dumps(theirs))
    print(f"{bad} disagreements in {args.cases} cases (seed {args.seed})")


if __name__ == "__main__":
    main()
