"""The UI's login (services/ui/sessions.py): a one-time token from `POST /ui/api/tokens`
opens one session; every other URL of the UI is 401 without it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient

from services.apiserver import ApiServer
from services.auth import Decision, RequestAttributes, User
from services.auth.tokens import TokenAuthenticator
from services.clock import FakeClock
from services.ui.sessions import COOKIE, LOGIN_TOKEN_SECONDS, SESSION_SECONDS
from tests.ui.conftest import ui_client

ADMIN = User("kubera-admin", groups=("system:masters", "system:authenticated"))
VIEWER = User("viewer", groups=("system:authenticated",))
TOKENS = {"admin-token": ADMIN, "viewer-token": VIEWER}


class AdminsOnly:
    """Only system:masters may do anything."""

    def authorize(self, attrs: RequestAttributes) -> Decision:
        return Decision("system:masters" in attrs.user.groups, "admins only")


@pytest.fixture
async def ui(registry: ApiServer, clock: FakeClock) -> AsyncIterator[TestClient]:
    client = await ui_client(
        registry, authn=TokenAuthenticator(TOKENS), authz=AdminsOnly(), clock=clock
    )
    yield client
    await client.close()


async def login_token(ui: TestClient, bearer: str = "admin-token") -> str:
    resp = await ui.post("/ui/api/tokens", headers={"Authorization": f"Bearer {bearer}"})
    assert resp.status == 201, await resp.text()
    doc = await resp.json()
    assert doc["path"] == f"/ui/?token={doc['token']}"
    return str(doc["token"])


async def test_a_login_token_opens_a_session_with_an_http_only_cookie(ui: TestClient) -> None:
    token = await login_token(ui)
    resp = await ui.get(f"/ui/?token={token}", allow_redirects=False)
    assert resp.status == 303
    assert resp.headers["Location"] == "/ui/"
    cookie = resp.cookies[COOKIE]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Strict"
    assert cookie["path"] == "/ui/"
    assert resp.headers["Referrer-Policy"] == "no-referrer"
    page = await ui.get("/ui/")
    assert page.status == 200
    assert "<title>kubera</title>" in await page.text()
    script = await ui.get("/ui/static/ui.js")
    assert script.status == 200
    assert script.content_type == "text/javascript"


async def test_a_login_token_works_once(ui: TestClient) -> None:
    token = await login_token(ui)
    first = await ui.get(f"/ui/?token={token}", allow_redirects=False)
    assert first.status == 303
    ui.session.cookie_jar.clear()
    again = await ui.get(f"/ui/?token={token}", allow_redirects=False)
    assert again.status == 401
    assert COOKIE not in again.cookies
    assert (await ui.get("/ui/")).status == 401


async def test_a_login_token_expires_unused(ui: TestClient, clock: FakeClock) -> None:
    token = await login_token(ui)
    clock.advance(LOGIN_TOKEN_SECONDS + 1)
    assert (await ui.get(f"/ui/?token={token}", allow_redirects=False)).status == 401


async def test_a_session_expires(ui: TestClient, clock: FakeClock) -> None:
    token = await login_token(ui)
    assert (await ui.get(f"/ui/?token={token}", allow_redirects=False)).status == 303
    assert (await ui.get("/ui/")).status == 200
    clock.advance(SESSION_SECONDS + 1)
    assert (await ui.get("/ui/")).status == 401


@pytest.mark.parametrize(
    "path",
    [
        "/ui/",
        "/ui/?token=",
        "/ui/?token=made-up",
        "/ui/static/ui.js",
        "/ui/static/ui.css",
        "/ui/api/stream",
        "/ui/api/trace?namespace=default&name=p",
    ],
)
async def test_no_url_works_without_a_session(ui: TestClient, path: str) -> None:
    resp = await ui.get(path, allow_redirects=False)
    assert resp.status == 401


async def test_a_made_up_cookie_is_no_session(ui: TestClient) -> None:
    resp = await ui.get("/ui/", headers={"Cookie": f"{COOKIE}=guessed"})
    assert resp.status == 401


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Bearer viewer-token"}, 403),
    ],
    ids=["no bearer token", "unknown bearer token", "a user who may not watch pods"],
)
async def test_a_login_token_is_only_for_who_may_watch_the_cluster(
    ui: TestClient, headers: dict[str, str], code: int
) -> None:
    resp = await ui.post("/ui/api/tokens", headers=headers)
    assert resp.status == code
    assert "token" not in await resp.json()


async def test_the_kubernetes_api_beside_the_ui_still_wants_its_bearer_token(
    ui: TestClient,
) -> None:
    token = await login_token(ui)
    await ui.get(f"/ui/?token={token}", allow_redirects=False)
    # a UI session is no credential for the Kubernetes API
    assert (await ui.get("/api/v1/pods")).status == 401
    ok = await ui.get("/api/v1/pods", headers={"Authorization": "Bearer admin-token"})
    assert ok.status == 200
