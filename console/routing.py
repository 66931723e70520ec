"""Websocket routes of the console (mounted by `flowdeck.console.asgi` behind the session auth middleware)."""

from __future__ import annotations

from django.urls import path

from flowdeck.console.consumers import LiveConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
