"""Search: list_executions and its filter arms."""

from __future__ import annotations

from datetime import timedelta

from flowdeck.store import spi
from flowdeck.store.conformance.case import F, StoreCase
from flowdeck.store.conformance.support import WF1, WF2, StoreFixture


class SearchCases(StoreCase):
    """list_executions: by workflow, by filter arm and by id prefix, before paging, with the total."""

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

    async def test_list_95b_served_and_both_narrow_to_served_or_parked(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1", hash="v2")  # running on a version nobody serves: parked
        await fx.mk_execution("e2", hash="v2", status=spi.Completed())
        await fx.mk_execution("e3")
        await fx.mk_execution("e4", hash="v2", status=spi.Stopped("F0001"))
        served = frozenset({""})
        assert await self.listed(fx, F.Served(served)) == {"e2", "e3"}
        assert await self.listed(fx, F.Both(F.Running(), F.Served(served))) == {"e3"}
        assert await self.listed(fx, F.Both(F.Running(), F.Orphaned(served))) == {"e1"}
        assert await self.listed(fx, F.Both(F.Stopped(), F.Orphaned(served))) == {"e4"}
        assert await self.listed(fx, F.Both(F.Stopped(), F.Served(served))) == set()

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

    async def test_history_66_list_executions_negative_limit_means_all(self, fx: StoreFixture) -> None:
        await fx.mk_execution("e1")
        await fx.mk_execution("e2")
        page = await fx.store.list_executions(WF1, limit=-1)
        assert (fx.ids(page), page.total) == ({"e1", "e2"}, 2)

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

    async def test_flowdeck_stopped_filter_with_and_without_code(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        await fx.stop("e1", spi.Stopped("F0001", "a", "bug"))
        await fx.stop("e2", spi.Stopped("F0004", "b", "unknown outcome"))
        assert await self.listed(fx, F.Stopped()) == {"e1", "e2"}
        assert await self.listed(fx, F.Stopped("F0004")) == {"e2"}
        assert await self.listed(fx, F.Stopped("F0999")) == set()
        assert await self.listed(fx, F.Running()) == {"e3"}

    async def test_flowdeck_retrying_filter_is_a_retry_sleep_not_any_sleep(self, fx: StoreFixture) -> None:
        for eid in ("e1", "e2", "e3"):
            await fx.mk_execution(eid)
        due = fx.clock.now() + timedelta(seconds=30)
        await fx.mk_waits("e1", {"charge#retry2": spi.WakeAt(due), "gate": spi.WakeOnField("approval")})
        await fx.mk_waits("e2", {"nap": spi.WakeAt(due)})
        await fx.mk_waits("e3", {"approval": spi.WakeOnField("approval")})
        assert await self.listed(fx, F.Retrying()) == {"e1"}
        assert await self.listed(fx, F.Sleeping()) == {"e1", "e2"}
        page = await fx.store.list_executions(None, F.Retrying(), limit=0)
        assert (list(page.items), page.total) == ([], 1)
        # the retry's attempt ran and the node moved on: no longer retrying
        await fx.clock.advance(31)
        handle = await fx.claim("e1")
        assert await handle.finish(spi.Suspended(frozenset({"gate"}))) == spi.StatusOutcome.APPLIED
        assert await self.listed(fx, F.WaitingForInput()) == {"e1", "e3"}
        assert await self.listed(fx, F.Retrying()) == set()
