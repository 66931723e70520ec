"""Request hygiene that must run before Django's own middleware."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from console.api import api, errors, guard
from console.auth import plausible_session

__all__ = ["API_PREFIX", "ApiGuard", "ImplausibleSessionCookie"]

API_PREFIX = "/api/"


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


class ApiGuard:
    """Every `/api/` request: refused before anything reads it further when `console.api.guard` says so
    (a body over the limit, nesting too deep, a NUL or a lone surrogate), and every error it gets back is
    the API's JSON error body (an unmatched path's 404, a wrong method's 405 with its `Allow`), never one
    of Django's HTML pages.

    It sits before the session, CSRF and auth middleware: they may read the body too.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(API_PREFIX):
            return self.get_response(request)
        try:
            guard.check_request(request)
        except guard.RequestRefused as refusal:
            return errors.refusal_response(refusal)
        response = self.get_response(request)
        match = request.resolver_match
        allowed = api.documented_methods(match.url_name) if match and match.url_name else None
        return errors.json_error(request, response, allowed)
