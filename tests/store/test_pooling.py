"""The PostgreSQL store behind PgBouncer, beyond the conformance suite (test_pgbouncer_conformance.py): a
store refuses to LISTEN through the transaction pool, one store's write wakes another store's wait through
the pooler (NOTIFY at the commit of a pooled transaction, heard on the session-mode entry), and the writers
on the session-mode entry run the store's verbs with their statements prepared."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import psycopg
import pytest

from bench import pgbouncer
from flowdeck.store import spi
from flowdeck.store.clock import SystemClock
from flowdeck.store.django.pooling import DIRECT, ListenNeedsSession, Pooling
from flowdeck.store.django.store import DjangoStore
from tests.store.django_support import POSTGRES_DB, database_access
from tests.store.pooler_support import (
    POOLING,
    SESSION_ALIAS,
    pgbouncer_running,
    pooled_alias,
    postgres_alias,
)

__all__ = ["database_access", "pgbouncer_running", "pooled_alias", "postgres_alias"]

pytestmark = pytest.mark.postgres

WF = "wf"
SERVED = frozenset({(WF, "")})


def _event(eid: str, kind: spi.EventKind = spi.EventKind.CREATED) -> spi.Event:
    return spi.Event(kind, WF, eid, SystemClock().now(), {})


@pytest.fixture
def pooled(pooled_alias: str, database_access: None) -> str:
    emptier = DjangoStore(pooled_alias, listen=False, pool_size=1, pooling=POOLING)
    emptier.reset()
    emptier.close()
    return pooled_alias


def test_what_may_prepare_and_what_must_listen_in_a_session() -> None:
    assert DIRECT.writers_prepare
    assert not Pooling(transaction=True, listen_using="s").writers_prepare
    assert Pooling(transaction=True, listen_using="s", writes_using="s").writers_prepare
    Pooling(transaction=True).check(listen=False)  # a store that never listens needs no session
    with pytest.raises(ListenNeedsSession, match="LISTEN hears nothing"):
        Pooling(transaction=True).check(listen=True)


def test_a_store_refuses_to_listen_through_the_transaction_pool(pooled: str) -> None:
    with pytest.raises(ListenNeedsSession):
        DjangoStore(pooled, pooling=Pooling(transaction=True))


async def test_a_write_through_the_pool_wakes_another_store_listening_on_the_session_entry(
    pooled: str,
) -> None:
    listening = DjangoStore(pooled, SystemClock(), pool_size=1, pooling=POOLING)
    writing = DjangoStore(pooled, SystemClock(), pool_size=1, pooling=POOLING)
    try:
        await listening._writes.start_listening()  # LISTEN in place before the write
        waiting = asyncio.ensure_future(listening.wait_for_change(timedelta(seconds=30)))
        await asyncio.sleep(0)  # the wait has read the hub's generation
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await writing.create_execution_if_absent("e1", WF, "", spi.Running(), _event("e1"))
        await asyncio.wait_for(waiting, 20)  # woken by the NOTIFY, not by its 30 s timeout
        assert loop.time() - began < 20
    finally:
        await listening.aclose()
        await writing.aclose()


async def test_writers_on_the_session_entry_prepare_and_run_the_verbs(pooled: str) -> None:
    pooling = Pooling(transaction=True, listen_using=SESSION_ALIAS, writes_using=SESSION_ALIAS)
    store = DjangoStore(pooled, SystemClock(), pool_size=1, pooling=pooling)
    try:
        for i in range(6):  # the same shapes again and again: prepared at their first run
            assert await store.create_execution_if_absent(f"e{i}", WF, "", spi.Running(), _event(f"e{i}"))
        handles = await store.claim_ready(SERVED, "me", timedelta(seconds=30), 10, timedelta(0))
        assert sorted(h.state.execution_id for h in handles) == [f"e{i}" for i in range(6)]
        for handle in handles:
            assert await handle.renew_claim(timedelta(seconds=30))
            done = spi.Terminal(spi.Completed(), _event(handle.state.execution_id, spi.EventKind.COMPLETED))
            assert await handle.finish(done) is spi.StatusOutcome.APPLIED
        [writer] = store._writes.writers.values()
        assert writer.writes >= 6 + 6 * 2
        # the writers' sessions hold their prepared statements: the pooler kept each one's session
        conn = next(iter(writer._open))
        assert (await (await conn.execute("SHOW plan_cache_mode", prepare=False)).fetchone()) == (
            "force_generic_plan",
        )
        prepared = await (
            await conn.execute("SELECT count(*) FROM pg_prepared_statements", prepare=False)
        ).fetchone()
        assert prepared is not None
        assert prepared[0] >= 1
    finally:
        await store.aclose()


def test_the_transaction_pool_refuses_startup_options(
    pgbouncer_running: pgbouncer.PgBouncer, pooled: str
) -> None:
    """Why the writers send none behind a pooler: PgBouncer 1.18 refuses the connection outright."""
    with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter: options"):
        psycopg.connect(pgbouncer_running.url(POSTGRES_DB), options="-c plan_cache_mode=force_generic_plan")
