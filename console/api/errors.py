"""One error table: every refusal the API answers becomes `{error, code, detail}` with its status.

Engine errors map by class (the most specific entry on the exception's MRO wins), as ninja's own handlers
do in `ninja/errors.py`. Bad input, whether ninja's validation or our own checks, is 400 (not ninja's
default 422): the issue asks for 400 on every malformed request. Anything unexpected is a 500 with no
traceback on the wire (it is logged). Refusals decided before routing (`console.api.guard`, checked by
`console.gate.api`) are in the same table; so is every other error an `/api/` path can answer
(an unmatched path, a method a route does not take): `json_error` rewrites Django's HTML pages into the body.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from django import db
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from flowdeck.console import auth
from flowdeck.console.api import guard
from flowdeck.engine import errors
from flowdeck.store import spi

__all__ = ["ERROR_TABLE", "ApiError", "error_response", "install", "json_error", "refusal_response"]

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A refusal decided in the API layer itself (a malformed signal body, an unknown workflow id)."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail


# exception class → (status, code). Looked up along the raised exception's MRO.
ERROR_TABLE: Mapping[type[BaseException], tuple[int, str]] = {
    errors.FlowWorkflowError: (404, "workflow_not_found"),
    errors.FlowNotRegistered: (404, "workflow_not_registered"),
    errors.FlowExecutionNotFound: (404, "execution_not_found"),
    errors.FlowExecutionTerminal: (409, "execution_terminal"),
    errors.FlowDuplicateExecution: (409, "duplicate_execution"),
    errors.FlowSignalError: (400, "signal_refused"),
    errors.FlowInputError: (400, "invalid_input"),
    errors.FlowAlreadyDelivered: (409, "already_delivered"),
    errors.FlowOperatorError: (409, "operator_refused"),
    errors.FlowNotStopped: (409, "not_stopped"),
    errors.FlowNotResumable: (409, "not_resumable"),
    errors.FlowClaimHeld: (409, "claim_held"),
    errors.FlowAlreadyAnswered: (409, "already_answered"),
    errors.FlowResumeConflict: (409, "resume_conflict"),
    errors.FlowUnknownNode: (404, "node_not_found"),
    errors.FlowScheduleError: (400, "invalid_schedule"),
    errors.FlowScheduleNotFound: (404, "schedule_not_found"),
    errors.FlowScheduleExists: (409, "schedule_exists"),
    errors.FlowInvalidId: (400, "invalid_id"),
    errors.FlowInvalidPriority: (400, "invalid_priority"),
    guard.BodyTooLarge: (413, "body_too_large"),
    guard.NestingTooDeep: (400, "nesting_too_deep"),
    guard.NulCharacter: (400, "nul_character"),
    guard.LoneSurrogate: (400, "lone_surrogate"),
    spi.FilterParseError: (400, "invalid_filter"),
    spi.FlowStoreError: (503, "store_unavailable"),
}

# The database errors a lost or refused connection raises where the console reads Django's own tables
# (a bearer token, a session, the activity record) rather than through the store, which translates its
# own. A caller cannot be told apart from a stranger while the database is down: that is a 503, never a 500.
UNREACHABLE: tuple[type[BaseException], ...] = (db.OperationalError, db.InterfaceError)
UNREACHABLE_MESSAGE = "the database is unreachable; try again shortly"


def _lookup(exc: BaseException) -> tuple[int, str] | None:
    for cls in type(exc).__mro__:
        if cls in ERROR_TABLE:
            return ERROR_TABLE[cls]
    return None


def _detail(exc: BaseException) -> Any:
    """The data an engine error carries, as JSON (its attributes; a resume report as its fields)."""
    if isinstance(exc, errors.FlowResumeConflict):
        report = exc.report
        return dataclasses.asdict(report) if dataclasses.is_dataclass(report) else None  # type: ignore[arg-type]
    found = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in vars(exc).items()
        if not key.startswith("_") and isinstance(value, str | int | bool | tuple | list | None)
    }
    return found or None


def respond(api: NinjaAPI, request: HttpRequest, status: int, code: str, message: str, detail: Any = None):
    response: HttpResponse = api.create_response(
        request, {"error": message, "code": code, "detail": detail}, status=status
    )
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="flowdeck"'
    return response


def error_response(status: int, code: str, message: str, detail: Any = None) -> JsonResponse:
    """The error body outside ninja (in middleware), the same shape `respond` gives inside it."""
    return JsonResponse({"error": message, "code": code, "detail": detail}, status=status)


def refusal_response(exc: guard.RequestRefused) -> JsonResponse:
    status, code = _lookup(exc) or (400, "bad_request")
    return error_response(status, code, str(exc), _detail(exc))


# Django's own error pages an `/api/` path can meet (no route, a method the route does not take, a body
# Django refused), by status: the code each becomes.
_DJANGO_ERRORS: Mapping[int, str] = {
    400: "bad_request",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    500: "internal_error",
}


def json_error(
    request: HttpRequest, response: HttpResponse, allowed: Iterable[str] | None = None
) -> HttpResponse:
    """`response` when it is not an error or already JSON; otherwise the error body with its status.

    A 405 says which methods the route takes, in `detail` and in `Allow`: `allowed` (the methods the
    document declares for the route) when given, else the ones Django or ninja listed.
    """
    if response.status_code < 400 or response.get("Content-Type", "").startswith("application/json"):
        return response
    status = response.status_code
    code = _DJANGO_ERRORS.get(status, "http_error")
    if status == 404 and getattr(request, "resolver_match", None) is None:
        # No route matched: the same answer as the console's handler404 gives, whichever project's
        # handler404 answered (a project mounting the console keeps its own handlers).
        return error_response(
            404, "route_not_found", f"no API route at {request.path}", {"path": request.path}
        )
    if status != 405:
        return error_response(status, code, f"{_phrase(status)}: {request.method} {request.path}")
    methods = sorted(
        allowed if allowed is not None else response.get("Allow", "").replace(" ", "").split(",")
    )
    message = f"{request.path} does not take {request.method}; it takes {', '.join(methods)}"
    converted = error_response(status, code, message, {"allowed": methods})
    converted["Allow"] = ", ".join(methods)
    return converted


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "error"


def install(api: NinjaAPI) -> None:
    """Route every exception the API can meet through the table."""

    def engine_error(request: HttpRequest, exc: Exception) -> HttpResponse:
        found = _lookup(exc)
        if found is None:
            return unexpected(request, exc)
        status, code = found
        return respond(api, request, status, code, str(exc), _detail(exc))

    def api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
        return respond(api, request, exc.status, exc.code, str(exc), exc.detail)

    def validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return respond(api, request, 400, "invalid_request", "the request is malformed", exc.errors)

    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        status = exc.status_code
        if isinstance(exc, AuthenticationError):
            code, message = "unauthenticated", "authentication required: a session or a bearer token"
        elif isinstance(exc, auth.PermissionDenied):
            code, message = "permission_denied", str(exc.message)
        elif isinstance(exc, auth.CsrfFailed):
            code, message = "csrf_failed", str(exc.message)
        elif status == 400:
            code, message = "malformed_body", str(exc.message)
        else:
            code, message = "http_error", str(exc.message)
        return respond(api, request, status, code, message)

    def unreachable(request: HttpRequest, exc: Exception) -> HttpResponse:
        # The driver's words name the server and the database: logged, not answered.
        logger.warning("API request met an unreachable database: %s", exc, extra={"action": "api"})
        return respond(api, request, 503, "store_unavailable", UNREACHABLE_MESSAGE)

    def not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
        return respond(api, request, 404, "not_found", "not found")

    def unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.exception("API request failed: %s %s", request.method, request.path, extra={"action": "api"})
        return respond(api, request, 500, "internal_error", "the server failed to answer this request")

    for cls in ERROR_TABLE:
        api.add_exception_handler(cls, engine_error)
    api.add_exception_handler(ApiError, api_error)
    api.add_exception_handler(ValidationError, validation)
    api.add_exception_handler(HttpError, http_error)
    api.add_exception_handler(Http404, not_found)
    for cls in UNREACHABLE:
        api.add_exception_handler(cls, unreachable)
    api.add_exception_handler(Exception, unexpected)
