"""The PersistentVolume controller's volume index: which volumes a claim's match has to
look at, without walking every volume of the cluster.

Upstream's controller keeps its volumes in persistentVolumeOrderedIndex (index.go),
indexed by access-mode set, and findByClaim runs findMatchingVolume over each set that
holds the claim's modes; every volume of every class in those sets is looked at. kubera
indexes by what rules most volumes out first, the storage class: a volume matches a claim
only when it is of the claim's class, or when its claimRef already names the claim (a
pre-bound or provisioned volume, returned whatever its class). So the candidates of a
claim are the volumes of its class plus those whose claimRef names it, and the match over
them (services/api/helpers/volumes.py `find_best_match_for_claim`: the access-mode sets,
fewest modes first, the smallest volume of the first set with a match) returns what it
returns over all volumes.

The index holds names only; the controller reads each candidate's newest copy (its own
last write when the informer is behind) and the match checks every rule again, so an
entry that is a step behind costs a look at one volume, never a wrong binding.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from protos.kubera.v1 import storage_pb2
from services.api.helpers.volumes import claim_class, find_best_match_for_claim, volume_class

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim
K = TypeVar("K", bound=Hashable)


class VolumeIndex:
    """Volume names by storage class and by the claim (namespace, name) they name."""

    def __init__(self, volumes: Iterable[PV] = ()) -> None:
        # dicts as ordered sets: a class's volumes in the order they were first indexed
        self._by_class: dict[str, dict[str, None]] = {}
        self._by_claim: dict[tuple[str, str], dict[str, None]] = {}
        self._keys: dict[str, tuple[str, tuple[str, str] | None]] = {}
        for pv in volumes:
            self.add(pv)

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, pv: PV) -> None:
        """Index a new or changed volume (its class or claimRef may have changed)."""
        name = pv.metadata.name
        ref = pv.spec.claim_ref if pv.spec.HasField("claim_ref") else None
        claim = (ref.namespace, ref.name) if ref is not None and ref.name else None
        keys = (volume_class(pv), claim)
        if self._keys.get(name) == keys:
            return
        self.remove(name)
        self._keys[name] = keys
        self._by_class.setdefault(keys[0], {})[name] = None
        if claim is not None:
            self._by_claim.setdefault(claim, {})[name] = None

    def remove(self, name: str) -> None:
        keys = self._keys.pop(name, None)
        if keys is None:
            return
        cls, claim = keys
        _discard(self._by_class, cls, name)
        if claim is not None:
            _discard(self._by_claim, claim, name)

    def of_class(self, name: str) -> list[str]:
        """The volumes of a storage class ("" for the volumes of none)."""
        return list(self._by_class.get(name, ()))

    def candidates(self, claim: PVC) -> list[str]:
        """The volumes that may match `claim`: its class's, then those naming it."""
        out = dict.fromkeys(self._by_class.get(claim_class(claim), ()))
        out.update(self._by_claim.get((claim.metadata.namespace, claim.metadata.name), {}))
        return list(out)

    def find_best_match(
        self, claim: PVC, volume: Callable[[str], PV | None], *, delay_binding: bool = False
    ) -> PV | None:
        """findBestMatchForClaim over the candidates, each read with `volume(name)`
        (None: gone)."""
        found = (volume(name) for name in self.candidates(claim))
        return find_best_match_for_claim(
            claim, [pv for pv in found if pv is not None], delay_binding=delay_binding
        )


def _discard(index: dict[K, dict[str, None]], key: K, name: str) -> None:
    names = index.get(key)
    if names is not None:
        names.pop(name, None)
        if not names:
            del index[key]


__all__ = ["VolumeIndex"]
