"""ASGI entry point: HTTP through Django, websockets through channels (session-authenticated at the
handshake, `flowdeck.console.socket_auth`).

The console's live pages add their consumers to `console.routing.websocket_urlpatterns` when that module
exists; until then the websocket router is empty. Static files are served from `/static/` by Django's
static handler (the console's vendored assets, `flowdeck.console.staticfiles`, with the security headers of
pages, `flowdeck.console.security`), so one `daphne flowdeck.console.asgi:application` serves it all.
"""

from __future__ import annotations

import importlib
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flowdeck.console.settings")

# Django must be set up before channels' auth middleware (it imports models).
django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from flowdeck.console import http_limits  # noqa: E402
from flowdeck.console.security import StaticFilesWithHeaders  # noqa: E402
from flowdeck.console.socket_auth import socket_auth  # noqa: E402
from flowdeck.engine import heap  # noqa: E402

__all__ = ["application", "websocket_urlpatterns"]


def _websocket_urlpatterns() -> list[object]:
    try:
        routing = importlib.import_module("flowdeck.console.routing")
    except ModuleNotFoundError as error:
        if error.name != "flowdeck.console.routing":
            raise
        return []
    return list(getattr(routing, "websocket_urlpatterns", []))


websocket_urlpatterns = _websocket_urlpatterns()

application = ProtocolTypeRouter(
    {
        "http": StaticFilesWithHeaders(django_application),
        "websocket": AllowedHostsOriginValidator(socket_auth(URLRouter(websocket_urlpatterns))),
    }
)
http_limits.install()  # daphne's parser answers 414/431 rather than dropping a too-long request
heap.freeze_startup_heap()  # the server imports this module once, before it serves
