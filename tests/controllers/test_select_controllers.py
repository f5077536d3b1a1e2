"""`kubera up --controllers`: kube-controller-manager's --controllers list (names, `*` for
all, `-name` to leave one out) picks which controllers the controller-manager runs."""

from __future__ import annotations

import pytest

from services.clock import FakeClock
from services.controllers import (
    ALL_CONTROLLERS,
    ControllerManager,
    ControllerManagerConfig,
    select_controllers,
)

ALL_BUT_NODE_LIFECYCLE = tuple(n for n in ALL_CONTROLLERS if n != "nodelifecycle")


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("*", ALL_CONTROLLERS),
        ("", ()),
        ("*,-nodelifecycle", ALL_BUT_NODE_LIFECYCLE),
        ("-nodelifecycle,*", ALL_BUT_NODE_LIFECYCLE),
        (" * , -nodelifecycle ", ALL_BUT_NODE_LIFECYCLE),
        ("podgc,replicaset", ("replicaset", "podgc")),  # in start order, not the list's
        ("podgc,-podgc", ()),
        ("*,-nodelifecycle,-tainteviction", ALL_BUT_NODE_LIFECYCLE[1:]),
    ],
)
def test_a_list_selects_the_controllers_in_start_order(spec: str, want: tuple[str, ...]) -> None:
    assert select_controllers(spec) == want


@pytest.mark.parametrize("spec", ["*,-nodecontroller", "replicasets", "*,bogus"])
def test_an_unknown_name_is_refused_naming_it_and_the_known_ones(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown controller") as e:
        select_controllers(spec)
    bad = next(i.strip().removeprefix("-") for i in spec.split(",") if i.strip() != "*")
    assert repr(bad) in str(e.value) and "nodelifecycle" in str(e.value)


class _NoClient:
    """Nothing here reaches the apiserver: building controllers only registers handlers."""


def test_the_manager_builds_only_the_selected_controllers() -> None:
    config = ControllerManagerConfig(controllers=select_controllers("*,-nodelifecycle"))
    m = ControllerManager(_NoClient(), config, clock=FakeClock())  # type: ignore[arg-type]
    assert tuple(m.controllers) == ALL_BUT_NODE_LIFECYCLE
    assert "nodelifecycle" not in m.controllers
