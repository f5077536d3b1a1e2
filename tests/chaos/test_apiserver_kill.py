"""The pure parts of `kubera chaos kill-apiserver`: which pod writes count as binds when
its recovery is timed, and the summary `chaos run` prints over several kills."""

from __future__ import annotations

import pytest

from kubera.chaos import ApiServerRecovery, is_bind, recovery_summary
from tests.builders import MakePod


def _pod(node: str = "", phase: str = "") -> bytes:
    return MakePod().name("p").node(node).phase(phase).obj().SerializeToString()


@pytest.mark.parametrize(
    ("new", "prev", "expected"),
    [
        (_pod("n1"), _pod(), True),  # nodeName set by this write
        (_pod("n1"), None, True),  # created bound (no previous value)
        (_pod("n1", "Running"), _pod("n1"), False),  # a bound pod's status update
        (_pod(), _pod(), False),  # still unbound
        (b"\xff\xfe not a pod", _pod(), False),  # undecodable: not a bind we can time
    ],
    ids=["bind", "created-bound", "status-update", "unbound", "undecodable"],
)
def test_a_bind_is_a_write_that_sets_node_name(
    new: bytes, prev: bytes | None, expected: bool
) -> None:
    assert is_bind(new, prev) is expected


def _r(write: float, bind: float | None) -> ApiServerRecovery:
    return ApiServerRecovery(pid=1, new_pid=2, address="a", first_write_s=write, first_bind_s=bind)


@pytest.mark.parametrize(
    ("recoveries", "summary"),
    [
        (
            [_r(2.0, 2.5), _r(3.0, 3.5), _r(1.0, 9.0)],
            "apiserver kills: 3; kill → first write median 2.00s, max 3.00s; "
            "kill → first bind median 3.50s, max 9.00s",
        ),
        (
            [_r(2.0, None), _r(4.0, 5.0)],
            "apiserver kills: 2; kill → first write median 3.00s, max 4.00s; "
            "kill → first bind median 5.00s, max 5.00s (1 with no bind within the wait)",
        ),
        (
            [_r(2.0, None)],
            "apiserver kills: 1; kill → first write median 2.00s, max 2.00s "
            "(1 with no bind within the wait)",
        ),
    ],
    ids=["all-bound", "one-without-bind", "none-bound"],
)
def test_recovery_summary_gives_median_and_max_of_each_figure(
    recoveries: list[ApiServerRecovery], summary: str
) -> None:
    assert recovery_summary(recoveries) == summary
