"""The executions list's query: every filter and the order, each a query parameter, so that a URL is the
whole view (shareable, and what a saved view keeps).

The same words are the query of `GET /api/v1/executions` and the options of `flowdeck ls` (both read them
through `Query.of`, and search through `Query.search`), so the three surfaces filter alike:

- `status`: a wire filter word (`failed:<kind>`, `waiting:<name>` …) or `parked` (an unended execution of
  a version no process serves, which only the console knows);
- `workflow`, and `q` (an id prefix and any `field:` terms);
- `sort`: `created` or `updated`, newest first;
- `created_from` / `created_to`: whole days (UTC), both included (the page's date pickers);
- `created_after` / `created_before` and `updated_after` / `updated_before`: instants (ISO 8601, UTC
  when no offset is given, or an age back from now: `15m`, `2h`), the first included, the second not.
  `updated` is an execution's last change; for an ended one, when it ended (the overview's bars link to
  "completed in this minute" with it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from django.http import HttpRequest, QueryDict

from flowdeck.console import activity, refusals, states
from flowdeck.engine.engine import FlowEngine, SearchResult
from flowdeck.store import field_terms, spi

__all__ = ["INSTANTS", "MAX_PAGE", "PAGE_SIZE", "PARKED", "SORTS", "Query", "search_of", "store_filter"]

PAGE_SIZE = 25
MAX_PAGE = refusals.MAX_OFFSET // PAGE_SIZE + 1  # the last page whose offset a database takes
SORTS = {"created": "created", "updated": "updated"}  # the ?sort= words and the store's order
PARKED = "parked"
INSTANTS = ("created_after", "created_before", "updated_after", "updated_before")
_BOUND_WORDS = {
    "created_after": "created from",
    "created_before": "created before",
    "updated_after": "last changed from",
    "updated_before": "last changed before",
}


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
    created_after: datetime | None = None  # instants: after included, before not
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None

    @classmethod
    def of(cls, request: HttpRequest | QueryDict | Mapping[str, str]) -> Query:
        """The query of the request (or of a mapping of the same words); `refusals.Refused`, naming the
        parameter, for a page number, an id filter, a sort, a day or an instant it cannot be."""
        params = request.GET if isinstance(request, HttpRequest) else request
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
            *(_instant(params, name) for name in INSTANTS),
        )

    def url(self, **change: object) -> str:
        values: dict[str, object] = {
            "status": self.status,
            "workflow": self.workflow,
            "q": self.q,
            "sort": self.sort,
            "created_from": self.created_from,
            "created_to": self.created_to,
            **{name: _iso(getattr(self, name)) for name in INSTANTS},
            "page": self.page,
        }
        values.update(change)
        kept = {k: v for k, v in values.items() if v not in ("", None) and (k, v) not in _DEFAULTS}
        return "?" + urlencode(kept, safe=":") if kept else "?"

    @property
    def window(self) -> tuple[datetime | None, datetime | None]:
        """The creation window as the store takes it: from the first day's midnight (UTC) to the midnight
        after the last day, narrowed by the instants when given too."""
        after = None if self.created_from is None else datetime.combine(self.created_from, time(), UTC)
        before = None
        if self.created_to is not None and self.created_to < date.max:
            before = datetime.combine(self.created_to + timedelta(days=1), time(), UTC)
        return _later(after, self.created_after), _earlier(before, self.created_before)

    @property
    def bounds(self) -> list[dict[str, str]]:
        """The instants given, for the page to show (in words) and keep (as hidden inputs)."""
        return [
            {
                "name": name,
                "value": _iso(at) or "",
                "words": f"{_BOUND_WORDS[name]} {at:%Y-%m-%d %H:%M:%S} UTC",
            }
            for name in INSTANTS
            if (at := getattr(self, name)) is not None
        ]

    @property
    def in_bulk(self) -> bool:
        """Can a bulk operation act on exactly this list? It takes the status, workflow and search only: not
        `parked` (the parked page resumes those) nor a time window, which it would widen."""
        windowed = self.created_from is not None or self.created_to is not None or self.bounds
        return self.status != PARKED and not windowed

    async def search(
        self,
        engine: FlowEngine,
        served: frozenset[str],
        limit: int,
        offset: int,
        *,
        prefix: str | None = None,
        where: Sequence[str] = (),
    ) -> SearchResult:
        """The executions this query lists (`served`: the version hashes some process serves, which
        `parked` needs), newest first by its sort; `prefix` and `where` narrow further (the API's and the
        CLI's id prefix and field terms, given apart from `q`). `spi.FilterParseError` for a status word or
        a search that is not one."""
        matches, found = search_of(self.q)
        if prefix and found:
            raise spi.FilterParseError(f"one id prefix at most (got {prefix!r} and {found!r})")
        after, before = self.window
        return await engine.executions.search(
            self.workflow or None,
            store_filter(self.status, served),
            limit,
            offset,
            prefix or found,
            [*matches, *where],
            order_by=SORTS[self.sort],
            created_after=after,
            created_before=before,
            updated_after=self.updated_after,
            updated_before=self.updated_before,
        )


_DEFAULTS = {("page", 1), ("sort", "created")}


def _day(params: Mapping[str, str], name: str) -> date | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise refusals.Refused(name, f"a day is written YYYY-MM-DD (got {text[:40]!r})") from None


def _instant(params: Mapping[str, str], name: str) -> datetime | None:
    text = params.get(name, "").strip()
    if not text:
        return None
    try:
        return activity.parse_time(text).astimezone(UTC)
    except (ValueError, OverflowError):
        raise refusals.Refused(
            name, f"an instant is ISO 8601 (2026-12-01T15:30Z) or an age (15m, 2h, 7d) (got {text[:40]!r})"
        ) from None


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _earlier(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def search_of(q: str) -> tuple[list[spi.FieldMatch], str | None]:
    """The field terms of the search box and its id prefix: at most one other word."""
    matches, words = field_terms.split_terms(q)
    if len(words) > 1:
        raise spi.FilterParseError(
            "search for one id prefix and any field:<name>.<path>=<value> or text:<words> terms (got "
            + f"{len(words)} other words: {', '.join(repr(w) for w in words)}); quote a value holding "
            + 'spaces: field:order.customer="Ada Lovelace"'
        )
    return matches, words[0] if words else None


def store_filter(word: str, served: frozenset[str]) -> spi.ExecutionFilter.Any | None:
    """The store filter of a state word (`console.states.store_filter`): `parked` its own population, the
    unended words without it."""
    return states.store_filter(word, served)


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
