"""Writes through a claim and the lease they are judged by."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.store import spi
from flowdeck.store.conformance.case import ALREADY, APPLIED, LOST, WRONG_SIDE, K, R, StoreCase, field
from flowdeck.store.conformance.support import EX1, EX2, LEASE, SHORT_LEASE, StoreFixture, seconds


class WriteCases(StoreCase):
    """Writes through a `Claimed` handle: one transition each (I2), the lease (I4), terminal statuses
    (I5), read-your-writes (I6), the acceptance rule, renewClaim and finish."""

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

    async def test_cross_106_same_executor_renews_many_times(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        handle = await fx.claim("e1")
        assert [await handle.renew_claim(LEASE) for _ in range(3)] == [True, True, True]

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
