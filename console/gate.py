"""The console's protections, applied per view to its own URLs, whatever the host project's middleware.

`urls.py` passes every route it mounts through `routes()`, so each view is wrapped when the urlpatterns
are built, and a request reaching any other page of the host is untouched (no header, no check of ours):

- every answer: the Content-Security-Policy (`security.policy_for`), what Django's `SecurityMiddleware` and
  `XFrameOptionsMiddleware` would add (HSTS, nosniff, the referrer and opener policies, `X-Frame-Options`;
  set only where missing, so a host running them changes nothing), and `Cache-Control: private, no-store`
  (each answer is for one caller);
- a session cookie not shaped like a session key is dropped before anything reads the session (a NUL in it
  would reach the database as a 500);
- pages: text no store can hold (path, query, form) refused with the console's 400 page; a `Refused` a
  view raises drawn as that page; an outage as the 503 page; an `Http404` drawn on the request's own thread
  (an async view's page would otherwise open a connection on a thread nothing closes);
- the API: `api.guard`'s refusals (size, nesting, NUL, lone surrogate) before the view reads the body, every
  error answered as the API's JSON body, and an unmatched path under `api/` its JSON 404 (`no_route`).

Each step was a middleware the host had to insert at its place; here they run where the console's views
run: after the host's session, CSRF and auth middleware, which read neither the API's body (its views are
CSRF-exempt) nor the session (both are lazy).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from importlib import import_module
from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core.handlers.exception import response_for_exception
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, QueryDict
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import URLPattern, URLResolver
from django.utils.cache import add_never_cache_headers
from django.utils.log import log_response

from flowdeck.console import refusals, security
from flowdeck.console.api import api as the_api
from flowdeck.console.api import errors, guard
from flowdeck.console.auth import plausible_session

__all__ = ["api", "no_route", "page", "protect", "protected", "routes"]

View = Callable[..., Any]
Route = URLPattern | URLResolver


def routes(patterns: Iterable[Route], wrap: Callable[[View], View]) -> list[Route]:
    """`patterns` with every view, nested includes too, wrapped by `wrap` (`page`, `api` or `protected`)."""
    gated: list[Route] = []
    for route in patterns:
        if isinstance(route, URLResolver):
            inner = routes(route.url_patterns, wrap)
            gated.append(
                URLResolver(route.pattern, inner, route.default_kwargs, route.app_name, route.namespace)
            )
        else:
            gated.append(URLPattern(route.pattern, wrap(route.callback), route.default_args, route.name))
    return gated


def protect(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """Every header the console's answers carry (each only where the answer has none of its own)."""
    response = SecurityMiddleware(_never_called).process_response(request, response)
    response = XFrameOptionsMiddleware(_never_called).process_response(request, response)
    add_never_cache_headers(response)
    if "Content-Security-Policy" not in response:
        response["Content-Security-Policy"] = security.policy_for(request)
    return response


def protected(view: View) -> View:
    """`view` with the console's headers only: its error handlers, and what Flowdeck's own project mounts."""
    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def gated_async(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            return protect(request, await view(request, *args, **kwargs))

        return gated_async

    @functools.wraps(view)
    def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return protect(request, view(request, *args, **kwargs))

    return gated


def page(view: View) -> View:
    """A console page: its checks before the view, its error pages, its headers."""
    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def gated_async(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            try:
                _before_page(request)
                response = await view(request, *args, **kwargs)
            except Exception as exception:  # drawn where the request's own sync work runs
                response = await sync_to_async(_page_error)(request, exception)
            return protect(request, response)

        return gated_async

    @functools.wraps(view)
    def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            _before_page(request)
            response = view(request, *args, **kwargs)
        except Exception as exception:
            response = _page_error(request, exception)
        return protect(request, response)

    return gated


def api(view: View) -> View:
    """A route of the REST API: the guard before the view, JSON errors and the headers after it."""
    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def gated_async(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            refused = _guard(request)
            response = refused if refused is not None else await view(request, *args, **kwargs)
            return _api_answer(request, response)

        return gated_async

    @functools.wraps(view)
    def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        refused = _guard(request)
        response = refused if refused is not None else view(request, *args, **kwargs)
        return _api_answer(request, response)

    return gated


def no_route(request: HttpRequest, rest: str = "") -> HttpResponse:
    """An address under the API that names no route (mounted last, behind every route of the API)."""
    return errors.error_response(
        404, "route_not_found", f"no API route at {request.path}", {"path": request.path}
    )


def _drop_implausible_session(request: HttpRequest) -> None:
    name = settings.SESSION_COOKIE_NAME
    if name not in request.COOKIES or plausible_session(request):
        return
    del request.COOKIES[name]
    if hasattr(request, "session"):  # the session is lazy: nothing has looked the key up yet
        request.session = import_module(settings.SESSION_ENGINE).SessionStore(None)


def _texts(params: QueryDict) -> Iterable[tuple[str, str]]:
    for key, values in params.lists():
        yield key, key
        for value in values:
            yield key, value


def _before_page(request: HttpRequest) -> None:
    """Raise `refusals.Refused` for a path, query or form holding text no store can hold."""
    _drop_implausible_session(request)
    refusals.check_text("path", request.path_info)
    for key, value in _texts(request.GET):
        refusals.check_text(key, value)
    if request.method == "POST":
        for key, value in _texts(request.POST):
            refusals.check_text(key, value)


def _page_error(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    if isinstance(exception, refusals.Refused):
        response = refusals.bad_request(request, exception)
        log_response("Bad Request: %s (%s)", request.path, exception, response=response, request=request)
        return response
    if refusals.is_outage(exception):  # the database did not answer (the session, the user, the store)
        return refusals.unavailable(request)
    if isinstance(exception, Http404):  # the project's 404 page, on this thread
        return response_for_exception(request, exception)
    raise exception


def _guard(request: HttpRequest) -> HttpResponse | None:
    _drop_implausible_session(request)
    try:
        guard.check_request(request)
    except guard.RequestRefused as refusal:
        return errors.refusal_response(refusal)
    return None


def _api_answer(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    match = request.resolver_match
    allowed: Sequence[str] | None = (
        the_api.documented_methods(match.url_name) if match and match.url_name else None
    )
    return protect(request, errors.json_error(request, response, allowed))  # type: ignore[arg-type]


def _never_called(request: HttpRequest) -> HttpResponseBase:  # pragma: no cover - hook by hook
    raise AssertionError("the middleware is called hook by hook here")
