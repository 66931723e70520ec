"""The execution row: create_execution_if_absent, get_execution, status journeys and equality."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from flowdeck.store import concurrency, spi
from flowdeck.store.conformance.case import APPLIED, K, R, StoreCase
from flowdeck.store.conformance.support import EX2, WF1, WF2, StoreFixture, seconds


class ExecutionCases(StoreCase):
    """The execution row: created once, moved through its statuses, compared as a value."""

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
            "priority": 5,
            "concurrency": concurrency.Limits(limit=1),
        }
        names = [f.name for f in dataclasses.fields(spi.ExecutionState)]
        assert len(names) == 14
        assert sorted(variations) == sorted(names)
        for name, value in variations.items():
            assert state != dataclasses.replace(state, **{name: value}), name
