"""Differential, stateful test of the stores: random sequences of store operations run against the memory
store and each Django backend side by side, every answer and the final state compared.

The memory store is the reference (it is the one the conformance suite was written against first); a
Django backend that answers differently, or ends in a different state, is the defect this finds. Time moves
through one injected clock per store, advanced together, so lease expiry and due sleeps are part of the
sequences. Claim tokens are per store (each store numbers its own claims), so states are compared without
them; everything else is compared whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from flowdeck.store.django.store import DjangoStore
from flowdeck.store.memory import MemoryStore
from tests.store.django_support import database_access, postgres_alias, sqlite_alias

__all__ = ["database_access", "postgres_alias", "sqlite_alias"]

K = spi.EventKind
WF1, WF2 = "wf1", "wf2"
HASHES = ("", "h2")
SERVED = frozenset({(WF1, ""), (WF2, ""), (WF1, "h2")})
EXECUTOR = "executor-1"
LEASE = timedelta(seconds=30)
NO_WAIT = timedelta(0)

execution_ids = st.sampled_from(["e0", "e1", "e2", "e3"])
input_names = st.sampled_from(["a", "b"])
paths = st.sampled_from(["a", "b", "s", "n1", "n2"])
json_values = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.booleans())
reasons = st.sampled_from(["", "operator", "no longer needed"])

# How many random sequences each backend pair runs, and how long each is at most.
EXAMPLES = 40
STEPS = 40


def _comparable(state: spi.ExecutionState | None) -> spi.ExecutionState | None:
    """The state without what each store numbers for itself (the claim token)."""
    return None if state is None else replace(state, claim_token=None)


def _events(page: spi.HistoryPage) -> list[tuple[int | None, str, str, dict[str, Any]]]:
    return [(e.seq, e.kind.value, e.execution_id, dict(e.data)) for e in page.events]


@dataclass
class Side:
    """One store under test with its clock, and the claim handles it granted, by execution id."""

    name: str
    store: spi.FlowStore
    clock: ManualClock
    held: dict[str, spi.Claimed] = field(default_factory=dict)


class StoreDifferential(RuleBasedStateMachine):
    """Each rule applies one operation to every side and asserts the answers agree."""

    make_other: Callable[[ManualClock], spi.FlowStore]

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.sides = [self._side("memory", MemoryStore), self._side(self.other_name, self.make_other)]
        self.steps = 0

    other_name = "other"

    # ---------------------------------------------------------------------------------------- plumbing

    @staticmethod
    def _side(name: str, make: Callable[[ManualClock], spi.FlowStore]) -> Side:
        clock = ManualClock()
        return Side(name, make(clock), clock)

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    def each(self, call: Callable[[Side], Coroutine[Any, Any, Any]]) -> Any:
        """Apply `call` to every side; assert they answered alike and return the reference's answer."""
        self.steps += 1
        answers = [self.run(call(side)) for side in self.sides]
        reference, *others = answers
        for side, answer in zip(self.sides[1:], others, strict=True):
            assert answer == reference, f"{side.name} answered {answer!r}, memory answered {reference!r}"
        return reference

    def event(self, side: Side, kind: spi.EventKind, eid: str, flow_id: str = WF1, **data: Any) -> spi.Event:
        return spi.Event(kind, flow_id, eid, side.clock.now(), data)

    def holders(self) -> list[str]:
        return sorted(set.intersection(*(set(side.held) for side in self.sides)))

    def teardown(self) -> None:
        try:
            self.compare_everything()
        finally:
            for side in self.sides:
                closing = getattr(side.store, "aclose", None)
                if closing is not None:
                    self.run(closing())
            self.loop.close()
            StoreDifferential.ran_steps += self.steps

    ran_steps = 0

    # ----------------------------------------------------------------------------------------- anybody

    @initialize(flows=st.lists(st.sampled_from([WF1, WF2]), min_size=3, max_size=3))
    def create_most(self, flows: list[str]) -> None:
        """Most ids exist from the start, so the sequences spend their steps on executions, not on misses."""
        for eid, flow_id in zip(("e0", "e1", "e2"), flows, strict=True):
            self.create(eid, flow_id, None)

    @rule(eid=execution_ids, flow_id=st.sampled_from([WF1, WF2]), seed=st.none() | json_values)
    def create(self, eid: str, flow_id: str, seed: Any) -> None:
        fields = None if seed is None else {"a": spi.FieldData.of(seed, "int")}

        async def call(side: Side) -> bool:
            created = self.event(side, K.CREATED, eid, flow_id)
            return await side.store.create_execution_if_absent(
                eid, flow_id, "", spi.Running(), created, fields
            )

        self.each(call)
        self.advance(1)  # distinct creation times: "oldest first" is then one order on every side

    @rule(eid=execution_ids, name=input_names, value=json_values)
    def signal(self, eid: str, name: str, value: Any) -> None:
        async def call(side: Side) -> spi.SignalOutcome:
            event = self.event(side, K.INPUT_RECEIVED, eid, input_name=name)
            return await side.store.signal(eid, name, spi.FieldData.of(value, "json"), event)

        self.each(call)

    @rule(eid=execution_ids, name=input_names, value=json_values)
    def signal_and_claim(self, eid: str, name: str, value: Any) -> None:
        async def call(side: Side) -> tuple[spi.SignalOutcome, bool]:
            event = self.event(side, K.INPUT_RECEIVED, eid, input_name=name)
            outcome, handle = await side.store.signal_and_claim(
                eid, name, spi.FieldData.of(value, "json"), event, executor_id=EXECUTOR, lease=LEASE
            )
            if handle is not None:
                side.held[eid] = handle
            return outcome, handle is not None

        self.each(call)

    @rule(eid=execution_ids, reason=reasons)
    def request_cancel(self, eid: str, reason: str) -> None:
        self.each(lambda side: side.store.request_cancel(eid, reason, actor="tester"))

    @rule(limit=st.integers(1, 3))
    def claim_ready(self, limit: int) -> None:
        async def call(side: Side) -> list[tuple[str, frozenset[str]]]:
            handles = await side.store.claim_ready(SERVED, EXECUTOR, LEASE, limit, NO_WAIT)
            for handle in handles:
                side.held[handle.state.execution_id] = handle
            return [(h.state.execution_id, h.satisfied) for h in handles]

        self.each(call)

    @rule(by=st.sampled_from([1, 10, 31]))
    def advance(self, by: float) -> None:
        for side in self.sides:
            self.run(side.clock.advance(by))

    # ----------------------------------------------------------------------------------- under a claim

    @precondition(lambda self: bool(self.holders()))
    @rule(data=st.data(), path=paths, value=st.none() | json_values, clear=st.booleans())
    def record_progress(self, data: st.DataObject, path: str, value: Any, clear: bool) -> None:
        eid = data.draw(st.sampled_from(self.holders()))
        field_value = None if value is None else spi.FieldData.of(value, "json")

        async def call(side: Side) -> tuple[spi.ProgressOutcome, bool]:
            event = self.event(side, K.STEP_COMPLETED, eid, step_name=path)
            handle = side.held[eid]
            outcome = await handle.record_progress(path, field_value, event, clear_cancel=clear)
            return outcome, handle.cancel_requested

        self.each(call)

    @precondition(lambda self: bool(self.holders()))
    @rule(data=st.data(), path=paths, sleep=st.booleans(), name=input_names)
    def record_wait(self, data: st.DataObject, path: str, sleep: bool, name: str) -> None:
        eid = data.draw(st.sampled_from(self.holders()))

        async def call(side: Side) -> spi.WriteOutcome:
            wake: spi.Wake = (
                spi.WakeAt(side.clock.now() + timedelta(seconds=20)) if sleep else spi.WakeOnField(name)
            )
            kind = K.SLEEP_STARTED if sleep else K.INPUT_WAITING
            event = self.event(side, kind, eid, step_name=path)
            return await side.held[eid].record_wait(path, wake, event)

        self.each(call)

    @precondition(lambda self: bool(self.holders()))
    @rule(data=st.data(), reason=reasons)
    def update_status(self, data: st.DataObject, reason: str) -> None:
        eid = data.draw(st.sampled_from(self.holders()))
        status = spi.Compensating(spi.Cancellation(reason))

        async def call(side: Side) -> spi.StatusOutcome:
            event = self.event(side, K.COMPENSATION_STARTED, eid)
            return await side.held[eid].update_status(status, event)

        self.each(call)

    @precondition(lambda self: bool(self.holders()))
    @rule(data=st.data())
    def renew_claim(self, data: st.DataObject) -> None:
        eid = data.draw(st.sampled_from(self.holders()))
        self.each(lambda side: side.held[eid].renew_claim(LEASE))

    @precondition(lambda self: bool(self.holders()))
    @rule(data=st.data(), how=st.sampled_from(["completed", "failed", "cancelled", "suspended", "stop"]))
    def finish(self, data: st.DataObject, how: str) -> None:
        eid = data.draw(st.sampled_from(self.holders()))
        keep = data.draw(st.frozensets(paths, max_size=2))

        async def call(side: Side) -> spi.StatusOutcome:
            outcome = self._outcome(side, eid, how, keep)
            answer = await side.held.pop(eid).finish(outcome)
            return answer

        self.each(call)

    def _outcome(self, side: Side, eid: str, how: str, keep: frozenset[str]) -> spi.ClaimOutcome:
        if how == "suspended":
            return spi.Suspended(keep)
        if how == "stop":
            return spi.Stop(spi.Stopped("F0001", "n1", "boom"), self.event(side, K.STOPPED, eid))
        status: spi.Status = {
            "completed": spi.Completed(),
            "failed": spi.Failed("declined", "CardDeclined"),
            "cancelled": spi.Cancelled("asked"),
        }[how]
        kind = {"completed": K.COMPLETED, "failed": K.FAILED, "cancelled": K.CANCELLED}[how]
        return spi.Terminal(status, self.event(side, kind, eid))

    # ------------------------------------------------------------------------------------ operator verbs

    @rule(eid=execution_ids, to=st.sampled_from(HASHES))
    def resume(self, eid: str, to: str) -> None:
        async def call(side: Side) -> spi.OperatorOutcome:
            event = self.event(side, K.RESUMED, eid, to_hash=to, actor="tester")
            return await side.store.resume(eid, to, event)

        self.each(call)

    @rule(eid=execution_ids, path=paths, value=st.none() | json_values)
    def answer(self, eid: str, path: str, value: Any) -> None:
        field_value = None if value is None else spi.FieldData.of(value, "json")

        async def call(side: Side) -> spi.OperatorOutcome:
            event = self.event(side, K.ANSWERED, eid, step_name=path, actor="tester")
            return await side.store.answer(eid, path, field_value, event)

        self.each(call)

    @rule(eid=execution_ids, reason=reasons)
    def end(self, eid: str, reason: str) -> None:
        async def call(side: Side) -> spi.OperatorOutcome:
            event = self.event(side, K.ENDED, eid, reason=reason, actor="tester")
            return await side.store.end(eid, spi.Failed(reason or "ended", "Ended"), event)

        self.each(call)

    @rule(
        back=st.sampled_from([0, 10, 40]),
        statuses=st.sampled_from([(), ("completed",), ("failed", "cancelled")]),
        flow_id=st.sampled_from([None, WF1]),
        limit=st.integers(1, 3),
    )
    def purge_ended(self, back: int, statuses: tuple[str, ...], flow_id: str | None, limit: int) -> None:
        async def call(side: Side) -> int:
            before = side.clock.now() - timedelta(seconds=back)
            return await side.store.purge_ended(
                ended_before=before, statuses=statuses, workflow_id=flow_id, limit=limit
            )

        self.each(call)

    # ------------------------------------------------------------------------------------------ reads

    @rule(eid=execution_ids)
    def read_execution(self, eid: str) -> None:
        self.compare_execution(eid)

    @rule(
        word=st.sampled_from(
            [
                None,
                *spi.ExecutionFilter.WIRE_WORDS[:6],
                "failed:CardDeclined",
                "sleeping",
                "waiting",
                "waiting:a",
                "stopped",
                "stopped:F0001",
            ]
        ),
        flow_id=st.sampled_from([None, WF1, WF2]),
        limit=st.sampled_from([None, 1, 2]),
        offset=st.integers(0, 2),
        prefix=st.sampled_from([None, "e", "e1"]),
    )
    def search(
        self, word: str | None, flow_id: str | None, limit: int | None, offset: int, prefix: str | None
    ) -> None:
        filt = None if word is None else spi.ExecutionFilter.parse(word)

        async def call(side: Side) -> tuple[list[spi.ExecutionState | None], int]:
            page = await side.store.list_executions(flow_id, filt, limit, offset, prefix)
            return [_comparable(s) for s in page.items], page.total

        self.each(call)

    @invariant()
    def same_claimable_set(self) -> None:
        """What each side holds is the same set of executions (a claim granted on one side only is a bug)."""
        held = [sorted(side.held) for side in self.sides]
        assert all(h == held[0] for h in held), f"held claims differ: {held}"

    def compare_execution(self, eid: str) -> None:
        self.each(lambda side: self._read(side, eid))

    async def _read(self, side: Side, eid: str) -> tuple[Any, ...]:
        state = await side.store.get_execution(eid)
        fields = dict(await side.store.get_all_fields(eid))
        history = _events(await side.store.get_history(eid))
        return _comparable(state), fields, history

    def compare_everything(self) -> None:
        for eid in ("e0", "e1", "e2", "e3"):
            self.compare_execution(eid)


def _run(make_other: Callable[[ManualClock], spi.FlowStore], name: str) -> int:
    machine = type(
        f"StoreDifferential_{name}",
        (StoreDifferential,),
        {"make_other": staticmethod(make_other), "other_name": name},
    )
    StoreDifferential.ran_steps = 0
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
    return StoreDifferential.ran_steps


@pytest.fixture
def report() -> Iterator[Callable[[str, int], None]]:
    lines: list[str] = []
    yield lambda name, steps: lines.append(f"stateful: memory vs {name}: {EXAMPLES} sequences, {steps} steps")
    for line in lines:
        print(line)


def test_memory_against_itself_agrees(report: Callable[[str, int], None]) -> None:
    """The machine's own soundness: two memory stores never disagree."""
    report("memory", _run(MemoryStore, "memory"))


def test_sqlite_store_agrees_with_memory(
    sqlite_alias: str, database_access: None, report: Callable[[str, int], None]
) -> None:
    def make(clock: ManualClock) -> DjangoStore:
        store = DjangoStore(sqlite_alias, clock, pool_size=2)
        store.reset()
        return store

    report("sqlite", _run(make, "sqlite"))


@pytest.mark.postgres
def test_postgres_store_agrees_with_memory(
    postgres_alias: str, database_access: None, report: Callable[[str, int], None]
) -> None:
    def make(clock: ManualClock) -> DjangoStore:
        store = DjangoStore(postgres_alias, clock, pool_size=2)
        store.reset()
        return store

    report("postgres", _run(make, "postgres"))
