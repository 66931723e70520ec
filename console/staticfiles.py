"""Serving `/static/` under ASGI: Django's static handler, where an address that names no static file is a
404 (the console's page), never a 500.

Django's handler answers 404 for a missing file but lets the finders' refusal of a path that climbs out of
the static folders (`/static/..%2f..%2fconsole/settings.py`: `SuspiciousFileOperation`) and the
filesystem's refusal of a NUL (`ValueError`) through as server errors. Both name no static file.
"""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponseBase

__all__ = ["StaticFiles"]


class StaticFiles(ASGIStaticFilesHandler):
    """Django's ASGI static files handler, answering 404 for any path that names no static file."""

    def serve(self, request: HttpRequest) -> HttpResponseBase:
        if "\x00" in request.path:
            raise Http404("no such static file")
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None
