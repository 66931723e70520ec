"""Where the console is mounted in the project's URLs: at the site root (Flowdeck's own project) or under a
prefix of the developer's project (`path("ops/", include("flowdeck.console.urls"))`).

Every address the console compares against or hands to a page is read here, from the URL resolver, so the
console answers the same under any prefix: the API's part of the site (its JSON errors), the websocket's
address the pages connect to, and where the login lands.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

__all__ = ["api_prefix", "is_api", "live_path", "root"]

HOME = "flowdeck:console-home"


def root() -> str:
    """The console's home, with the script prefix: `/`, or `/ops/` when mounted under `ops/`."""
    return reverse(HOME)


def api_prefix() -> str:
    """The REST API's part of the site: the console's root followed by `api/`."""
    return root() + "api/"


def live_path() -> str:
    """The websocket the pages connect to. The project's ASGI routes it: `flowdeck.console.routing`'s patterns
    under the same prefix as the console's URLs (`path("ops/", URLRouter(websocket_urlpatterns))`)."""
    return root() + "ws/live/"


def is_api(request: HttpRequest) -> bool:
    """Whether the request is the API's (so its errors answer as JSON). A project whose URLs do not
    include the console has no API part."""
    try:
        prefix = api_prefix()
    except (NoReverseMatch, ImproperlyConfigured):  # no console URLs, or URLs that do not load
        return False
    return request.path.startswith(prefix)
