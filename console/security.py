"""The console's Content-Security-Policy header (`policy_for`; `flowdeck.console.gate` sets it on the
console's own answers), and on static files the headers Django's middleware would have given them (the
static handler runs no middleware).

Ours rather than django-csp or Django 6's built-in CSP: the policy is one constant
(`FLOWDECK_CSP` in the settings, `console.csp`'s by default; no nonces: the console has no inline script
or style), and the same code must run on Django 5.2, on 6.x, and in the static files handler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase
from django.middleware.security import SecurityMiddleware

from flowdeck.console import conf
from flowdeck.console.staticfiles import StaticFiles

__all__ = ["StaticFilesWithHeaders", "policy_for"]

# Static files are not content-hashed: browsers revalidate (Last-Modified / 304) rather than keep a stale
# console.js across a deploy.
STATIC_CACHE_CONTROL = "no-cache"


def policy_for(request: HttpRequest, directives: Mapping[str, Sequence[str]] | None = None) -> str:
    """The header's value: the settings' directives, with the page's own host as a websocket source
    (`'self'` covers ws:/wss: in CSP 3 browsers; older ones need the host spelled out)."""
    if directives is None:
        directives = conf.flowdeck_settings().csp
    parts = []
    for name, sources in directives.items():
        values = list(sources)
        if name == "connect-src":
            try:
                host = request.get_host()
            except DisallowedHost:
                host = ""
            if host:
                values += [f"ws://{host}", f"wss://{host}"]
        parts.append(" ".join([name, *values]))
    return "; ".join(parts)


def _add_headers(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if "Content-Security-Policy" not in response:
        response["Content-Security-Policy"] = policy_for(request)
    return response


class StaticFilesWithHeaders(StaticFiles):
    """The console's static handler (a 404 for any path naming no static file), plus what
    SecurityMiddleware and ours do for a page: the HTTPS redirect (`SECURE_SSL_REDIRECT`), HSTS, nosniff,
    the referrer policy, the CSP; and a Cache-Control. Applied to 404s too."""

    async def get_response_async(self, request: HttpRequest) -> Any:
        # Django's own middleware, so static files obey the same switches as pages; made per request
        # because it reads the settings when made.
        security = SecurityMiddleware(_never_called)
        redirect = security.process_request(request)
        response = redirect if redirect is not None else await super().get_response_async(request)
        response = security.process_response(request, response)
        response.setdefault("Cache-Control", STATIC_CACHE_CONTROL)
        return _add_headers(request, response)


def _never_called(request: HttpRequest) -> HttpResponseBase:  # pragma: no cover - see get_response_async
    raise AssertionError("SecurityMiddleware is called hook by hook here")
