"""Each component's public API (its package's ``__all__``) resolves, lazily, to the real
objects of its modules; a name it does not export is an AttributeError."""

from __future__ import annotations

import importlib

import pytest

LAZY_PACKAGES = ["services.scheduler", "services.kubelet", "services.chaos"]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_public_name_resolves_to_its_module_object(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type) or callable(value) and hasattr(value, "__code__"):
            assert value.__module__.startswith(package + "."), (name, value.__module__)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_an_unexported_name_is_an_attribute_error(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name


def test_from_import_of_a_public_name_and_of_a_submodule() -> None:
    from services.scheduler import Scheduler, registry

    assert Scheduler.__module__ == "services.scheduler.scheduler"
    assert registry.__name__ == "services.scheduler.registry"
