"""On PostgreSQL, at 100,000 executions, the admin's executions list reads an index, never the whole table:
its page (newest created first; an incremental sort adds the id Django adds for a total order) and its
capped count, unfiltered and filtered by workflow, status or both; and one execution's events, through the
events' unique (execution, seq) index."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib import admin
from django.db import connections
from django.test import RequestFactory

from flowdeck.store.django import admin as store_admin
from flowdeck.store.django import models
from tests.store.django_support import database_access, postgres_alias
from tests.store.test_overview_plan import seeded

__all__ = ["database_access", "postgres_alias", "seeded"]

STAFF = SimpleNamespace(is_active=True, is_staff=True, is_superuser=False, has_perm=lambda *_: False)


def _changelist(settings: Any, alias: str, model: type[Any], query: dict[str, str]) -> Any:
    """The admin's change list of `model` as a staff member asks for it with `query`, on `alias`."""
    settings.FLOWDECK_DATABASE_ALIAS = alias
    request = RequestFactory().get(f"/admin/flowstore/{model._meta.model_name}/", query)
    request.user = STAFF
    return admin.site._registry[model].get_changelist_instance(request)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "query", [{}, {"workflow": "wf1"}, {"status": "failed"}, {"workflow": "wf2", "status": "stopped"}]
)
def test_the_executions_list_pages_and_counts_through_an_index(
    seeded: str, database_access: None, settings: Any, query: dict[str, str]
) -> None:
    changelist = _changelist(settings, seeded, models.Execution, query)
    page = changelist.result_list.explain()
    counted = changelist.queryset.order_by()[: store_admin.CAP + 1].explain()
    print(page, counted, sep="\n")
    if "workflow" in query:
        assert f"flow_id)::text = '{query['workflow']}'" in page, page
    assert "Seq Scan" not in page, page
    assert "Index" in page, page
    # the count stops at CAP + 1 rows: of a common value the planner scans until it has them (a third of
    # the rows are wf1's); a rare one (wf2's stopped: 2 % of a third) it finds through an index
    assert counted.startswith("Limit"), counted
    assert query.get("status") != "stopped" or "Seq Scan" not in counted, counted
    assert changelist.result_count == min(changelist.queryset.count(), store_admin.CAP + 1)


@pytest.fixture(scope="module")
def with_events(seeded: str, django_db_blocker: Any) -> Iterator[str]:
    """Two events for each seeded execution (200,000 rows)."""
    with django_db_blocker.unblock(), connections[seeded].cursor() as cursor:
        cursor.execute(
            "INSERT INTO flowstore_event (execution_id, seq, flow_id, kind, timestamp, data, exec_created)"
            " SELECT 'x' || lpad(g::text, 6, '0'), s, 'wf' || (g % 3), 'Created',"
            " timestamptz '2030-01-01' + g * interval '1 second', '{}',"
            " timestamptz '2030-01-01' + g * interval '1 second'"
            " FROM generate_series(1, 100000) AS g, generate_series(1, 2) AS s"
        )
        cursor.execute("VACUUM ANALYZE flowstore_event")
    try:
        yield seeded
    finally:
        with django_db_blocker.unblock(), connections[seeded].cursor() as cursor:
            cursor.execute("TRUNCATE flowstore_event")  # 200,000 rows: faster than DELETE


@pytest.mark.postgres
@pytest.mark.parametrize("query", [{"execution__id__exact": "x000007"}, {"q": "x000007"}])
def test_one_execution_s_events_read_its_index(
    with_events: str, database_access: None, settings: Any, query: dict[str, str]
) -> None:
    changelist = _changelist(settings, with_events, models.Event, query)
    plan = changelist.result_list.explain()
    print(plan)
    # the history is partitioned by day (migration 0018): the seeded rows, of 2030, sit in the DEFAULT
    # partition and are read through its (execution, seq) index; an empty day partition is scanned for free
    assert "execution_id_seq_exec_created_key on flowstore_event_default" in plan, plan
    assert "Seq Scan on flowstore_event_default" not in plan, plan
    assert [e.seq for e in changelist.result_list] == [1, 2]
