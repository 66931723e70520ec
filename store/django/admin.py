"""The Django admin's read-only pages of the store's tables: executions (filterable by workflow and status),
their events, and workflows with their versions, each linking to its console page.

Read-only: nothing is added, changed or deleted here (the engine and the console's verbs write these rows,
and a hand edit would break the invariants of `store.spi`); every staff member may look. The lists stay
quick at millions of rows: they are ordered by an index (executions newest created first, events by id),
sort by no other column, count at most `CAP` rows (`CappedPaginator`) and never the whole table
(`show_full_result_count`), offer filters whose choices are read from small tables or constants (never a
`SELECT DISTINCT` over the executions), and show no facet counts.

The console's pages are linked by URL name (`reverse`), so the links follow wherever a project mounts the
console; where it is not mounted, no link is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.options import ShowFacets
from django.core.paginator import Paginator
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html

from flowdeck.store.django import models
from flowdeck.store.events import EventKind

__all__ = ["CAP", "CappedPaginator", "EventAdmin", "ExecutionAdmin", "WorkflowAdmin"]

CAP = 10_000  # the rows a list counts at most; past it the list says "more than" and pages no further


class CappedPaginator(Paginator):
    """Counts at most `CAP` + 1 rows (a `COUNT(*)` over a `LIMIT`, so a cost bounded at any size); a list
    of more pages through its first `CAP` rows."""

    cap = CAP

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet):
            rows = rows.order_by()  # which rows are counted does not matter, only how many (at most CAP + 1)
        return min(rows[: CAP + 1].count(), CAP + 1)

    @cached_property
    def num_pages(self) -> int:
        return super().num_pages if self.count <= CAP else -(-CAP // self.per_page)


def store_alias() -> str:
    """The database the executions live in (`FLOWDECK_DATABASE_ALIAS`, as the console's store reads it)."""
    return str(getattr(settings, "FLOWDECK_DATABASE_ALIAS", "default"))


def console_link(name: str, *args: str, fragment: str = "", label: str = "console page") -> str:
    """A link to the console's page `name` (a URL name), or "" where the console is not mounted."""
    try:
        url = reverse(name, args=args)
    except NoReverseMatch:
        return ""
    return format_html('<a href="{}{}">{}</a>', url, fragment, label)


class ReadOnlyAdmin(admin.ModelAdmin):
    """What the store's pages share: viewable by staff, never written, bounded lists."""

    paginator = CappedPaginator
    show_full_result_count = False
    show_facets = ShowFacets.NEVER
    actions = None
    list_per_page = 50

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(store_alias())

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """An id or the start of one (case-sensitive on PostgreSQL, whose text primary key's pattern index
        answers it; an `icontains`, Django's default, would read every row)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(**{f"{self.search_key}__startswith": term}), False

    search_key = "pk"


class WorkflowFilter(admin.SimpleListFilter):
    """By workflow: the choices are the registered workflows (a small table)."""

    title = "workflow"
    parameter_name = "workflow"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Sequence[tuple[str, str]]:
        ids = models.Workflow.objects.using(store_alias()).order_by("id").values_list("id", flat=True)
        return [(i, i) for i in ids]

    def has_output(self) -> bool:
        return True  # applied even with no workflow registered (else Django would drop the filter)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(flow_id=value) if value else queryset


class StatusFilter(admin.SimpleListFilter):
    """By status kind: the choices are the kinds a row can carry."""

    title = "status"
    parameter_name = "status"
    KINDS = (
        models.RUNNING,
        models.STOPPED,
        models.COMPENSATING,
        models.COMPLETED,
        models.FAILED,
        models.CANCELLED,
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> Sequence[tuple[str, str]]:
        return [(kind, kind) for kind in self.KINDS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(status_kind=value) if value else queryset


@admin.register(models.Execution)
class ExecutionAdmin(ReadOnlyAdmin):
    list_display = ("id", "flow_id", "status_kind", "code", "created", "console")
    list_filter = (WorkflowFilter, StatusFilter)
    ordering = ("-created", "-serial")
    sortable_by = ("created",)
    search_fields = ("id",)
    search_help_text = "An execution id, or the start of one."
    readonly_fields = ("console", "events")
    fieldsets = (
        (None, {"fields": ("id", "flow_id", "hash", "console", "events")}),
        ("Status", {"fields": ("status_kind", "status", "failure_kind", "stop_code")}),
        ("Cancel", {"fields": ("cancel_requested", "cancel_reason")}),
        ("Claim", {"fields": ("executor", "claim_expiry", "claim_token")}),
        ("Record", {"fields": ("last_seq", "serial", "created", "updated")}),
    )

    @admin.display(description="failure kind or stop code")
    def code(self, row: models.Execution) -> str:
        return row.failure_kind or row.stop_code or ""

    @admin.display(description="console")
    def console(self, row: models.Execution) -> str:
        return console_link("flowdeck:console-execution", row.id)

    @admin.display(description="events")
    def events(self, row: models.Execution) -> str:
        url = reverse("admin:flowstore_event_changelist")
        return format_html('<a href="{}?execution__id__exact={}">{} events</a>', url, row.id, row.last_seq)


class EventKindFilter(admin.SimpleListFilter):
    """By kind, within one execution's events only: across the whole table the kind has no index, and a
    rare kind would be looked for in every row."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> Sequence[tuple[str, str]]:
        if "execution__id__exact" not in request.GET:
            return []
        return [(kind.value, kind.value) for kind in EventKind]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value or "execution__id__exact" not in request.GET:
            return queryset
        return queryset.filter(kind=value)


@admin.register(models.Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "execution_id", "seq", "kind", "flow_id", "timestamp", "console")
    list_filter = (EventKindFilter,)
    ordering = ("-id",)
    sortable_by = ()
    search_fields = ("execution__id",)
    search_help_text = "An execution id: that execution's events, in its order."
    fields = ("id", "execution_id", "seq", "kind", "flow_id", "timestamp", "data", "console")
    readonly_fields = ("execution_id", "console")

    def get_ordering(self, request: HttpRequest) -> Sequence[str]:
        """One execution's events in its order, read from the events' unique (execution, seq) index; all
        events newest first, by the primary key. (By id within one execution, the planner might walk the
        whole table's key backwards looking for that execution's rows.)"""
        one = request.GET.get("execution__id__exact") or request.GET.get("q", "").strip()
        return ("execution", "seq") if one else ("-id",)

    @admin.display(description="console")
    def console(self, row: models.Event) -> str:
        return console_link("flowdeck:console-execution", row.execution_id, label="execution page")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """One execution's events, by its exact id (the events' unique index leads with it)."""
        term = search_term.strip()
        return (queryset.filter(execution_id=term), False) if term else (queryset, False)


class VersionInline(admin.TabularInline):
    model = models.WorkflowVersion
    fields = ("hash", "registered")
    readonly_fields = ("hash", "registered")
    ordering = ("-registered",)
    extra = 0
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(store_alias())

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(models.Workflow)
class WorkflowAdmin(ReadOnlyAdmin):
    list_display = ("id", "latest_hash", "updated", "executions", "console")
    ordering = ("id",)
    sortable_by = ("id", "updated")
    search_fields = ("id",)
    fields = ("id", "latest_hash", "updated", "executions", "console")
    readonly_fields = ("executions", "console")
    inlines = (VersionInline,)

    @admin.display(description="console")
    def console(self, row: models.Workflow) -> str:
        return console_link("flowdeck:console-workflow", row.id)

    @admin.display(description="executions")
    def executions(self, row: models.Workflow) -> str:
        url = reverse("admin:flowstore_execution_changelist")
        return format_html('<a href="{}?workflow={}">executions</a>', url, row.id)
