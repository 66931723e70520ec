"""The root URLconf of Flowdeck's own project (`ROOT_URLCONF` of `flowdeck.console.settings`): the Django
admin under `admin/` and the console at the site root.

A host project mounts the console with one `include()` and keeps its own admin, on which the console's
and the store's models register; only here does the admin carry Flowdeck's titles, and the console's
gate (this project's pages are all the console's: the admin keeps the refusal of unstorable text and the
headers the global middleware once gave it).
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from flowdeck.console import gate, urls

admin.site.site_header = admin.site.site_title = "Flowdeck administration"
admin.site.index_title = "Rows of the store and the console"

_admin_routes, _admin_app, _admin_namespace = admin.site.urls

urlpatterns: list[URLPattern | URLResolver] = [
    # staff only: console/admin.py, store/django/admin.py
    path(
        "admin/",
        include((gate.routes(_admin_routes, gate.page), _admin_app), namespace=_admin_namespace),
    ),
    path("", include("flowdeck.console.urls")),
]

handler400 = urls.handler400
handler403 = urls.handler403
handler404 = urls.handler404
handler500 = urls.handler500
