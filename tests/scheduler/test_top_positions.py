"""top_positions (the trace's top scores) == the full stable sort it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from services.scheduler.schedule_one import top_positions


@pytest.mark.parametrize("seed", range(40))
def test_equals_the_full_stable_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 800))
    spread = int(rng.choice([1, 2, 3, 10, 1000]))  # few distinct values: many ties
    totals = rng.integers(0, spread, size=n).astype(np.int64) * int(rng.choice([1, -1]))
    for k in (1, 5, 7):
        want = np.argsort(-totals, kind="stable")[:k]
        assert top_positions(totals, k).tolist() == want.tolist()


def test_all_equal_and_edges() -> None:
    assert top_positions(np.zeros(100, dtype=np.int64), 5).tolist() == [0, 1, 2, 3, 4]
    assert top_positions(np.array([3, 1, 3], dtype=np.int64), 5).tolist() == [0, 2, 1]
    assert top_positions(np.zeros(0, dtype=np.int64), 5).tolist() == []
