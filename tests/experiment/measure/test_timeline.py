"""What the pod timeline knows beyond times: tried by the scheduler, deleted (the waits of
barrier and deletePods read these instead of listing pods)."""

from __future__ import annotations

from kubera.experiment.measure.measures import PodTimeline


def test_deletions_from_events_and_from_a_list_that_lacks_a_pod() -> None:
    tl = PodTimeline()
    for uid in ("a", "b", "c"):
        tl.observe(uid, f"ns/{uid}", "", "Pending", 1.0)
    tl.deleted("a", 2.0)
    tl.deleted("a", 3.0)  # the first sighting stands
    tl.listed(["c"], 4.0)  # after a watch gap: b is no longer there
    assert tl.gone == {"a": 2.0, "b": 4.0}


def test_attempted_sticks_once_seen() -> None:
    tl = PodTimeline()
    tl.observe("a", "ns/a", "", "Pending", 1.0, attempted=True)
    tl.observe("a", "ns/a", "", "Pending", 2.0)
    assert tl.pods["a"].attempted and tl.pods["a"].bound is None
