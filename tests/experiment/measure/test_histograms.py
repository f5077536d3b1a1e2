"""The scheduler registries' texts the collector keeps for the windows' snapshots, and the
difference of a window summed over processes (kubera/experiment/measure/histograms.py)."""

from __future__ import annotations

import pytest

from kubera.experiment.measure import histograms as h
from tests.experiment.builders import attempt_durations


def test_a_scrape_whose_counts_went_down_opens_the_next_registry() -> None:
    texts = h.ProcessTexts()
    texts.observe("scheduler-0", attempt_durations(5, 0), at=1.0)
    texts.observe("scheduler-0", attempt_durations(8, 0), at=2.0)
    texts.observe("scheduler-1", attempt_durations(0, 0), at=2.0)
    assert texts.texts() == {
        "scheduler-0": attempt_durations(8, 0),
        "scheduler-1": attempt_durations(0, 0),
    }
    # scheduler-0's term ended: a fresh registry; the old one keeps its last scrape
    texts.observe("scheduler-0", attempt_durations(1, 0), at=3.0)
    texts.observe("scheduler-0", attempt_durations(3, 0), at=4.0)
    assert texts.texts()["scheduler-0"] == attempt_durations(8, 0)
    assert texts.texts()["scheduler-0#1"] == attempt_durations(3, 0)


def test_an_older_scrape_answering_late_is_ignored_and_no_answer_keeps_the_last() -> None:
    texts = h.ProcessTexts()
    texts.observe("scheduler-0", attempt_durations(9, 0), at=5.0)
    texts.observe("scheduler-0", attempt_durations(7, 0), at=4.5)  # started earlier: stale
    texts.observe("scheduler-0", "", at=6.0)  # dead or paused: no text
    assert texts.texts() == {"scheduler-0": attempt_durations(9, 0)}


def test_window_difference_through_a_failover_and_compact() -> None:
    texts = h.ProcessTexts()
    texts.observe("scheduler-0", attempt_durations(10, 0), at=0.0)
    texts.observe("scheduler-1", attempt_durations(0, 0), at=0.0)
    texts.observe("scheduler-2", attempt_durations(3, 0), at=0.0)  # dead before the window
    start = texts.texts()
    texts.observe("scheduler-0", attempt_durations(30, 0), at=1.0)  # its last scrape: killed
    texts.observe("scheduler-1", attempt_durations(0, 20), at=2.0)  # the new leader
    texts.observe("scheduler-3", attempt_durations(0, 5), at=2.0)  # Ray's new process
    before, after = h.compact(start, texts.texts())
    assert set(after) == {"scheduler-0", "scheduler-1", "scheduler-3"}
    assert set(before) == {"scheduler-0", "scheduler-1"}
    (series,) = h.window_difference(before, after)[
        "scheduler_scheduling_attempt_duration_seconds"
    ].values()
    assert series.count == 20 + 20 + 5
    assert series.buckets[0.01] == 20
    assert series.sum == pytest.approx(20 * 0.005 + 25 * 0.05)
