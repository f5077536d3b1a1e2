"""What a website row's check gets (`Run`: the cluster and the row's namespace, with the
kubectl reads and bounded waits the checks share) and the service helpers several use."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

WEBSITE = Path(__file__).resolve().parents[1] / "manifests" / "website"
NODES = 3


@dataclass(frozen=True)
class Run:
    """What a check gets: the cluster and the row's namespace."""

    k: Cluster
    ns: str

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> Any:
        return kubectl(self.k, *args, check=check, stdin=stdin, timeout=120)

    def json(self, *args: str, ns: str | None = None) -> Any:
        return json.loads(self.kubectl("get", *args, "-n", ns or self.ns, "-o", "json").stdout)

    def apply(self, path: str, *, ns: str | None = None, check: bool = True) -> Any:
        where = () if ns == "" else ("-n", ns or self.ns)
        return self.kubectl("apply", *where, "-f", str(WEBSITE / path), check=check)

    def until(self, what: Callable[[], Any], timeout: float = 90.0) -> Any:
        return until(what, timeout=timeout)

    def pods(self, selector: str, ns: str | None = None) -> list[dict[str, Any]]:
        items = self.json("pods", "-l", selector, ns=ns)["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def running(self, selector: str, n: int, ns: str | None = None) -> list[dict[str, Any]]:
        """Wait for exactly `n` Running and Ready pods matching `selector`."""

        def ready() -> list[dict[str, Any]] | None:
            pods = self.pods(selector, ns)
            ok = [p for p in pods if p["status"].get("phase") == "Running" and pod_ready(p)]
            return ok if len(ok) == n == len(pods) else None

        return self.until(ready)

    def job_condition(self, name: str) -> dict[str, str]:
        """Wait for the Job to finish; its conditions by type."""

        def finished() -> dict[str, str] | None:
            conds = self.json("job", name).get("status", {}).get("conditions", [])
            got = {c["type"]: c["status"] for c in conds}
            return got if got.get("Complete") == "True" or got.get("Failed") == "True" else None

        return self.until(finished)

    def refused(self, path: str, words: str) -> None:
        r = self.apply(path, check=False)
        assert r.returncode != 0, f"{path} was admitted"
        assert "(Forbidden)" in r.stderr and words in r.stderr, r.stderr

    def described(self, *what: str, ns: str | None = None) -> str:
        return str(self.kubectl("describe", *what, "-n", ns or self.ns).stdout)


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", [])
    )


def slices(r: Run, service: str) -> list[dict[str, Any]]:
    sel = f"kubernetes.io/service-name={service}"
    return list(r.json("endpointslices", "-l", sel)["items"])


def endpoint_ips(r: Run, service: str) -> set[str]:
    return {a for s in slices(r, service) for e in s.get("endpoints") or [] for a in e["addresses"]}


def serves(r: Run, service: str, pods: list[dict[str, Any]], port: int) -> None:
    """The service's EndpointSlices hold exactly the pods' IPs, at `port`."""
    want = {p["status"]["podIP"] for p in pods}
    r.until(lambda: endpoint_ips(r, service) == want)
    assert {p["port"] for s in slices(r, service) for p in s["ports"]} == {port}
