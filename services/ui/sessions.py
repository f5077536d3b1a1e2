"""The UI's login, as Jupyter's: a one-time token in a URL, exchanged for a session cookie.

    kubera ui ──POST /ui/api/tokens (Bearer: the user's own token)──► one-time token
    browser   ──GET /ui/?token=T──► T unknown, used or expired: 401
                                   T good: T is spent, a session is made,
                                   Set-Cookie (HttpOnly, SameSite=Strict, Secure on
                                   HTTPS, Path=/ui/), 303 to /ui/ (the token leaves the URL)
    browser   ──GET /ui/… with the cookie──► served as the user who asked for T

A session acts as the user whose bearer token asked for its login token, with that token
(kept in this process's memory only, never sent to the browser): the pages the UI serves
are read as that user, and a pod's decision trace is asked of the scheduler with that
token, so the UI shows nobody more than `kubera explain` would show them.

Both tables live in the apiserver replica's memory: a login URL works on the replica that
issued it, and sessions end when it restarts (`kubera ui` again). Tokens and session ids
are `secrets.token_urlsafe(32)`; the tables hold their sha256 only, compared as dict
keys (a timing side channel on a hash of 256 random bits reveals nothing usable).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from services.auth import User
from services.clock import Clock

#: How long a login URL works before it is used (Jupyter's tokens do not expire; a URL
#: printed to a terminal and forgotten should).
LOGIN_TOKEN_SECONDS = 300.0
#: How long a session lasts from its login, active or not.
SESSION_SECONDS = 12 * 3600.0
#: The cookie's name.
COOKIE = "kubera-ui-session"
#: The most unspent login tokens and live sessions kept (the oldest go first).
MAX_ENTRIES = 1024


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Session:
    user: User
    #: The bearer token the user asked with: what the UI calls other components with.
    bearer: str
    expires: float


class Sessions:
    """One-time login tokens and the sessions they open (on the injected monotonic clock)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._logins: dict[str, Session] = {}
        self._sessions: dict[str, Session] = {}

    def issue_login(self, user: User, bearer: str) -> str:
        """A fresh one-time token that opens a session as `user`."""
        token = secrets.token_urlsafe(32)
        self._put(
            self._logins,
            _digest(token),
            Session(user, bearer, self._clock.monotonic() + LOGIN_TOKEN_SECONDS),
        )
        return token

    def redeem(self, token: str) -> str | None:
        """A new session's id for a login token that is known, unspent and unexpired (it
        is spent now, whatever the answer); None otherwise."""
        found = self._logins.pop(_digest(token), None) if token else None
        now = self._clock.monotonic()
        if found is None or found.expires <= now:
            return None
        sid = secrets.token_urlsafe(32)
        self._put(
            self._sessions, _digest(sid), Session(found.user, found.bearer, now + SESSION_SECONDS)
        )
        return sid

    def session(self, sid: str) -> Session | None:
        """The live session of a cookie's id; None when unknown or expired."""
        if not sid:
            return None
        key = _digest(sid)
        found = self._sessions.get(key)
        if found is None:
            return None
        if found.expires <= self._clock.monotonic():
            del self._sessions[key]
            return None
        return found

    def _put(self, table: dict[str, Session], key: str, value: Session) -> None:
        now = self._clock.monotonic()
        for k in [k for k, v in table.items() if v.expires <= now]:
            del table[k]
        while len(table) >= MAX_ENTRIES:
            del table[next(iter(table))]
        table[key] = value
