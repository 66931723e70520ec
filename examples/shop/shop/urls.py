"""The shop's URLs: its own pages at the root, Flowdeck's console (pages and REST API) under `/ops/`."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from orders import views

urlpatterns = [
    path("", views.place_order, name="place-order"),
    path("orders/<int:order_id>/", views.order, name="order"),
    path("admin/", admin.site.urls),
    path("ops/", include("flowdeck.console.urls")),
]
