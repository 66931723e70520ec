"""Fixtures and helpers shared by the engine tests: a manual clock, the stores, engines, and waiting.

Waiting for an execution to reach a status polls the store on the event loop (the work runs on the same
loop, plus worker threads for sync bodies); it never waits on time that matters to the flow, which moves
only through the `ManualClock`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest

from examples import seed
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.memory import MemoryStore

LEASE = timedelta(seconds=30)
RENEW = timedelta(seconds=10)
POLL = timedelta(seconds=30)


# The history of a three-node flow run through in one attempt, whichever way it was started.
THREE_NODES = [
    "Created",
    "ExecutionClaimed",
    "ExecutionResumed",
    "StepStarted",
    "StepCompleted",
    "StepStarted",
    "StepCompleted",
    "StepStarted",
    "StepCompleted",
    "ExecutionReleased",
    "Completed",
]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(autouse=True)
def _fresh_world() -> None:
    seed.reset()


STORES = ["memory", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def store_alias(request: pytest.FixtureRequest) -> str | None:
    """None for the memory store, else the migrated PostgreSQL alias (resolved here, outside the loop)."""
    if request.param == "memory":
        return None
    alias: str = request.getfixturevalue("postgres_alias")
    request.getfixturevalue("database_access")
    return alias


@pytest.fixture
async def store(store_alias: str | None, clock: ManualClock) -> AsyncIterator[spi.FlowStore]:
    """Each engine test runs on the memory store and on the Django store over PostgreSQL (emptied)."""
    if store_alias is None:
        yield MemoryStore(clock)
        return
    django_store = DjangoStore(store_alias, clock)
    django_store.reset()
    try:
        yield django_store
    finally:
        await django_store.aclose()


@pytest.fixture
def memory_store(clock: ManualClock) -> MemoryStore:
    """For cases that time the engine against `settle()` (loop turns), which a threaded store outlives."""
    return MemoryStore(clock)


def make_engine(store: spi.FlowStore, clock: ManualClock, flows: Any = (), **knobs: Any) -> FlowEngine:
    """An engine on the manual clock; one worker and no shutdown grace unless told otherwise."""
    settings: dict[str, Any] = {
        "workers": 1,
        "lease": LEASE,
        "renew_every": RENEW,
        "poll_timeout": POLL,
        "shutdown_grace": timedelta(0),
        "clock": clock,
    }
    settings.update(knobs)
    return FlowEngine(store, flows, **settings)


async def until(
    store: spi.FlowStore,
    execution_id: str,
    done: Callable[[spi.ExecutionState], bool] = lambda state: state.status.terminal,
    *,
    seconds: float = 10.0,
) -> spi.ExecutionState:
    """The execution's row once `done` holds (default: it ended). Fails, showing the row and its history,
    if that takes more than `seconds` of real time (work stuck, not time the flow waits for)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        state = await store.get_execution(execution_id)
        if state is not None and done(state):
            return state
        if loop.time() > deadline:
            history = (await store.get_history(execution_id)).events
            pytest.fail(
                f"execution {execution_id} never got there: {state!r}\n"
                + "\n".join(f"  {e.kind.value} {e.detail}" for e in history)
            )
        await asyncio.sleep(0.002)


async def released(engine: FlowEngine, *, seconds: float = 10.0) -> None:
    """Once the engine holds no claim. A worker forgets its claim just after the store write that released
    it, so a test that saw the row unclaimed waits here for the engine to agree rather than for loop turns.
    Fails, naming the claims, if that takes more than `seconds` of real time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while engine.health().claims_held:
        if loop.time() > deadline:
            pytest.fail(f"the engine still holds {engine.health().claims_held!r}")
        await asyncio.sleep(0.002)


def waiting_for(*paths: str) -> Callable[[spi.ExecutionState], bool]:
    """Done once the execution is suspended (unclaimed) with exactly these wait rows."""
    return lambda state: state.executor is None and set(state.waits) == set(paths)


def unclaimed(state: spi.ExecutionState) -> bool:
    return state.executor is None


async def kinds(store: spi.FlowStore, execution_id: str) -> list[str]:
    """The execution's history, as event kind names."""
    return [e.kind.value for e in (await store.get_history(execution_id)).events]


def require_postgres() -> bool:
    return os.environ.get("FLOWDECK_REQUIRE_POSTGRES") == "1"


async def advance(clock: ManualClock, delta: timedelta | float, *, blocked: int = 1) -> None:
    """Move time once `blocked` callers (an engine's idle polls) wait on the clock: a poll that has not
    yet reached its wait would measure its timeout from the new time and miss what came due."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + 10
    while clock.pending_sleeps() < blocked:
        if loop.time() > give_up:
            pytest.fail(f"only {clock.pending_sleeps()} of {blocked} callers ever waited on the clock")
        await asyncio.sleep(0.001)
    await clock.advance(delta)


def shape(events: Sequence[spi.Event]) -> list[tuple[str, int | None, list[str]]]:
    """A history with what differs between two runs of one flow left out (ids, times, executor ids)."""
    return [(e.kind.value, e.seq, sorted(k for k in e.data if k != "executor_id")) for e in events]


class _RemembersHandOuts:
    """Mixed into a real store: remembers which executions its polls handed out (`handed`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handed: list[str] = []

    async def claim_ready(self, *args: Any, **kwargs: Any) -> Any:
        claims = await super().claim_ready(*args, **kwargs)  # type: ignore[misc]
        self.handed += [c.state.execution_id for c in claims]
        return claims


class MemoryHandOuts(_RemembersHandOuts, MemoryStore):
    """A memory store that remembers which executions its polls handed out."""


class DjangoHandOuts(_RemembersHandOuts, DjangoStore):
    """A Django store that remembers which executions its polls handed out."""
