"""Worker processes starting together declare the same schedules at once (`runtime.serve` puts every
declared schedule): on PostgreSQL a declaration whose insert meets another's uncommitted row waits for it and
then answers that row, never a duplicate-key error. A whole-suite run saw a SIGKILL test's worker exit at
start-up on exactly that (`put_schedule: duplicate key value violates unique constraint
"flowstore_schedule_pkey"`)."""

from __future__ import annotations

import asyncio
import json
import time

import psycopg
import pytest

from flowdeck.store import schedules
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import database_access, postgres_alias, postgres_url

__all__ = ["database_access", "postgres_alias"]

pytestmark = pytest.mark.postgres

NIGHTLY = schedules.ScheduleSpec("nightly", "wf1", cron="0 3 * * *", timezone="UTC", declared=True)
NOON = schedules.ScheduleSpec("nightly", "wf1", cron="0 12 * * *", timezone="UTC", declared=True)


async def _until_a_session_waits_on_a_lock(watcher: psycopg.Connection, seconds: float = 30.0) -> None:
    """Until a session of this database waits for a lock (the declaration's insert, on the holder's row)."""
    deadline = time.monotonic() + seconds
    while True:
        waiting = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
        if waiting is not None and waiting[0] > 0:
            return
        assert time.monotonic() < deadline, "the declaration never waited for the holder's row"
        await asyncio.sleep(0.01)


async def _declared_beside(
    alias: str, spec: schedules.ScheduleSpec, holders: schedules.ScheduleSpec
) -> schedules.Schedule:
    """`spec` put through the store while another transaction has inserted `holders`, uncommitted; that
    transaction commits once the put waits for its row."""
    store = DjangoStore(alias, ManualClock(), pool_size=1)
    store.reset()
    try:
        with (
            psycopg.connect(postgres_url(), autocommit=False) as holder,
            psycopg.connect(postgres_url(), autocommit=True) as watcher,
        ):
            holder.execute(
                "INSERT INTO flowstore_schedule (name, definition, paused, cursor, created, updated)"
                " VALUES (%s, %s, false, now(), now(), now())",
                (holders.name, json.dumps(holders.to_json(), sort_keys=True)),
            )
            declaring = asyncio.ensure_future(store.put_schedule(spec))
            await _until_a_session_waits_on_a_lock(watcher)
            holder.commit()
        declared = await asyncio.wait_for(declaring, 30)
        assert [s.spec for s in await store.list_schedules()] == [declared.spec]
        return declared
    finally:
        await store.aclose()


async def test_a_declaration_racing_the_same_one_answers_the_committed_row(
    postgres_alias: str, database_access: None
) -> None:
    assert (await _declared_beside(postgres_alias, NIGHTLY, NIGHTLY)).spec == NIGHTLY


async def test_a_declaration_racing_an_older_definition_redefines_it(
    postgres_alias: str, database_access: None
) -> None:
    assert (await _declared_beside(postgres_alias, NOON, NIGHTLY)).spec == NOON
