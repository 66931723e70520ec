"""On PostgreSQL, a search by a recorded value is answered from an index: a number, true, false or null from
the GIN index on the values' jsonb (migration 0007 and `queries.FIELD_JSONB` spell one expression), text
(equal ignoring case, by prefix, by part) from the trigram index on the values' text, and a `text:` term
from the trigram index on the messages (migration 0012 and `search_queries.MESSAGE_TEXT`), a range from the
numbers kept by path (migration 0013, every bound on one path in one scan): this holds them together."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from flowdeck.store import spi
from flowdeck.store.django import queries
from flowdeck.store.django.store import DjangoStore, executions_matching
from flowdeck.store.field_terms import parse_field_term
from tests.store.django_support import database_access, postgres_alias, truncate_store

__all__ = ["database_access", "postgres_alias"]

# 20,000 executions, each with an `order` input of one of 1,000 customers, and a step output.
_SEED = """
INSERT INTO flowstore_execution (id, flow_id, hash, status, status_kind, cancel_requested, cancel_reason,
    last_seq, serial, created, updated)
SELECT 'x' || lpad(g::text, 6, '0'), 'wf' || (g % 4), 'h', '{"type":"running"}', 'running', false, '', 1, g,
    timestamptz '2030-01-01' + g * interval '1 second', timestamptz '2030-01-01' + g * interval '1 second'
FROM generate_series(1, 20000) AS g;
UPDATE flowstore_execution SET status_kind = 'failed',
    status = '{"type":"failed","error":"card declined r' || (serial % 1000) || '","kind":null}'
WHERE serial % 2 = 0;
INSERT INTO flowstore_field (execution_id, name, value, tag)
SELECT 'x' || lpad(g::text, 6, '0'), 'order',
    '{"customer":"c' || (g % 1000) || '","total":' || (g % 97)
    || ',"items":[{"sku":"s' || (g % 13) || '","qty":' || (g % 5) || '}]}',
    'Order'
FROM generate_series(1, 20000) AS g;
INSERT INTO flowstore_field (execution_id, name, value, tag)
SELECT 'x' || lpad(g::text, 6, '0'), 'charge', '{"id":"ch' || g || '"}', 'Charge'
FROM generate_series(1, 20000) AS g;
SELECT gin_clean_pending_list('fs_exec_message_trgm'::regclass);
SELECT gin_clean_pending_list('fs_field_value_trgm'::regclass);
ANALYZE flowstore_execution;
ANALYZE flowstore_field;
ANALYZE flowstore_field_number;
"""


@pytest.fixture(scope="module")
def seeded(postgres_alias: str, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        store = DjangoStore(postgres_alias, listen=False, pool_size=1)
        store.reset()
        with connections[postgres_alias].cursor() as cursor:
            for statement in _SEED.split(";"):
                if statement.strip():
                    cursor.execute(statement)
        try:
            yield postgres_alias
        finally:
            truncate_store(postgres_alias)
            store.reset()
            store.close()


def _explain(alias: str, terms: list[str], filt: spi.ExecutionFilter.Any | None = None) -> str:
    matching = executions_matching(alias, None, filt, None, [parse_field_term(t) for t in terms])
    inner, params = matching.values("id", "created", "serial").query.sql_with_params()
    with connections[alias].cursor() as cursor:
        sql = queries.COUNTED_SORTED_PAGE.text("postgresql").format(matching=inner, order="created")
        cursor.execute("EXPLAIN " + sql, [*params, 25, 0])
        page = "\n".join(row[0] for row in cursor.fetchall())
    return f"{page}\n{matching.values('id').explain()}"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("terms", "index"),
    [
        (["field:order.customer=c7"], "fs_field_value_trgm"),
        (["field:order.customer=C7"], "fs_field_value_trgm"),
        (["field:order.customer^=c77"], "fs_field_value_trgm"),
        (["field:order.customer~=177"], "fs_field_value_trgm"),
        (["field:order.items.0.sku=s3"], "fs_field_value_trgm"),
        (["field:order.total=7"], "fs_field_value_jsonb"),
        (["field:order.customer=c7", "field:order.total=7"], "fs_field_value_trgm"),
        (["field:charge.id=ch12"], "fs_field_value_trgm"),
        (["text:R421"], "fs_exec_message_trgm"),
    ],
)
def test_a_field_search_reads_an_index(
    seeded: str, database_access: None, terms: list[str], index: str
) -> None:
    plans = _explain(seeded, terms)
    print(plans)
    assert index in plans, plans
    assert "Seq Scan on flowstore_field" not in plans, plans
    assert "Seq Scan on flowstore_execution" not in plans, plans


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("terms", "bounds"),
    [
        (["field:order.total>=95"], ["value >= '95'::numeric"]),
        (
            ["field:order.total>=90", "field:order.total<92"],
            ["value >= '90'::numeric", "value < '92'::numeric"],
        ),
        (["field:order.items.0.qty<=0"], ["value <= '0'::numeric"]),
    ],
)
def test_a_range_search_reads_the_number_index_once_for_all_its_bounds(
    seeded: str, database_access: None, terms: list[str], bounds: list[str]
) -> None:
    """Every bound on one path in one index condition: `<92` alone would read nearly every entry. (At these
    20,000 rows the planner may read the executions whole rather than probe a few hundred ids; at W7's
    million it probes them, which the bench's figure shows.)"""
    plans = _explain(seeded, terms)
    print(plans)
    conditions = [line for line in plans.splitlines() if "Index Cond" in line and "path =" in line]
    assert len(conditions) == 2, plans  # one in the page's plan, one in the ids' plan
    for condition in conditions:
        assert all(bound in condition for bound in bounds), plans
    assert "fs_field_number_range" in plans, plans
    assert "Seq Scan on flowstore_field" not in plans, plans


@pytest.mark.postgres
def test_a_field_search_with_a_status_reads_the_gin_index(seeded: str, database_access: None) -> None:
    plans = _explain(seeded, ["field:order.total=7"], spi.ExecutionFilter.Running())
    assert "fs_field_value_jsonb" in plans, plans


@pytest.mark.postgres
async def test_a_field_search_pages_its_matches_with_the_exact_total(
    seeded: str, database_access: None
) -> None:
    store = DjangoStore(seeded, listen=False, pool_size=1)
    try:
        term = parse_field_term("field:order.customer=c7")
        page = await store.list_executions(None, None, 5, 2, fields=[term])
    finally:
        await store.aclose()
    assert page.total == 20
    # customer c7 is every 1,000th row from 7; newest first, after skipping two
    assert [s.execution_id for s in page.items] == [f"x{g:06d}" for g in (17007, 16007, 15007, 14007, 13007)]


@pytest.mark.postgres
async def test_a_value_jsonb_refuses_is_still_written(postgres_alias: str, database_access: None) -> None:
    """jsonb cannot hold a \\u0000 escape; the index skips such a value rather than fail its write (so a
    field term cannot find it on PostgreSQL), and every other value is found as ever."""
    store = DjangoStore(postgres_alias, listen=False, pool_size=1)
    store.reset()
    event = spi.Event(spi.EventKind.CREATED, "wf1", "e1", store.now())
    nul = spi.FieldData.of({"note": "a\x00b", "customer": "ada"}, "Order")
    try:
        assert await store.create_execution_if_absent("e1", "wf1", "", spi.Running(), event, {"order": nul})
        assert await store.get_field("e1", "order") == nul
        found = await store.list_executions(None, fields=[parse_field_term("field:order.customer=ada")])
    finally:
        store.reset()
        await store.aclose()
    assert found.total == 0
