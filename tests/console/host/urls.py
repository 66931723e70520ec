"""The host project's URLs: its own home page and its own admin, and Flowdeck's console under `/ops/`."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<h1>The shop</h1>")


urlpatterns = [
    path("", home),
    path("admin/", admin.site.urls),
    path("ops/", include("flowdeck.console.urls")),
]
