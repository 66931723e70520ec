"""Two OS processes, each with its own DjangoStore on one PostgreSQL database: claims never overlap, a
lapsed lease passes to the other process, and a write in one process wakes a poll blocked in another
(LISTEN/NOTIFY). Real time here (other processes cannot share a ManualClock); every wait is bounded."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections

from flowdeck.store import spi
from flowdeck.store.clock import SystemClock
from flowdeck.store.django.store import DjangoStore
from tests.store import process_workers
from tests.store.django_support import database_access, postgres_alias, postgres_url

__all__ = ["database_access", "postgres_alias"]

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WF1 = "wf1"
SERVED = frozenset({(WF1, "")})
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def store(postgres_alias: str, database_access: None) -> Iterator[DjangoStore]:
    store = DjangoStore(postgres_alias, SystemClock())
    store.reset()
    yield store
    store.reset()
    store.close()
    connections[postgres_alias].close()


def _event(eid: str, kind: spi.EventKind = spi.EventKind.CREATED) -> spi.Event:
    return spi.Event(kind, WF1, eid, SystemClock().now(), {})


def _collect(results: Any, count: int, timeout: float = 60) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    while len(answers) < count:
        name, answer = results.get(timeout=timeout)
        if answer != "polling":
            answers[name] = answer
    return answers


async def _in_thread(function: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, function, *args)


async def test_two_processes_racing_over_200_ready_rows_claim_each_exactly_once(store: DjangoStore) -> None:
    ids = [f"e{i:03d}" for i in range(200)]
    for eid in ids:
        await store.create_execution_if_absent(eid, WF1, "", spi.Running(), _event(eid))
    start, results = SPAWN.Event(), SPAWN.Queue()
    children = [
        SPAWN.Process(target=process_workers.race_claims, args=(postgres_url(), name, start, results))
        for name in ("p1", "p2")
    ]
    for child in children:
        child.start()
    ready = [await _in_thread(results.get, True, 60) for _ in children]
    assert sorted(ready) == [("p1", "ready"), ("p2", "ready")]
    start.set()  # both set up and connected: they start claiming together
    answers = await _in_thread(_collect, results, 2)
    for child in children:
        child.join(30)
    handed = [eid for got in answers.values() for eid, _ in got]
    print({name: len(got) for name, got in answers.items()})
    assert sorted(handed) == ids  # every row once, none twice
    assert all(answers[name] for name in ("p1", "p2")), "both processes claimed some rows"
    tokens = [token for got in answers.values() for _, token in got]
    assert len(set(tokens)) == 200


async def test_a_lapsed_lease_is_reclaimed_by_the_other_process(store: DjangoStore) -> None:
    await store.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
    start, results = SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(
        target=process_workers.claim_once, args=(postgres_url(), "p2", 30, 5, results, start)
    )
    child.start()
    assert await _in_thread(results.get, True, 60) == ("p2", "polling")
    # this process claims under a 1.5 s lease and never renews or finishes (it "died" mid-flight); the
    # child polls while the lease still runs, must wake on its own at the expiry (no write will come) and
    # take the row over
    [held] = await store.claim_ready(SERVED, "parent", timedelta(seconds=1.5), 1, timedelta(0))
    start.set()
    retaken, took = (await _in_thread(_collect, results, 1))["p2"]
    child.join(30)
    print(f"reclaimed after blocking {took:.3f}s")
    assert [e for e, _ in retaken] == ["e1"]
    assert held.state.claim_token is not None
    assert retaken[0][1] > held.state.claim_token
    # woken by the lease's expiry, not by its 30 s poll timeout (no write came); how soon after the expiry
    # depends on the machine's load, so the bound is the timeout, not a speed
    assert took < 20, f"the reclaim waited {took:.2f}s for a 1.5s lease: it waited out its poll"
    row = await store.get_execution("e1")
    assert row is not None
    assert row.executor == "p2"
    assert await held.renew_claim(timedelta(seconds=30)) is False


async def test_a_signal_in_one_process_wakes_a_poll_blocked_in_another(store: DjangoStore) -> None:
    await store.create_execution_if_absent("e1", WF1, "", spi.Running(), _event("e1"))
    [handle] = await store.claim_ready(SERVED, "parent", timedelta(seconds=30), 1, timedelta(0))
    waiting = spi.WakeOnField("x")
    assert await handle.record_wait("x", waiting, _event("e1", spi.EventKind.INPUT_WAITING)) is (
        spi.WriteOutcome.APPLIED
    )
    assert await handle.finish(spi.Suspended(frozenset({"x"}))) is spi.StatusOutcome.APPLIED
    results = SPAWN.Queue()
    child = SPAWN.Process(target=process_workers.claim_once, args=(postgres_url(), "p1", 30, 30, results))
    child.start()
    name, said = await _in_thread(results.get, True, 60)
    assert (name, said) == ("p1", "polling")
    await asyncio.sleep(1.0)  # real time: let the child ask once and block on its 30 s poll
    value = spi.FieldData.of(1, "int")
    assert await store.signal("e1", "x", value, _event("e1", spi.EventKind.INPUT_RECEIVED)) == spi.Delivered()
    got, took = (await _in_thread(_collect, results, 1))["p1"]
    child.join(30)
    print(f"woken after blocking {took:.3f}s (signal sent about 1s after the poll began)")
    assert [e for e, _ in got] == ["e1"]
    # woken by the signal, not by its 30 s poll timeout (the bound is the timeout, not the machine's speed)
    assert took < 20, f"the blocked poll answered after {took:.1f}s of a 30s timeout"
