"""What an actor knows that its component does not: the Ray node it runs on."""

from dataclasses import replace
from typing import Any, TypeVar

import ray

#: A host config with a `host` field (services/hosts/*: where the component listens).
Config = TypeVar("Config")


def node_ip() -> str:
    """The address of the Ray node this process runs on (127.0.0.1 in the embedded mode)."""
    return str(ray.util.get_node_ip_address())


def on_this_node(config: Config) -> Config:
    """`config` listening on this Ray node's address, so a component on any node of the
    cluster is reachable from the others (a re-created actor runs this again, on its
    new node)."""
    out: Any = replace(config, host=node_ip())  # type: ignore[type-var]
    return out
