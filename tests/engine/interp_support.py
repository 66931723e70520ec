"""Driving single attempts by hand: the engine tests' store on a ManualClock, claims taken one at a time,
every write through the claim counted (a thin wrapper around the store's real handle, not a mock)."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from flowdeck.engine import interpreter, values
from flowdeck.engine.flow import Flow
from flowdeck.engine.interpreter import AttemptReport
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock

LEASE = timedelta(seconds=30)
_ids = itertools.count(1)


class Crash(BaseException):
    """Raised by a body to simulate the process dying mid-node (not an Exception: nothing classifies it)."""


class CountingClaimed(spi.Claimed):
    """MemoryStore's claim handle, with every write counted by verb."""

    def __init__(self, inner: spi.Claimed, writes: Counter[str]) -> None:
        self.inner = inner
        self.writes = writes

    @property
    def state(self) -> spi.ExecutionState:
        return self.inner.state

    @property
    def satisfied(self) -> frozenset[str]:
        return self.inner.satisfied

    @property
    def cancel_requested(self) -> bool:
        return self.inner.cancel_requested

    @property
    def cancel_reason(self) -> str:
        return self.inner.cancel_reason

    async def append_event(
        self, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        self.writes["append_event"] += 1
        return await self.inner.append_event(event, preceding=preceding)

    async def record_wait(
        self, path: str, wake: spi.Wake, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.WriteOutcome:
        self.writes["record_wait"] += 1
        return await self.inner.record_wait(path, wake, event, preceding=preceding)

    async def renew_claim(self, lease: timedelta) -> bool:
        return await self.inner.renew_claim(lease)

    async def update_status(
        self, status: spi.Status, event: spi.Event, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        self.writes["update_status"] += 1
        return await self.inner.update_status(status, event, preceding=preceding)

    async def record_progress(
        self,
        path: str,
        value: spi.FieldData | None,
        event: spi.Event,
        *,
        preceding: Sequence[spi.Event] = (),
        extra_fields: Mapping[str, spi.FieldData] | None = None,
        clear_cancel: bool = False,
    ) -> spi.ProgressOutcome:
        self.writes["record_progress"] += 1
        return await self.inner.record_progress(
            path, value, event, preceding=preceding, extra_fields=extra_fields, clear_cancel=clear_cancel
        )

    async def record_atomically(
        self, path: str, body: Callable[[], Any], complete: Callable[[Any], spi.Completion]
    ) -> tuple[spi.ProgressOutcome, Any]:
        self.writes["record_atomically"] += 1
        return await self.inner.record_atomically(path, body, complete)

    async def finish(
        self, outcome: spi.ClaimOutcome, *, preceding: Sequence[spi.Event] = ()
    ) -> spi.StatusOutcome:
        self.writes["finish"] += 1
        return await self.inner.finish(outcome, preceding=preceding)


@dataclass
class World:
    """A store, its clock, and what the attempts wrote."""

    store: spi.FlowStore
    clock: ManualClock
    writes: Counter[str] = field(default_factory=Counter)

    async def start(self, flow: Flow, execution_id: str | None = None, **inputs: Any) -> str:
        eid = execution_id or f"e{next(_ids)}"
        declared = {n.name: n.type for n in interpreter.child_inputs(flow)}
        fields = {name: values.encode(name, value, declared.get(name)) for name, value in inputs.items()}
        created = spi.Event(spi.EventKind.CREATED, flow.name, eid, self.clock.now(), {})
        assert await self.store.create_execution_if_absent(eid, flow.name, "", spi.Running(), created, fields)
        return eid

    async def claim(self, flow: Flow, execution_id: str) -> CountingClaimed | None:
        """Claim exactly this execution (others claimed alongside are handed straight back)."""
        claims = await self.store.claim_ready(frozenset({(flow.name, "")}), "ex-1", LEASE, 100, timedelta(0))
        mine = None
        for claimed in claims:
            if claimed.state.execution_id == execution_id:
                mine = claimed
            else:
                await claimed.finish(spi.Suspended(frozenset(claimed.state.waits)))
        return CountingClaimed(mine, self.writes) if mine is not None else None

    async def attempt(self, flow: Flow, execution_id: str) -> AttemptReport:
        """One attempt, as a worker would make it; "not-ready" when the store would not hand it out."""
        claimed = await self.claim(flow, execution_id)
        if claimed is None:
            return AttemptReport(execution_id, "not-ready")
        return await interpreter.run_attempt(
            flow, claimed, store=self.store, clock=self.clock, executor_id="ex-1"
        )

    async def crash(self, flow: Flow, execution_id: str) -> None:
        """An attempt whose process dies (a body raised Crash); the claim is left to lapse."""
        claimed = await self.claim(flow, execution_id)
        assert claimed is not None
        try:
            await interpreter.run_attempt(
                flow, claimed, store=self.store, clock=self.clock, executor_id="ex-1"
            )
        except Crash:
            pass
        else:
            raise AssertionError("the attempt was expected to crash")
        await self.clock.advance(LEASE + timedelta(seconds=1))

    async def state(self, execution_id: str) -> spi.ExecutionState:
        state = await self.store.get_execution(execution_id)
        assert state is not None
        return state

    async def status(self, execution_id: str) -> spi.Status:
        return (await self.state(execution_id)).status

    async def fields(self, execution_id: str) -> dict[str, Any]:
        """Every field decoded as JSON."""
        return {k: v.decode() for k, v in (await self.store.get_all_fields(execution_id)).items()}

    async def kinds(self, execution_id: str) -> list[str]:
        return [e.kind.value for e in (await self.store.get_history(execution_id)).events]

    async def events(self, execution_id: str, kind: spi.EventKind) -> list[spi.Event]:
        return [e for e in (await self.store.get_history(execution_id)).events if e.kind is kind]


class Calls(Counter[str]):
    """How many times each body ran."""

    def hit(self, name: str, value: Any = None) -> Any:
        self[name] += 1
        return value


@pytest.fixture(name="world")
def world_fixture(store: spi.FlowStore, clock: ManualClock) -> World:
    """The engine tests' store (every backend they run on) and their manual clock."""
    return World(store, clock)


async def sleeping(clock: ManualClock, count: int = 1, *, seconds: float = 10.0) -> None:
    """Wait (real time, briefly) until `count` sleeps are blocked on the manual clock, so that moving it
    wakes them: the attempt runs on the loop and store threads, at its own pace."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while clock.pending_sleeps() < count:
        if loop.time() > deadline:
            pytest.fail(f"expected {count} sleep(s) on the clock, found {clock.pending_sleeps()}")
        await asyncio.sleep(0.001)
