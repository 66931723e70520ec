"""On PostgreSQL, a purge batch is chosen through the creation-ordered indexes the list already has, with no
sequential scan and no index of its own (none may hold `updated`: test_django_specific keeps it out of
every index). For a common status the planner scans one backward and stops at `limit` rows; for a rare one
it may read that status's few matches by a bitmap scan of a status index and sort those."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connections

from flowdeck.store.django import purge_queries
from tests.store.django_support import database_access, postgres_alias
from tests.store.test_overview_plan import seeded

__all__ = ["database_access", "postgres_alias", "seeded"]

# the older half of the seed's 100,000 rows (one a second from 2030-01-01) ended before it
CUTOFF = datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=50_000)


def _plan(alias: str, kind: str, workflow_id: str | None) -> str:
    params: dict[str, Any] = {"kind": kind, "before": CUTOFF, "limit": 500}
    flow = ""
    if workflow_id is not None:
        params["flow"], flow = workflow_id, " AND flow_id = %(flow)s"
    sql = purge_queries.PURGE_BATCH.text("postgresql").format(flow=flow)
    with connections[alias].cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    print(plan)
    return plan


@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["completed", "failed", "cancelled"])
@pytest.mark.parametrize("workflow_id", [None, "wf1"])
def test_a_purge_batch_is_an_index_scan_that_stops_at_its_limit(
    seeded: str, database_access: None, kind: str, workflow_id: str | None
) -> None:
    plan = _plan(seeded, kind, workflow_id)
    assert "Index Scan" in plan, plan  # whichever of the execution's indexes the planner finds cheapest
    assert "Seq Scan" not in plan, plan
    assert plan.lstrip().startswith("Limit"), plan
    if kind == "completed" and workflow_id is None:  # 60 % of the rows: read in order, never sorted
        assert "Index Scan Backward" in plan, plan
        assert "Sort" not in plan, plan
