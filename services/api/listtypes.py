"""Placeholder for H2's list types table (x-kubernetes-list-type / patch strategy per field).

Issue 15's H2 writes the real module; this stand-in keeps the interface OpenAPI generation
reads (`strategy(message_full_name, json_name) -> ListStrategy | None`) and knows nothing,
so every list is described without list-type extensions until the real table is merged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ListStrategy:
    list_type: str = ""  # "map" | "set" | "atomic" for lists
    keys: tuple[str, ...] = ()
    patch_strategy: str = ""  # "merge" | "replace" | "retainKeys" | ""
    merge_key: str = ""
    map_type: str = ""  # "granular" | "atomic" for maps and structs


def strategy(message_full_name: str, json_name: str) -> ListStrategy | None:
    return None
