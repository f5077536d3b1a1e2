"""PodTopologySpread (upstream plugins/podtopologyspread): common.py, filtering.py, scoring.py
and the plugin (plugin.py); the registry loads `podtopologyspread.plugin`."""

from services.scheduler.plugins.podtopologyspread.common import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    Args,
)
from services.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread, new

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "Args",
    "PodTopologySpread",
    "new",
]
