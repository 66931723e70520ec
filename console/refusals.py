"""What the console refuses before it looks anything up, and the pages that say so.

Text that no store can hold (a NUL, a lone surrogate) is refused by `console.gate.page`
before a view runs. Whole numbers in the query string come from `whole_number`, bounded so that an offset
always fits the databases' 64-bit integers. An id filter keeps the id rule (`engine.ids`); an id in a path
that names nothing is refused when it breaks the rule and is a plain 404 otherwise, so rows written before
the rule still open. A refusal is `Refused` (a `BadRequest`), answered by `bad_request` (the gate
calls it for a view's `Refused`; Django, as `handler400`, for its own refusals): the console's styled page,
or its message fragment for an htmx request. An unknown page gets the styled 404 through `handler404`, a
refusal of Django's own the styled 403 (`handler403`), an unexpected error the styled 500 (`handler500`),
which shows no traceback whatever DEBUG says. Under `/api/` each is the API's JSON refusal instead,
`{error, code, detail}`, as the API's clients read every other refusal.
"""

from __future__ import annotations

import re
import sys

from django import db
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.template.loader import render_to_string
from django.urls import Resolver404
from django.utils.cache import add_never_cache_headers

from flowdeck.console import mount
from flowdeck.engine import ids
from flowdeck.store import spi

__all__ = [
    "MAX_OFFSET",
    "Refused",
    "bad_request",
    "check_filter",
    "check_text",
    "csrf_failure",
    "forbidden",
    "is_outage",
    "not_found",
    "server_error",
    "text_problem",
    "unavailable",
    "unknown",
    "whole_number",
]

MAX_OFFSET = 2**63 - 1  # the largest OFFSET PostgreSQL and SQLite take (a signed 64-bit integer)
_DIGITS = re.compile(r"[0-9]{1,30}")  # ASCII digits only: str.isdigit() also takes '²', which int() refuses


class Refused(BadRequest):
    """The console refused a request: `what` names the input, `problem` says what is wrong with it."""

    def __init__(self, what: str, problem: str) -> None:
        super().__init__(f"{what}: {problem}")
        self.what = what
        self.problem = problem


def text_problem(value: str) -> str | None:
    """What makes `value` text no store can hold (PostgreSQL refuses a NUL; a lone surrogate has no
    UTF-8), in a few words; None when it is storable."""
    for position, char in enumerate(value):
        if char == "\x00":
            return f"must not contain a NUL character (at position {position})"
        if "\ud800" <= char <= "\udfff":
            return f"must not contain the lone surrogate U+{ord(char):04X} (at position {position})"
    return None


def check_text(what: str, value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise Refused(what, problem)
    return value


def whole_number(
    params: QueryDict, name: str, default: int, *, minimum: int = 0, maximum: int = MAX_OFFSET
) -> int:
    """The query parameter `name` as a whole number from `minimum` to `maximum`; `default` when it is
    absent or blank; `Refused` otherwise."""
    text = params.get(name, "").strip()
    if not text:
        return default
    if _DIGITS.fullmatch(text) and minimum <= int(text) <= maximum:
        return int(text)
    shown = text if len(text) <= 40 else text[:40] + "…"
    raise Refused(name, f"must be a whole number from {minimum} to {maximum} (got {shown!r})")


def unknown(what: str, value: str, message: str) -> Exception:
    """What to raise for an id that names nothing: `Refused` when it breaks the id rule (so it could not
    name anything), a 404 with `message` otherwise. An id that names a row is never checked, so rows
    written before the rule still open."""
    problem = ids.id_problem(value)
    return Refused(what, problem) if problem is not None else Http404(message)


def check_filter(what: str, value: str) -> str:
    """An id filter (a workflow id, an id prefix): blank, or keeping the id rule."""
    problem = ids.id_problem(value) if value not in {"", ".", ".."} else None
    if problem is not None:
        raise Refused(what, problem)
    return value


def _api_refusal(request: HttpRequest, status: int, code: str, error: str) -> HttpResponse:
    return JsonResponse({"error": error, "code": code, "detail": {"path": request.path}}, status=status)


def _render(request: HttpRequest, status: int, title: str, text: str) -> HttpResponse:
    if request.headers.get("HX-Request"):
        html = render_to_string(
            "flowdeck/console/partials/message.html", {"level": "error", "text": text}, request
        )
    else:
        context = {"status": status, "title": title, "text": text, "path": request.get_full_path()}
        html = render_to_string("flowdeck/console/refused.html", context, request)
    response = HttpResponse(html, status=status)
    add_never_cache_headers(response)  # drawn for this caller (its navigation), as every console page is
    return response


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """`handler400`: what was refused, when the console refused it; a generic line for Django's own
    refusals (a disallowed host, too many fields), whose text is not meant for the page."""
    if isinstance(exception, Refused):
        text = f"Refused: {exception}."
    else:
        text = "The request was refused: it is malformed or too large."
    return _render(request, 400, "Bad request", text)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """`handler404`: the console's own 404 message (`no execution 'x'`), or that no page is there."""
    said = exception.args[0] if exception is not None and exception.args else None
    if mount.is_api(request):
        return _api_refusal(request, 404, "route_not_found", f"no API route at {request.path}")
    if isinstance(exception, Resolver404) or not isinstance(said, str) or not said:
        text = "There is no page at this address."
    else:
        text = f"Not found: {said}."
    return _render(request, 404, "Not found", text)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """`handler403`: Django's own refusals (a failed CSRF check answers through `csrf_failure`); the
    console's permission refusals say which permission (`flowdeck.console.views.common.forbidden`)."""
    if mount.is_api(request):
        return _api_refusal(request, 403, "forbidden", "you may not do this")
    return _render(request, 403, "Not allowed", "You are not allowed to open this page.")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """`CSRF_FAILURE_VIEW`: a form posted without its token or with an old one (a page left open past a
    new login). Django's `reason` is for the log, not the page."""
    if mount.is_api(request):
        return _api_refusal(request, 403, "csrf_failed", "the CSRF token is missing or out of date")
    text = "The form was refused: its security token is missing or out of date. Reload the page, try again."
    return _render(request, 403, "Not allowed", text)


def is_outage(error: BaseException | None) -> bool:
    """The database not answering: Django's connection errors, or a store failure it calls retryable
    (its own connections meet the same outage, and the first use after it finds them broken)."""
    if isinstance(error, spi.FlowStoreError):
        return error.retryable
    return isinstance(error, db.OperationalError | db.InterfaceError)


def unavailable(request: HttpRequest) -> HttpResponse:
    """The database did not answer (down, restarting, refusing connections): a 503, which says to try
    again, never the 500 of a fault. Drawn without the navigation's user when that read fails too."""
    text = "The database is not answering; Flowdeck will be back when it is. Try again shortly."
    try:
        response = _render(request, 503, "Database unavailable", text)
    except Exception:  # the page's own reads (the session, the user) meet the same outage
        html = f"<!doctype html><title>Database unavailable</title><h1>Database unavailable</h1><p>{text}</p>"
        response = HttpResponse(html, status=503)
        add_never_cache_headers(response)
    response["Retry-After"] = "5"
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """`handler500`: an error the console did not expect. The page says so and no more (the traceback is
    in the server's log); when even the styled page cannot be drawn (the database is down), plain HTML."""
    if mount.is_api(request):
        return _api_refusal(request, 500, "internal_error", "the server failed to answer; see its log")
    if is_outage(sys.exc_info()[1]):  # met before any view ran
        return unavailable(request)
    text = "Something went wrong on the server; the error is in its log. Try again, or tell whoever runs it."
    try:
        return _render(request, 500, "Server error", text)
    except Exception:  # the last answer must not fail in turn
        html = f"<!doctype html><title>Server error</title><h1>Server error</h1><p>{text}</p>"
        return HttpResponse(html, status=500)
