"""Who is calling the REST API: a bearer token or a Django session; and what they may do (start and
signal: `flowdeck_console.run_executions`; the operator verbs: `flowdeck_console.operate_executions`).

Both schemes are ninja auth callbacks (so both appear in the OpenAPI document); the first that recognises
the caller wins and nobody else gets in (401). Session callers keep Django's CSRF check on unsafe methods,
as ninja's `SessionAuth` does: a browser sending cookies on its own must not be able to cancel executions.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from ninja.errors import HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from flowdeck.console.models import OPERATE_PERMISSION, RUN_PERMISSION, TOUCH_EVERY, ApiToken, token_digest

__all__ = [
    "BearerToken",
    "CsrfFailed",
    "PermissionDenied",
    "SessionCookie",
    "actor_of",
    "callers_only",
    "callers_only_async",
    "require_operator",
    "require_permission",
    "require_runner",
]


class PermissionDenied(HttpError):
    """The caller is known but lacks the permission the verb needs."""

    def __init__(self, permission: str) -> None:
        super().__init__(403, f"this needs the {permission!r} permission")
        self.permission = permission


class CsrfFailed(HttpError):
    def __init__(self) -> None:
        super().__init__(403, "CSRF check failed: send the csrftoken cookie's value in X-CSRFToken")


class BearerToken(HttpBearer):
    """`Authorization: Bearer <token>`, checked against the stored digests. (Text the store cannot hold
    never gets here: `console.gate.api` refuses it before any scheme reads the request.)"""

    async def __call__(self, request: HttpRequest) -> Any:
        header = request.headers.get(self.header, "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return await self.authenticate(request, token.strip())

    async def authenticate(self, request: HttpRequest, token: str) -> Any:
        """The user of a usable token (not revoked, not expired), else None (401). Its `last_used` is
        written only when the recorded one is older than `TOUCH_EVERY`, so a busy client does not write
        on every request (and, being conditional, two racing requests write once)."""
        now = timezone.now()
        found = (
            await ApiToken.objects.usable(now)
            .select_related("user")
            .filter(key_hash=token_digest(token))
            .afirst()
        )
        if found is None:
            return None
        stale = now - TOUCH_EVERY
        if found.last_used is None or found.last_used <= stale:
            await (
                ApiToken.objects.filter(pk=found.pk)
                .filter(Q(last_used__isnull=True) | Q(last_used__lte=stale))
                .aupdate(last_used=now)
            )
        return found.user


class SessionCookie(APIKeyCookie):
    """The console's Django session; unsafe methods need the CSRF token."""

    param_name = settings.SESSION_COOKIE_NAME

    async def __call__(self, request: HttpRequest) -> Any:
        if not plausible_session(request):
            return None
        user = await request.auser()
        if not user.is_authenticated:
            return None
        if request.method not in ("GET", "HEAD", "OPTIONS", "TRACE") and await sync_to_async(check_csrf)(
            request
        ):
            raise CsrfFailed()
        return user

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:  # pragma: no cover - see __call__
        raise NotImplementedError


def plausible_session(request: HttpRequest) -> bool:
    """Whether the request carries a cookie shaped like a Django session key (letters and digits).

    Anything else is no session, and is never looked up: a NUL in it would be a database error (500)
    rather than the caller's 401.
    """
    key = request.COOKIES.get(settings.SESSION_COOKIE_NAME, "")
    return bool(key) and len(key) <= 64 and key.isascii() and key.isalnum()


def _token_user(request: HttpRequest) -> Any:
    """The active user a bearer token names (synchronous, for plain Django views), or None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    found = (
        ApiToken.objects.usable(timezone.now())
        .select_related("user")
        .filter(key_hash=token_digest(token.strip()))
        .first()
    )
    return found.user if found is not None else None


def _unauthenticated() -> HttpResponse:
    body = {"error": "authentication required: a session or a bearer token", "code": "unauthenticated"}
    response = JsonResponse({**body, "detail": None}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="flowdeck"'
    return response


def callers_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Guard a plain view (the OpenAPI document, the docs page) as the API is guarded: a session or a
    bearer token, else 401 in the API's error shape."""

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if (plausible_session(request) and request.user.is_authenticated) or _token_user(request) is not None:
            return view(request, *args, **kwargs)
        return _unauthenticated()

    return guarded


def callers_only_async(
    view: Callable[..., Awaitable[HttpResponse]],
) -> Callable[..., Awaitable[HttpResponse]]:
    """`callers_only` for an async view (the metrics)."""

    @functools.wraps(view)
    async def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        session = plausible_session(request) and (await request.auser()).is_authenticated
        if session or await sync_to_async(_token_user)(request) is not None:
            return await view(request, *args, **kwargs)
        return _unauthenticated()

    return guarded


async def require_permission(request: HttpRequest, permission: str) -> None:
    """Refuse (403) a caller without `permission`; called first in a route, before anything is read."""
    user = request.auth  # type: ignore[attr-defined]
    if not await user.ahas_perm(permission):
        raise PermissionDenied(permission)


async def require_operator(request: HttpRequest) -> None:
    """Refuse (403) a caller without the operator permission."""
    await require_permission(request, OPERATE_PERMISSION)


async def require_runner(request: HttpRequest) -> None:
    """Refuse (403) a caller who may not start executions or signal them."""
    await require_permission(request, RUN_PERMISSION)


def actor_of(request: HttpRequest) -> str:
    """The name recorded on the events an API caller causes."""
    return str(request.auth.get_username())  # type: ignore[attr-defined]
