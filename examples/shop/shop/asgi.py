"""The shop's ASGI application: HTTP through Django, and Flowdeck's websocket under the console's prefix.

`daphne shop.asgi:application` serves it all; the console's pages connect to `/ops/ws/live/`, which is
`flowdeck.console.routing`'s patterns mounted under the same `ops/` as the console's URLs in `shop/urls.py`.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shop.settings")
django_application = get_asgi_application()  # before channels' auth middleware, which imports models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.urls import path  # noqa: E402

from flowdeck.console.routing import websocket_urlpatterns  # noqa: E402
from flowdeck.engine import heap  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": ASGIStaticFilesHandler(django_application),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter([path("ops/", URLRouter(websocket_urlpatterns))]))
        ),
    }
)
heap.freeze_startup_heap()  # the live feed's full collections then walk only what came later
