"""Saved views of the executions list: a person's named filters, kept in the database (`SavedView`).

A view is the list's query string, checked and rewritten by the list's own `Query` (so a saved view is a
URL the list takes, and opening it is following that link); the page number is not part of it. Its status
word and search are parsed too: a filter that does not parse is refused, and nothing is saved. Saving
under a name one already has replaces that view. Each person sees, and deletes, only their own.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.urls import reverse
from django.views.decorators.http import require_POST

from flowdeck.console import refusals
from flowdeck.console.models import SavedView
from flowdeck.console.views.list_query import Query, search_of, store_filter
from flowdeck.console.views.signin import login_required
from flowdeck.store import spi

__all__ = ["create_view", "delete_view", "views_of"]

MAX_NAME = 80
MAX_VIEWS = 100  # per person: a list of names one picks from, not a store


async def views_of(request: HttpRequest, current: str) -> list[dict[str, Any]]:
    """The person's saved views, by name, each with its URL and whether it is the list shown now."""
    user = await request.auser()
    found = [v async for v in SavedView.objects.filter(user_id=user.pk).order_by("name", "id")]
    return [
        {"id": v.pk, "name": v.name, "url": "?" + v.query, "current": "?" + v.query == current} for v in found
    ]


def _name(request: HttpRequest) -> str:
    name = refusals.check_text("name", " ".join(request.POST.get("name", "").split()))
    if not name:
        raise refusals.Refused("name", "give the view a name")
    if len(name) > MAX_NAME:
        raise refusals.Refused("name", f"a view's name is at most {MAX_NAME} characters (got {len(name)})")
    return name


def _query(request: HttpRequest) -> str:
    """The list's query string of the POST's `query`, as the list writes it (filters and sort, no page);
    `refusals.Refused` for one the list cannot take, its status word and its search included (the list
    would show only what is wrong with them)."""
    text = request.POST.get("query", "").lstrip("?")
    if len(text) > 2000:
        raise refusals.Refused("query", "a view's query is at most 2,000 characters")
    query = Query.of(QueryDict(refusals.check_text("query", text)))
    try:
        store_filter(query.status, frozenset())
    except spi.FilterParseError as problem:
        raise refusals.Refused("status", str(problem)) from None
    try:
        search_of(query.q)
    except spi.FilterParseError as problem:
        raise refusals.Refused("q", str(problem)) from None
    return query.url(page=1).lstrip("?")


def _back(query: str) -> HttpResponse:
    return HttpResponseRedirect(
        reverse("flowdeck:console-executions") + ("?" + query if query else ""), status=303
    )


@login_required
@require_POST
async def create_view(request: HttpRequest) -> HttpResponse:
    """Save the list's query under a name (replacing the person's view of that name); back to that list."""
    name, query = _name(request), _query(request)
    user = await request.auser()
    mine = SavedView.objects.filter(user_id=user.pk)
    if not await mine.filter(name=name).aexists() and await mine.acount() >= MAX_VIEWS:
        raise refusals.Refused("name", f"you have {MAX_VIEWS} saved views: delete one first")
    await SavedView.objects.aupdate_or_create(user_id=user.pk, name=name, defaults={"query": query})
    return _back(query)


@login_required
@require_POST
async def delete_view(request: HttpRequest, view_id: int) -> HttpResponse:
    """Delete one of the person's views (another's, or none, is a 404); back to the list as it was."""
    user = await request.auser()
    deleted, _ = await SavedView.objects.filter(pk=view_id, user_id=user.pk).adelete()
    if not deleted:
        raise Http404(f"no saved view {view_id}")
    return _back(_listed(request.POST.get("back", "")))


def _listed(back: str) -> str:
    """`back` as the list writes it when the list takes it; "" (the plain list) otherwise."""
    try:
        query = Query.of(QueryDict(refusals.check_text("back", back.lstrip("?")[:2000])))
    except refusals.Refused:
        return ""
    return query.url().lstrip("?")
