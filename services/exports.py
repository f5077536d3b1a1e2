"""A component's public API, loaded on first use (PEP 562).

Other components and the layers above import a component through its package
(``from services.scheduler import Scheduler``), never through its modules. Loading a whole
component to take one name would make every ``kubera`` command pay for the scheduler's
plugins and numpy, and a node pool's process load code it never runs; so a package lists its
public names here, with the module each lives in, and the module is imported the first time
one of its names is asked for. The package imports the same names under ``TYPE_CHECKING`` so
mypy sees their real types.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: each public name from its module."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
