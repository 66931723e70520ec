"""The `/api/docs` page: Swagger UI from the vendored copy in `static/vendor/swagger-ui/` (no CDN, so it
works offline), started by `static/console/api-docs.js` (no inline script, so it works under the CSP)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI
from ninja.openapi.docs import Swagger

__all__ = ["VendoredSwagger"]


class VendoredSwagger(Swagger):
    """Ninja's Swagger page, rendered from our template whether or not `ninja` is an installed app."""

    template = "flowdeck/console/api_docs.html"
    default_settings = {
        "layout": "BaseLayout",
        # no deep links: Swagger UI puts each one inside its operation's toggle button, a link nested in a
        # button that screen readers cannot reach (axe-core's nested-interactive)
        "deepLinking": False,
        "validatorUrl": None,  # no badge fetched from a validator on the internet
    }

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        settings = {**self.settings, "url": self.get_openapi_url(api, kwargs)}
        return render(request, self.template, {"api": api, "swagger_settings": settings})
