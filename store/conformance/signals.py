"""Deliveries: signal (I3) and signal_and_claim."""

from __future__ import annotations

import asyncio

from flowdeck.store import spi
from flowdeck.store.conformance.case import APPLIED, K, R, StoreCase, field
from flowdeck.store.conformance.support import EX1, EX2, LEASE, StoreFixture, seconds


class SignalCases(StoreCase):
    """signal and signal_and_claim: exactly one delivery of a name wins (I3), and a delivery that makes
    its row ready may claim it in the same transition."""

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

    async def test_flowdeck_stopped_execution_still_takes_deliveries(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.stop("e1", waits={"approval": spi.WakeOnField("approval")})
        assert await fx.deliver("e1", "approval", "yes") == spi.Delivered()
        assert await fx.poll() == []
        assert (await fx.state("e1")).status == spi.Stopped("F0001", "charge", "boom", "Traceback ...")

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
