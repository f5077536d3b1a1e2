"""`kubera ui`: a login URL for the live web UI (services/ui), as Jupyter prints one.

It asks the apiserver's HTTPS endpoint for a one-time login token with the admin's
credentials (the context's token and CA), and prints the URL that spends it: the first
browser to open it gets a session cookie; the URL then stops working. The URL is for the
apiserver replica that issued it (the context's first; sessions live in its memory).
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import urllib.error
import urllib.request

from kubera.errors import CliError
from kubera.launch.context import load_context
from services.auth.grpcauth import TOKEN_ENV


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ui",
        help="print a one-time login URL of the live web UI (nodes heatmap, pods, "
        "pending reasons, decision traces, leaders)",
    )
    p.set_defaults(func=cmd_ui)


def login_url(http: str, token: str, ca_file: str) -> str:
    """Ask the HTTP API at `http` for a login token as the holder of `token`; the URL."""
    ctx = ssl.create_default_context(cafile=ca_file or None) if http.startswith("https") else None
    req = urllib.request.Request(
        f"{http.rstrip('/')}/ui/api/tokens",
        method="POST",
        data=b"",
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
            doc = json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("message", "")
        except ValueError:
            message = ""
        raise CliError(f"the apiserver refused a UI login token ({e.code}): {message}") from None
    except (urllib.error.URLError, OSError) as e:
        raise CliError(f"cannot reach the apiserver's HTTP API at {http}: {e}") from None
    return f"{http.rstrip('/')}{doc['path']}"


def cmd_ui(args: argparse.Namespace) -> int:
    ctx = load_context()
    if not ctx.http:
        raise CliError("this cluster serves no HTTP API, so no UI")
    url = login_url(ctx.http, os.environ.get(TOKEN_ENV, ""), ctx.ca_file)
    print(url)
    print(
        "Open this URL in a browser: it logs in once, within 5 minutes "
        f"(the browser must trust {ctx.ca_file or 'the apiserver certificate'}).",
        file=sys.stderr,
    )
    return 0
