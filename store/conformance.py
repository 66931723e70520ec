"""The store conformance suite, as an importable pytest module.

A store author subclasses `FlowStoreConformance` in a test module (pytest collects subclasses named
`Test*`) and implements `make_store(clock)`, sync or async, handing back a fresh, EMPTY store whose every
judgement of time (`now`, and the blocking poll's waits) goes through `clock`; `close_store` may release
it. Every case is an `async def` marked `conformance`, and names its kyo-flow case number
(`kyo-flow-store-spec.md` §2) or says it is a Flowdeck addition.

    class TestMyStoreConformance(FlowStoreConformance):
        def make_store(self, clock):
            return MyStore(clock=clock)

Time is a `ManualClock`: a blocking `claim_ready` must wait with `clock.sleep` (raced against its
wake-up), so `clock.advance` drives its deadline. A store whose blocking poll wakes in process (a write in
the same process wakes it at once) also runs `InProcessBlockingConformance`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from store import _conformance_console, spi
from store._conformance_support import (
    EX1,
    EX2,
    LEASE,
    SERVED,
    SERVED_BOTH,
    SHORT_LEASE,
    WF1,
    WF2,
    StoreFixture,
    seconds,
)
from store.clock import ManualClock, settle

__all__ = [
    "EX1",
    "EX2",
    "LEASE",
    "SERVED",
    "SERVED_BOTH",
    "WF1",
    "WF2",
    "FlowStoreConformance",
    "InProcessBlockingConformance",
    "StoreFixture",
]

K = spi.EventKind
F = spi.ExecutionFilter
R, ALREADY = spi.ProgressOutcome.RECORDED, spi.ProgressOutcome.ALREADY_RECORDED
APPLIED, LOST = spi.StatusOutcome.APPLIED, spi.StatusOutcome.CLAIM_LOST
WRONG_SIDE = spi.StatusOutcome.WRONG_SIDE_OF_TERMINAL
CANCELLING = spi.StatusOutcome.CANCEL_REQUESTED
OP = spi.OperatorOutcome


def field(value: Any, tag: str = "int") -> spi.FieldData:
    return spi.FieldData.of(value, tag)


class _StoreCase:
    """What both suites share: the hooks a store author implements and the per-case fixtures."""

    pytestmark = [pytest.mark.conformance]

    def make_store(self, clock: ManualClock) -> Any:
        """A fresh, empty store judging time by `clock` (may be a coroutine)."""
        raise NotImplementedError("a conformance subclass implements make_store(clock)")

    async def close_store(self, store: spi.FlowStore) -> None:
        """Release what `make_store` opened."""

    async def open_store(self, clock: ManualClock) -> spi.FlowStore:
        made = self.make_store(clock)
        return await made if inspect.isawaitable(made) else made

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    async def store(self, clock: ManualClock) -> AsyncIterator[spi.FlowStore]:
        store = await self.open_store(clock)
        try:
            yield store
        finally:
            await self.close_store(store)

    @pytest.fixture
    def fx(self, store: spi.FlowStore, clock: ManualClock) -> StoreFixture:
        return StoreFixture(store, clock)


class FlowStoreConformance(_StoreCase, _conformance_console.ConsoleReadsConformance):
    """kyo-flow's 115 store cases, translated, and Flowdeck's additions."""

    # ------------------------------------------------------------------------ I1: claim exclusivity

    async def test_i1_01_two_concurrent_claims_one_winner(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        polls = [fx.start_poll(EX1, timeout=seconds(1)), fx.start_poll(EX2, timeout=seconds(1))]
        await fx.first_done(polls)
        answers = await fx.outlast(polls, 1.5)
        assert sorted(len(a) for a in answers) == [0, 1]
        later = [await fx.poll(EX1), await fx.poll(EX2)]
        assert any(not a for a in later)

    async def test_i1_02_two_concurrent_claims_same_executor_one_winner(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        answers = await asyncio.gather(fx.poll(EX1), fx.poll(EX1))
        assert sorted(len(a) for a in answers) == [0, 1]

    async def test_i1_03_two_blocked_callers_one_execution_appears_one_gets_it(
        self, fx: StoreFixture
    ) -> None:
        """[TC]"""
        polls = [fx.start_poll(EX1, timeout=seconds(2)), fx.start_poll(EX2, timeout=seconds(2))]
        await fx.blocked(2)
        await fx.clock.advance(0.05)
        await fx.mk_execution("e1")
        await fx.first_done(polls)
        answers = await fx.outlast(polls, 3)
        handed = [c.state.execution_id for a in answers for c in a]
        assert handed == ["e1"]

    async def test_i1_04_row_due_while_waiting_is_handed_over_at_deadline(self, fx: StoreFixture) -> None:
        """[TC] ×20 rounds: the final ask at the deadline catches a sleep that came due with no write."""
        for round_ in range(20):
            eid = f"e{round_}"
            await fx.mk_execution(eid)
            await fx.mk_waits(eid, {"nap": spi.WakeAt(fx.clock.now() + seconds(1))})
            poll = fx.start_poll(timeout=seconds(2))
            await fx.blocked()
            await fx.clock.advance(0.01)
            [answer] = await fx.outlast([poll], 3)
            assert fx.ids(answer) == {eid}, f"round {round_}"
            assert await answer[0].finish(spi.Suspended(frozenset())) == APPLIED
            await fx.terminate(eid, spi.Completed())

    async def test_i1_05_repeated_calls_same_executor_get_different_executions(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        first = await fx.poll(EX1, limit=1)
        second = await fx.poll(EX1, limit=1)
        assert len(first) == len(second) == 1
        assert first[0].state.execution_id != second[0].state.execution_id

    # ------------------------------------------------------------------------ I2: atomic status + event

    async def test_i2_06_update_status_visible_in_execution_and_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        status = spi.Compensating(spi.Failure("boom", "Domain"))
        assert await handle.update_status(status, fx.event(K.COMPENSATION_STARTED, "e1")) == APPLIED
        assert (await fx.state("e1")).status == status
        assert K.COMPENSATION_STARTED in await fx.kinds("e1")

    async def test_i2_07_record_wait_visible_in_execution_and_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        until = fx.clock.now() + timedelta(hours=1)
        outcome = await handle.record_wait("pause", spi.WakeAt(until), fx.sleep_started("e1", "pause", until))
        assert outcome == spi.WriteOutcome.APPLIED
        state = await fx.state("e1")
        assert dict(state.waits) == {"pause": spi.WakeAt(until)}
        assert state.status == spi.Running()
        assert K.SLEEP_STARTED in await fx.kinds("e1")

    async def test_i2_08_record_wait_leaves_existing_row_alone(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        first = fx.clock.now() + timedelta(hours=1)
        later = fx.clock.now() + timedelta(hours=5)
        await handle.record_wait("pause", spi.WakeAt(first), fx.sleep_started("e1", "pause", first))
        await handle.record_wait("pause", spi.WakeAt(later), fx.sleep_started("e1", "pause", later))
        assert dict((await fx.state("e1")).waits) == {"pause": spi.WakeAt(first)}

    # ------------------------------------------------------------------------ I3: atomic delivery

    async def test_i3_09_two_concurrent_signals_exactly_one_delivered(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        answers = await asyncio.gather(fx.deliver("e1", "field1", "a"), fx.deliver("e1", "field1", "b"))
        assert sorted(type(a).__name__ for a in answers) == ["AlreadyDelivered", "Delivered"]

    async def test_i3_10_winners_value_is_persisted(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.deliver("e1", "field1", "first") == spi.Delivered()
        assert await fx.deliver("e1", "field1", "second") == spi.AlreadyDelivered()
        assert await fx.store.get_field("e1", "field1") == field("first", "str")

    # ------------------------------------------------------------------------ I4: claim lease integrity

    async def test_i4_11_expired_claim_cannot_be_renewed_after_another_claims(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        a = await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        await fx.claim("e1", EX2)
        assert await a.renew_claim(LEASE) is False

    async def test_i4_12_renewal_before_expiry_succeeds(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert await handle.renew_claim(LEASE) is True

    async def test_i4_13_renewal_on_superseded_generation_fails_for_same_executor(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        first = await fx.claim("e1", EX1)
        assert await first.finish(spi.Suspended(frozenset())) == APPLIED
        second = await fx.claim("e1", EX1)
        assert await first.renew_claim(LEASE) is False
        assert await second.renew_claim(LEASE) is True

    # ------------------------------------------------------------------------ I5: terminal irreversibility

    async def test_i5_14_update_status_on_completed_stays_completed(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed())))
        assert await handle.update_status(spi.Running(), fx.event(K.STEP_STARTED, "e1")) != APPLIED
        assert (await fx.state("e1")).status == spi.Completed()

    async def test_i5_15_update_status_on_failed_stays_failed(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.finish(spi.Terminal(spi.Failed("err"), fx.ending("e1", spi.Failed("err"))))
        assert await handle.update_status(spi.Running(), fx.event(K.STEP_STARTED, "e1")) != APPLIED
        assert (await fx.state("e1")).status == spi.Failed("err")

    async def test_i5_16_claim_ready_never_returns_terminal_executions(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", status=spi.Completed())
        await fx.mk_execution("e2", status=spi.Failed("boom"))
        await fx.mk_execution("e3", status=spi.Cancelled())
        assert await fx.poll() == []

    async def test_i5_17_update_status_refuses_terminal_status_and_writes_nothing(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        await fx.deliver("e1", "x", "v")
        handle = await fx.claim("e1")
        before = await fx.history("e1")
        outcome = await handle.update_status(spi.Completed(), fx.ending("e1", spi.Completed()))
        assert outcome == WRONG_SIDE
        state = await fx.state("e1")
        assert state.status == spi.Running()
        assert await fx.history("e1") == before
        assert dict(state.waits) == {"x": spi.WakeOnField("x")}

    async def test_i5_18_finish_refuses_non_terminal_status_and_writes_nothing(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        await fx.deliver("e1", "x", "v")
        handle = await fx.claim("e1")
        before = await fx.snapshot("e1")
        status = spi.Compensating(spi.Failure("boom"))
        outcome = await handle.finish(spi.Terminal(status, fx.event(K.COMPENSATION_STARTED, "e1")))
        assert outcome == WRONG_SIDE
        assert await fx.snapshot("e1") == before
        assert (await fx.state("e1")).executor == EX1
        assert await handle.renew_claim(LEASE) is True

    # ------------------------------------------------------------------------ I6: read-your-writes

    async def test_i6_19_record_progress_then_get_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert await handle.record_progress("n", field(42), fx.step_completed("e1", "n")) == R
        assert await fx.store.get_field("e1", "n") == field(42)

    async def test_i6_20_update_status_then_get_execution(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        status = spi.Compensating(spi.Failure("boom"))
        await handle.update_status(status, fx.event(K.COMPENSATION_STARTED, "e1"))
        assert (await fx.state("e1")).status == status

    async def test_i6_21_append_event_then_get_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert await handle.append_event(fx.step_started("e1", "s1")) == spi.WriteOutcome.APPLIED
        assert K.STEP_STARTED in await fx.kinds("e1")

    # ------------------------------------------------------------------------ I7: event ordering

    async def test_i7_22_three_sequential_appends_come_back_in_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "a"))
        await handle.append_event(fx.step_completed("e1", "a"))
        await handle.append_event(fx.step_started("e1", "b"))
        assert await fx.kinds("e1") == [K.CREATED, K.STEP_STARTED, K.STEP_COMPLETED, K.STEP_STARTED]

    # ------------------------------------------------------------------------ I8: readiness

    async def test_i8_23_sleeping_until_future_not_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"nap": spi.WakeAt(fx.clock.now() + timedelta(hours=1))})
        [answer] = await fx.outlast([fx.start_poll(timeout=seconds(0.1))], 0.2)
        assert answer == []

    async def test_i8_24_sleeping_until_past_returned(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"nap": spi.WakeAt(fx.clock.now() + seconds(1))})
        await fx.clock.advance(2)
        assert fx.ids(await fx.poll()) == {"e1"}

    async def test_i8_25_waiting_for_absent_field_not_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        assert await fx.poll() == []

    async def test_i8_26_waiting_for_present_field_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        await fx.deliver("e1", "x", "v")
        assert fx.ids(await fx.poll()) == {"e1"}

    async def test_i8_27_claim_says_which_rows_are_satisfied(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        now = fx.clock.now()
        await fx.mk_waits(
            "e1",
            {
                "due": spi.WakeAt(now + seconds(1)),
                "later": spi.WakeAt(now + timedelta(hours=1)),
                "input": spi.WakeOnField("input"),
            },
        )
        await fx.clock.advance(2)
        handle = await fx.claim("e1")
        assert handle.satisfied == frozenset({"due"})

    async def test_i8_28_unserved_version_not_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.poll(served=frozenset({(WF1, "some-other-version")})) == []

    async def test_i8_29_cancel_request_makes_parked_execution_ready(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"never": spi.WakeOnField("never")})
        assert await fx.poll() == []
        assert await fx.store.request_cancel("e1") == spi.Accepted()
        [handle] = await fx.poll()
        assert handle.state.execution_id == "e1"
        assert handle.state.cancel_requested is True

    async def test_i8_30_discharged_wait_not_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"first": spi.WakeOnField("first")})
        await fx.deliver("e1", "first", "v")
        handle = await fx.claim("e1")
        assert await handle.record_progress("first", None, fx.input_discharged("e1", "first")) == R
        await handle.record_wait("second", spi.WakeOnField("second"), fx.input_waiting("e1", "second"))
        assert await fx.poll(EX2) == []

    async def test_i8_31_expired_claim_returned_regardless_of_rows(self, fx: StoreFixture) -> None:
        """[TC] the active-and-expired arm: the holder died mid-flight."""
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", EX1, SHORT_LEASE)
        await handle.record_wait("never", spi.WakeOnField("never"), fx.input_waiting("e1", "never"))
        await fx.clock.advance(10)
        assert fx.ids(await fx.poll(EX2)) == {"e1"}

    async def test_i8_32_ending_attempt_retires_rows_no_longer_waited_on(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.record_wait("loser", spi.WakeOnField("loser"), fx.input_waiting("e1", "loser"))
        await handle.record_wait("winner", spi.WakeOnField("winner"), fx.input_waiting("e1", "winner"))
        assert await handle.finish(spi.Suspended(frozenset({"winner"}))) == APPLIED
        state = await fx.state("e1")
        assert dict(state.waits) == {"winner": spi.WakeOnField("winner")}
        assert state.executor is None

    async def test_i8_33_running_unclaimed_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert fx.ids(await fx.poll()) == {"e1"}

    async def test_i8_34_running_claimed_with_valid_lease_not_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.claim("e1", EX1)
        assert await fx.poll(EX2) == []

    async def test_i8_35_running_claimed_with_expired_lease_returned(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        assert fx.ids(await fx.poll(EX2)) == {"e1"}

    async def test_i8_36_compensating_returned(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", status=spi.Compensating(spi.Failure("boom")))
        assert fx.ids(await fx.poll()) == {"e1"}

    async def test_i8_37_own_expired_claim_returned_to_same_executor(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        assert fx.ids(await fx.poll(EX1)) == {"e1"}

    async def test_i8_38_reclaimed_row_never_renewed_lapses_to_another(self, fx: StoreFixture) -> None:
        """[TC] forbids "re-stamp the expiry and withhold"."""
        await fx.mk_execution("e1")
        await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        assert fx.ids(await fx.poll(EX1, lease=SHORT_LEASE)) == {"e1"}
        await fx.clock.advance(10)
        assert fx.ids(await fx.poll(EX2)) == {"e1"}

    # ------------------------------------------------------------------------ I9: holder, deadline, token

    async def test_i9_39_claim_deadline_is_one_lease_past_callers_now(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        before = fx.clock.now()
        handle = await fx.claim("e1")
        after = fx.clock.now()
        expiry = (await fx.state("e1")).claim_expiry
        assert expiry is not None
        assert before + LEASE <= expiry <= after + LEASE
        assert handle.state.claim_expiry == expiry

    async def test_i9_40_returned_execution_names_caller(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", EX2)
        assert handle.state.executor == EX2
        assert (await fx.state("e1")).executor == EX2

    async def test_i9_41_claim_expiry_is_set(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert handle.state.claim_expiry is not None
        assert (await fx.state("e1")).claim_expiry is not None

    async def test_i9_42_each_claim_carries_greater_token(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        first = await fx.claim("e1")
        await first.finish(spi.Suspended(frozenset()))
        second = await fx.claim("e1")
        assert first.state.claim_token is not None
        assert second.state.claim_token is not None
        assert second.state.claim_token > first.state.claim_token
        assert (await fx.state("e1")).claim_token == second.state.claim_token

    # ------------------------------------------------------------------------ field operations

    async def test_fields_43_answered_mappings_support_ordinary_operations(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "a", 1)
        await fx.mk_field("e1", "b", "two", "str")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x"), "t": spi.WakeAt(fx.clock.now() + seconds(60))})
        fields = await fx.store.get_all_fields("e1")
        assert any(name == "a" for name in fields)
        assert [name for name, data in fields.items() if data.tag == "int"] == ["a"]
        assert all(isinstance(data, spi.FieldData) for data in fields.values())
        assert len(fields) == 2
        assert "b" in fields
        assert dict(fields) == {"a": field(1), "b": field("two", "str")}
        waits = (await fx.state("e1")).waits
        assert any(isinstance(w, spi.WakeAt) for w in waits.values())
        assert [p for p, w in waits.items() if isinstance(w, spi.WakeOnField)] == ["x"]
        assert all(p in {"x", "t"} for p in waits)
        assert len(waits) == 2
        assert sorted(waits) == ["t", "x"]

    async def test_fields_44_record_progress_then_get_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "greeting", "hello", "str")
        assert await fx.store.get_field("e1", "greeting") == field("hello", "str")
        assert (await fx.store.get_field("e1", "greeting")).decode() == "hello"  # type: ignore[union-attr]

    async def test_fields_45_get_field_absent_is_empty(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.store.get_field("e1", "nope") is None

    async def test_fields_46_second_record_progress_on_present_path_already_recorded(
        self, fx: StoreFixture
    ) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.record_wait("gate", spi.WakeOnField("gate"), fx.input_waiting("e1", "gate"))
        assert await handle.record_progress("step1", field(1), fx.step_completed("e1", "step1")) == R
        before = await fx.history("e1")
        assert await handle.record_progress("step1", field(2), fx.step_completed("e1", "step1")) == ALREADY
        assert await fx.store.get_field("e1", "step1") == field(1)
        assert await fx.history("e1") == before
        assert dict((await fx.state("e1")).waits) == {"gate": spi.WakeOnField("gate")}

    async def test_fields_47_valueless_progress_lands_once_on_path_with_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"answer": spi.WakeOnField("answer")})
        await fx.deliver("e1", "answer", "yes")
        handle = await fx.claim("e1")
        assert await handle.record_progress("answer", None, fx.input_discharged("e1", "answer")) == R
        assert dict((await fx.state("e1")).waits) == {}
        assert await handle.record_progress("answer", None, fx.input_discharged("e1", "answer")) == ALREADY
        assert await fx.store.get_field("e1", "answer") == field("yes", "str")

    async def test_fields_48_get_all_fields_returns_every_field(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "a", 1)
        await fx.mk_field("e1", "b", 2)
        assert dict(await fx.store.get_all_fields("e1")) == {"a": field(1), "b": field(2)}

    async def test_fields_49_get_all_fields_unknown_execution_is_empty(self, fx: StoreFixture) -> None:
        assert dict(await fx.store.get_all_fields("nope")) == {}

    async def test_fields_50_executions_keep_separate_fields(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.mk_field("e1", "x", 10)
        await fx.mk_field("e2", "x", 20)
        assert await fx.store.get_field("e1", "x") == field(10)
        assert await fx.store.get_field("e2", "x") == field(20)

    # ------------------------------------------------------------------------ signal

    async def test_signal_51_delivered_and_stored_when_absent(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.deliver("e1", "key", "v") == spi.Delivered()
        assert await fx.store.get_field("e1", "key") == field("v", "str")

    async def test_signal_52_already_delivered_keeps_original(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.deliver("e1", "key", "original")
        assert await fx.deliver("e1", "key", "other") == spi.AlreadyDelivered()
        assert await fx.store.get_field("e1", "key") == field("original", "str")

    async def test_signal_53_works_across_executions(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        assert await fx.deliver("e1", "key", 1, "int") == spi.Delivered()
        assert await fx.deliver("e2", "key", 2, "int") == spi.Delivered()

    async def test_signal_54_delivery_recorded_in_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.deliver("e1", "key", "v")
        last = (await fx.history("e1"))[-1]
        assert (last.kind, last.detail) == (K.INPUT_RECEIVED, "key")

    async def test_signal_55_delivery_to_terminal_execution_refused(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.terminate("e1", spi.Completed())
        before = await fx.snapshot("e1")
        assert await fx.deliver("e1", "key", "v") == spi.AlreadyTerminal(spi.Completed())
        assert await fx.store.get_field("e1", "key") is None
        assert await fx.snapshot("e1") == before

    # ------------------------------------------------------------------------ execution state

    async def test_state_56_get_execution_unknown_is_empty(self, fx: StoreFixture) -> None:
        assert await fx.store.get_execution("nope") is None

    async def test_state_57_create_execution_if_absent_creates_row(self, fx: StoreFixture) -> None:
        now = fx.clock.now()
        await fx.mk_execution("e1")
        assert await fx.state("e1") == spi.ExecutionState(
            execution_id="e1",
            flow_id=WF1,
            status=spi.Running(),
            executor=None,
            claim_expiry=None,
            hash="",
            created=now,
            updated=now,
            waits={},
            cancel_requested=False,
            claim_token=None,
        )

    async def test_state_58_status_writes_append_events_in_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"wait": spi.WakeAt(fx.clock.now())})
        handle = await fx.claim("e1")
        assert await handle.record_progress("wait", None, fx.sleep_completed("e1", "wait")) == R
        assert await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed()))) == APPLIED
        assert await fx.kinds("e1") == [K.CREATED, K.SLEEP_STARTED, K.SLEEP_COMPLETED, K.COMPLETED]

    async def test_state_59_running_sleeping_running_completed(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        until = fx.clock.now() + seconds(1)
        await fx.mk_waits("e1", {"nap": spi.WakeAt(until)})
        state = await fx.state("e1")
        assert (state.status, dict(state.waits)) == (spi.Running(), {"nap": spi.WakeAt(until)})
        await fx.clock.advance(2)
        handle = await fx.claim("e1")
        await handle.record_progress("nap", None, fx.sleep_completed("e1", "nap"))
        state = await fx.state("e1")
        assert (state.status, dict(state.waits)) == (spi.Running(), {})
        await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed())))
        assert (await fx.state("e1")).status == spi.Completed()

    # ------------------------------------------------------------------------ event history

    async def append_steps(self, fx: StoreFixture, eid: str, count: int) -> None:
        """Bring the history of a created `eid` to 1 + `count` events."""
        handle = await fx.claim(eid)
        for i in range(count):
            await handle.append_event(fx.step_started(eid, f"s{i}"))
        await handle.finish(spi.Suspended(frozenset()))

    async def test_history_60_events_in_append_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "s1"))
        await handle.append_event(fx.step_completed("e1", "s1"))
        events = await fx.history("e1")
        assert len(events) == 3
        assert (events[1].kind, events[1].detail) == (K.STEP_STARTED, "s1")
        assert events[2].kind == K.STEP_COMPLETED

    async def test_history_61_limit_returns_at_most_n(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 10)
        page = await fx.store.get_history("e1", limit=3)
        assert (len(page.events), page.has_more) == (3, True)

    async def test_history_62_offset_skips_events(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 5)
        page = await fx.store.get_history("e1", limit=10, offset=3)
        assert (len(page.events), page.has_more) == (3, False)
        assert [e.seq for e in page.events] == [4, 5, 6]

    async def test_history_63_second_create_keeps_history(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_completed("e1", "s1"))
        before = await fx.history("e1")
        created = await fx.store.create_execution_if_absent(
            "e1", WF1, "", spi.Running(), fx.created("e1"), {"x": field(1)}
        )
        assert created is False
        assert await fx.history("e1") == before
        assert K.STEP_COMPLETED in await fx.kinds("e1")
        assert await fx.store.get_field("e1", "x") is None

    async def test_history_64_last_page_with_huge_limit_has_no_more(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 1)
        for huge in (2**31 - 1, sys.maxsize):
            page = await fx.store.get_history("e1", limit=huge, offset=1)
            assert (len(page.events), page.has_more) == (1, False)

    async def test_history_65_negative_limit_means_all(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 2)
        page = await fx.store.get_history("e1", limit=-1)
        assert (len(page.events), page.has_more) == (3, False)

    async def test_history_66_list_executions_negative_limit_means_all(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        page = await fx.store.list_executions(WF1, limit=-1)
        assert (fx.ids(page), page.total) == ({"e1", "e2"}, 2)

    async def test_history_67_offset_at_end_is_empty_with_no_more(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 1)
        page = await fx.store.get_history("e1", limit=5, offset=2)
        assert (list(page.events), page.has_more) == ([], False)

    async def test_history_68_unknown_execution_is_empty(self, fx: StoreFixture) -> None:
        page = await fx.store.get_history("nope", limit=5)
        assert (list(page.events), page.has_more) == ([], False)
        page = await fx.store.get_history("nope")
        assert (list(page.events), page.has_more) == ([], False)

    # ------------------------------------------------------------------------ the acceptance rule

    async def test_acceptance_69_write_under_stale_claim_refused(self, fx: StoreFixture) -> None:
        """[TC] superseded, expired with no competitor, and released: each ClaimLost, no field written."""
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        superseded = await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        await fx.claim("e1", EX2)
        expired = await fx.claim("e2", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        released = await fx.claim("e3", EX1)
        await released.finish(spi.Suspended(frozenset()))
        for eid, handle in (("e1", superseded), ("e2", expired), ("e3", released)):
            outcome = await handle.record_progress("f", field(1), fx.step_completed(eid, "f"))
            assert outcome == spi.ProgressOutcome.CLAIM_LOST, eid
            assert await fx.store.get_field(eid, "f") is None, eid

    async def test_acceptance_70_stale_executor_cannot_fail_execution(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        stale = await fx.claim("e1", EX1, SHORT_LEASE)
        await fx.clock.advance(10)
        await fx.claim("e1", EX2)
        outcome = await stale.finish(spi.Terminal(spi.Failed("late"), fx.ending("e1", spi.Failed("late"))))
        assert outcome == LOST
        assert not (await fx.state("e1")).status.terminal
        assert K.FAILED not in await fx.kinds("e1")

    # ------------------------------------------------------------------------ claimReady

    async def test_claim_71_empty_when_no_executions(self, fx: StoreFixture) -> None:
        assert await fx.poll() == []

    async def test_claim_72_returns_unclaimed_running(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        [handle] = await fx.poll()
        assert handle.state.execution_id == "e1"
        assert handle.state.status == spi.Running()

    async def test_claim_73_does_not_return_terminal(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.terminate("e1", spi.Completed())
        assert await fx.poll() == []

    async def test_claim_74_returns_at_most_limit(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        assert len(await fx.poll(limit=2)) == 2

    async def test_claim_75_filters_by_served_workflows(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", WF1)
        await fx.mk_execution("e2", WF2)
        assert fx.ids(await fx.poll(served=SERVED)) == {"e1"}

    # ------------------------------------------------------------------------ renewClaim

    async def test_renew_76_true_and_extends_expiry(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        first = (await fx.state("e1")).claim_expiry
        await fx.clock.advance(1)
        assert await handle.renew_claim(LEASE) is True
        renewed = (await fx.state("e1")).claim_expiry
        assert first is not None
        assert renewed is not None
        assert renewed == fx.clock.now() + LEASE
        assert renewed > first

    async def test_renew_77_false_once_attempt_ended(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.finish(spi.Suspended(frozenset()))
        assert await handle.renew_claim(LEASE) is False

    async def test_renew_78_false_after_claim_expired(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", lease=SHORT_LEASE)
        await fx.clock.advance(10)
        assert await handle.renew_claim(LEASE) is False

    # ------------------------------------------------------------------------ finish

    async def test_finish_79_clears_executor_and_expiry(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert await handle.finish(spi.Suspended(frozenset())) == APPLIED
        state = await fx.state("e1")
        assert (state.executor, state.claim_expiry, state.claim_token) == (None, None, None)

    async def test_finish_80_released_execution_claimable_again(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1", EX1)
        await handle.finish(spi.Suspended(frozenset()))
        assert fx.ids(await fx.poll(EX2)) == {"e1"}

    async def test_finish_81_second_ending_leaves_next_claim_alone(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        first = await fx.claim("e1", EX1)
        await first.finish(spi.Suspended(frozenset()))
        await fx.claim("e1", EX2)
        assert await first.finish(spi.Suspended(frozenset())) == LOST
        assert (await fx.state("e1")).executor == EX2

    # ------------------------------------------------------------------------ requestCancel

    async def test_cancel_82_first_request_accepted_and_rides_row(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.store.request_cancel("e1") == spi.Accepted()
        state = await fx.state("e1")
        assert (state.cancel_requested, state.status) == (True, spi.Running())

    async def test_cancel_83_repeat_is_already_requested(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.store.request_cancel("e1")
        before = await fx.snapshot("e1")
        assert await fx.store.request_cancel("e1") == spi.AlreadyRequested()
        assert await fx.snapshot("e1") == before

    async def test_cancel_84_request_on_finished_answers_its_end(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.terminate("e1", spi.Completed())
        assert await fx.store.request_cancel("e1") == spi.AlreadyTerminal(spi.Completed())
        assert (await fx.state("e1")).cancel_requested is False

    # ------------------------------------------------------------------------ listExecutions

    async def listed(
        self, fx: StoreFixture, filt: spi.ExecutionFilter.Any | None, flow_id: str | None = WF1
    ) -> set[str]:
        page = await fx.store.list_executions(flow_id, filt)
        assert page.total == len(page.items)
        return fx.ids(page)

    async def test_list_85_returns_executions_of_flow(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", WF1)
        await fx.mk_execution("e2", WF1)
        await fx.mk_execution("e3", WF2)
        assert await self.listed(fx, None) == {"e1", "e2"}

    async def test_list_86_filters_by_status(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.terminate("e2", spi.Completed())
        assert await self.listed(fx, F.Running()) == {"e1"}

    async def test_list_87_filters_by_wait_kind_whatever_deadline(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.mk_waits("e2", {"nap": spi.WakeAt(fx.clock.now() + timedelta(hours=1))})
        await fx.mk_waits("e3", {"nap": spi.WakeAt(fx.clock.now() + timedelta(hours=2))})
        assert await self.listed(fx, F.Sleeping()) == {"e2", "e3"}
        assert await self.listed(fx, F.Running()) == {"e1", "e2", "e3"}

    async def test_list_88_filters_input_waits_by_name(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.mk_waits("e1", {"approval": spi.WakeOnField("approval")})
        await fx.mk_waits("e2", {"other": spi.WakeOnField("other")})
        assert await self.listed(fx, F.WaitingForInput("approval")) == {"e1"}
        assert await self.listed(fx, F.WaitingForInput()) == {"e1", "e2"}

    async def test_list_89_filters_cancel_requests(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.store.request_cancel("e1")
        assert await self.listed(fx, F.Cancelling()) == {"e1"}
        await fx.terminate("e1", spi.Cancelled())
        assert await self.listed(fx, F.Cancelling()) == set()

    async def test_list_90_filters_completed(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.terminate("e1", spi.Completed())
        await fx.terminate("e3", spi.Failed("boom"))
        assert await self.listed(fx, F.Completed()) == {"e1"}

    async def test_list_91_filters_cancelled(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.terminate("e1", spi.Cancelled("asked"))
        await fx.terminate("e2", spi.Completed())
        assert await self.listed(fx, F.Cancelled()) == {"e1"}

    async def test_list_92_filters_unwinding_whatever_cause(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", status=spi.Compensating(spi.Failure("boom", "Domain")))
        await fx.mk_execution("e2", status=spi.Compensating(spi.Cancellation("asked")))
        await fx.mk_execution("e3")
        assert await self.listed(fx, F.Compensating()) == {"e1", "e2"}

    async def test_list_93_unnarrowed_failure_matches_every_failure(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", status=spi.Failed("declined", "ChargeDeclined"))
        await fx.mk_execution("e2", status=spi.Failed("crash"))
        await fx.mk_execution("e3")
        assert await self.listed(fx, F.Failed()) == {"e1", "e2"}

    async def test_list_94_narrowed_failure_matches_that_kind(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", status=spi.Failed("declined", "ChargeDeclined"))
        await fx.mk_execution("e2", status=spi.Failed("crash"))
        assert await self.listed(fx, F.Failed("ChargeDeclined")) == {"e1"}
        assert await self.listed(fx, F.Failed("NoSuchKind")) == set()

    async def test_list_95_filters_non_terminal_executions_no_caller_serves(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", hash="v2")
        await fx.mk_execution("e2", hash="v2", status=spi.Completed())
        await fx.mk_execution("e3")
        assert await self.listed(fx, F.Orphaned(frozenset({""}))) == {"e1"}

    async def test_list_96_two_kinds_of_row_match_both_wait_filters(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits(
            "e1",
            {
                "timer": spi.WakeAt(fx.clock.now() + timedelta(hours=1)),
                "gate": spi.WakeOnField("approval"),
            },
        )
        for filt in (F.Sleeping(), F.WaitingForInput(), F.WaitingForInput("approval")):
            assert await self.listed(fx, filt) == {"e1"}, filt

    async def test_list_97_respects_limit_and_offset(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        page = await fx.store.list_executions(WF1, limit=1, offset=1)
        assert (len(page.items), page.total) == (1, 3)

    async def test_list_98_unknown_flow_is_empty(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        page = await fx.store.list_executions("nope")
        assert (list(page.items), page.total) == ([], 0)

    # ------------------------------------------------------------------------ workflow metadata

    def workflow(self, version: str = "1.0", id: str = "wf1", hash: str = "abc123") -> spi.WorkflowInfo:
        return spi.WorkflowInfo(
            id=id,
            meta=spi.WorkflowMeta(description="orders", tags=("shop",), version=version),
            nodes=(spi.NodeInfo(name="order", node_type="input", tag="Order"),),
            inputs=(spi.InputInfo(name="order", tag="Order"),),
            outputs=("total",),
            structural_hash=hash,
        )

    async def test_workflow_99_put_then_get(self, fx: StoreFixture) -> None:
        info = self.workflow()
        await fx.store.put_workflow(info)
        assert await fx.store.get_workflow("wf1") == info

    async def test_workflow_100_get_unknown_is_empty(self, fx: StoreFixture) -> None:
        assert await fx.store.get_workflow("nope") is None

    async def test_workflow_101_list_returns_all(self, fx: StoreFixture) -> None:
        await fx.store.put_workflow(self.workflow(id="wf1"))
        await fx.store.put_workflow(self.workflow(id="wf2", hash="def456"))
        assert sorted(w.id for w in await fx.store.list_workflows()) == ["wf1", "wf2"]

    async def test_workflow_102_put_overwrites_same_id(self, fx: StoreFixture) -> None:
        await fx.store.put_workflow(self.workflow("1.0"))
        await fx.store.put_workflow(self.workflow("2.0"))
        found = await fx.store.get_workflow("wf1")
        assert found is not None
        assert found.meta.version == "2.0"
        assert len(await fx.store.list_workflows()) == 1

    # ------------------------------------------------------------------------ cross-cutting

    async def test_cross_103_ten_concurrent_callers_five_ready_all_disjoint(self, fx: StoreFixture) -> None:
        for i in range(5):
            await fx.mk_execution(f"e{i}")
        answers = await asyncio.gather(*(fx.poll(f"executor-{i}", limit=1) for i in range(10)))
        handed = [c.state.execution_id for a in answers for c in a]
        assert sorted(handed) == [f"e{i}" for i in range(5)]

    async def test_cross_104_events_keep_order_across_executors_they_name(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.append_event(fx.step_started("e1", "s1", EX1))
        await handle.append_event(fx.step_started("e1", "s1", EX2))
        await handle.append_event(fx.step_started("e1", "s2", EX1))
        assert [e.detail for e in (await fx.history("e1"))[1:]] == ["s1", "s1", "s2"]

    async def test_cross_105_get_field_with_wrong_tag_is_empty(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_field("e1", "n", 7, "int")
        assert await fx.store.get_field("e1", "n", "str") is None
        assert await fx.store.get_field("e1", "n", "int") == field(7)

    async def test_cross_106_same_executor_renews_many_times(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert [await handle.renew_claim(LEASE) for _ in range(3)] == [True, True, True]

    async def test_cross_107_waiting_on_input_then_running_then_failed(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        state = await fx.state("e1")
        assert (state.status, dict(state.waits)) == (spi.Running(), {"x": spi.WakeOnField("x")})
        await fx.deliver("e1", "x", "v")
        handle = await fx.claim("e1")
        await handle.record_progress("x", None, fx.input_discharged("e1", "x"))
        assert dict((await fx.state("e1")).waits) == {}
        await handle.finish(spi.Terminal(spi.Failed("boom"), fx.ending("e1", spi.Failed("boom"))))
        assert (await fx.state("e1")).status == spi.Failed("boom")

    async def test_cross_108_running_then_cancelled(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.terminate("e1", spi.Cancelled("asked"))
        assert (await fx.state("e1")).status == spi.Cancelled("asked")

    # ------------------------------------------------------------------------ claimReady blocking

    async def test_blocking_109_empty_on_timeout_when_nothing_ready(self, fx: StoreFixture) -> None:
        [answer] = await fx.outlast([fx.start_poll(timeout=seconds(0.1))], 0.2)
        assert answer == []

    async def test_blocking_110_wakes_when_signal_makes_execution_ready(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"x": spi.WakeOnField("x")})
        poll = fx.start_poll(timeout=seconds(5))
        await fx.blocked()
        await fx.clock.advance(0.1)
        await fx.deliver("e1", "x", "v")
        await fx.clock.advance(0.2)
        assert fx.ids(await fx.answer_of(poll)) == {"e1"}

    async def test_blocking_111_wakes_when_execution_created(self, fx: StoreFixture) -> None:
        """[TC]"""
        poll = fx.start_poll(timeout=seconds(5))
        await fx.blocked()
        await fx.clock.advance(0.1)
        await fx.mk_execution("e1")
        await fx.clock.advance(0.2)
        assert fx.ids(await fx.answer_of(poll)) == {"e1"}

    async def test_blocking_112_expired_sleep_found_on_next_poll(self, fx: StoreFixture) -> None:
        """[TC]"""
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"nap": spi.WakeAt(fx.clock.now() + seconds(0.5))})
        [answer] = await fx.outlast([fx.start_poll(timeout=seconds(0.1))], 0.1)
        assert answer == []
        await fx.clock.advance(0.5)
        assert fx.ids(await fx.poll()) == {"e1"}

    # ------------------------------------------------------------------------ execution state equality

    async def test_equality_113_same_wait_ledger_equal_and_hash_alike(self, fx: StoreFixture) -> None:
        t = fx.clock.now() + timedelta(hours=1)
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.mk_waits("e1", {"a": spi.WakeAt(t), "b": spi.WakeOnField("b")})
        await fx.mk_waits("e2", {"b": spi.WakeOnField("b"), "a": spi.WakeAt(t)})
        one = await fx.state("e1")
        two = dataclasses.replace(await fx.state("e2"), execution_id="e1")
        assert one == two
        assert hash(one) == hash(two)

    async def test_equality_114_different_wait_ledgers_not_equal(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"a": spi.WakeOnField("a")})
        state = await fx.state("e1")
        assert state != dataclasses.replace(state, waits={"a": spi.WakeOnField("other")})
        extra = {"a": spi.WakeOnField("a"), "b": spi.WakeOnField("b")}
        assert state != dataclasses.replace(state, waits=extra)

    async def test_equality_115_row_differing_outside_wait_ledger_not_equal(self, fx: StoreFixture) -> None:
        """Every field varied in turn; the field count is pinned, so a new field fails this case."""
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"a": spi.WakeOnField("a")})
        state = await fx.state("e1")
        later = fx.clock.now() + timedelta(hours=1)
        variations: dict[str, Any] = {
            "execution_id": "other",
            "flow_id": WF2,
            "status": spi.Completed(),
            "executor": EX2,
            "claim_expiry": later,
            "hash": "v2",
            "created": later,
            "updated": later,
            "waits": {},
            "cancel_requested": True,
            "claim_token": 99,
            "cancel_reason": "why",
        }
        names = [f.name for f in dataclasses.fields(spi.ExecutionState)]
        assert len(names) == 12
        assert sorted(variations) == sorted(names)
        for name, value in variations.items():
            assert state != dataclasses.replace(state, **{name: value}), name

    # ------------------------------------------------------------------------ Flowdeck: Stopped

    async def test_flowdeck_stopped_never_claimed(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        status = await fx.stop("e1", waits={"nap": spi.WakeAt(fx.clock.now() + seconds(1))})
        await fx.clock.advance(timedelta(hours=1))  # its row is due and no lease is left
        assert await fx.poll() == []
        state = await fx.state("e1")
        assert state.status == status
        assert (await fx.history("e1"))[-1].kind == K.STOPPED

    async def test_flowdeck_finish_stop_retires_rows_and_releases_claim(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.record_wait("gate", spi.WakeOnField("gate"), fx.input_waiting("e1", "gate"))
        status = spi.Stopped("F0003", "charge", "no answer after 5 tries")
        assert await handle.finish(spi.Stop(status, fx.stopped("e1", status))) == APPLIED
        state = await fx.state("e1")
        assert (state.status, dict(state.waits)) == (status, {})
        assert (state.executor, state.claim_expiry, state.claim_token) == (None, None, None)
        assert await handle.renew_claim(LEASE) is False

    async def test_flowdeck_cancel_lifts_stop_and_makes_claimable(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.stop("e1")
        assert await fx.store.request_cancel("e1", "customer left", "ops") == spi.Accepted()
        state = await fx.state("e1")
        assert (state.status, state.cancel_requested, state.cancel_reason) == (
            spi.Running(),
            True,
            "customer left",
        )
        [handle] = await fx.poll()
        assert (handle.state.execution_id, handle.cancel_requested) == ("e1", True)
        assert handle.cancel_reason == "customer left"

    async def test_flowdeck_cancel_lifts_stop_inside_unwind_to_compensating(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        cause = spi.Failure("declined", "ChargeDeclined")
        await fx.stop("e1", spi.Stopped("F0002", "refund", "undo keeps failing", cause=cause))
        assert await fx.store.request_cancel("e1", "give up") == spi.Accepted()
        assert (await fx.state("e1")).status == spi.Compensating(cause)
        assert fx.ids(await fx.poll()) == {"e1"}

    async def test_flowdeck_stopped_filter_with_and_without_code(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.stop("e1", spi.Stopped("F0001", "a", "bug"))
        await fx.stop("e2", spi.Stopped("F0004", "b", "unknown outcome"))
        assert await self.listed(fx, F.Stopped()) == {"e1", "e2"}
        assert await self.listed(fx, F.Stopped("F0004")) == {"e2"}
        assert await self.listed(fx, F.Stopped("F0999")) == set()
        assert await self.listed(fx, F.Running()) == {"e3"}

    # ------------------------------------------------------------------------ Flowdeck: operator writes

    async def test_flowdeck_operator_writes_refused_on_terminal(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.terminate("e1", spi.Completed())
        before = await fx.snapshot("e1")
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.ALREADY_TERMINAL
        assert await fx.store.answer("e1", "a", field(1), fx.answered("e1", "a")) == OP.ALREADY_TERMINAL
        assert await fx.store.end("e1", spi.Failed("by hand"), fx.ended("e1", "x")) == OP.ALREADY_TERMINAL
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_operator_writes_not_found(self, fx: StoreFixture) -> None:
        assert await fx.store.resume("nope", "v2", fx.resumed("nope", "", "v2")) == OP.NOT_FOUND
        assert await fx.store.answer("nope", "a", None, fx.answered("nope", "a")) == OP.NOT_FOUND
        assert await fx.store.end("nope", spi.Failed("x"), fx.ended("nope", "x")) == OP.NOT_FOUND
        assert await fx.store.get_execution("nope") is None

    async def test_flowdeck_missing_execution_answers_cancelled(self, fx: StoreFixture) -> None:
        assert await fx.deliver("nope", "x", 1) == spi.AlreadyTerminal(spi.Cancelled())
        assert await fx.store.request_cancel("nope") == spi.AlreadyTerminal(spi.Cancelled())
        assert await fx.store.get_execution("nope") is None

    async def test_flowdeck_resume_repins_parked_execution(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.APPLIED
        state = await fx.state("e1")
        assert (state.hash, state.status) == ("v2", spi.Running())
        assert (await fx.history("e1"))[-1].kind == K.RESUMED
        assert await fx.poll(served=frozenset({(WF1, "")})) == []
        assert fx.ids(await fx.poll(served=frozenset({(WF1, "v2")}))) == {"e1"}

    async def test_flowdeck_resume_lifts_stop(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.stop("e1")
        cause = spi.Cancellation("asked")
        await fx.stop("e2", spi.Stopped("F0002", "refund", "undo failed", cause=cause))
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.APPLIED
        assert await fx.store.resume("e2", "v2", fx.resumed("e2", "", "v2")) == OP.APPLIED
        assert (await fx.state("e1")).status == spi.Running()
        assert (await fx.state("e2")).status == spi.Compensating(cause)
        assert fx.ids(await fx.poll(served=frozenset({(WF1, "v2")}))) == {"e1", "e2"}

    async def test_flowdeck_resume_and_end_refused_under_live_claim(self, fx: StoreFixture) -> None:
        """[TC] a person may not change an execution under a worker's feet; a lapsed claim is no claim."""
        await fx.mk_execution("e1")
        await fx.claim("e1", lease=SHORT_LEASE)
        before = await fx.snapshot("e1")
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.CLAIM_HELD
        assert await fx.store.end("e1", spi.Failed("x"), fx.ended("e1", "x")) == OP.CLAIM_HELD
        assert await fx.snapshot("e1") == before
        await fx.clock.advance(10)
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.APPLIED

    async def test_flowdeck_answer_writes_once(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        waits = {"charge": spi.WakeOnField("charge"), "gate": spi.WakeOnField("gate")}
        await fx.stop("e1", spi.Stopped("F0004", "charge", "unknown outcome"), waits)
        assert await fx.store.answer("e1", "charge", field("ch_1", "str"), fx.answered("e1", "charge")) == (
            OP.APPLIED
        )
        assert await fx.store.get_field("e1", "charge") == field("ch_1", "str")
        assert dict((await fx.state("e1")).waits) == {}  # the stop retired them; the answer writes none
        assert (await fx.history("e1"))[-1].kind == K.ANSWERED
        before = await fx.snapshot("e1")
        assert await fx.store.answer("e1", "charge", field("ch_2", "str"), fx.answered("e1", "charge")) == (
            OP.ALREADY_RECORDED
        )
        assert await fx.store.answer("e1", "charge", None, fx.answered("e1", "charge")) == OP.ALREADY_RECORDED
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_valueless_answer_is_a_progress_mark(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.stop("e1", spi.Stopped("F0004", "ship", "unknown outcome"))
        assert await fx.store.answer("e1", "ship", None, fx.answered("e1", "ship")) == OP.APPLIED
        assert await fx.store.answer("e1", "ship", None, fx.answered("e1", "ship")) == OP.ALREADY_RECORDED
        assert await fx.store.get_field("e1", "ship") is None
        await fx.store.resume("e1", "", fx.resumed("e1", "", ""))
        handle = await fx.claim("e1")
        assert await handle.record_progress("ship", None, fx.step_completed("e1", "ship")) == ALREADY

    async def test_flowdeck_answer_needs_stopped(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        before = await fx.snapshot("e1")
        assert await fx.store.answer("e1", "a", field(1), fx.answered("e1", "a")) == OP.NOT_STOPPED
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_end_fails_without_unwind(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        await fx.stop("e1", waits={"gate": spi.WakeOnField("gate")})
        for eid in ("e1", "e2"):
            assert await fx.store.end(eid, spi.Failed("fixed by hand"), fx.ended(eid, "fixed")) == OP.APPLIED
            state = await fx.state(eid)
            assert (state.status, dict(state.waits), state.executor) == (
                spi.Failed("fixed by hand"),
                {},
                None,
            )
            assert (await fx.history(eid))[-1].kind == K.ENDED
        assert await fx.poll() == []
        assert await fx.store.end("e1", spi.Failed("again"), fx.ended("e1", "again")) == OP.ALREADY_TERMINAL

    # ------------------------------------------------------------------------ Flowdeck: listing

    async def test_flowdeck_list_id_prefix_and_total(self, fx: StoreFixture) -> None:
        for eid in ("order-1", "order-2", "order-3", "refund-1"):
            await fx.mk_execution(eid)
        page = await fx.store.list_executions(WF1, id_prefix="order-", limit=2)
        assert (len(page.items), page.total) == (2, 3)
        assert fx.ids(page) <= {"order-1", "order-2", "order-3"}
        page = await fx.store.list_executions(WF1, F.Running(), id_prefix="refund")
        assert (fx.ids(page), page.total) == ({"refund-1"}, 1)

    async def test_flowdeck_list_all_workflows_newest_first(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", WF1)
        await fx.clock.advance(1)
        await fx.mk_execution("e2", WF2)
        await fx.clock.advance(1)
        await fx.mk_execution("e3", WF1)
        page = await fx.store.list_executions(None)
        assert ([s.execution_id for s in page.items], page.total) == (["e3", "e2", "e1"], 3)
        page = await fx.store.list_executions(None, limit=1, offset=1)
        assert ([s.execution_id for s in page.items], page.total) == (["e2"], 3)

    # ------------------------------------------------------------------------ Flowdeck: cancellation

    async def test_flowdeck_cancel_reason_rides_row_and_event(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        assert await fx.store.request_cancel("e1", "customer left", "alice") == spi.Accepted()
        assert (await fx.state("e1")).cancel_reason == "customer left"
        last = (await fx.history("e1"))[-1]
        assert (last.kind, last.detail, last.data.get("actor")) == (
            K.CANCEL_REQUESTED,
            "customer left",
            "alice",
        )
        assert await fx.store.request_cancel("e1", "other reason") == spi.AlreadyRequested()
        assert (await fx.state("e1")).cancel_reason == "customer left"

    async def test_flowdeck_claimed_cancel_flag_refreshed_by_write(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert (handle.cancel_requested, handle.cancel_reason) == (False, "")
        await fx.store.request_cancel("e1", "stop it")
        assert await handle.append_event(fx.step_started("e1", "s1")) == spi.WriteOutcome.APPLIED
        assert (handle.cancel_requested, handle.cancel_reason) == (True, "stop it")

    async def test_flowdeck_every_claimed_write_refreshes_cancel_flag(self, fx: StoreFixture) -> None:
        writes = {
            "record_wait": lambda h, e: h.record_wait("w", spi.WakeOnField("w"), fx.input_waiting(e, "w")),
            "update_status": lambda h, e: h.update_status(
                spi.Compensating(spi.Failure("x")), fx.event(K.COMPENSATION_STARTED, e)
            ),
            "record_progress": lambda h, e: h.record_progress("p", field(1), fx.step_completed(e, "p")),
            "renew_claim": lambda h, e: h.renew_claim(LEASE),
        }
        for name, write in writes.items():
            await fx.mk_execution(name)
            handle = await fx.claim(name)
            await fx.store.request_cancel(name, name)
            outcome = await write(handle, name)
            assert outcome in (spi.WriteOutcome.APPLIED, APPLIED, R, True), name
            assert (handle.cancel_requested, handle.cancel_reason) == (True, name)

    async def test_flowdeck_clear_cancel_withdraws_request(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"approval": spi.WakeOnField("approval")})
        await fx.store.request_cancel("e1", "changed my mind")
        handle = await fx.claim("e1")
        outcome = await handle.record_progress(
            "approval", field("heard", "str"), fx.step_completed("e1", "approval"), clear_cancel=True
        )
        assert outcome == R
        state = await fx.state("e1")
        assert (state.cancel_requested, state.cancel_reason, dict(state.waits)) == (False, "", {})
        assert (handle.cancel_requested, handle.cancel_reason) == (False, "")

    async def test_flowdeck_completed_ending_refused_while_a_cancel_is_outstanding(
        self, fx: StoreFixture
    ) -> None:
        """I2 for cancellation: the request and the Completed ending are judged in one write."""
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await fx.mk_execution("e2")
        assert await fx.store.request_cancel("e1", "too late", "ops") == spi.Accepted()
        before = await fx.snapshot("e1")
        ending = spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed()))
        assert await handle.finish(ending, preceding=[fx.step_completed("e1", "last")]) == CANCELLING
        assert await fx.snapshot("e1") == before  # nothing written, the claim kept
        assert (handle.cancel_requested, handle.cancel_reason) == (True, "too late")
        assert await handle.renew_claim(LEASE) is True
        # the unwind the refusal calls for lands under the same claim
        cause = spi.Cancellation("too late")
        started = fx.event(K.COMPENSATION_STARTED, "e1", cause=spi.cause_to_json(cause))
        assert await handle.update_status(spi.Compensating(cause), started) == APPLIED
        cancelled = spi.Cancelled("too late")
        assert await handle.finish(spi.Terminal(cancelled, fx.ending("e1", cancelled))) == APPLIED
        state = await fx.state("e1")
        assert (state.status, state.executor, state.claim_token) == (cancelled, None, None)
        kinds = await fx.kinds("e1")
        assert kinds[-3:] == [K.CANCEL_REQUESTED, K.COMPENSATION_STARTED, K.CANCELLED]

    async def test_flowdeck_other_endings_land_with_a_cancel_outstanding(self, fx: StoreFixture) -> None:
        """Only Completed is refused: Cancelled and Failed end an unwind, Suspended leaves the row ready."""
        endings: dict[str, spi.ClaimOutcome] = {
            "cancelled": spi.Terminal(spi.Cancelled("why"), fx.ending("cancelled", spi.Cancelled("why"))),
            "failed": spi.Terminal(spi.Failed("boom"), fx.ending("failed", spi.Failed("boom"))),
            "suspended": spi.Suspended(frozenset()),
        }
        for eid, ending in endings.items():
            await fx.mk_execution(eid)
            handle = await fx.claim(eid)
            await fx.store.request_cancel(eid, "why")
            assert await handle.finish(ending) == APPLIED, eid
        assert (await fx.state("cancelled")).status == spi.Cancelled("why")
        assert (await fx.state("failed")).status == spi.Failed("boom")
        assert fx.ids(await fx.poll()) == {"suspended"}  # ready again: the cancel request (I8)

    async def test_flowdeck_completed_ending_racing_a_cancel_request(self, fx: StoreFixture) -> None:
        """A Completed ending and a cancel request sent together: exactly one of them wins, each answer
        says which, and the row agrees. Never Accepted and then Completed."""
        for i in range(12):
            eid = f"race{i}"
            await fx.mk_execution(eid)
            handle = await fx.claim(eid)
            ending = handle.finish(spi.Terminal(spi.Completed(), fx.ending(eid, spi.Completed())))
            cancel = fx.store.request_cancel(eid, "race", "ops")
            if i % 2:
                answer, finished = await asyncio.gather(cancel, ending)
            else:
                finished, answer = await asyncio.gather(ending, cancel)
            state = await fx.state(eid)
            kinds = await fx.kinds(eid)
            if finished == APPLIED:
                assert answer == spi.AlreadyTerminal(spi.Completed()), eid
                assert (state.status, state.cancel_requested) == (spi.Completed(), False), eid
                assert K.CANCEL_REQUESTED not in kinds, eid
            else:
                assert (finished, answer) == (CANCELLING, spi.Accepted()), eid
                assert (state.status, state.cancel_requested, state.executor) == (spi.Running(), True, EX1)
                assert (K.COMPLETED not in kinds, handle.cancel_requested) == (True, True), eid

    # -------------------------------------------------------------------- Flowdeck: one-transaction writes

    async def test_flowdeck_preceding_events_land_in_order(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")

        def before(name: str) -> list[spi.Event]:
            return [fx.step_started("e1", f"{name}-1"), fx.step_started("e1", f"{name}-2")]

        await handle.append_event(fx.step_completed("e1", "ae"), preceding=before("ae"))
        await handle.record_wait(
            "rw", spi.WakeOnField("rw"), fx.input_waiting("e1", "rw"), preceding=before("rw")
        )
        await handle.update_status(
            spi.Compensating(spi.Failure("x")), fx.event(K.COMPENSATION_STARTED, "e1"), preceding=before("us")
        )
        await handle.record_progress("rp", field(1), fx.step_completed("e1", "rp"), preceding=before("rp"))
        await handle.finish(
            spi.Terminal(spi.Failed("x"), fx.ending("e1", spi.Failed("x"))), preceding=before("fi")
        )
        events = await fx.history("e1")
        assert [(e.kind, e.detail) for e in events] == [
            (K.CREATED, ""),
            (K.STEP_STARTED, "ae-1"),
            (K.STEP_STARTED, "ae-2"),
            (K.STEP_COMPLETED, "ae"),
            (K.STEP_STARTED, "rw-1"),
            (K.STEP_STARTED, "rw-2"),
            (K.INPUT_WAITING, "rw"),
            (K.STEP_STARTED, "us-1"),
            (K.STEP_STARTED, "us-2"),
            (K.COMPENSATION_STARTED, ""),
            (K.STEP_STARTED, "rp-1"),
            (K.STEP_STARTED, "rp-2"),
            (K.STEP_COMPLETED, "rp"),
            (K.STEP_STARTED, "fi-1"),
            (K.STEP_STARTED, "fi-2"),
            (K.FAILED, "x"),
        ]
        assert [e.seq for e in events] == list(range(1, 17))

    async def test_flowdeck_refused_writes_write_nothing_not_even_preceding(self, fx: StoreFixture) -> None:
        """[TC] every Claimed verb under a lapsed claim: ClaimLost (or False), and no change at all."""
        await fx.mk_execution("e1")
        stale = await fx.claim("e1", lease=SHORT_LEASE)
        await fx.clock.advance(10)
        before = await fx.snapshot("e1")
        pre = [fx.step_started("e1", "pre")]
        lost = spi.WriteOutcome.CLAIM_LOST
        assert await stale.append_event(fx.step_completed("e1", "a"), preceding=pre) == lost
        assert await stale.record_wait(
            "w", spi.WakeOnField("w"), fx.input_waiting("e1", "w"), preceding=pre
        ) == (lost)
        assert await stale.update_status(
            spi.Compensating(spi.Failure("x")), fx.event(K.COMPENSATION_STARTED, "e1"), preceding=pre
        ) == (LOST)
        assert await stale.record_progress(
            "p", field(1), fx.step_completed("e1", "p"), preceding=pre, extra_fields={"p#undo": field(2)}
        ) == (spi.ProgressOutcome.CLAIM_LOST)
        assert await stale.finish(spi.Suspended(frozenset()), preceding=pre) == LOST
        assert (
            await stale.finish(spi.Stop(spi.Stopped("F0001"), fx.stopped("e1", spi.Stopped("F0001")))) == LOST
        )
        assert await stale.renew_claim(LEASE) is False
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_extra_fields_written_once(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        undo = field({"handler": "shop.refund", "arg": "ch_1"}, "undo")
        outcome = await handle.record_progress(
            "charge",
            field("ch_1", "str"),
            fx.step_completed("e1", "charge"),
            extra_fields={"charge#undo": undo},
        )
        assert outcome == R
        again = field({"handler": "shop.refund", "arg": "ch_2"}, "undo")
        await handle.record_progress(
            "other", field(2), fx.step_completed("e1", "other"), extra_fields={"charge#undo": again}
        )
        assert dict(await fx.store.get_all_fields("e1")) == {
            "charge": field("ch_1", "str"),
            "charge#undo": undo,
            "other": field(2),
        }

    async def test_flowdeck_refused_progress_writes_no_extra_fields(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        await handle.record_progress("charge", field(1), fx.step_completed("e1", "charge"))
        outcome = await handle.record_progress(
            "charge", field(2), fx.step_completed("e1", "charge"), extra_fields={"charge#undo": field(3)}
        )
        assert outcome == ALREADY
        assert dict(await fx.store.get_all_fields("e1")) == {"charge": field(1)}

    # ------------------------------------------------------------------------ Flowdeck: history, versions

    async def test_flowdeck_history_events_carry_increasing_seq(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await self.append_steps(fx, "e1", 4)
        await fx.deliver("e1", "x", 1)
        await fx.store.request_cancel("e1")
        assert [e.seq for e in await fx.history("e1")] == [1, 2, 3, 4, 5, 6, 7]
        page = await fx.store.get_history("e1", limit=2, offset=2)
        assert ([e.seq for e in page.events], page.has_more) == ([3, 4], True)

    async def test_flowdeck_create_with_seed_fields(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", fields={"order": field({"id": 7}, "Order")})
        assert dict(await fx.store.get_all_fields("e1")) == {"order": field({"id": 7}, "Order")}
        [created] = await fx.history("e1")
        assert (created.kind, created.seq, created.execution_id) == (K.CREATED, 1, "e1")

    async def test_flowdeck_workflow_versions_by_hash(self, fx: StoreFixture) -> None:
        v1 = self.workflow("1.0", hash="h1")
        v2 = self.workflow("2.0", hash="h2")
        await fx.store.put_workflow(v1)
        await fx.store.put_workflow(v2)
        assert await fx.store.get_workflow("wf1") == v2
        assert await fx.store.get_workflow("wf1", "h1") == v1
        assert await fx.store.get_workflow("wf1", "h3") is None
        assert list(await fx.store.list_workflow_versions("wf1")) == [v1, v2]
        assert list(await fx.store.list_workflow_versions("nope")) == []
        assert list(await fx.store.list_workflows()) == [v2]

    async def test_flowdeck_record_wait_appends_event_either_way(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        first = fx.clock.now() + seconds(60)
        await handle.record_wait("nap", spi.WakeAt(first), fx.sleep_started("e1", "nap", first))
        later = first + seconds(60)
        assert await handle.record_wait("nap", spi.WakeAt(later), fx.sleep_started("e1", "nap", later)) == (
            spi.WriteOutcome.APPLIED
        )
        assert await fx.kinds("e1") == [K.CREATED, K.SLEEP_STARTED, K.SLEEP_STARTED]
        assert dict((await fx.state("e1")).waits) == {"nap": spi.WakeAt(first)}

    async def test_flowdeck_claims_oldest_created_first(self, fx: StoreFixture) -> None:
        for eid in ("old", "mid", "new"):
            await fx.mk_execution(eid)
            await fx.clock.advance(1)
        assert [c.state.execution_id for c in await fx.poll(limit=2)] == ["old", "mid"]

    async def test_flowdeck_an_empty_claim_writes_nothing(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.claim("e1", EX1)
        before = await fx.snapshot("e1")
        assert await fx.poll(EX2) == []
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_claim_handle_state_is_the_claimed_row(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert handle.state == await fx.state("e1")

    async def test_flowdeck_stopped_execution_still_takes_deliveries(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.stop("e1", waits={"approval": spi.WakeOnField("approval")})
        assert await fx.deliver("e1", "approval", "yes") == spi.Delivered()
        assert await fx.poll() == []
        assert (await fx.state("e1")).status == spi.Stopped("F0001", "charge", "boom", "Traceback ...")

    async def test_flowdeck_prefetched_ledger_is_the_record_at_claim_time(self, fx: StoreFixture) -> None:
        """Optional for a store; one that hands the record over with the claim must hand the true one."""
        await fx.mk_execution("e1", fields={"seed": field(1)})
        await fx.mk_field("e1", "a", 2)
        await fx.deliver("e1", "x", "v")
        handle = await fx.claim("e1")
        fields = dict(await fx.store.get_all_fields("e1"))
        history = [(e, e.seq) for e in await fx.history("e1")]
        await handle.record_progress("b", field(3), fx.step_completed("e1", "b"))
        ledger = await handle.prefetched_ledger()
        if ledger is not None:
            assert (dict(ledger[0]), [(e, e.seq) for e in ledger[1]]) == (fields, history)

    # ------------------------------------------------------------------------ Flowdeck: created claimed

    async def test_flowdeck_created_claimed_row_is_held_under_a_fresh_token(self, fx: StoreFixture) -> None:
        await fx.mk_execution("before")
        earlier = await fx.claim("before")
        now = fx.clock.now()
        handle = await fx.create_claimed("e1")
        assert handle is not None
        state = await fx.state("e1")
        assert state == spi.ExecutionState(
            execution_id="e1",
            flow_id=WF1,
            status=spi.Running(),
            executor=EX1,
            claim_expiry=now + LEASE,
            hash="",
            created=now,
            updated=now,
            waits={},
            cancel_requested=False,
            claim_token=state.claim_token,
        )
        assert handle.state == state
        assert state.claim_token is not None
        assert earlier.state.claim_token is not None
        assert state.claim_token > earlier.state.claim_token
        assert (handle.satisfied, handle.cancel_requested, handle.cancel_reason) == (frozenset(), False, "")

    async def test_flowdeck_created_claimed_hands_its_record_over(self, fx: StoreFixture) -> None:
        """The seed fields and the Created event are stored, and are the handle's prefetched ledger: the
        attempt that runs it at once reads nothing."""
        seeds = {"order": field({"id": 7}, "Order"), "n": field(1)}
        handle = await fx.create_claimed("e1", fields=seeds)
        assert handle is not None
        assert dict(await fx.store.get_all_fields("e1")) == seeds
        [created] = await fx.history("e1")
        assert (created.kind, created.seq, created.execution_id) == (K.CREATED, 1, "e1")
        ledger = await handle.prefetched_ledger()
        assert ledger is not None, "a created-claimed handle answers its ledger"
        assert (dict(ledger[0]), [(e, e.seq) for e in ledger[1]]) == (seeds, [(created, 1)])

    async def test_flowdeck_created_claimed_not_offered_while_its_lease_holds(self, fx: StoreFixture) -> None:
        await fx.create_claimed("e1")
        assert await fx.poll(EX2) == []
        await fx.clock.advance(LEASE - seconds(1))
        assert await fx.poll(EX2) == []
        assert await fx.poll(EX1) == []

    async def test_flowdeck_created_claimed_offered_once_its_lease_lapses(self, fx: StoreFixture) -> None:
        first = await fx.create_claimed("e1")
        assert first is not None
        assert first.state.claim_token is not None
        await fx.clock.advance(LEASE)
        [again] = await fx.poll(EX2)
        assert (again.state.execution_id, again.state.executor) == ("e1", EX2)
        assert again.state.claim_token is not None
        assert again.state.claim_token > first.state.claim_token

    async def test_flowdeck_created_claimed_handle_writes_and_finishes(self, fx: StoreFixture) -> None:
        handle = await fx.create_claimed("e1")
        assert handle is not None
        assert await handle.record_progress("a", field(1), fx.step_completed("e1", "a")) == R
        assert await handle.renew_claim(LEASE)
        assert await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed()))) == APPLIED
        state = await fx.state("e1")
        assert (state.status, state.executor, state.claim_expiry, state.claim_token) == (
            spi.Completed(),
            None,
            None,
            None,
        )
        assert [(e.kind, e.seq) for e in await fx.history("e1")] == [
            (K.CREATED, 1),
            (K.STEP_COMPLETED, 2),
            (K.COMPLETED, 3),
        ]
        assert (await fx.store.get_field("e1", "a")) == field(1)

    async def test_flowdeck_created_claimed_handle_refused_once_reclaimed(self, fx: StoreFixture) -> None:
        handle = await fx.create_claimed("e1")
        assert handle is not None
        assert await handle.record_progress("a", field(1), fx.step_completed("e1", "a")) == R
        await fx.clock.advance(LEASE)
        await fx.claim("e1", EX2)
        before = await fx.snapshot("e1")
        lost = spi.ProgressOutcome.CLAIM_LOST
        assert await handle.record_progress("b", field(2), fx.step_completed("e1", "b")) == lost
        assert await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed()))) == LOST
        assert not await handle.renew_claim(LEASE)
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_created_claimed_existing_id_is_left_alone(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", fields={"seed": field(1)})
        await fx.claim("e1", EX2)
        before = await fx.snapshot("e1")
        assert await fx.create_claimed("e1", fields={"seed": field(2), "other": field(3)}) is None
        assert await fx.snapshot("e1") == before
        # and an id taken by a created-claimed row is taken for a plain create too
        assert await fx.create_claimed("e2") is not None
        before = await fx.snapshot("e2")
        assert not await fx.store.create_execution_if_absent("e2", WF1, "", spi.Running(), fx.created("e2"))
        assert await fx.snapshot("e2") == before

    # ------------------------------------------------------------------------ Flowdeck: delivered claimed

    async def test_flowdeck_delivery_claims_the_row_it_makes_ready(self, fx: StoreFixture) -> None:
        """The input satisfies a wait row of an unclaimed row: delivered and claimed in one transition,
        under a fresh token, with the record after the delivery handed over."""
        await fx.mk_execution("e1", fields={"seed": field(1)})
        nap = fx.clock.now() + seconds(60)
        await fx.mk_waits("e1", {"go": spi.WakeOnField("go"), "nap": spi.WakeAt(nap)})
        await fx.mk_execution("before")
        earlier = await fx.claim("before")
        now = fx.clock.now()
        outcome, handle = await fx.deliver_claiming("e1", "go", "yes")
        assert outcome == spi.Delivered()
        assert handle is not None, "a delivery that makes an unclaimed row ready claims it"
        state = await fx.state("e1")
        assert (state.executor, state.claim_expiry, state.updated) == (EX1, now + LEASE, now)
        assert state.claim_token is not None
        assert earlier.state.claim_token is not None
        assert state.claim_token > earlier.state.claim_token
        assert handle.state == state
        assert (handle.satisfied, handle.cancel_requested, handle.cancel_reason) == (
            frozenset({"go"}),
            False,
            "",
        )
        fields = dict(await fx.store.get_all_fields("e1"))
        assert fields == {"seed": field(1), "go": spi.FieldData.of("yes", "str")}
        history = await fx.history("e1")
        assert (history[-1].kind, history[-1].detail) == (K.INPUT_RECEIVED, "go")
        ledger = await handle.prefetched_ledger()
        assert ledger is not None, "a delivery-claimed handle answers its ledger"
        assert (dict(ledger[0]), [(e, e.seq) for e in ledger[1]]) == (fields, [(e, e.seq) for e in history])

    async def test_flowdeck_delivery_claims_a_row_whose_claim_lapsed(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        dead = await fx.claim("e1", EX2)
        await dead.record_wait("go", spi.WakeOnField("go"), fx.input_waiting("e1", "go"))
        await fx.clock.advance(LEASE)
        outcome, handle = await fx.deliver_claiming("e1", "go", "yes")
        assert outcome == spi.Delivered()
        assert handle is not None
        assert (await fx.state("e1")).executor == EX1
        assert not await dead.renew_claim(LEASE)

    async def test_flowdeck_delivery_leaves_a_row_waiting_on_another_input(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"other": spi.WakeOnField("other")})
        assert await fx.deliver_claiming("e1", "go", "yes") == (spi.Delivered(), None)
        state = await fx.state("e1")
        assert (state.executor, state.claim_expiry, state.claim_token) == (None, None, None)
        assert await fx.store.get_field("e1", "go") == spi.FieldData.of("yes", "str")
        assert (await fx.kinds("e1"))[-1] == K.INPUT_RECEIVED
        assert await fx.poll(EX2) == []

    async def test_flowdeck_delivery_leaves_a_row_a_live_claim_holds(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        holder = await fx.claim("e1", EX2)
        await holder.record_wait("go", spi.WakeOnField("go"), fx.input_waiting("e1", "go"))
        before = await fx.state("e1")
        assert await fx.deliver_claiming("e1", "go", "yes") == (spi.Delivered(), None)
        after = await fx.state("e1")
        assert (after.executor, after.claim_expiry, after.claim_token) == (
            EX2,
            before.claim_expiry,
            before.claim_token,
        )
        assert await holder.renew_claim(LEASE)
        assert await fx.store.get_field("e1", "go") == spi.FieldData.of("yes", "str")

    async def test_flowdeck_delivery_claims_nothing_it_refuses(self, fx: StoreFixture) -> None:
        """Missing, ended, already delivered: `signal`'s answer, nothing written, no claim."""
        assert await fx.deliver_claiming("nope", "go", "yes") == (spi.AlreadyTerminal(spi.Cancelled()), None)
        assert await fx.store.get_execution("nope") is None
        await fx.mk_execution("done")
        await fx.terminate("done", spi.Completed())
        before = await fx.snapshot("done")
        assert await fx.deliver_claiming("done", "go", "yes") == (spi.AlreadyTerminal(spi.Completed()), None)
        assert await fx.snapshot("done") == before
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"go": spi.WakeOnField("go")})
        assert await fx.deliver("e1", "go", "first") == spi.Delivered()
        before = await fx.snapshot("e1")
        assert await fx.deliver_claiming("e1", "go", "second") == (spi.AlreadyDelivered(), None)
        assert await fx.snapshot("e1") == before

    async def test_flowdeck_delivery_claimed_not_offered_while_lease_holds(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"go": spi.WakeOnField("go")})
        _, first = await fx.deliver_claiming("e1", "go", "yes")
        assert first is not None
        assert await fx.poll(EX2) == []
        await fx.clock.advance(LEASE - seconds(1))
        assert await fx.poll(EX2) == []
        await fx.clock.advance(1)
        [again] = await fx.poll(EX2)
        assert (again.state.execution_id, again.state.executor, again.satisfied) == ("e1", EX2, {"go"})
        assert again.state.claim_token is not None
        assert first.state.claim_token is not None
        assert again.state.claim_token > first.state.claim_token

    async def test_flowdeck_delivery_claimed_handle_writes_and_finishes(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"go": spi.WakeOnField("go")})
        _, handle = await fx.deliver_claiming("e1", "go", "yes")
        assert handle is not None
        assert await handle.record_progress("go", None, fx.input_discharged("e1", "go")) == R
        assert await handle.record_progress("a", field(1), fx.step_completed("e1", "a")) == R
        assert await handle.renew_claim(LEASE)
        assert await handle.finish(spi.Terminal(spi.Completed(), fx.ending("e1", spi.Completed()))) == APPLIED
        state = await fx.state("e1")
        assert (state.status, state.executor, state.claim_token, dict(state.waits)) == (
            spi.Completed(),
            None,
            None,
            {},
        )
        assert (await fx.kinds("e1"))[-4:] == [
            K.INPUT_RECEIVED,
            K.INPUT_DISCHARGED,
            K.STEP_COMPLETED,
            K.COMPLETED,
        ]


class _Jumping(ManualClock):
    """A manual clock that jumps both times forward right after one chosen task next reads the wall clock,
    to land a jump exactly between a poll's ask and its deadline check."""

    def __init__(self) -> None:
        super().__init__()
        self.jump_after: tuple[asyncio.Task[Any], float] | None = None

    def now(self) -> Any:
        value = super().now()
        if self.jump_after is not None:
            task, by = self.jump_after
            try:
                current = asyncio.current_task()
            except RuntimeError:  # read from a thread: not the chosen task
                current = None
            if current is task:
                self.jump_after = None
                self._wall += timedelta(seconds=by)
                self._mono += by
        return value


class InProcessBlockingConformance(_StoreCase):
    """The reference in-memory store's own cases (kyo-flow-store-spec.md §2, "Store-specific cases"), for
    any store whose blocking poll waits in this process and is woken in this process by a write."""

    async def wall_step_case(self, fx: StoreFixture, step: timedelta) -> None:
        start = fx.clock.monotonic()
        poll = fx.start_poll(served=SERVED, timeout=seconds(5))
        await fx.blocked()
        fx.clock.step_wall(step)
        await fx.clock.advance(1)
        await fx.mk_execution("e2", WF2)  # a write the poll cannot claim
        for _ in range(59):
            await fx.blocked_or_done(poll)  # woken by the write, it waits again (or has answered)
            if poll.done():
                break
            await fx.clock.advance(1)
        await fx.blocked_or_done(poll)
        assert poll.done(), "the poll outlived a minute of monotonic time"
        assert await poll == []
        assert 5 <= fx.clock.monotonic() - start < 60

    async def test_store_specific_01_deadline_on_monotonic_time_when_wall_steps_back(
        self, fx: StoreFixture
    ) -> None:
        await self.wall_step_case(fx, -timedelta(hours=1))

    async def test_store_specific_02_deadline_on_monotonic_time_when_wall_steps_forward(
        self, fx: StoreFixture
    ) -> None:
        await self.wall_step_case(fx, timedelta(hours=1))

    async def test_store_specific_03_write_before_poll_does_not_wake_it(self, fx: StoreFixture) -> None:
        """[TC] the poll reads the wall clock exactly twice: once on entry, once at the deadline."""
        await fx.mk_execution("e2", WF2)
        reads = fx.clock.now_calls
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads == 2

    async def test_store_specific_04_one_write_wakes_every_blocked_poll(self, fx: StoreFixture) -> None:
        """The clock never moves: only a broadcast wake lets B see the row while A keeps waiting."""
        hour = timedelta(hours=1)
        a = fx.start_poll(EX1, served=frozenset({(WF1, "")}), timeout=hour)
        b = fx.start_poll(EX2, served=frozenset({(WF2, "")}), timeout=hour)
        await fx.blocked(2)
        await fx.mk_execution("e2", WF2)
        assert fx.ids(await fx.answer_of(b)) == {"e2"}
        await settle()
        assert not a.done()
        await fx.mk_execution("e1", WF1)
        assert fx.ids(await fx.answer_of(a)) == {"e1"}

    async def test_store_specific_05_poll_finding_time_up_after_wake_asks_once_more(self) -> None:
        clock = _Jumping()
        store = await self.open_store(clock)
        try:
            fx = StoreFixture(store, clock)
            await fx.mk_execution("e1")
            await fx.mk_waits("e1", {"nap": spi.WakeAt(clock.now() + seconds(1))})
            poll = fx.start_poll(served=SERVED, timeout=seconds(1))
            await fx.blocked()
            unservable = fx.created("e2", WF2)
            clock.jump_after = (poll, 2.0)
            await store.create_execution_if_absent("e2", WF2, "", spi.Running(), unservable)
            assert fx.ids(await fx.answer_of(poll)) == {"e1"}
            assert clock.jump_after is None, "the poll never asked after its wake"
        finally:
            await self.close_store(store)

    async def test_store_specific_07_created_claimed_row_wakes_no_poll(self, fx: StoreFixture) -> None:
        """Flowdeck: nobody else may claim a created-claimed row, so its creation wakes nobody; the poll
        reads the wall clock once more after it, at its deadline, and answers nothing."""
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        await fx.blocked()
        assert await fx.create_claimed("e1") is not None
        reads = fx.clock.now_calls
        await settle()  # a wake, had there been one, reaches the poll, which asks again and waits again
        await fx.blocked()
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads == 1

    async def test_store_specific_08_claiming_delivery_wakes_no_poll(self, fx: StoreFixture) -> None:
        """Flowdeck: a delivery that claims the row it made ready wakes nobody (the poll reads the wall clock
        once more, at its deadline); one that claims nothing wakes the poll, which asks again (once more).

        Clock reads are counted from before each delivery: a woken poll may ask again before the delivery's
        caller resumes, so counting from after it would depend on scheduling. A non-claiming delivery's own
        reads are measured first, with no poll running, and subtracted."""
        for eid, wait in (("e1", "go"), ("e2", "other"), ("e3", "other")):
            await fx.mk_execution(eid)
            await fx.mk_waits(eid, {wait: spi.WakeOnField(wait)})
        reads = fx.clock.now_calls
        assert await fx.deliver_claiming("e3", "go", "yes") == (spi.Delivered(), None)
        delivery_reads = fx.clock.now_calls - reads
        poll = fx.start_poll(served=SERVED, timeout=seconds(2))
        await fx.blocked()
        _, handle = await fx.deliver_claiming("e1", "go", "yes")
        assert handle is not None
        reads = fx.clock.now_calls
        await settle()
        await fx.blocked()
        assert fx.clock.now_calls == reads, "a claiming delivery woke the poll"
        reads = fx.clock.now_calls
        assert await fx.deliver_claiming("e2", "go", "yes") == (spi.Delivered(), None)
        await settle()
        await fx.blocked_or_done(poll)
        [answer] = await fx.outlast([poll], 3)
        assert answer == []
        assert fx.clock.now_calls - reads - delivery_reads == 2

    async def test_store_specific_06_registration_wakes_poll_which_asks_once(self, fx: StoreFixture) -> None:
        """A poll woken by a registration asks once and answers, so its caller polls with its newer set."""
        poll = fx.start_poll(served=SERVED, timeout=timedelta(hours=1))
        await fx.blocked()
        await fx.store.put_workflow(
            spi.WorkflowInfo(id=WF1, structural_hash="h1", meta=spi.WorkflowMeta(version="1"))
        )
        assert await fx.answer_of(poll) == []
