"""What a list or watch asks for, in one shape: upstream's metav1.ListOptions.

Every layer a list or watch passes through (the client and its informers, the apiserver's
gRPC and HTTP edges, its registry and the read path) takes one `ListOptions` instead of
repeating its fields in each signature. The namespace is not an option: as upstream's URL
path, it names where the list runs, and each signature keeps it beside the options.

Not every layer reads every field: the read path selects with the selectors and pages with
`limit`; a watch starts at `resource_version` and sends bookmarks when
`allow_bookmarks`; the HTTP edge alone reads `continue_`, `resource_version_match` and
`timeout_seconds` (the continue token is opaque to everyone else, decoded there into the
page's revision and last key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOptions:
    """A list's or watch's options, empty by default (everything, from the current state)."""

    #: Label selector text ("app=web,tier!=db"); "" selects everything.
    label_selector: str = ""
    #: Field selector text ("spec.nodeName=n1"); "" selects everything.
    field_selector: str = ""
    #: A list: the revision the answer must not be older than ("" or "0": any, most
    #: recent). A watch: the revision to start after ("" or "0": the current state first).
    resource_version: str = ""
    #: How `resource_version` binds a list ("", "NotOlderThan" or "Exact").
    resource_version_match: str = ""
    #: A watch sends BOOKMARK events (upstream allowWatchBookmarks).
    allow_bookmarks: bool = False
    #: The most objects one page of a list holds (0: no paging).
    limit: int = 0
    #: The continue token of the page before ("": the first page).
    continue_: str = ""
    #: How long a watch lasts before the server ends it (None: the server's default).
    timeout_seconds: float | None = None


#: The empty options: every object, from the current state (the default of every signature).
LIST_ALL: Final = ListOptions()
