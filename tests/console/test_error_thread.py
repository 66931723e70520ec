"""An async view's `Http404` becomes its page on the request's own thread (`console.gate.page`),
where the request's end closes the connection the page's reads opened; left to Django, the page is drawn on
a thread of its own whose connection nothing closes.

This module is the URLconf of its own tests (`pytest.mark.urls`), with a 404 handler noting its thread.
"""

from __future__ import annotations

import threading

import pytest
from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse
from django.test import AsyncClient
from django.urls import path

from flowdeck.console import gate, refusals
from flowdeck.console import urls as console_urls

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.urls(__name__)]

seen: dict[str, int] = {}


def _thread() -> int:
    return threading.get_ident()


async def _missing(request: HttpRequest) -> HttpResponse:
    seen["request"] = await sync_to_async(_thread)()  # where the request's own sync work runs
    raise Http404("no order 'x'")


def _noting_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    seen["page"] = _thread()
    return refusals.not_found(request, exception)


urlpatterns = [
    path("missing/", gate.page(_missing)),
    path("ungated/", _missing),
    *console_urls.urlpatterns,
]  # the page links to the console
handler404 = _noting_not_found


async def test_the_404_page_of_an_async_view_is_drawn_on_the_request_s_thread() -> None:
    seen.clear()
    reply = await AsyncClient().get("/missing/")
    assert reply.status_code == 404
    assert "Not found: no order &#x27;x&#x27;." in reply.content.decode()
    assert seen["page"] == seen["request"]


async def test_without_the_gate_it_is_drawn_elsewhere() -> None:
    """The case the gate's handling exists for: this test fails the day Django draws it on the request's
    thread itself (and the gate can leave it to Django)."""
    seen.clear()
    reply = await AsyncClient().get("/ungated/")
    assert reply.status_code == 404
    assert seen["page"] != seen["request"]
