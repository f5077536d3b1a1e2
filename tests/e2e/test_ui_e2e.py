"""The web UI end to end: `kubera ui` on a real `kubera up`, its URL opened in a real
headless chromium (Debian's, driven by Playwright), and what a person sees asserted on
the page's DOM: the node count, a pod's name and phase, a pending pod's reason, and its
decision trace after a click. Screenshots go to $KUBERA_UI_SHOTS (default: the test's
temporary directory).

Without /usr/bin/chromium the browser test is skipped, saying so, unless CI=true, where
it fails (the CI installs chromium: .ci/run)."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

#: conftest's shared cluster of these flags
UP_ARGS = ("--nodes", "3")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
NS = "ui-e2e"
#: Milliseconds the page has to show something.
SHOW_MS = 30_000


def pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
                }
            ]
        },
    }


DRIVER = "ui.example.com"


def device_slice(node: str) -> dict[str, Any]:
    """Two devices of a made-up driver on `node`."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-ui"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0"}, {"name": "dev-1"}],
        },
    }


def get_pod(k: Cluster, name: str) -> dict[str, Any]:
    return json.loads(kubectl(k, "get", "pod", name, "-n", NS, "-o", "json").stdout)


def unschedulable(p: dict[str, Any]) -> bool:
    return any(
        c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
        for c in p.get("status", {}).get("conditions", [])
    )


@pytest.fixture(scope="module")
def pods(cluster: Cluster) -> Iterator[None]:
    """A pod that runs and one that asks for more cpu than any node has."""
    kubectl(cluster, "create", "namespace", NS)
    docs = [pod("fits", "100m"), pod("too-big", "1000")]
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    until(lambda: get_pod(cluster, "fits").get("status", {}).get("phase") == "Running")
    until(lambda: unschedulable(get_pod(cluster, "too-big")))
    yield
    kubectl(cluster, "delete", "namespace", NS, "--wait=false", check=False)


def ui_url(k: Cluster) -> str:
    r = k("ui")
    assert r.returncode == 0, r.stderr
    url = r.stdout.strip()
    assert url.startswith("https://127.0.0.1:") and "/ui/?token=" in url, url
    return url


def fetch_status(k: Cluster, url: str) -> int:
    """The HTTP status of a GET of `url` (no redirect followed), trusting the cluster's CA."""
    ctx = ssl.create_default_context(cafile=str(k.home / "pki" / "ca.crt"))

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=ctx))
    try:
        with opener.open(url, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_a_login_url_works_once_and_nothing_works_without_one(cluster: Cluster) -> None:
    url = ui_url(cluster)
    base = url.split("?")[0]
    assert fetch_status(cluster, base) == 401
    assert fetch_status(cluster, base + "api/stream") == 401
    assert fetch_status(cluster, url) == 303
    assert fetch_status(cluster, url) == 401


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install chromium (Debian's)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    d = Path(os.environ.get("KUBERA_UI_SHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_the_page_shows_the_nodes_the_pods_and_a_pending_pods_trace(
    cluster: Cluster, pods: None, browser: Any, shots: Path
) -> None:
    # bypass_csp: Playwright's polling predicates are evaluated strings, which the page's
    # Content-Security-Policy (scripts from its origin only, no eval) would refuse
    context = browser.new_context(
        ignore_https_errors=True, bypass_csp=True, viewport={"width": 1400, "height": 1000}
    )
    page = context.new_page()
    page.set_default_timeout(SHOW_MS)
    page.goto(ui_url(cluster))
    assert page.url.endswith("/ui/")  # the token left the address bar

    page.wait_for_function("document.getElementById('node-count').textContent === '3'")
    page.wait_for_selector("#status.live")
    # the leaders panel: the scheduler's and the controller manager's leases, each with
    # its leader among the replicas
    for lease in ("kube-system/kube-scheduler", "kube-system/kube-controller-manager"):
        page.locator(f'#leaders tr[data-lease="{lease}"]').wait_for()
    page.wait_for_function("document.querySelectorAll('#leaders .replica.leader').length >= 2")
    # hovering a cell of the heatmap (a canvas: no element per node) names its node
    page.hover("#heatmap", position={"x": 6, "y": 26})
    tip = page.locator("#tooltip")
    tip.wait_for()
    assert tip.inner_text().startswith("kubera-node-")
    assert "cpu: " in tip.inner_text()
    hovered = tip.inner_text().split()[0]

    # DRA: a node's devices are those of the slices naming it
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump(device_slice(hovered)))
    try:
        page.wait_for_selector(f'#resource option[value="dra:{DRIVER}"]', state="attached")
        page.select_option("#resource", f"dra:{DRIVER}")
        page.hover("#heatmap", position={"x": 8, "y": 28})
        page.wait_for_function(
            f"document.getElementById('tooltip').textContent.includes('dra:{DRIVER}: 0 / 2')"
        )
    finally:
        kubectl(cluster, "delete", "resourceslice", f"{hovered}-ui", check=False)
    page.select_option("#resource", "cpu")

    # a click on the node of `fits` lists its pods
    fits_node = get_pod(cluster, "fits")["spec"]["nodeName"]
    for y in range(26, 400, 8):
        page.hover("#heatmap", position={"x": 8, "y": y})
        if tip.is_visible() and tip.inner_text().startswith(fits_node + " "):
            page.click("#heatmap", position={"x": 8, "y": y})
            break
    else:
        raise AssertionError(f"no cell of the heatmap is {fits_node}")
    page.locator(f'#pods tr[data-pod="{NS}/fits"]').wait_for()
    assert set(page.locator("#pods td:nth-child(3)").all_inner_texts()) == {fits_node}

    page.fill("#pod-filter", f"{NS}/")
    row = page.locator(f'#pods tr[data-pod="{NS}/fits"]')
    row.wait_for()
    assert row.locator("td").nth(1).inner_text() == "Running"
    assert row.locator("td").nth(2).inner_text() == get_pod(cluster, "fits")["spec"]["nodeName"]
    running = page.locator('#phases tr[data-phase="Running"] td.count')
    assert int(running.inner_text()) >= 1

    pending = page.locator(f'#pending tr[data-pod="{NS}/too-big"]')
    pending.wait_for()
    assert "Insufficient cpu" in pending.inner_text()
    page.screenshot(path=str(shots / "ui-overview.png"), full_page=True)

    pending.click()
    trace = page.locator("#trace")
    trace.locator(".attempt").first.wait_for()
    text = trace.inner_text()
    assert "unschedulable" in text
    assert "NodeResourcesFit" in text
    assert "Insufficient cpu" in text
    assert page.locator("#trace-pod").inner_text() == f"{NS}/too-big"
    page.locator("#trace-panel").screenshot(path=str(shots / "ui-trace.png"))
    page.screenshot(path=str(shots / "ui-after-click.png"), full_page=True)

    # what happens after the page opened arrives by the stream: a new pod, bound and
    # running; another's FailedScheduling event in the feed
    late = [pod("late", "100m"), pod("late-big", "1000")]
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(late))
    late_row = page.locator(f'#pods tr[data-pod="{NS}/late"]')
    late_row.wait_for()
    page.wait_for_function(
        f"""document.querySelector('#pods tr[data-pod="{NS}/late"] td:nth-child(2)')"""
        ".textContent === 'Running'"
    )
    page.wait_for_function(
        "[...document.querySelectorAll('#events li')].some(li =>"
        f" li.textContent.includes('Pod/{NS}/late-big FailedScheduling'))"
    )
    # the scheduler's own queues: late-big waits among the unschedulable
    page.wait_for_function(
        "[...document.querySelectorAll('#schedulers tr')].some(tr =>"
        " tr.textContent.includes('leader') && /unschedulable [1-9]/.test(tr.textContent))"
    )
    page.screenshot(path=str(shots / "ui-live.png"), full_page=True)
    context.close()
