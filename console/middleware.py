"""The one optional middleware Flowdeck offers a project: it protects the whole site, not only the console.

The console's own protections travel with its URLs (`flowdeck.console.gate`); a host needs no middleware of
ours. This one is for the host's pages too: a session cookie with a NUL in it reaches the database from any
page that reads the session (the admin's login included) as an error, a 500, on PostgreSQL. Flowdeck's own
project lists it before `SessionMiddleware`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from flowdeck.console.auth import plausible_session

__all__ = ["ImplausibleSessionCookie"]


class ImplausibleSessionCookie:
    """Drop a session cookie that is not shaped like a session key before SessionMiddleware looks it up.

    A NUL byte in it would reach the database as an error (a 500); without it the request is simply
    anonymous, and gets the login page or a 401 like any other anonymous request.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.SESSION_COOKIE_NAME in request.COOKIES and not plausible_session(request):
            del request.COOKIES[settings.SESSION_COOKIE_NAME]
        return self.get_response(request)
