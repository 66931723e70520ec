"""What routes declare beside their success body: the error shapes they can answer, and a few helpers."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from flowdeck.console.schemas import ErrorResponse

__all__ = ["DIAGRAM_OPENAPI", "TEXT_TYPES", "diagram_format", "errors", "text_response"]

# Every route can meet these: a malformed request, no caller, a refused caller (CSRF or permission), and a
# store that does not answer.
_ALWAYS = (400, 401, 403, 503)


def errors(*statuses: int) -> dict[int, Any]:
    """The error statuses a route declares (always 400, 401, 403 and 503, plus `statuses`)."""
    return dict.fromkeys(sorted({*_ALWAYS, *statuses}), ErrorResponse)


# Diagram formats and their media types; an unknown format is drawn as Mermaid (spec §1, route 3).
TEXT_TYPES: dict[str, str] = {
    "mermaid": "text/plain; charset=utf-8",
    "dot": "text/vnd.graphviz; charset=utf-8",
    "bpmn": "application/xml; charset=utf-8",
    "elk": "application/json",
    "json": "application/json",
}


def diagram_format(requested: str | None) -> str:
    wanted = (requested or "mermaid").lower()
    return wanted if wanted in TEXT_TYPES else "mermaid"


def text_response(request: HttpRequest, text: str, fmt: str) -> HttpResponse:
    return HttpResponse(text, content_type=TEXT_TYPES[fmt])


# The OpenAPI entry of a diagram route's 200: text whose media type depends on `format`.
DIAGRAM_OPENAPI: dict[str, Any] = {
    "responses": {
        200: {
            "description": "The diagram, in the requested format (Mermaid when the format is unknown)",
            "content": {
                media.split(";")[0]: {"schema": {} if media == "application/json" else {"type": "string"}}
                for media in TEXT_TYPES.values()
            },
        }
    }
}
