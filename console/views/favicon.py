"""`/favicon.ico`: the icon a browser asks for at the site's root whatever a page links (the Django admin's
pages, the API's JSON answers, a bookmark). It is the console's own icon, answered without a login."""

from __future__ import annotations

import functools
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

__all__ = ["favicon"]

# The console's static folder inside the installed package (the `static/flowdeck` symlink in a checkout).
_ICON = Path(__file__).resolve().parents[1] / "static" / "flowdeck" / "console" / "favicon.ico"


@functools.cache
def _icon() -> bytes:
    return _ICON.read_bytes()


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """The console's icon (16, 32 and 48 px, drawn from `favicon.svg`)."""
    return HttpResponse(_icon(), content_type="image/x-icon")
