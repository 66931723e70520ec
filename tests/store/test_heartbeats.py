"""The Django store's executor heartbeats (not SPI): an upsert per executor, listed while fresh."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from store.clock import ManualClock
from store.django.store import DjangoStore
from tests.store.django_support import backend_alias, database_access, postgres_alias, sqlite_alias

__all__ = ["backend_alias", "database_access", "postgres_alias", "sqlite_alias"]

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _health(executor_id: str, **changes: object) -> dict[str, object]:
    return {
        "executor_id": executor_id,
        "host": "box",
        "pid": 41,
        "workers_alive": 2,
        "workers_configured": 2,
        "poll_failures": 0,
        "last_poll_failure": None,
        "last_poll_failure_at": None,
        "store_failures": 0,
        "claims_held": ("x-2", "x-1"),
        **changes,
    }


async def test_a_heartbeat_is_upserted_and_listed_while_fresh(backend_alias: str) -> None:
    clock = ManualClock(T0)
    store = DjangoStore(backend_alias, clock)
    store.reset()
    try:
        await store.record_heartbeat(_health("ex-a"))
        await clock.advance(5)
        failed_at = T0 + timedelta(seconds=3)
        await store.record_heartbeat(
            _health(
                "ex-a",
                workers_alive=1,
                poll_failures=3,
                last_poll_failure="OperationalError: <gone>",
                last_poll_failure_at=failed_at,
                store_failures=1,
                claims_held=(),
            )
        )
        await store.record_heartbeat(_health("ex-b", host="other", pid=7))

        assert await store.list_heartbeats(timedelta(minutes=1)) == [
            {
                "executor_id": "ex-a",
                "host": "box",
                "pid": 41,
                "started": T0,
                "updated": T0 + timedelta(seconds=5),
                "workers_alive": 1,
                "workers_configured": 2,
                "poll_failures": 3,
                "last_poll_failure": "OperationalError: <gone>",
                "last_poll_failure_at": failed_at,
                "store_failures": 1,
                "claims_held": [],
            },
            {
                "executor_id": "ex-b",
                "host": "other",
                "pid": 7,
                "started": T0 + timedelta(seconds=5),
                "updated": T0 + timedelta(seconds=5),
                "workers_alive": 2,
                "workers_configured": 2,
                "poll_failures": 0,
                "last_poll_failure": None,
                "last_poll_failure_at": None,
                "store_failures": 0,
                "claims_held": ["x-1", "x-2"],
            },
        ]
    finally:
        await store.aclose()


async def test_a_silent_executor_drops_out_of_the_list(backend_alias: str) -> None:
    clock = ManualClock(T0)
    store = DjangoStore(backend_alias, clock)
    store.reset()
    try:
        await store.record_heartbeat(_health("ex-old"))
        await clock.advance(50)
        await store.record_heartbeat(_health("ex-new"))
        await clock.advance(20)

        fresh = await store.list_heartbeats(timedelta(minutes=1))
        assert [beat["executor_id"] for beat in fresh] == ["ex-new"]
        assert [beat["executor_id"] for beat in await store.list_heartbeats(timedelta(minutes=2))] == [
            "ex-new",
            "ex-old",
        ]
    finally:
        await store.aclose()
