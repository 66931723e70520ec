"""URL routes of the Flowdeck console: the REST API under `/api/`, the Django admin under `/admin/`; pages
are added below them."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from console.api import api

urlpatterns: list[URLPattern | URLResolver] = [
    path("api/", api.urls),
    path("admin/", admin.site.urls),  # staff only: console/admin.py, store/django/admin.py
    path("", include("console.views.urls")),
]

# The console's styled pages (the API's JSON refusals under /api/): a refused request, a forbidden one, an
# address that names nothing, an unexpected error.
handler400 = "console.refusals.bad_request"
handler403 = "console.refusals.forbidden"
handler404 = "console.refusals.not_found"
handler500 = "console.refusals.server_error"
