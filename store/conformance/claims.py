"""Claims and readiness: who gets an execution, when, and under which token."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowdeck.store import spi
from flowdeck.store.conformance.case import APPLIED, LOST, K, R, StoreCase, field
from flowdeck.store.conformance.support import (
    EX1,
    EX2,
    LEASE,
    SERVED,
    SHORT_LEASE,
    WF1,
    WF2,
    StoreFixture,
    seconds,
)


class ClaimCases(StoreCase):
    """claim_ready and create_claimed_if_absent: exclusivity (I1), readiness (I8), the holder, deadline and
    token (I9), blocking, and the row created already claimed."""

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

    async def test_cross_103_ten_concurrent_callers_five_ready_all_disjoint(self, fx: StoreFixture) -> None:
        for i in range(5):
            await fx.mk_execution(f"e{i}")
        answers = await asyncio.gather(*(fx.poll(f"executor-{i}", limit=1) for i in range(10)))
        handed = [c.state.execution_id for a in answers for c in a]
        assert sorted(handed) == [f"e{i}" for i in range(5)]

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

    async def test_flowdeck_a_sleep_coming_due_wakes_a_blocked_poll(self, fx: StoreFixture) -> None:
        """Flowdeck: with nothing ready, a poll's wait ends when a served row's sleep comes due, not at the
        poll's deadline, so a durable sleep (or a rate limit's wait) ends on time, whatever the poll's
        timeout."""
        await fx.mk_execution("e1")
        await fx.mk_waits("e1", {"nap": spi.WakeAt(fx.clock.now() + seconds(1))})
        [answer] = await fx.outlast([fx.start_poll(timeout=timedelta(hours=1))], 1)
        assert fx.ids(answer) == {"e1"}

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

    async def test_flowdeck_created_claimed_records_the_events_following_created(
        self, fx: StoreFixture
    ) -> None:
        """A creator that knows its first write (the engine's start that runs here: the claim and the first
        node's start) hands it over with the row: one transition, numbered after Created, in the handle's
        ledger and in the feed; the handle's next write is numbered after them."""
        before = await fx.store.latest_event_id()
        opening = [fx.event(K.EXECUTION_CLAIMED, "e1", executor_id=EX1), fx.step_started("e1", "a")]
        handle = await fx.create_claimed("e1", following=opening)
        assert handle is not None
        history = await fx.history("e1")
        assert [(e.kind, e.seq, e.data) for e in history] == [
            (K.CREATED, 1, {}),
            (K.EXECUTION_CLAIMED, 2, {"executor_id": EX1}),
            (K.STEP_STARTED, 3, {"step_name": "a", "executor_id": EX1}),
        ]
        ledger = await handle.prefetched_ledger()
        assert ledger is not None
        assert [(e.kind, e.seq) for e in ledger[1]] == [(e.kind, e.seq) for e in history]
        fed = await fx.store.events_after(before)
        assert [(e.execution_id, e.kind) for e in fed] == [("e1", e.kind) for e in history]
        assert await handle.record_progress("a", field(1), fx.step_completed("e1", "a")) == R
        assert [(e.kind, e.seq) for e in await fx.history("e1")][-1] == (K.STEP_COMPLETED, 4)
        # an id taken already: nothing of the opening is written either
        before_again = await fx.snapshot("e1")
        assert await fx.create_claimed("e1", following=[fx.step_started("e1", "b")]) is None
        assert await fx.snapshot("e1") == before_again

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
