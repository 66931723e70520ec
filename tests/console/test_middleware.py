from __future__ import annotations

import pytest
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.test import Client, RequestFactory

from flowdeck.console.middleware import ImplausibleSessionCookie

HOSTILE = ["abc\x00def", "../../etc", "x" * 200]


def cookies_seen_behind_the_middleware(cookie: str) -> dict[str, str]:
    seen: dict[str, str] = {}

    def downstream(request: HttpRequest) -> HttpResponse:
        seen.update(request.COOKIES)
        return HttpResponse()

    request = RequestFactory().get("/executions/")
    request.COOKIES[settings.SESSION_COOKIE_NAME] = cookie
    ImplausibleSessionCookie(downstream)(request)
    return seen


@pytest.mark.parametrize("cookie", HOSTILE)
def test_an_implausible_session_cookie_never_reaches_the_session_lookup(cookie: str) -> None:
    # PostgreSQL refuses a NUL in a query parameter: looked up, this cookie would be a 500
    assert settings.SESSION_COOKIE_NAME not in cookies_seen_behind_the_middleware(cookie)


def test_a_session_key_shaped_cookie_is_kept() -> None:
    key = "k" * 32
    assert cookies_seen_behind_the_middleware(key)[settings.SESSION_COOKIE_NAME] == key


@pytest.mark.django_db
@pytest.mark.parametrize("cookie", HOSTILE)
def test_an_implausible_session_cookie_is_an_anonymous_visit(cookie: str) -> None:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = cookie
    response = client.get("/executions/")
    assert response.status_code == 302
    assert response["Location"].startswith(resolve_url(settings.LOGIN_URL))


@pytest.mark.parametrize("cookie", HOSTILE)
def test_the_console_s_gate_drops_an_implausible_session_without_the_middleware(cookie: str) -> None:
    """A host runs no middleware of ours: the session its SessionMiddleware made from the cookie (lazy, not
    yet looked up) is replaced by an empty one before the console's view reads it."""
    from importlib import import_module

    from flowdeck.console import gate

    seen: dict[str, object] = {}

    def view(request: HttpRequest) -> HttpResponse:
        seen["key"] = request.session.session_key
        seen["cookies"] = dict(request.COOKIES)
        return HttpResponse()

    request = RequestFactory().get("/executions/")
    request.COOKIES[settings.SESSION_COOKIE_NAME] = cookie
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(cookie)
    gate.page(view)(request)
    assert seen == {"key": None, "cookies": {}}
