"""URL routes of the Flowdeck console: the REST API under `api/`, its pages beside it; include them under
any prefix (`path("ops/", include("flowdeck.console.urls"))`).

Every route passes through `flowdeck.console.gate`, so the console's protections travel with its URLs and
touch nothing else of the project. It mounts no admin: its models register on the project's one admin
(Flowdeck's own project mounts it in `flowdeck.console.project_urls`).
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path

from flowdeck.console import gate, refusals
from flowdeck.console.api import api
from flowdeck.console.views import urls as pages

_api_routes, _api_app, _api_namespace = api.urls

urlpatterns: list[URLPattern | URLResolver] = [
    path(
        "api/",
        include(
            (gate.routes([*_api_routes, re_path(r"^(?P<rest>.*)$", gate.no_route)], gate.api), _api_app),
            namespace=_api_namespace,
        ),
    ),
    path("", include((gate.routes(pages.urlpatterns, gate.page), pages.app_name))),
]

# The console's styled pages (the API's JSON refusals under /api/): a refused request, a forbidden one, an
# address that names nothing, an unexpected error. They are the handlers of a root URLconf that names
# them (Flowdeck's own, `project_urls`); a host project keeps its own.
handler400 = gate.protected(refusals.bad_request)
handler403 = gate.protected(refusals.forbidden)
handler404 = gate.protected(refusals.not_found)
handler500 = gate.protected(refusals.server_error)
csrf_failure = gate.protected(refusals.csrf_failure)  # CSRF_FAILURE_VIEW of Flowdeck's own settings
