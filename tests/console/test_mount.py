"""The console mounted under a prefix of someone else's project (`path("ops/", include("console.urls"))`):
every address it hands out or compares against follows the prefix, and the project's own pages are
untouched by the console's API handling.

This module is the URLconf of its own tests (`pytest.mark.urls`): a project page at the root, the console
under `ops/`."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path

from flowdeck.console import mount
from flowdeck.engine.engine import FlowEngine
from tests.console.test_views import engine  # noqa: F401  (fixture)

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.urls(__name__)]


def _project_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the project's own page")


urlpatterns = [path("api/mine/", _project_page), path("ops/", include("flowdeck.console.urls"))]


@pytest.fixture
def operator() -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(get_user_model().objects.create_user("olga"))
    return client


def test_the_mount_is_read_from_the_urls() -> None:
    assert (mount.root(), mount.api_prefix(), mount.live_path()) == ("/ops/", "/ops/api/", "/ops/ws/live/")


def test_pages_connect_to_the_websocket_under_the_prefix(operator: Client, engine: FlowEngine) -> None:  # noqa: F811
    page = operator.get("/ops/executions/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-live-path="/ops/ws/live/"' in html
    assert 'href="/ops/executions/"' in html


def test_the_api_under_the_prefix_answers_json_and_the_project_s_api_is_its_own(operator: Client) -> None:
    missing = operator.get("/ops/api/v1/no-such-route")
    assert missing.status_code == 404
    assert json.loads(missing.content)["code"] == "route_not_found"
    mine = operator.get("/api/mine/")  # the project's /api/ is not the console's: no JSON guard on it
    assert (mine.status_code, mine.content) == (200, b"the project's own page")


def test_login_and_logout_follow_the_prefix(engine: FlowEngine) -> None:  # noqa: F811
    anonymous = Client()
    refused = anonymous.get("/ops/executions/")
    assert (refused.status_code, refused["Location"]) == (302, "/ops/login/?next=/ops/executions/")
    get_user_model().objects.create_user("ada", password="a long enough password")
    landed = anonymous.post("/ops/login/", {"username": "ada", "password": "a long enough password"})
    assert (landed.status_code, landed["Location"]) == (302, "/ops/executions/")
    left = anonymous.post("/ops/logout/")
    assert (left.status_code, left["Location"]) == (302, "/ops/login/")
