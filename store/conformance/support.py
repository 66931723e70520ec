"""The conformance suite's fixtures: the workflows, executors and helpers every case is written with.

They follow kyo-flow's suite (`kyo-flow-store-spec.md` §2, "Fixtures" and "Helpers"): workflows `wf1`,
`wf2`; executors `executor-1`, `executor-2`; a 30s lease; every fixture row under the empty hash. They go
through the public SPI only, so a third-party store's tests may use them as they are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock

__all__ = [
    "EX1",
    "EX2",
    "LEASE",
    "NO_WAIT",
    "SAFETY",
    "SERVED",
    "SERVED_BOTH",
    "SHORT_LEASE",
    "WF1",
    "WF2",
    "StoreFixture",
    "seconds",
]

WF1, WF2 = "wf1", "wf2"
EX1, EX2 = "executor-1", "executor-2"
LEASE = timedelta(seconds=30)
SHORT_LEASE = timedelta(seconds=5)
NO_WAIT = timedelta(0)
SERVED = frozenset({(WF1, "")})
SERVED_BOTH = frozenset({(WF1, ""), (WF2, "")})
# Real seconds a case waits for a store before calling it broken (a broken store fails, never hangs).
SAFETY = 10.0

K = spi.EventKind


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


@dataclass
class StoreFixture:
    """A store under test with its manual clock, and the helpers the cases are written with."""

    store: spi.FlowStore
    clock: ManualClock

    # ---------------------------------------------------------------------------------- events

    def event(self, kind: spi.EventKind, eid: str, flow_id: str = WF1, **data: Any) -> spi.Event:
        return spi.Event(kind, flow_id, eid, self.clock.now(), data)

    def created(self, eid: str, flow_id: str = WF1) -> spi.Event:
        return self.event(K.CREATED, eid, flow_id)

    def step_started(self, eid: str, name: str, executor: str = EX1) -> spi.Event:
        return self.event(K.STEP_STARTED, eid, step_name=name, executor_id=executor)

    def step_completed(self, eid: str, name: str) -> spi.Event:
        return self.event(K.STEP_COMPLETED, eid, step_name=name)

    def sleep_started(self, eid: str, name: str, until: datetime) -> spi.Event:
        return self.event(K.SLEEP_STARTED, eid, step_name=name, until=until.isoformat())

    def sleep_completed(self, eid: str, name: str) -> spi.Event:
        return self.event(K.SLEEP_COMPLETED, eid, step_name=name)

    def input_waiting(self, eid: str, name: str) -> spi.Event:
        return self.event(K.INPUT_WAITING, eid, input_name=name)

    def input_received(self, eid: str, name: str, flow_id: str = WF1) -> spi.Event:
        return self.event(K.INPUT_RECEIVED, eid, flow_id, input_name=name)

    def input_discharged(self, eid: str, name: str) -> spi.Event:
        return self.event(K.INPUT_DISCHARGED, eid, input_name=name)

    def waiting(self, eid: str, path: str, wake: spi.Wake) -> spi.Event:
        """The event a wait row is recorded with: SleepStarted for a sleep, InputWaiting for an input."""
        if isinstance(wake, spi.WakeAt):
            return self.sleep_started(eid, path, wake.at)
        return self.input_waiting(eid, path)

    def stopped(self, eid: str, status: spi.Stopped) -> spi.Event:
        return self.event(K.STOPPED, eid, code=status.code, node=status.node, reason=status.reason)

    def resumed(self, eid: str, from_hash: str, to_hash: str) -> spi.Event:
        return self.event(K.RESUMED, eid, from_hash=from_hash, to_hash=to_hash, actor="ops")

    def answered(self, eid: str, node: str) -> spi.Event:
        return self.event(K.ANSWERED, eid, node=node, actor="ops")

    def ended(self, eid: str, reason: str) -> spi.Event:
        return self.event(K.ENDED, eid, reason=reason, actor="ops")

    def ending(self, eid: str, status: spi.Status) -> spi.Event:
        """The event a terminal status is written with."""
        match status:
            case spi.Completed():
                return self.event(K.COMPLETED, eid)
            case spi.Failed(error):
                return self.event(K.FAILED, eid, error=error)
            case spi.Cancelled(reason):
                return self.event(K.CANCELLED, eid, reason=reason)
        return self.event(K.COMPENSATION_STARTED, eid)

    # ---------------------------------------------------------------------------------- reads

    async def state(self, eid: str) -> spi.ExecutionState:
        found = await self.store.get_execution(eid)
        assert found is not None, f"execution {eid} is missing"
        return found

    async def history(self, eid: str) -> list[spi.Event]:
        return list((await self.store.get_history(eid)).events)

    async def kinds(self, eid: str) -> list[spi.EventKind]:
        return [e.kind for e in await self.history(eid)]

    @staticmethod
    def ids(page: spi.ExecutionPage | Sequence[spi.Claimed]) -> set[str]:
        if isinstance(page, spi.ExecutionPage):
            return {s.execution_id for s in page.items}
        return {c.state.execution_id for c in page}

    async def snapshot(self, eid: str) -> tuple[Any, ...]:
        """Everything a write could change about one execution, to show a refused write changed nothing."""
        return (
            await self.store.get_execution(eid),
            dict(await self.store.get_all_fields(eid)),
            [(e, e.seq) for e in await self.history(eid)],
        )

    # ---------------------------------------------------------------------------------- helpers

    async def mk_execution(
        self,
        eid: str,
        flow_id: str = WF1,
        status: spi.Status | None = None,
        hash: str = "",
        fields: Mapping[str, spi.FieldData] | None = None,
    ) -> None:
        """createExecutionIfAbsent with a Created event (and no fields unless given)."""
        made = await self.store.create_execution_if_absent(
            eid, flow_id, hash, status or spi.Running(), self.created(eid, flow_id), fields
        )
        assert made, f"execution {eid} already existed"

    async def create_claimed(
        self,
        eid: str,
        executor: str = EX1,
        lease: timedelta = LEASE,
        fields: Mapping[str, spi.FieldData] | None = None,
        following: Sequence[spi.Event] = (),
    ) -> spi.Claimed | None:
        """createClaimedIfAbsent of a Running `wf1` row with its Created event (no fields unless given) and
        the events `following` it."""
        return await self.store.create_claimed_if_absent(
            eid,
            WF1,
            "",
            spi.Running(),
            self.created(eid),
            fields,
            executor_id=executor,
            lease=lease,
            following=following,
        )

    async def deliver_claiming(
        self, eid: str, name: str, value: Any, tag: str = "str", executor: str = EX1, lease: timedelta = LEASE
    ) -> tuple[spi.SignalOutcome, spi.Claimed | None]:
        """signalAndClaim of input `name` of a `wf1` row with its InputReceived event."""
        return await self.store.signal_and_claim(
            eid,
            name,
            spi.FieldData.of(value, tag),
            self.input_received(eid, name),
            executor_id=executor,
            lease=lease,
        )

    async def poll(
        self,
        executor: str = EX1,
        served: frozenset[tuple[str, str]] = SERVED_BOTH,
        limit: int = 100,
        lease: timedelta = LEASE,
        timeout: timedelta = NO_WAIT,
    ) -> list[spi.Claimed]:
        return list(await self.store.claim_ready(served, executor, lease, limit, timeout))

    def start_poll(
        self,
        executor: str = EX1,
        served: frozenset[tuple[str, str]] = SERVED_BOTH,
        limit: int = 100,
        lease: timedelta = LEASE,
        timeout: timedelta = NO_WAIT,
    ) -> asyncio.Task[list[spi.Claimed]]:
        return asyncio.ensure_future(self.poll(executor, served, limit, lease, timeout))

    async def claim(
        self,
        eid: str,
        executor: str = EX1,
        lease: timedelta = LEASE,
        served: frozenset[tuple[str, str]] = SERVED_BOTH,
    ) -> spi.Claimed:
        """Claim `eid` with a zero timeout; every other row handed out is given back as it was."""
        target = None
        for handle in await self.poll(executor, served, lease=lease):
            if handle.state.execution_id == eid:
                target = handle
            else:
                await handle.finish(spi.Suspended(frozenset(handle.state.waits)))
        assert target is not None, f"execution {eid} was not claimable"
        return target

    async def mk_waits(self, eid: str, waits: Mapping[str, spi.Wake]) -> None:
        """Claim, record each wait row with its event, and suspend on the rows (old and new)."""
        handle = await self.claim(eid)
        for path, wake in waits.items():
            assert (
                await handle.record_wait(path, wake, self.waiting(eid, path, wake))
                == spi.WriteOutcome.APPLIED
            )
        keep = frozenset(handle.state.waits) | frozenset(waits)
        assert await handle.finish(spi.Suspended(keep)) == spi.StatusOutcome.APPLIED

    async def mk_field(self, eid: str, name: str, value: Any, tag: str = "int") -> None:
        """Claim, record the value as a step's, and suspend keeping the current waits."""
        handle = await self.claim(eid)
        outcome = await handle.record_progress(
            name, spi.FieldData.of(value, tag), self.step_completed(eid, name)
        )
        assert outcome == spi.ProgressOutcome.RECORDED
        current = (await self.state(eid)).waits
        assert await handle.finish(spi.Suspended(frozenset(current))) == spi.StatusOutcome.APPLIED

    async def deliver(
        self, eid: str, name: str, value: Any, tag: str = "str", flow_id: str = WF1
    ) -> spi.SignalOutcome:
        return await self.store.signal(
            eid, name, spi.FieldData.of(value, tag), self.input_received(eid, name, flow_id)
        )

    async def terminate(self, eid: str, status: spi.Status) -> None:
        handle = await self.claim(eid)
        outcome = await handle.finish(spi.Terminal(status, self.ending(eid, status)))
        assert outcome == spi.StatusOutcome.APPLIED

    async def stop(
        self,
        eid: str,
        status: spi.Stopped | None = None,
        waits: Mapping[str, spi.Wake] | None = None,
    ) -> spi.Stopped:
        """Claim, record the `waits` rows, then end the attempt with a Stop (which retires them)."""
        status = status or spi.Stopped("F0001", "charge", "boom", "Traceback ...")
        handle = await self.claim(eid)
        for path, wake in (waits or {}).items():
            assert (
                await handle.record_wait(path, wake, self.waiting(eid, path, wake))
                == spi.WriteOutcome.APPLIED
            )
        assert await handle.finish(spi.Stop(status, self.stopped(eid, status))) == spi.StatusOutcome.APPLIED
        return status

    # ---------------------------------------------------------------------------------- blocking

    async def blocked(self, count: int = 1) -> None:
        """Let `count` callers reach their wait on the clock (bounded by real time)."""
        give_up = time.monotonic() + SAFETY
        while self.clock.pending_sleeps() < count:
            assert time.monotonic() < give_up, (
                f"{count} blocked poll(s) expected, {self.clock.pending_sleeps()} waiting on the clock: a "
                "blocking claim_ready must wait with clock.sleep"
            )
            await asyncio.sleep(0.001)

    async def blocked_or_done(self, task: asyncio.Task[Any]) -> None:
        """Let one poll either reach its wait on the clock or answer (its last ask may run on a thread)."""
        give_up = time.monotonic() + SAFETY
        while self.clock.pending_sleeps() < 1 and not task.done():
            assert time.monotonic() < give_up, "the poll neither blocked on the clock nor answered"
            await asyncio.sleep(0.001)

    async def outlast(
        self, tasks: Iterable[asyncio.Task[list[spi.Claimed]]], by: float
    ) -> list[list[spi.Claimed]]:
        """Once every unfinished poll is blocked, move the clock `by` seconds and collect every answer."""
        tasks = list(tasks)
        give_up = time.monotonic() + SAFETY
        while self.clock.pending_sleeps() < sum(1 for t in tasks if not t.done()):
            assert time.monotonic() < give_up, "a poll never blocked on the clock"
            await asyncio.sleep(0.001)
        await self.clock.advance(by)
        return list(await asyncio.wait_for(asyncio.gather(*tasks), SAFETY))

    async def first_done(
        self, tasks: Iterable[asyncio.Task[list[spi.Claimed]]]
    ) -> asyncio.Task[list[spi.Claimed]]:
        done, _ = await asyncio.wait(list(tasks), timeout=SAFETY, return_when=asyncio.FIRST_COMPLETED)
        assert done, "no poll answered"
        return next(iter(done))

    async def answer_of(self, task: asyncio.Task[list[spi.Claimed]]) -> list[spi.Claimed]:
        return await asyncio.wait_for(task, SAFETY)
