"""The client's start, signal and cancel inside the caller's `transaction.atomic()` on the store's
database, on SQLite (a file in WAL mode) and PostgreSQL: they commit or roll back with the caller's own
rows (a user row stands for the order a view writes); rolled back, no execution and no delivery exist;
committed, workers on a store of their own (another process, as far as they can tell) are woken at the
commit and run it, never before it. A refusal (a duplicate id, an unknown workflow, a bad value) writes
nothing and leaves the caller's transaction usable. Reads inside the block see what is committed."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import TypeVar

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from flowdeck.console import client, runtime
from flowdeck.engine import errors
from flowdeck.store import spi
from flowdeck.store.django import models, queries
from tests.console.client_support import (  # noqa: F401  (fixtures)
    Workers,
    alias_fixture,
    database_access,
    postgres_alias,
    sqlite_alias,
    workers_fixture,
)
from tests.store.django_support import database_url

ORDER = {"id": "o-1", "cents": 250}
T = TypeVar("T")


class Boom(Exception):
    """The caller's own failure, rolling its transaction back."""


def _rolled_back(alias: str, work: Callable[[], T]) -> T:
    """What `work` answered inside an atomic block on `alias` that the caller's own failure then rolled
    back."""
    answered: list[T] = []
    with contextlib.suppress(Boom), transaction.atomic(using=alias):
        answered.append(work())
        raise Boom
    return answered[0]


def _committed(alias: str, sql: str, *params: str) -> int:
    """A count as another connection sees it: what is committed, never the open transaction's writes."""
    if settings.DATABASES[alias]["ENGINE"].endswith("sqlite3"):
        with sqlite3.connect(settings.DATABASES[alias]["NAME"]) as conn:
            return int(conn.execute(sql.replace("%s", "?"), params).fetchone()[0])
    with psycopg.connect(database_url(alias)) as conn:
        row = conn.execute(sql, params).fetchone()
        assert row is not None
        return int(row[0])


def _executions(alias: str, eid: str) -> int:
    return _committed(alias, "SELECT count(*) FROM flowstore_execution WHERE id = %s", eid)


async def _history(eid: str) -> list[spi.Event]:
    store = runtime.open_store()
    try:
        return list((await store.get_history(eid)).events)
    finally:
        runtime.close_store(store)


def _users(alias: str, name: str) -> int:
    return get_user_model().objects.db_manager(alias).filter(username=name).count()


def _place_order(alias: str, name: str) -> None:
    get_user_model().objects.db_manager(alias).create_user(name, password="x")


@pytest.fixture
def notifications(alias: str) -> Iterator[psycopg.Connection | None]:
    """On PostgreSQL, a connection LISTENing on the wake channel, as another process's workers do."""
    if not alias.endswith("postgres"):
        yield None
        return
    with psycopg.connect(database_url(alias), autocommit=True) as conn:
        conn.execute(queries.LISTEN_WAKE.text("postgresql"))
        yield conn


def _heard(conn: psycopg.Connection | None, timeout: float) -> list[str]:
    if conn is None:
        return []
    return [note.payload for note in conn.notifies(timeout=timeout, stop_after=1)]


def test_a_rolled_back_start_leaves_no_execution(alias: str) -> None:
    # The first call of the process: its checks must write nothing elsewhere (a registration on the store's
    # own connection would wait for this transaction's lock on SQLite)
    def place_and_start() -> str:
        _place_order(alias, "rolled")
        return client.start("greet", execution_id="rolled-back", name="ada")

    assert _rolled_back(alias, place_and_start) == "rolled-back"
    assert _users(alias, "rolled") == 0
    assert _executions(alias, "rolled-back") == 0
    for table in (models.Execution, models.Field, models.Event):
        assert table.objects.using(alias).count() == 0
    with pytest.raises(errors.FlowExecutionNotFound):
        client.describe("rolled-back")


def test_a_committed_start_wakes_the_workers_at_commit_and_they_run_it(
    alias: str, workers: Workers, notifications: psycopg.Connection | None
) -> None:
    hub = runtime.store().hub
    with transaction.atomic(using=alias):
        _place_order(alias, "ada")
        before = hub.generation
        eid = client.start("greet", name="ada")
        assert hub.generation == before  # nobody woken yet
        assert _heard(notifications, 0.3) == []
        assert _executions(alias, eid) == 0  # nobody else can see it
    assert hub.generation > before
    if notifications is not None:
        assert _heard(notifications, 5) == [runtime.store().origin]
    # the workers' poll would wait 30 s: the wake at commit brings them
    assert client.result(eid, timeout=20).greeting == "hello ada"
    assert _users(alias, "ada") == 1


def test_a_rolled_back_signal_delivers_nothing(alias: str, workers: Workers) -> None:
    eid = client.start("approval", order=ORDER)
    hub = runtime.store().hub
    before = hub.generation
    _rolled_back(alias, lambda: client.signal(eid, "approved", True))
    assert hub.generation == before  # a rolled-back delivery wakes nobody
    assert not models.Field.objects.using(alias).filter(execution_id=eid, name="approved").exists()
    kinds = models.Event.objects.using(alias).filter(execution_id=eid).values_list("kind", flat=True)
    assert spi.EventKind.INPUT_RECEIVED.value not in set(kinds)
    with pytest.raises(client.FlowResultTimeout):
        client.result(eid, timeout=0.3)  # still waiting for its decision

    with transaction.atomic(using=alias):
        client.signal(eid, "approved", True)
        assert hub.generation == before
    assert hub.generation > before  # woken at the commit
    assert client.result(eid, timeout=20).verdict == "o-1: yes"


def test_start_and_signal_share_one_transaction(alias: str, workers: Workers) -> None:
    with transaction.atomic(using=alias):
        eid = client.start("approval", order=ORDER)
        client.signal(eid, "approved", False)  # it sees the execution its own transaction started
        with pytest.raises(errors.FlowAlreadyDelivered):
            client.signal(eid, "approved", True)
        _place_order(alias, "bo")
    assert client.result(eid, timeout=20).verdict == "o-1: no"
    assert _users(alias, "bo") == 1


def test_a_duplicate_id_inside_a_transaction_leaves_it_usable(alias: str) -> None:
    first = client.start("greet", execution_id="dup", name="first")
    with transaction.atomic(using=alias):
        _place_order(alias, "cy")
        with pytest.raises(errors.FlowDuplicateExecution):
            client.start("greet", execution_id=first, name="second")
        fresh = client.start("greet", execution_id="fresh", name="x")
        with pytest.raises(errors.FlowDuplicateExecution):
            client.start("greet", execution_id=fresh, name="again")
    assert _users(alias, "cy") == 1
    assert [_executions(alias, e) for e in (first, fresh)] == [1, 1]
    fields = models.Field.objects.using(alias).filter(execution_id=first).values_list("value", flat=True)
    assert list(fields) == ['"first"']
    assert models.Event.objects.using(alias).filter(execution_id=first).count() == 1


def test_refusals_inside_a_transaction_write_nothing_and_leave_it_usable(alias: str) -> None:
    with transaction.atomic(using=alias):
        _place_order(alias, "di")
        with pytest.raises(errors.FlowNotRegistered):
            client.start("nope", name="x")
        with pytest.raises(errors.FlowInputError):
            client.start("approval", order={"id": "o", "cents": 0})
        with pytest.raises(errors.FlowInputError):
            client.start("greet", colour="red")
        with pytest.raises(errors.FlowExecutionNotFound):
            client.signal("missing", "approved", True)
        with pytest.raises(errors.FlowExecutionNotFound):
            client.cancel("missing")
    assert _users(alias, "di") == 1
    assert models.Execution.objects.using(alias).count() == 0


def test_cancel_joins_the_transaction(alias: str) -> None:
    eid = client.start("approval", order=ORDER)
    assert _rolled_back(alias, lambda: client.cancel(eid, "oops")) == spi.Accepted()
    assert not client.describe(eid).cancel_requested
    with transaction.atomic(using=alias):
        assert client.cancel(eid, "meant it", actor="shop") == spi.Accepted()
    assert client.describe(eid).cancel_requested
    [asked] = [e for e in asyncio.run(_history(eid)) if e.kind is spi.EventKind.CANCEL_REQUESTED]
    assert (asked.data["reason"], asked.data["actor"]) == ("meant it", "shop")


def test_reads_inside_a_transaction(alias: str) -> None:
    committed = client.start("approval", order=ORDER)
    with transaction.atomic(using=alias):
        fresh = client.start("greet", name="x")
        if alias.endswith("sqlite"):
            for read in (
                lambda: client.describe(committed),
                lambda: client.search(),
                lambda: client.result(fresh),
            ):
                with pytest.raises(client.FlowInTransaction):
                    read()
        else:  # the store's own connections: what is committed
            assert client.describe(committed).flow_id == "approval"
            assert [s.execution_id for s in client.search().items] == [committed]
            for read in (lambda: client.describe(fresh), lambda: client.result(fresh)):
                with pytest.raises(client.FlowInTransaction, match="started in your open transaction"):
                    read()
            with pytest.raises(errors.FlowExecutionNotFound):
                client.describe("missing")


def test_an_atomic_block_on_another_database_is_not_joined(
    alias: str, request: pytest.FixtureRequest
) -> None:
    other = str(request.getfixturevalue("postgres_alias" if alias.endswith("sqlite") else "sqlite_alias"))
    eid = _rolled_back(other, lambda: client.start("greet", name="x"))
    assert _executions(alias, eid) == 1  # committed on its own


async def test_an_async_view_starts_in_a_transaction_through_sync_to_async(alias: str) -> None:
    def place(name: str, fail: bool) -> str:
        with transaction.atomic(using=alias):
            _place_order(alias, name)
            eid = client.start("greet", execution_id=f"order-{name}", name=name)
            if fail:
                raise Boom
            return eid

    with pytest.raises(Boom):
        await sync_to_async(place)("eve", True)
    assert await sync_to_async(place)("fay", False) == "order-fay"
    assert [s.execution_id for s in (await client.asearch("greet")).items] == ["order-fay"]
    assert await sync_to_async(_users)(alias, "eve") == 0
