"""The console's error pages with DEBUG off, as in production: a styled 403, 404 and 500 (never a
traceback), a styled refusal of a form without its CSRF token, and under /api/ the API's JSON refusals
instead, an unknown route included.

This module is also the URLconf of its own tests (`pytest.mark.urls`): the console's routes, two that
fail on purpose, and the console's handlers, so the 500 is the real `handler500`."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from flowdeck.console import urls as console_urls
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import engine  # noqa: F401  (fixture)

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.urls(__name__)]


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret internals <b>here</b>")


def _denied(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Django's own words")


urlpatterns = [
    path("boom/", _boom),
    path("denied/", _denied),
    path("api/v1/boom", _boom),
    *console_urls.urlpatterns,
]
handler400 = console_urls.handler400
handler403 = console_urls.handler403
handler404 = console_urls.handler404
handler500 = console_urls.handler500


@pytest.fixture
def client() -> Client:
    c = Client(raise_request_exception=False)
    c.force_login(get_user_model().objects.create_user("olga"))
    return c


def _styled(reply: HttpResponse, status: int, title: str) -> str:
    html = reply.content.decode()
    assert reply.status_code == status
    assert reply["Content-Type"].startswith("text/html")
    assert '<a class="brand"' in html
    assert f'<p class="status-code">Error {status}</p>' in html
    assert f"<h1>{title}</h1>" in html
    assert "Traceback" not in html
    assert "secret internals" not in html
    found = re.search(r'<p class="message error" role="status">([^<]*)</p>', html)
    assert found is not None, html
    return found[1]


def test_debug_is_off() -> None:
    from django.conf import settings as live

    assert live.DEBUG is False  # what the other cases rely on: the pages production shows


def test_an_unexpected_error_is_the_styled_500_without_a_traceback(client: Client) -> None:
    said = _styled(client.get("/boom/"), 500, "Server error")
    assert said.startswith("Something went wrong on the server; the error is in its log.")


def test_a_refusal_of_django_s_own_is_the_styled_403(client: Client) -> None:
    said = _styled(client.get("/denied/"), 403, "Not allowed")
    assert said == "You are not allowed to open this page."


def test_an_unknown_execution_is_the_styled_404(engine: FlowEngine, client: Client) -> None:  # noqa: F811
    said = _styled(client.get("/executions/no-such-run"), 404, "Not found")
    assert said == "Not found: no execution &#x27;no-such-run&#x27;."


def test_a_form_without_its_csrf_token_is_the_styled_403() -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.create_user("carl"))
    said = _styled(strict.post("/logout/"), 403, "Not allowed")
    assert said.startswith("The form was refused: its security token is missing or out of date.")


def test_the_api_answers_its_own_json_refusals(client: Client) -> None:
    for route, status, code in [
        ("/api/v1/no-such-route", 404, "route_not_found"),
        ("/api/nothing/here", 404, "route_not_found"),
        ("/api/v1/boom", 500, "internal_error"),
    ]:
        reply = client.get(route)
        assert (reply.status_code, reply["Content-Type"]) == (status, "application/json"), route
        body = json.loads(reply.content)
        assert set(body) == {"error", "code", "detail"}
        assert (body["code"], body["detail"]) == (code, {"path": route})
        assert "secret internals" not in reply.content.decode()
