"""On PostgreSQL, the overview's counts are index-only scans of the indexes migration 0008 made for them
(store.django.counts spells the queries; this holds their filters and the indexes' conditions together),
and the counts by status those of the rows (they read the status tally, tests/store/test_status_tally.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connections
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from flowdeck.store import spi
from flowdeck.store.django import counts, models, search
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import database_access, postgres_alias, truncate_store

__all__ = ["database_access", "postgres_alias"]

ROWS = 100_000
# the overview's day is a small part of a large store: here the newest twentieth
SINCE = datetime(2030, 1, 1, tzinfo=UTC) + timedelta(seconds=ROWS - ROWS // 20)

# The W7 mix in small: 60 % completed, 10 % failed (two kinds), 5 % cancelled, 2 % stopped (two codes), the
# rest running; three workflows; one row a second.
_SEED = """
INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, failure_kind, stop_code,
    cancel_requested, cancel_reason, last_seq, serial, created, updated)
SELECT 'x' || lpad(g::text, 6, '0'), 'wf' || (g % 3), 'h', '{}',
    CASE WHEN b < 60 THEN 'completed' WHEN b < 70 THEN 'failed' WHEN b < 75 THEN 'cancelled'
         WHEN b < 77 THEN 'stopped' ELSE 'running' END,
    CASE WHEN b BETWEEN 60 AND 64 THEN 'Declined' WHEN b BETWEEN 65 AND 69 THEN 'OutOfStock' END,
    CASE WHEN b = 75 THEN 'F0001' WHEN b = 76 THEN 'F0003' END,
    false, '', 1, g, timestamptz '2030-01-01' + g * interval '1 second',
    timestamptz '2030-01-01' + g * interval '1 second'
FROM (SELECT g, (g * 7919) % 100 AS b FROM generate_series(1, 100000) AS g) AS s;
INSERT INTO flowstore_wait (execution_id, path, kind, at)
SELECT 'x' || lpad(g::text, 6, '0'), CASE WHEN g % 7 = 0 THEN 'charge#retry1' ELSE 'nap' END, 'at',
    timestamptz '2031-01-01'
FROM (SELECT g, (g * 7919) % 100 AS b FROM generate_series(1, 100000) AS g) AS s WHERE b >= 77
"""
RETRYING = sum(1 for g in range(1, ROWS + 1) if (g * 7919) % 100 >= 77 and g % 7 == 0)


@pytest.fixture(scope="module")
def seeded(postgres_alias: str, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        store = DjangoStore(postgres_alias, listen=False, pool_size=1)
        store.reset()
        with connections[postgres_alias].cursor() as cursor:
            for statement in _SEED.split(";"):
                cursor.execute(statement)
            # an index-only scan needs the visibility map the vacuum sets, as autovacuum would
            cursor.execute("VACUUM ANALYZE flowstore_execution")
            cursor.execute("VACUUM ANALYZE flowstore_wait")
        try:
            yield postgres_alias
        finally:
            truncate_store(postgres_alias)
            store.reset()
            store.close()


def _plan(query: QuerySet[Any, Any]) -> str:
    plan = query.explain()
    print(plan)
    return plan


@pytest.mark.postgres
def test_the_day_s_endings_read_a_range_of_their_index(seeded: str, database_access: None) -> None:
    bucket = RawSQL(counts._BUCKET["postgresql"].format(column='"flowstore_execution"."ended"'), (0, 60))
    plan = _plan(counts.ended_counts(models.Execution.objects.using(seeded), SINCE, bucket))
    assert "Index Only Scan using fs_exec_ended" in plan, plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("word", "column", "index"),
    [
        ("failed", "failure_kind", "fs_exec_failed_flow_kind"),
        ("stopped", "stop_code", "fs_exec_stopped_flow_code"),
    ],
)
def test_failures_by_kind_and_stops_by_code_read_only_their_index(
    seeded: str, database_access: None, word: str, column: str, index: str
) -> None:
    plan = _plan(counts.code_counts(seeded, word, column))
    assert f"Index Only Scan using {index}" in plan, plan


@pytest.mark.postgres
async def test_the_counts_are_those_of_the_rows(seeded: str, database_access: None) -> None:
    store = DjangoStore(seeded, listen=False, pool_size=1)
    try:
        by_status = await store.count_by_status()
        by_code = await store.count_by_code()
    finally:
        await store.aclose()
    every = [(g * 7919) % 100 for g in range(1, ROWS + 1)]
    assert sum(c.executions for c in by_status) == ROWS
    assert sum(c.executions for c in by_status if c.status == "failed") == sum(60 <= b < 70 for b in every)
    declined = sum(c.executions for c in by_code if c.code == "Declined")
    assert declined == sum(60 <= b <= 64 for b in every)
    assert sum(c.executions for c in by_code if c.code == "F0003") == every.count(76)


@pytest.mark.postgres
def test_failure_kinds_skip_through_their_index(seeded: str, database_access: None) -> None:
    with connections[seeded].cursor() as cursor:
        cursor.execute("EXPLAIN " + counts._KINDS_SKIPPING)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "fs_exec_failkind_created" in plan, plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.postgres
async def test_failure_kinds_are_each_kind_once(seeded: str, database_access: None) -> None:
    store = DjangoStore(seeded, listen=False, pool_size=1)
    try:
        assert list(await store.failure_kinds()) == ["Declined", "OutOfStock"]
    finally:
        await store.aclose()


@pytest.mark.postgres
def test_the_retrying_total_reads_only_the_retry_index(seeded: str, database_access: None) -> None:
    retrying = spi.ExecutionFilter.Retrying()
    matching = search.executions_matching(seeded, None, retrying, None)
    plan = _plan(search.counted(seeded, None, retrying, None, matching))
    assert "fs_wait_retry" in plan, plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.postgres
async def test_the_retrying_filter_and_the_overview_count_the_same(
    seeded: str, database_access: None
) -> None:
    store = DjangoStore(seeded, listen=False, pool_size=1)
    try:
        page = await store.list_executions(None, spi.ExecutionFilter.Retrying(), limit=0)
        longest = await store.waiting_longest(3, retrying=True)
    finally:
        await store.aclose()
    assert RETRYING > 3
    assert page.total == longest.total == RETRYING
    assert [w.paths for w in longest.items] == [("charge#retry1",)] * 3
