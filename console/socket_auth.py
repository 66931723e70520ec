"""Who opened a websocket: the Django session its cookie names, read once at the handshake, and its user.

channels' `SessionMiddleware` wraps every message a socket sends, to save a changed session on the message
that can carry its cookie back (an HTTP response's start). A websocket's messages never can, and a live
page never changes its session, yet 100 open lists are sent hundreds of messages a second (W12): the
wrapper's look at the session on each of them was a twentieth of the console's samples (py-spy). Here the
session is only read, at the handshake (by channels' `AuthMiddleware`, for the user), and a socket's sends
go straight to the server.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware
from django.conf import settings

__all__ = ["HandshakeSessionMiddleware", "socket_auth"]


class HandshakeSessionMiddleware:
    """Puts the session of the socket's cookie in its scope (loaded when first read, as Django's are),
    leaving `send` alone. Needs `CookieMiddleware` above it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.session_store = import_module(settings.SESSION_ENGINE).SessionStore

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        key = scope["cookies"].get(settings.SESSION_COOKIE_NAME)
        return await self.inner(dict(scope, session=self.session_store(key)), receive, send)


def socket_auth(inner: Any) -> Any:
    """`inner` behind the cookie, the session and the user of the socket's handshake."""
    return CookieMiddleware(HandshakeSessionMiddleware(AuthMiddleware(inner)))
