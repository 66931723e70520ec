"""Reading executions through the ORM: their states with their waits, and a `list_executions` search
(what it selects, what it counts for its total, and how it takes a page in created order)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections
from django.db.models import Exists, OuterRef, Q

from flowdeck.store import field_terms, spi
from flowdeck.store.django import field_search, models, queries, rows, status_tally
from flowdeck.store.django.tx import Tx

__all__ = ["ALL", "FEW_TO_SORT", "Where", "counted", "execution_page", "executions_matching", "states_in"]

# A page bound that no database overflows on ("all of them").
ALL = 2**62
# An id-prefix search matching at most this many executions sorts its matches for the page (see
# `_page_of_few`); more matches are dense enough for the walk down the created index to find a page soon.
FEW_TO_SORT = 20_000


def states_in(using: str, ids: Sequence[str] | None, queryset: Any) -> list[spi.ExecutionState]:
    """The states of the executions of `queryset` (narrowed to `ids` when given), each with its waits."""
    if ids is not None:
        queryset = queryset.filter(id__in=ids)
    found = list(queryset.values_list(*queries.EXECUTION_COLUMNS))
    waits: dict[str, dict[str, spi.Wake]] = {}
    if found:
        wait_rows = models.Wait.objects.using(using).filter(execution_id__in=[r[0] for r in found])
        for eid, path, kind, at, field_name in wait_rows.values_list(
            "execution_id", "path", "kind", "at", "field_name"
        ):
            waits.setdefault(eid, {})[path] = rows.wake_of(kind, at, field_name)
    return [rows.execution_state(r, waits.get(r[0], {})) for r in found]


@dataclass(frozen=True)
class Where:
    """What a `list_executions` call selects (every part narrows; None or empty: no narrowing)."""

    flow_id: str | None
    filt: spi.ExecutionFilter.Any | None
    id_prefix: str | None
    fields: tuple[field_terms.SearchTerm, ...] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None

    @property
    def bounded(self) -> bool:
        bounds = (self.created_after, self.created_before, self.updated_after, self.updated_before)
        return any(bound is not None for bound in bounds)


def execution_page(
    tx: Tx, using: str, where: Where, limit: int | None, offset: int, order_by: str = "created"
) -> spi.ExecutionPage:
    """`list_executions`, in the transaction `tx`: the page, newest first by `order_by` (a column of
    `spi.ORDER_BY`; ties the later created first), and the exact total."""
    queryset = executions_matching(
        using,
        where.flow_id,
        where.filt,
        where.id_prefix,
        where.fields,
        created_after=where.created_after,
        created_before=where.created_before,
        updated_after=where.updated_after,
        updated_before=where.updated_before,
    )
    start = max(0, offset)
    stop = start + min(limit, ALL) if limit is not None and limit >= 0 else None
    if where.fields and tx.vendor == "postgresql":
        order, total = _counted_page(tx, queryset, start, stop, order_by)
    else:
        total = _tallied_total(tx, where)
        if total is None:
            # a time bound is not on the wait rows, so a bounded total counts the executions themselves
            plain = where.fields or where.bounded
            total = (
                queryset if plain else counted(using, where.flow_id, where.filt, where.id_prefix, queryset)
            ).count()
        if where.id_prefix and tx.vendor == "postgresql" and total <= FEW_TO_SORT:
            order = _page_of_few(tx, queryset, start, stop, order_by)
        else:
            ordered = queryset.order_by(f"-{order_by}", "-serial")[start:stop]
            order = list(ordered.values_list("id", flat=True))
    states = {s.execution_id: s for s in states_in(using, order, models.Execution.objects.using(using))}
    # The page's ids and their rows are two statements: a row purged in between is no longer there to
    # show (W13 found it: a search during a purge), so it is left out rather than failing the page.
    return spi.ExecutionPage(items=[states[i] for i in order if i in states], total=total)


def _tallied_total(tx: Tx, where: Where) -> int | None:
    """The exact total from the status tally when `where` selects whole status kinds, of one workflow or
    of all (no id, value or time term, no failure kind or stop code); None when it does not."""
    if where.fields or where.bounded or where.id_prefix:
        return None
    Arm = spi.ExecutionFilter
    kind: str | None
    match where.filt:
        case None:
            kind = None
        case Arm.Running():
            kind = models.RUNNING
        case Arm.Completed():
            kind = models.COMPLETED
        case Arm.Cancelled():
            kind = models.CANCELLED
        case Arm.Compensating():
            kind = models.COMPENSATING
        case Arm.Failed(kind=None):
            kind = models.FAILED
        case Arm.Stopped(code=None):
            kind = models.STOPPED
        case _:
            return None
    return sum(n for *_, n in status_tally.sums(tx, where.flow_id, kind))


def _page_of_few(tx: Tx, matching: Any, start: int, stop: int | None, order_by: str) -> list[str]:
    """PostgreSQL: a page of a search known to match few executions, taken by sorting the matches.

    Asked for a page in created order, the planner walks the created index down from the newest row and
    filters: cheap when matches are spread over time, but an id prefix often names old executions only,
    and then the walk passes every newer row first (1.6 s for 10,000 matches under 990,000 newer rows).
    Materializing the matches first (the id index's range) and sorting them costs what they number."""
    inner, params = matching.values("id", order_by, "serial").query.sql_with_params()
    tx.cursor.execute(
        queries.SORTED_PAGE.text(tx.vendor).format(matching=inner, order=order_by),
        [*params, None if stop is None else stop - start, start],
    )
    return [row[0] for row in tx.cursor.fetchall()]


def _counted_page(
    tx: Tx, matching: Any, start: int, stop: int | None, order_by: str
) -> tuple[list[str], int]:
    """PostgreSQL, a search by a recorded value: the page and the total from one pass over the matches
    (the GIN index finds them; sorting a field term's matches costs what they number, and its total needs
    them all anyway). A page past the end counts on its own."""
    inner, params = matching.values("id", order_by, "serial").query.sql_with_params()
    tx.cursor.execute(
        queries.COUNTED_SORTED_PAGE.text(tx.vendor).format(matching=inner, order=order_by),
        [*params, None if stop is None else stop - start, start],
    )
    found = tx.cursor.fetchall()
    total = found[0][1] if found else matching.count()
    return [row[0] for row in found], total


def counted(
    using: str,
    flow_id: str | None,
    filt: spi.ExecutionFilter.Any | None,
    id_prefix: str | None,
    matching: Any,
) -> Any:
    """What a search counts for its exact total (`.count()` of it). A wait-kind arm counts distinct
    executions among the wait rows (an index-only scan of the rows that wait) instead of probing every
    execution for a row."""
    Arm = spi.ExecutionFilter
    if not isinstance(filt, Arm.Sleeping | Arm.WaitingForInput | Arm.Retrying | Arm.RateLimited):
        return matching
    waits = models.Wait.objects.using(using)
    if isinstance(filt, Arm.Retrying):
        waits = waits.filter(models.RETRYING)
    elif isinstance(filt, Arm.RateLimited):
        waits = waits.filter(models.rate_limited(filt.limit))
    elif isinstance(filt, Arm.Sleeping):
        waits = waits.filter(kind=models.Wait.AT)
    else:
        waits = waits.filter(kind=models.Wait.ON_FIELD)
        if filt.name is not None:
            waits = waits.filter(field_name=filt.name)
    if flow_id is not None:
        waits = waits.filter(execution__flow_id=flow_id)
    if id_prefix:
        if connections[using].vendor == "sqlite":
            waits = waits.filter(execution_id__gte=id_prefix, execution_id__lt=id_prefix + "\U0010ffff")
        else:
            waits = waits.filter(execution__id__startswith=id_prefix)
    return waits.values("execution_id").distinct()


def _within(queryset: Any, column: str, after: datetime | None, before: datetime | None) -> Any:
    if after is not None:
        queryset = queryset.filter(**{f"{column}__gte": after})
    return queryset if before is None else queryset.filter(**{f"{column}__lt": before})


def _id_prefixed(queryset: Any, vendor: str, id_prefix: str) -> Any:
    if vendor == "sqlite":
        # SQLite's LIKE ignores case; a range on its byte-wise (code point) order does not
        return queryset.filter(id__gte=id_prefix, id__lt=id_prefix + "\U0010ffff")
    return queryset.filter(id__startswith=id_prefix)


def executions_matching(
    using: str,
    flow_id: str | None,
    filt: spi.ExecutionFilter.Any | None,
    id_prefix: str | None,
    fields: Sequence[field_terms.SearchTerm] = (),
    *,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
) -> Any:
    """The executions a `list_executions` call selects, unpaged (each arm mirrors `spi.filter_matches`,
    each field term `spi.field_matches`; the creation bounds are a range on the created indexes, the
    last-change bounds a filter on the rows the rest selects: no index holds `updated`)."""
    queryset = _within(models.Execution.objects.using(using).all(), "created", created_after, created_before)
    queryset = _within(queryset, "updated", updated_after, updated_before)
    vendor = connections[using].vendor
    for matching in field_search.matching_sets(vendor, fields):
        queryset = queryset.filter(id__in=matching)
    if flow_id is not None:
        queryset = queryset.filter(flow_id=flow_id)
    if id_prefix:
        queryset = _id_prefixed(queryset, vendor, id_prefix)
    return queryset if filt is None else _narrowed(queryset, using, filt)


def _narrowed(queryset: Any, using: str, filt: spi.ExecutionFilter.Any) -> Any:
    """`queryset` narrowed to the executions `filt` selects."""
    active = ~Q(status_kind__in=models.TERMINAL_KINDS)
    waits = models.Wait.objects.using(using).filter(execution=OuterRef("pk"))
    Arm = spi.ExecutionFilter
    match filt:
        case Arm.Running():
            return queryset.filter(status_kind=models.RUNNING)
        case Arm.Completed():
            return queryset.filter(status_kind=models.COMPLETED)
        case Arm.Cancelled():
            return queryset.filter(status_kind=models.CANCELLED)
        case Arm.Compensating():
            return queryset.filter(status_kind=models.COMPENSATING)
        case Arm.Failed(kind):
            if kind is not None:
                # failure_kind is written for Failed rows only (rows.status_columns), so it selects them
                # alone, and its partial index then counts them without visiting the table
                return queryset.filter(failure_kind=kind)
            return queryset.filter(status_kind=models.FAILED)
        case Arm.Sleeping():
            return queryset.filter(Exists(waits.filter(kind=models.Wait.AT)))
        case Arm.Retrying():
            return queryset.filter(Exists(waits.filter(models.RETRYING)))
        case Arm.RateLimited(limit):
            return queryset.filter(Exists(waits.filter(models.rate_limited(limit))))
        case Arm.WaitingForInput(name):
            on_field = waits.filter(kind=models.Wait.ON_FIELD)
            return queryset.filter(Exists(on_field if name is None else on_field.filter(field_name=name)))
        case Arm.Cancelling():
            return queryset.filter(Q(cancel_requested=True) & active)
        case Arm.Orphaned(served_hashes):
            return queryset.filter(active & ~Q(hash__in=sorted(served_hashes)))
        case Arm.Served(served_hashes):
            return queryset.filter(~active | Q(hash__in=sorted(served_hashes)))
        case Arm.Both(first, second):
            return _narrowed(_narrowed(queryset, using, first), using, second)
        case Arm.Queued(queued):
            limited = Q(concurrency_limit__gt=0) | Q(concurrency_per_key__gt=0)
            waiting = Q(status_kind=models.RUNNING, cancel_requested=False, claim_expiry__isnull=True)
            matches = waiting & limited & ~Exists(waits)
            return queryset.filter(matches if queued else ~matches)
        case Arm.Stopped(code):
            queryset = queryset.filter(status_kind=models.STOPPED)
            return queryset if code is None else queryset.filter(stop_code=code)
    raise TypeError(f"not a filter: {filt!r}")


def history_page(tx: Tx, execution_id: str, limit: int | None, offset: int) -> spi.HistoryPage:
    """`get_history`: events in seq order (I7), a page of them when `limit` is given (at most `ALL`)."""
    found = (
        models.Event.objects.using(tx.connection.alias)
        .filter(execution_id=execution_id)
        .order_by("seq")
        .values_list("flow_id", "seq", "kind", "timestamp", "data")
    )
    start = max(0, offset)
    if limit is None or limit < 0:
        page, has_more = list(found[start:]), False
    else:
        bounded = min(limit, ALL)
        page = list(found[start : start + bounded + 1])
        has_more = len(page) > bounded
        page = page[:bounded]
    events = [rows.event_of(f, execution_id, s, k, t, d) for f, s, k, t, d in page]
    return spi.HistoryPage(events, has_more)
