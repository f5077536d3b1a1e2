"""A small kopf operator handling pods, run standalone by tests/e2e/test_clients_e2e.py as
`kopf run --standalone` against a real `kubera up`: it marks each pod labelled
`kopf=yes` when created and when its `step` label changes, and on deletion (through the
finalizer kopf adds) writes the pod's name to the file KOPF_DELETED_FILE names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kopf

SELECTOR = {"kopf": "yes"}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = True
    settings.watching.server_timeout = 60
    settings.networking.request_timeout = 30


@kopf.on.create("pods", labels=SELECTOR)
def created(name: str, patch: kopf.Patch, **_: Any) -> None:
    patch.metadata.annotations["kopf-seen"] = f"created {name}"


@kopf.on.field("pods", field="metadata.labels.step", labels=SELECTOR)
def stepped(new: str | None, patch: kopf.Patch, **_: Any) -> None:
    if new is not None:
        patch.metadata.annotations["kopf-step"] = new


@kopf.on.delete("pods", labels=SELECTOR)
def deleted(name: str, **_: Any) -> None:
    with Path(os.environ["KOPF_DELETED_FILE"]).open("a") as f:
        f.write(name + "\n")
