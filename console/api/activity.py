"""`GET /api/v1/activity`: what operators did, newest first, with the console page's filters.

Any caller reads it (as every caller reads the executions it names); nothing here writes. Pages are keyset:
`nextBefore` is the id of the last row, passed back as `before` for the rows after it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from flowdeck.console import activity, schemas
from flowdeck.console.api.errors import ApiError
from flowdeck.console.api.responses import errors

__all__ = ["ActivityDto", "ActivityPage", "ActivityQuery", "router"]

router = Router(tags=["activity"])


class ActivityQuery(Schema):
    model_config = ConfigDict(populate_by_name=True)

    user: schemas.Text = Field("", description="only this actor (a username; cli:<os user> for the CLI)")
    action: schemas.Text = Field("", description="only this action; `resume` or `bulk` takes every kind")
    source: Literal["", "console", "api", "cli"] = Field("", description="console, api or cli; blank for any")
    execution_id: schemas.Text = Field("", alias="executionId", description="only actions on this execution")
    since: schemas.Instant = Field(
        "", alias="from", description="from this instant (ISO 8601 of the years 1000-2999, or an age: 2h)"
    )
    until: schemas.Instant = Field("", alias="to", description="before this instant (as `from`)")
    limit: schemas.Integer = Field(activity.PAGE_SIZE, ge=1, le=activity.MAX_PAGE_SIZE)
    before: schemas.Integer = Field(
        0, ge=0, le=2**63 - 1, description="the previous page's nextBefore; 0 (or none) for the newest page"
    )


class ActivityDto(schemas.Wire):
    id: int
    at: datetime
    actor: str
    source: str
    action: str
    execution_ids: list[str]
    workflow_id: str
    outcome: str = Field(description="accepted, already-requested, already-terminal, refused, invalid, error")
    code: str = Field(description="why it was refused: the API's error code (blank when accepted)")
    message: str
    detail: dict[str, Any] = Field(description="the request's detail: an input's name and size, a reason")


class ActivityPage(schemas.Wire):
    items: list[ActivityDto]
    next_before: int | None = None


def _query(params: ActivityQuery) -> activity.Query:
    try:
        since = activity.parse_time(params.since) if params.since else None
        until = activity.parse_time(params.until) if params.until else None
    except ValueError as error:
        raise ApiError(400, "invalid_filter", str(error)) from None
    return activity.Query(params.user, params.action, params.source, params.execution_id, since, until)


def _page(query: activity.Query, limit: int, before: int | None) -> ActivityPage:
    rows, after = activity.read_page(query, limit, before)
    items = [ActivityDto.model_validate(activity.as_json(row)) for row in rows]
    return ActivityPage(items=items, next_before=after)


@router.get("/activity", response={200: ActivityPage, **errors()}, by_alias=True)
async def list_activity(request: HttpRequest, params: Query[ActivityQuery]) -> ActivityPage:
    """Operator actions from every surface (console, API, CLI), newest first, filtered; refusals too."""
    return await sync_to_async(_page)(_query(params), params.limit, params.before or None)
