"""Cancellation: request_cancel, the cancel flag on the claim, and how an ending meets a request."""

from __future__ import annotations

import asyncio

from flowdeck.store import spi
from flowdeck.store.conformance.case import APPLIED, CANCELLING, K, R, StoreCase, field
from flowdeck.store.conformance.support import EX1, LEASE, StoreFixture


class CancelCases(StoreCase):
    """request_cancel: the request rides the row with its reason, every claimed write refreshes it, and a
    Completed ending is refused while one is outstanding."""

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

    # ------------------------------------------------------------------------ Flowdeck: a cancel lifts a stop

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
