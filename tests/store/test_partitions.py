"""The history's day partitions on PostgreSQL (migration 0018, store/django/partitions.py): retention drops a
day whole once every execution created that day ended and aged, keeps a day that holds a live execution
(its ended ones go by rows), and the migration carries an existing database over with its rows."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connections

from flowdeck.console import retention as console_retention
from flowdeck.console import runtime
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.conformance.support import StoreFixture
from flowdeck.store.django import partitions
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.memory import MemoryStore
from tests.store.django_support import database_access, postgres_alias

__all__ = ["database_access", "postgres_alias"]

pytestmark = pytest.mark.postgres

DAY1 = date(2041, 3, 1)  # far from every other case's clock, so no other case's rows land in these days
DAYS = [DAY1 + timedelta(days=n) for n in range(3)]
POLICY = console_retention.RetentionPolicy(older_than=timedelta(days=7), pause=timedelta(0))


def _at(day: date, hour: int) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def _sql(alias: str, sql: str, params: Any = None) -> list[Any]:
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def _partitions_now(alias: str) -> set[str]:
    names = _sql(
        alias, "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE 'flowstore_event_p2041%%'"
    )
    return {name for (name,) in names}


async def _partitions(alias: str) -> set[str]:
    return await asyncio.to_thread(_partitions_now, alias)


async def _events_in(alias: str, day: date) -> dict[str, int]:
    sql = f"SELECT execution_id, count(*) FROM {partitions.name_of(day)} GROUP BY 1"
    return dict(await asyncio.to_thread(_sql, alias, sql))


@pytest.fixture
async def world(
    postgres_alias: str, database_access: None
) -> AsyncIterator[tuple[DjangoStore, StoreFixture]]:
    clock = ManualClock(_at(DAY1, 9))
    store = DjangoStore(postgres_alias, clock, pool_size=2)
    store.reset()
    try:
        yield store, StoreFixture(store, clock)
    finally:
        await asyncio.to_thread(store.reset)
        await store.aclose()
        await asyncio.to_thread(_drop_days, postgres_alias)


def _drop_days(alias: str) -> None:
    for name in _partitions_now(alias):
        _sql(alias, f"DROP TABLE {name}")
    connections[alias].close()


async def _ended(fx: StoreFixture, eid: str) -> None:
    await fx.mk_execution(eid, fields={"order": spi.FieldData.of({"customer": eid}, "Order")})
    await fx.mk_field(eid, "charge", 12)
    await fx.terminate(eid, spi.Completed())


async def _three_days(store: DjangoStore, fx: StoreFixture) -> None:
    """Day 1: a1, a2 created and ended. Day 2: b1 created and left running, b2 created and ended. Day 3:
    c1 created and ended. The clock then stands at day 10, 12:00: day 3's end is within the 7 days kept."""
    assert await store.prepare_history(DAYS[0], DAYS[-1]) == DAYS
    await _ended(fx, "a1")
    await _ended(fx, "a2")
    await fx.clock.advance(86_400)
    await fx.mk_execution("b1")
    await _ended(fx, "b2")
    await fx.clock.advance(86_400 + 4 * 3600)
    await _ended(fx, "c1")
    await fx.clock.advance(7 * 86_400 - 3600)


async def test_retention_drops_a_day_whose_executions_all_ended_and_aged(
    world: tuple[DjangoStore, StoreFixture], postgres_alias: str
) -> None:
    store, fx = world
    await _three_days(store, fx)
    assert await _events_in(postgres_alias, DAYS[0]) == {
        "a1": 3,
        "a2": 3,
    }  # every event in its creation's day
    assert await store.prepare_history(DAYS[0], DAYS[-1]) == []  # prepared once

    purged = await console_retention.apply(store, POLICY, fx.clock)

    assert purged == 3  # a1, a2 with their day; b2 by rows
    assert (await _partitions(postgres_alias)) == {partitions.name_of(DAYS[1]), partitions.name_of(DAYS[2])}
    for eid in ("a1", "a2", "b2"):
        assert await store.get_execution(eid) is None
        assert await store.get_all_fields(eid) == {}
        assert list((await store.get_history(eid)).events) == []
    assert await store.get_execution("c1") is not None  # ended within the 7 days: kept, with its day


async def test_a_day_holding_a_live_execution_is_kept_whole_until_it_ended_and_aged(
    world: tuple[DjangoStore, StoreFixture], postgres_alias: str
) -> None:
    store, fx = world
    await _three_days(store, fx)
    history = list((await store.get_history("b1")).events)

    await console_retention.apply(store, POLICY, fx.clock)

    assert partitions.name_of(DAYS[1]) in (await _partitions(postgres_alias))
    assert await _events_in(postgres_alias, DAYS[1]) == {"b1": 1}  # b2's events went with it, by rows
    assert list((await store.get_history("b1")).events) == history
    await fx.terminate("b1", spi.Completed())
    assert await console_retention.apply(store, POLICY, fx.clock) == 0  # ended, but not yet 7 days ago
    assert partitions.name_of(DAYS[1]) in (await _partitions(postgres_alias))

    await fx.clock.advance(8 * 86_400)
    assert await console_retention.apply(store, POLICY, fx.clock) == 2  # b1 and c1, each with its day
    assert (await _partitions(postgres_alias)) == set()
    assert await store.get_execution("b1") is None
    assert await store.list_executions(None) == spi.ExecutionPage([], 0)


async def test_the_workers_chore_prepares_today_and_the_coming_week(
    world: tuple[DjangoStore, StoreFixture], postgres_alias: str
) -> None:
    store, fx = world
    chore = runtime.history_chore(store, fx.clock)
    assert chore is not None
    assert (chore.name, chore.every) == ("history partitions", timedelta(hours=1))
    await chore.run()
    week = {partitions.name_of(DAY1 + timedelta(days=n)) for n in range(partitions.AHEAD + 1)}
    assert await _partitions(postgres_alias) == week
    await chore.run()  # the next round finds them made
    assert await _partitions(postgres_alias) == week
    assert runtime.history_chore(MemoryStore(), fx.clock) is None  # nothing to prepare elsewhere
