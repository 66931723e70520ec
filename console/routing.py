"""Websocket routes of the console (mounted by `console.asgi` behind the session auth middleware)."""

from __future__ import annotations

from django.urls import path

from console.consumers import LiveConsumer

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
