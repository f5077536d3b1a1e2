"""Coscheduling (gang scheduling) plugin package: the plugin (plugin.py) and its PodGroup
bookkeeping (core.py). The registry imports NAME, Args and new from here."""

from services.scheduler.plugins.coscheduling.core import PermitResult, PodGroupManager
from services.scheduler.plugins.coscheduling.plugin import (
    NAME,
    Args,
    Coscheduling,
    new,
    validate_args,
)

__all__ = [
    "NAME",
    "Args",
    "Coscheduling",
    "PermitResult",
    "PodGroupManager",
    "new",
    "validate_args",
]
