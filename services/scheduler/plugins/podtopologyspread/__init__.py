"""PodTopologySpread (upstream plugins/podtopologyspread): see plugin.py."""

from services.scheduler.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    Args,
    PodTopologySpread,
    new,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "Args",
    "PodTopologySpread",
    "new",
]
