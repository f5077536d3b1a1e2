"""The storage capacity scorer (upstream volumebinding/scorer_test.go TestScore): the mean
over classes of the shape at each class's requested / capacity. Shapes are given as
VolumeBindingArgs holds them (scores 0..10; upstream's table is in node-score units, x10)."""

from __future__ import annotations

import pytest

from services.scheduler.plugins.volumebinding import UtilizationShapePoint, build_scorer

DEFAULT = [(0, 0), (100, 10)]
CUSTOM = [(50, 0), (80, 3), (100, 5)]

#: (shape, {class: requested} over a capacity of 100 each, score)
CASES = [
    ("default shape, single class", DEFAULT, {"hdd": 0}, 0),
    ("default shape, single class", DEFAULT, {"hdd": 30}, 30),
    ("default shape, single class", DEFAULT, {"hdd": 50}, 50),
    ("default shape, single class", DEFAULT, {"hdd": 100}, 100),
    ("default shape, multiple classes", DEFAULT, {"hdd": 0, "ssd": 0}, 0),
    ("default shape, multiple classes", DEFAULT, {"hdd": 0, "ssd": 30}, 15),
    ("default shape, multiple classes", DEFAULT, {"hdd": 30, "ssd": 30}, 30),
    ("default shape, multiple classes", DEFAULT, {"hdd": 30, "ssd": 60}, 45),
    ("default shape, multiple classes", DEFAULT, {"hdd": 50, "ssd": 50}, 50),
    ("default shape, multiple classes", DEFAULT, {"hdd": 50, "ssd": 100}, 75),
    ("default shape, multiple classes", DEFAULT, {"hdd": 100, "ssd": 100}, 100),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 0, "ssd": 0}, 0),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 0, "ssd": 30}, 0),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 30, "ssd": 30}, 0),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 30, "ssd": 60}, 5),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 50, "ssd": 100}, 25),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 90, "ssd": 90}, 40),
    ("custom shape, multiple classes", CUSTOM, {"hdd": 100, "ssd": 100}, 50),
]


@pytest.mark.parametrize(
    ("name", "shape", "requested", "want"), CASES, ids=[f"{c[0]}: {c[2]}" for c in CASES]
)
def test_score(
    name: str, shape: list[tuple[int, int]], requested: dict[str, int], want: int
) -> None:
    score = build_scorer([UtilizationShapePoint(u, s) for u, s in shape])
    assert score({cls: (r, 100) for cls, r in requested.items()}) == want


def test_no_class_scores_zero_and_an_overfull_class_scores_full_utilisation() -> None:
    score = build_scorer([UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)])
    assert score({}) == 0
    assert score({"hdd": (200, 100)}) == score({"hdd": (1, 0)}) == 0
