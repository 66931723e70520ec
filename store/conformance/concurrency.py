"""Concurrency limits (`store.concurrency`, a Flowdeck addition): a claim never takes more executions of a
workflow, or of a key, than its limit allows, counting the slots held by every claimer; a slot frees when its
attempt ends (completed, failed, cancelled, stopped, suspended) or its lease lapses; the queued are claimed
in claim order."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence

from flowdeck.store import claim_order, concurrency, spi
from flowdeck.store.conformance.case import APPLIED, StoreCase
from flowdeck.store.conformance.support import EX2, SHORT_LEASE, WF1, WF2, StoreFixture, seconds

K = spi.EventKind
LIMITED = spi.WorkflowMeta(concurrency="2 running; 1 per customer")


class ConcurrencyCases(StoreCase):
    """Executions of `wf1` (a version declaring limits) started under limits (their Created event's data)."""

    async def limited(self, fx: StoreFixture, flow_id: str = WF1) -> None:
        await fx.store.put_workflow(spi.WorkflowInfo(id=flow_id, structural_hash="", meta=LIMITED))

    async def mk_limited(
        self,
        fx: StoreFixture,
        eid: str,
        *,
        limit: int = 0,
        key: str | None = None,
        per_key: int = 0,
        priority: int = 0,
        flow_id: str = WF1,
    ) -> None:
        limits = concurrency.Limits(limit=limit, key=key, per_key=per_key)
        data = concurrency.event_data(limits) | claim_order.event_data(priority)
        event = fx.event(K.CREATED, eid, flow_id, **data)
        assert await fx.store.create_execution_if_absent(eid, flow_id, "", spi.Running(), event)
        await fx.clock.advance(1)

    @staticmethod
    def ids(claimed: Sequence[spi.Claimed]) -> list[str]:
        return sorted(h.state.execution_id for h in claimed)

    async def complete(self, fx: StoreFixture, handle: spi.Claimed) -> None:
        eid = handle.state.execution_id
        assert await handle.finish(spi.Terminal(spi.Completed(), fx.ending(eid, spi.Completed()))) == APPLIED

    async def test_flowdeck_the_row_keeps_its_limits(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        await self.mk_limited(fx, "a", limit=3, key="c-1", per_key=1)
        await fx.mk_execution("plain")
        assert (await fx.state("a")).concurrency == concurrency.Limits(3, "c-1", 1)
        assert (await fx.state("plain")).concurrency is None
        [created] = [e for e in await fx.history("a") if e.kind == K.CREATED]
        assert created.data == {"concurrency": {"limit": 3, "key": "c-1", "per_key": 1}}

    async def test_flowdeck_never_more_than_the_workflow_limit(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n in range(5):
            await self.mk_limited(fx, f"e{n}", limit=2)
        first = await fx.poll()
        assert self.ids(first) == ["e0", "e1"]
        assert await fx.poll(EX2) == []  # another claimer finds the slots held
        await self.complete(fx, first[0])
        assert self.ids(await fx.poll(EX2)) == ["e2"]  # the oldest queued
        assert await fx.poll() == []

    async def test_flowdeck_never_more_than_the_key_limit(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n, key in enumerate("aabab"):
            await self.mk_limited(fx, f"e{n}", key=key, per_key=1)
        claimed = await fx.poll()
        assert self.ids(claimed) == ["e0", "e2"]  # one per key, each key's oldest
        assert await fx.poll(EX2) == []
        await self.complete(fx, claimed[0])  # a's slot frees: its next, e1
        assert self.ids(await fx.poll(EX2)) == ["e1"]

    async def test_flowdeck_both_limits_hold_together(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n, key in enumerate("abcab"):
            await self.mk_limited(fx, f"e{n}", limit=2, key=key, per_key=1)
        assert self.ids(await fx.poll()) == ["e0", "e1"]
        assert await fx.poll() == []

    async def test_flowdeck_a_slot_frees_on_every_ending(self, fx: StoreFixture) -> None:
        """Failed, cancelled, stopped and suspended (parked on an input) each give the slot back."""
        await self.limited(fx)
        for n in range(5):
            await self.mk_limited(fx, f"e{n}", key="k", per_key=1)
        endings = [
            spi.Terminal(spi.Failed("no"), fx.ending("e0", spi.Failed("no"))),
            spi.Terminal(spi.Cancelled("r"), fx.ending("e1", spi.Cancelled("r"))),
            spi.Stop(stopped := spi.Stopped("F0001", "n", "bug"), fx.stopped("e2", stopped)),
            spi.Suspended(frozenset({"approval"})),
        ]
        for n, ending in enumerate(endings):
            [handle] = await fx.poll()
            assert handle.state.execution_id == f"e{n}"
            if isinstance(ending, spi.Suspended):
                assert (
                    await handle.record_wait(
                        "approval", spi.WakeOnField("approval"), fx.input_waiting(f"e{n}", "approval")
                    )
                    == spi.WriteOutcome.APPLIED
                )
            assert await handle.finish(ending) == APPLIED
        assert self.ids(await fx.poll()) == ["e4"]

    async def test_flowdeck_a_lapsed_lease_gives_its_slot_back(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n in range(2):
            await self.mk_limited(fx, f"e{n}", key="k", per_key=1)
        [dead] = await fx.poll(lease=SHORT_LEASE)
        assert await fx.poll(EX2) == []
        await fx.clock.advance(SHORT_LEASE.total_seconds() + 1)
        [taken] = await fx.poll(EX2)  # the lapsed one first: it is older
        assert taken.state.execution_id == dead.state.execution_id == "e0"
        assert await fx.poll(EX2) == []  # and it holds the slot again

    async def test_flowdeck_a_renewed_lease_keeps_its_slot(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n in range(2):
            await self.mk_limited(fx, f"e{n}", limit=1)
        [held] = await fx.poll(lease=SHORT_LEASE)
        await fx.clock.advance(3)
        assert await held.renew_claim(SHORT_LEASE)
        await fx.clock.advance(3)
        assert await fx.poll(EX2) == []

    async def test_flowdeck_the_queued_are_claimed_oldest_first(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n in range(4):
            await self.mk_limited(fx, f"e{n}", limit=1)
        order = []
        for _ in range(4):
            [handle] = await fx.poll()
            order.append(handle.state.execution_id)
            await self.complete(fx, handle)
        assert order == ["e0", "e1", "e2", "e3"]

    async def test_flowdeck_the_queued_of_a_higher_priority_go_first(self, fx: StoreFixture) -> None:
        """A priority turn of the claim (`claim_order`) takes the highest queued one when a slot frees."""
        await self.limited(fx)
        await self.mk_limited(fx, "running", limit=1)
        [first] = await fx.poll()
        await self.mk_limited(fx, "old", limit=1)
        await self.mk_limited(fx, "urgent", limit=1, priority=50)
        await self.complete(fx, first)
        taken = []
        for _ in range(claim_order.FAIR_SHARE):  # every turn but one follows priority
            claimed = await fx.poll()
            if claimed:
                taken.append(claimed[0].state.execution_id)
                await self.complete(fx, claimed[0])
        assert sorted(taken) == ["old", "urgent"]
        assert taken == ["urgent", "old"] or taken == ["old", "urgent"]

    async def test_flowdeck_unlimited_rows_are_neither_limited_nor_counted(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        await self.mk_limited(fx, "limited", limit=1)
        await fx.mk_execution("free1")
        await fx.mk_execution("free2")
        await fx.mk_execution("other", WF2)
        await self.mk_limited(fx, "queued", limit=1)
        assert self.ids(await fx.poll()) == ["free1", "free2", "limited", "other"]

    async def test_flowdeck_limits_are_per_workflow(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        await self.limited(fx, WF2)
        for flow_id in (WF1, WF2):
            for n in range(2):
                await self.mk_limited(fx, f"{flow_id}-{n}", key="same", per_key=1, flow_id=flow_id)
        assert self.ids(await fx.poll()) == ["wf1-0", "wf2-0"]

    async def test_flowdeck_concurrent_claimers_never_exceed_a_limit(self, fx: StoreFixture) -> None:
        """Eight claimers at once, each asking for everything, over 4 keys of 5 (1 per key) under a workflow
        limit of 3: three claimed in all, never two of a key."""
        await self.limited(fx)
        for n in range(20):
            await self.mk_limited(fx, f"e{n:02}", limit=3, key=f"k{n % 4}", per_key=1)
        rounds = await asyncio.wait_for(
            asyncio.gather(*(fx.poll(f"ex{i}") for i in range(8))), timeout=seconds(30).total_seconds()
        )
        claimed = [h for found in rounds for h in found]
        assert len(claimed) == 3, self.ids(claimed)
        keys = Counter(h.state.concurrency.key for h in claimed if h.state.concurrency is not None)
        assert max(keys.values()) == 1, keys
        assert {h.state.executor for h in claimed} <= {f"ex{i}" for i in range(8)}
        for handle in claimed:
            await self.complete(fx, handle)

    async def test_flowdeck_the_queued_read_their_position(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        for n in range(4):
            await self.mk_limited(fx, f"e{n}", key="k", per_key=1)
        await self.mk_limited(fx, "alone", key="j", per_key=1)
        group = concurrency.Group(WF1, "k")
        # not claimed yet: queued, first in line, its key's slot free
        assert await fx.store.queue_of("e0") == concurrency.Queued(group, 1, 1, 0)
        claimed = await fx.poll()
        assert self.ids(claimed) == ["alone", "e0"]
        assert await fx.store.queue_of("e0") is None  # running
        assert await fx.store.queue_of("e1") == concurrency.Queued(group, 1, 1, 1)
        assert await fx.store.queue_of("e3") == concurrency.Queued(group, 3, 1, 1)
        found = await fx.store.list_executions(WF1, spi.ExecutionFilter.Queued())
        assert fx.ids(found) == {"e1", "e2", "e3"}
        rest = await fx.store.list_executions(WF1, spi.ExecutionFilter.Queued(False))
        assert fx.ids(rest) == {"e0", "alone"}
        # a list page's rows in one read: the queued ones only, each as queue_of answers it
        page = ["e3", "e0", "missing", "e1", "alone", "e2"]
        assert await fx.store.queues_of(page) == {
            eid: await fx.store.queue_of(eid) for eid in ("e1", "e2", "e3")
        }
        assert await fx.store.queues_of([]) == {}

    async def test_flowdeck_limit_counts(self, fx: StoreFixture) -> None:
        await self.limited(fx)
        first = fx.clock.now()
        for n, key in enumerate("aab"):
            await self.mk_limited(fx, f"e{n}", limit=5, key=key, per_key=1)
        await self.mk_limited(fx, "done", limit=5, key="a", per_key=1)
        claimed = await fx.poll()
        assert self.ids(claimed) == ["e0", "e2"]
        counts = {c.group: c for c in await fx.store.limit_counts()}
        assert counts[concurrency.Group(WF1)] == concurrency.GroupCount(
            concurrency.Group(WF1), 5, 2, 2, first + seconds(1)
        )
        assert counts[concurrency.Group(WF1, "a")] == concurrency.GroupCount(
            concurrency.Group(WF1, "a"), 1, 1, 2, first + seconds(1)
        )
        assert counts[concurrency.Group(WF1, "b")].queued == 0
        assert [c.group for c in await fx.store.limit_counts(busiest=1)] == [
            concurrency.Group(WF1),
            concurrency.Group(WF1, "a"),
        ]
        assert await fx.store.limit_counts(WF2) == []
