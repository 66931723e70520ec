"""The signed-in user's own page: their API tokens (read-only, never a secret) and their permissions.

Tokens are made and revoked with `flowdeck token` on the server; this page only shows them.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from flowdeck.console.models import OPERATE_PERMISSION, RUN_PERMISSION, ApiToken
from flowdeck.console.tokens import TokenRow
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required

__all__ = ["account"]


def _rows(user: object) -> list[TokenRow]:
    now = timezone.now()
    return [TokenRow.of(t, now) for t in ApiToken.objects.filter(user=user).select_related("user")]


@login_required
@require_GET
async def account(request: HttpRequest) -> HttpResponse:
    user = await request.auser()
    context = {
        "tokens": await sync_to_async(_rows)(user),
        "permissions": [
            (RUN_PERMISSION, "start executions and signal their inputs", await common.can_run(request)),
            (
                OPERATE_PERMISSION,
                "cancel, resume, answer and end executions",
                await common.can_operate(request),
            ),
        ],
        "nav": "account",
    }
    return await common.page(request, "flowdeck/console/account.html", context)
