"""Flowdeck's Stopped status and the operator writes: resume, answer, end."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.store import spi
from flowdeck.store.conformance.case import ALREADY, APPLIED, OP, K, StoreCase, field
from flowdeck.store.conformance.support import LEASE, SHORT_LEASE, WF1, StoreFixture, seconds


class OperatorWriteCases(StoreCase):
    """Flowdeck: Stopped executions and the operator writes (resume, answer, end), which refuse a live
    claim and answer instead of raising."""

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

    async def test_flowdeck_answer_at_the_stop_marks_it_answered(self, fx: StoreFixture) -> None:
        """An answer for the node the execution stopped at leaves it Stopped, marked answered (it waits for
        a resume only); an answer for another node leaves the stop as it was; a resume lifts both."""
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        stop = spi.Stopped("F0001", "ship", "KeyError: 'Atlantis'", "Traceback …")
        await fx.stop("e1", stop)
        await fx.stop("e2", stop)
        assert await fx.store.answer("e1", "ship", field("by-hand", "str"), fx.answered("e1", "ship")) == (
            OP.APPLIED
        )
        assert await fx.store.answer("e2", "notify", None, fx.answered("e2", "notify")) == OP.APPLIED
        answered = spi.Stopped("F0001", "ship", "KeyError: 'Atlantis'", "Traceback …", answered=True)
        assert (await fx.state("e1")).status == answered
        assert spi.status_from_json(spi.status_to_json(answered)) == answered
        assert (await fx.state("e2")).status == stop
        assert await fx.store.resume("e1", "v2", fx.resumed("e1", "", "v2")) == OP.APPLIED
        assert (await fx.state("e1")).status == spi.Running()

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
