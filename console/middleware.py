"""Request hygiene: what the API and the console refuse before a view runs, and how each answers a refusal."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.handlers.exception import response_for_exception
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.utils.deprecation import MiddlewareMixin
from django.utils.log import log_response

from console import mount, refusals
from console.api import api, errors, guard
from console.auth import plausible_session

__all__ = ["ApiGuard", "ErrorPageInRequestThread", "ImplausibleSessionCookie", "RefuseUnstorableText"]


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
        if not mount.is_api(request):
            return self.get_response(request)
        try:
            guard.check_request(request)
        except guard.RequestRefused as refusal:
            return errors.refusal_response(refusal)
        response = self.get_response(request)
        match = request.resolver_match
        allowed = api.documented_methods(match.url_name) if match and match.url_name else None
        return errors.json_error(request, response, allowed)


def _texts(params: QueryDict) -> Iterable[tuple[str, str]]:
    for key, values in params.lists():
        yield key, key
        for value in values:
            yield key, value


class RefuseUnstorableText:
    """Refuse (400) a console request whose path, query or form holds text no store can hold, before the
    view reads it; and answer a `refusals.Refused` that a view raises. Both get `refusals.bad_request`
    (the page `handler400` renders too), logged as one warning line, not as a traceback. The API
    (django-ninja's routes) keeps its own refusals and JSON errors."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: object, args: Iterable[Any], kwargs: Mapping[str, Any]
    ) -> HttpResponse | None:
        match = request.resolver_match
        if match is not None and "ninja" in match.app_names:
            return None
        try:
            refusals.check_text("path", request.path_info)
            for key, value in _texts(request.GET):
                refusals.check_text(key, value)
            if request.method == "POST":
                for key, value in _texts(request.POST):
                    refusals.check_text(key, value)
        except refusals.Refused as refusal:
            return _refused(request, refusal)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return _refused(request, exception) if isinstance(exception, refusals.Refused) else None


def _refused(request: HttpRequest, refusal: refusals.Refused) -> HttpResponse:
    response = refusals.bad_request(request, refusal)
    log_response("Bad Request: %s (%s)", request.path, refusal, response=response, request=request)
    return response


class ErrorPageInRequestThread(MiddlewareMixin):
    """An async view's `Http404` becomes its error page on the request's own thread.

    Left to Django, an async view's exception is turned into its page on a thread of its own
    (`sync_to_async(..., thread_sensitive=False)`), and the page's database reads (the session, the user)
    open a connection there that the end of the request never closes: one per such thread, kept for as
    long as the thread lives. `process_exception` runs on the request's thread, where the request's end
    closes what it opened; the page is the same one (`response_for_exception`, the project's handlers).
    """

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, Http404):  # the rest draw no page that reads the session
            return None
        return response_for_exception(request, exception)
