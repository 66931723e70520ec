"""Request hygiene that must run before Django's own middleware."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict

from console.auth import plausible_session
from console.refusals import check_text

__all__ = ["ImplausibleSessionCookie", "RefuseUnstorableText"]


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


def _texts(params: QueryDict) -> Iterable[tuple[str, str]]:
    for key, values in params.lists():
        yield key, key
        for value in values:
            yield key, value


class RefuseUnstorableText:
    """Refuse (400) a console request whose path, query or form holds text no store can hold, before the
    view reads it; the API (django-ninja's routes) keeps its own refusals and JSON errors."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: object, args: Iterable[Any], kwargs: Mapping[str, Any]
    ) -> None:
        match = request.resolver_match
        if match is not None and "ninja" in match.app_names:
            return
        check_text("path", request.path_info)
        for key, value in _texts(request.GET):
            check_text(key, value)
        if request.method == "POST":
            for key, value in _texts(request.POST):
                check_text(key, value)
