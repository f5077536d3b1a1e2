"""The StatefulSet controller (apps/v1): `controller` keeps each set's ordinals, claims
and rollouts; `rules` holds the pure rules (names, the pod and claims of an ordinal, its
identity and storage, revisions, status). The controller imports the rules, never the
reverse."""

from services.controllers.statefulset.controller import StatefulSetConfig, StatefulSetController

__all__ = ["StatefulSetConfig", "StatefulSetController"]
