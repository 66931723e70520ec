"""The executions list's query: every filter and the order, each a query parameter, so that a URL is the
whole view (shareable, and what a saved view keeps)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from django.http import HttpRequest, QueryDict

from console import refusals
from store import field_terms, spi

__all__ = ["MAX_PAGE", "PAGE_SIZE", "SORTS", "Query"]

PAGE_SIZE = 25
MAX_PAGE = refusals.MAX_OFFSET // PAGE_SIZE + 1  # the last page whose offset a database takes
SORTS = {"created": "created", "updated": "updated"}  # the ?sort= words and the store's order


@dataclass(frozen=True)
class Query:
    """Every filter and the order of the list, each a query parameter, so a URL is the whole view."""

    status: str
    workflow: str
    q: str
    page: int
    sort: str = "created"
    created_from: date | None = None  # the first day of the creation window (UTC), inclusive
    created_to: date | None = None  # its last day, inclusive

    @classmethod
    def of(cls, request: HttpRequest | QueryDict) -> Query:
        """The query of the request; `refusals.Refused` for a page number, an id filter, a sort or a day
        it cannot be."""
        params = request if isinstance(request, QueryDict) else request.GET
        sort = params.get("sort", "").strip() or "created"
        if sort not in SORTS:
            raise refusals.Refused("sort", f"sort by one of: {', '.join(SORTS)} (got {sort!r})")
        return cls(
            params.get("status", "").strip(),
            refusals.check_filter("workflow", params.get("workflow", "").strip()),
            _checked_search(params.get("q", "").strip()),
            refusals.whole_number(params, "page", 1, minimum=1, maximum=MAX_PAGE),
            sort,
            _day(params, "created_from"),
            _day(params, "created_to"),
        )

    def url(self, **change: object) -> str:
        values: dict[str, object] = {
            "status": self.status,
            "workflow": self.workflow,
            "q": self.q,
            "sort": self.sort,
            "created_from": self.created_from,
            "created_to": self.created_to,
            "page": self.page,
        }
        values.update(change)
        kept = {k: v for k, v in values.items() if v not in ("", None) and (k, v) not in _DEFAULTS}
        return "?" + urlencode(kept) if kept else "?"

    @property
    def window(self) -> tuple[datetime | None, datetime | None]:
        """The creation window as the store takes it: from the first day's midnight (UTC) to the midnight
        after the last day."""
        after = None if self.created_from is None else datetime.combine(self.created_from, time(), UTC)
        before = None
        if self.created_to is not None and self.created_to < date.max:
            before = datetime.combine(self.created_to + timedelta(days=1), time(), UTC)
        return after, before


_DEFAULTS = {("page", 1), ("sort", "created")}


def _day(params: QueryDict, name: str) -> date | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise refusals.Refused(name, f"a day is written YYYY-MM-DD (got {text[:40]!r})") from None


def _checked_search(q: str) -> str:
    """The search box: its id-prefix word keeps the id rule (else `refusals.Refused`); its field terms are
    parsed with the search, which shows what is wrong with one beside the table."""
    try:
        _, words = field_terms.split_terms(q)
    except spi.FilterParseError:
        return q
    for word in words:
        refusals.check_filter("q", word)
    return q
