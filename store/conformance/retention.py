"""Retention: `purge_ended` and `count_purgeable` (a Flowdeck addition).

A mixin of `FlowStoreConformance`, so every backend runs them. The world each case starts from (`world`):
ended executions of each kind, each with a ledger (a seed field, a recorded step, a delivered input,
events), some ended before the cutoff and some after, and unended ones (running, waiting, stopped,
compensating) created long before it."""

from __future__ import annotations

from datetime import datetime

import pytest

from flowdeck.store import counts, spi
from flowdeck.store.conformance.case import StoreCase
from flowdeck.store.conformance.support import WF1, WF2, StoreFixture, seconds
from flowdeck.store.field_terms import parse_field_term

OLD_ENDED = {"done-1": WF1, "done-2": WF1, "failed-1": WF1, "cancelled-1": WF2, "done-wf2": WF2}
ENDINGS = {
    "done": spi.Completed(),
    "failed": spi.Failed("boom", "KeyError"),
    "cancelled": spi.Cancelled("no"),
}
UNENDED = ("running-1", "waiting-1", "stopped-1", "compensating-1")


def _ending(eid: str) -> spi.Status:
    return ENDINGS[eid.split("-")[0]]


class RetentionCases(StoreCase):
    """A purge takes only ended executions that ended before the cutoff, within its filters and limit,
    with their whole ledger; nothing else moves."""

    async def ended_with_ledger(self, fx: StoreFixture, eid: str, flow_id: str, status: spi.Status) -> None:
        order = spi.FieldData.of({"customer": eid}, "Order")
        await fx.mk_execution(eid, flow_id, fields={"order": order})
        await fx.mk_waits(eid, {"approval": spi.WakeOnField("approval")})
        assert await fx.deliver(eid, "approval", "yes", flow_id=flow_id) == spi.Delivered()
        await fx.mk_field(eid, "charge", 12)
        await fx.terminate(eid, status)

    async def world(self, fx: StoreFixture) -> datetime:
        """The executions named above; answers the cutoff: `OLD_ENDED` ended before it, `late-done`
        (created before it) and `new-done` after it, and `UNENDED` are old but unended."""
        for eid, flow_id in OLD_ENDED.items():
            await self.ended_with_ledger(fx, eid, flow_id, _ending(eid))
        await fx.mk_execution("late-done")
        for eid in UNENDED:
            await fx.mk_execution(eid, fields={"order": spi.FieldData.of({"customer": eid}, "Order")})
        await fx.mk_waits("waiting-1", {"approval": spi.WakeOnField("approval")})
        await fx.stop("stopped-1", spi.Stopped("F0001", "charge", "boom"))
        handle = await fx.claim("compensating-1")
        event = fx.event(spi.EventKind.COMPENSATION_STARTED, "compensating-1")
        status = spi.Compensating(spi.Failure("boom"))
        assert await handle.update_status(status, event) == spi.StatusOutcome.APPLIED
        assert await handle.finish(spi.Suspended(frozenset())) == spi.StatusOutcome.APPLIED
        await fx.clock.advance(100)
        cutoff = fx.clock.now()
        await fx.clock.advance(100)
        await fx.terminate("late-done", spi.Completed())
        await self.ended_with_ledger(fx, "new-done", WF1, spi.Completed())
        return cutoff

    async def everything(self, fx: StoreFixture) -> set[str]:
        return fx.ids(await fx.store.list_executions(None))

    async def gone(self, fx: StoreFixture, eid: str) -> None:
        assert await fx.store.get_execution(eid) is None
        assert await fx.store.get_all_fields(eid) == {}
        assert await fx.store.get_field(eid, "order") is None
        assert list((await fx.store.get_history(eid)).events) == []
        found = await fx.store.list_executions(None, fields=[parse_field_term(f"field:order.customer={eid}")])
        assert found.total == 0
        feed = await fx.store.events_after(0, execution_id=eid)
        assert list(feed) == []

    async def test_retention_purges_only_the_old_ended(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        before = {eid: await fx.snapshot(eid) for eid in (*UNENDED, "late-done", "new-done")}
        assert await fx.store.purge_ended(ended_before=cutoff, limit=100) == len(OLD_ENDED)
        for eid in OLD_ENDED:
            await self.gone(fx, eid)
        assert await self.everything(fx) == set(before)
        for eid, snapshot in before.items():
            assert await fx.snapshot(eid) == snapshot, f"{eid} changed"
        assert await fx.store.purge_ended(ended_before=cutoff, limit=100) == 0
        # the feed's ids leave out the purged executions' events, as its events do
        every = await fx.store.events_after(0, limit=10**6)
        assert list(await fx.store.event_ids_after(0, limit=10**6)) == [e.id for e in every]

    async def test_retention_counts_go_with_the_rows(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        await fx.store.purge_ended(ended_before=cutoff, limit=100)
        assert list(await fx.store.count_by_status()) == [
            counts.StatusCount(WF1, "compensating", 1),
            counts.StatusCount(WF1, "completed", 2),
            counts.StatusCount(WF1, "running", 2),
            counts.StatusCount(WF1, "stopped", 1),
        ]
        assert list(await fx.store.failure_kinds()) == []
        assert (await fx.store.list_executions(WF2)).total == 0

    async def test_retention_dry_count_matches_the_purge(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        assert list(await fx.store.count_purgeable(ended_before=cutoff)) == [
            counts.StatusCount(WF1, "completed", 2),
            counts.StatusCount(WF1, "failed", 1),
            counts.StatusCount(WF2, "cancelled", 1),
            counts.StatusCount(WF2, "completed", 1),
        ]
        assert list(await fx.store.count_purgeable(ended_before=cutoff, statuses=["failed"])) == [
            counts.StatusCount(WF1, "failed", 1)
        ]
        assert list(await fx.store.count_purgeable(ended_before=cutoff, workflow_id=WF2)) == [
            counts.StatusCount(WF2, "cancelled", 1),
            counts.StatusCount(WF2, "completed", 1),
        ]
        later = fx.clock.now() + seconds(1)
        assert sum(c.executions for c in await fx.store.count_purgeable(ended_before=later)) == 7
        assert len(await self.everything(fx)) == len(OLD_ENDED) + 2 + len(UNENDED)  # it wrote nothing

    async def test_retention_status_and_workflow_filters(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        assert (
            await fx.store.purge_ended(ended_before=cutoff, statuses=["failed", "cancelled"], limit=100) == 2
        )
        assert {"failed-1", "cancelled-1"}.isdisjoint(await self.everything(fx))
        assert await fx.store.purge_ended(ended_before=cutoff, workflow_id=WF2, limit=100) == 1
        assert "done-wf2" not in await self.everything(fx)
        assert {"done-1", "done-2"} <= await self.everything(fx)
        assert await fx.store.purge_ended(ended_before=cutoff, workflow_id=WF1, limit=100) == 2

    async def test_retention_limit_per_batch_oldest_first(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        assert await fx.store.purge_ended(ended_before=cutoff, statuses=["completed"], limit=2) == 2
        assert {"done-1", "done-2"}.isdisjoint(await self.everything(fx))
        assert "done-wf2" in await self.everything(fx)
        assert await fx.store.purge_ended(ended_before=cutoff, limit=2) == 2
        assert await fx.store.purge_ended(ended_before=cutoff, limit=2) == 1
        assert await fx.store.purge_ended(ended_before=cutoff, limit=2) == 0

    async def test_retention_never_takes_an_unended_execution(self, fx: StoreFixture) -> None:
        await self.world(fx)
        await fx.clock.advance(10_000)
        every = await fx.store.purge_ended(ended_before=fx.clock.now(), limit=100)
        assert every == len(OLD_ENDED) + 2
        assert await self.everything(fx) == set(UNENDED)
        claims = await fx.poll()  # the running ones still run: the one with no wait row is claimable
        assert fx.ids(claims) == {"running-1", "compensating-1"}
        assert await fx.deliver("waiting-1", "approval", "yes") == spi.Delivered()

    async def test_retention_refuses_a_status_that_can_still_run(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        for word in ("running", "stopped", "compensating", "bogus"):
            with pytest.raises(ValueError, match="only ended executions"):
                await fx.store.purge_ended(ended_before=cutoff, statuses=[word], limit=10)
            with pytest.raises(ValueError, match="only ended executions"):
                await fx.store.count_purgeable(ended_before=cutoff, statuses=[word])
        assert len(await self.everything(fx)) == len(OLD_ENDED) + 2 + len(UNENDED)

    async def test_retention_a_purged_id_may_start_again(self, fx: StoreFixture) -> None:
        cutoff = await self.world(fx)
        before = await fx.store.latest_event_id()
        await fx.store.purge_ended(ended_before=cutoff, limit=100)
        await fx.mk_execution("done-1", WF2)
        assert (await fx.state("done-1")).flow_id == WF2
        assert await fx.kinds("done-1") == [spi.EventKind.CREATED]
        assert await fx.store.get_all_fields("done-1") == {}
        feed = await fx.store.events_after(0, execution_id="done-1")
        assert [(e.seq, e.kind) for e in feed] == [(1, "Created")]
        assert feed[0].id > before
