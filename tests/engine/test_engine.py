"""The engine's surface: configuration, registration, starting, signalling, describing, searching,
cancelling. Every refused request is checked to have written nothing."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from examples import seed
from flowdeck.engine import errors, run_local
from flowdeck.engine.config import EngineConfig
from flowdeck.engine.engine import FlowEngine, InputStatus
from flowdeck.engine.flow import Flow
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import POLL, advance, kinds, make_engine, until, waiting_for

ORDER = seed.sample_order()


# ------------------------------------------------------------------------------------- configuration


def test_config_lists_every_problem_at_once() -> None:
    with pytest.raises(errors.FlowConfigError) as caught:
        EngineConfig(
            workers=0,
            batch_size=0,
            lease=timedelta(0),
            renew_every=timedelta(seconds=-1),
            poll_timeout=timedelta(0),
        )
    assert caught.value.problems == (
        "workers must be at least 1 (got 0)",
        "batch_size must be at least 1 (got 0)",
        "lease must be positive (got 0s)",
        "renew_every must be positive (got -1s)",
        "poll_timeout must be positive (got 0s)",
    )


def test_config_refuses_renewal_no_shorter_than_the_lease() -> None:
    with pytest.raises(errors.FlowConfigError) as caught:
        EngineConfig(lease=timedelta(seconds=10), renew_every=timedelta(seconds=10))
    assert caught.value.problems == (
        "renew_every (10s) must be shorter than lease (10s), or claims lapse between renewals",
    )


def test_engine_refuses_a_bad_configuration(store: spi.FlowStore) -> None:
    with pytest.raises(errors.FlowConfigError, match="workers must be at least 1"):
        FlowEngine(store, workers=0)


def test_default_configuration_is_the_seeds() -> None:
    assert EngineConfig() == EngineConfig(
        workers=2,
        lease=timedelta(seconds=30),
        renew_every=timedelta(seconds=10),
        batch_size=4,
        poll_timeout=timedelta(seconds=30),
    )


# -------------------------------------------------------------------------------------- registration


async def test_entering_registers_flows_under_their_own_names(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [seed.fulfilment, seed.await_approval]) as engine:
        listed = await engine.workflows.list()
        assert sorted(info.id for info in listed) == ["approval", "fulfilment"]
        described = await engine.workflows.describe("fulfilment")
        assert [i.name for i in described.inputs] == ["order"]


async def test_register_under_another_id(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock) as engine:
        await engine.register("fulfilment-eu", seed.fulfilment)
        with pytest.raises(
            errors.FlowNotRegistered, match=r"'fulfilment' is not registered \(registered: fulfilment-eu\)"
        ):
            await engine.workflows.start("fulfilment")
        eid = await engine.workflows.start("fulfilment-eu", inputs={"order": ORDER})
        state = await until(store, eid)
        assert (state.flow_id, state.status) == ("fulfilment-eu", spi.Completed())


async def test_registration_refuses_a_bad_flow(store: spi.FlowStore, clock: ManualClock) -> None:
    bad = Flow.init("bad").output("x", lambda ctx: 1).output("x", lambda ctx: 2)
    async with make_engine(store, clock) as engine:
        with pytest.raises(errors.FlowDuplicateName):
            await engine.register("bad", bad)
    assert await store.list_workflows() == []


async def test_describe_unknown_workflow(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.fulfilment]) as engine:
        with pytest.raises(errors.FlowNotRegistered, match="registered: fulfilment"):
            await engine.workflows.describe("nope")


# ------------------------------------------------------------------------------------------ starting


async def test_start_runs_to_completion_with_seeded_inputs(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.fulfilment]) as engine:
        eid = await engine.workflows.start("fulfilment", execution_id="o-1", inputs={"order": ORDER})
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert seed.LEDGER == [("charge", "o-1017", "1200"), ("ship", "o-1017")]
    fields = await store.get_all_fields("o-1")
    assert fields["total"].decode() == 1200


async def test_start_unregistered_names_the_registered_and_writes_nothing(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [seed.fulfilment, seed.await_approval]) as engine:
        with pytest.raises(errors.FlowNotRegistered) as caught:
            await engine.workflows.start("shipping", execution_id="e1")
    assert str(caught.value) == "workflow 'shipping' is not registered (registered: approval, fulfilment)"
    assert caught.value.registered == ("approval", "fulfilment")
    assert await store.get_execution("e1") is None


async def test_start_with_undeclared_input_names_the_declared_and_writes_nothing(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [seed.payment]) as engine:
        with pytest.raises(errors.FlowInputError) as caught:
            await engine.workflows.start("payment", execution_id="e1", inputs={"order": "x"})
    assert (
        str(caught.value)
        == "input 'order' is not declared by this flow (declared inputs: order_id, amount_cents)"
    )
    assert caught.value.declared == ("order_id", "amount_cents")
    assert await store.get_execution("e1") is None


async def test_start_with_a_bad_value_carries_pydantics_message_and_writes_nothing(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [seed.payment]) as engine:
        with pytest.raises(errors.FlowInputError) as caught:
            await engine.workflows.start(
                "payment", execution_id="e1", inputs={"order_id": "o-1", "amount_cents": "lots"}
            )
    message = str(caught.value)
    assert message.startswith("value for 'amount_cents' is not a valid int: 1 validation error for int")
    assert "Input should be a valid integer, unable to parse string as an integer" in message
    assert caught.value.name == "amount_cents"
    assert await store.get_execution("e1") is None


async def test_start_with_a_taken_id(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        await engine.workflows.start("fulfilment", execution_id="e1")
        await until(store, "e1", waiting_for("order"))
        before = await store.get_history("e1")
        with pytest.raises(errors.FlowDuplicateExecution, match="'e1' already exists"):
            await engine.workflows.start("fulfilment", execution_id="e1", inputs={"order": ORDER})
        assert await store.get_history("e1") == before
        assert await store.get_all_fields("e1") == {}


async def test_new_starts_use_the_latest_registration(store: spi.FlowStore, clock: ManualClock) -> None:
    v2 = seed.awaiting_order.output("note", lambda ctx: "v2", type=str)
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        h1 = (await engine.workflows.describe("fulfilment")).structural_hash
        h2 = await engine.register("fulfilment", v2)
        eid = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        state = await until(store, eid)
    assert h1 != h2
    assert (state.hash, state.status) == (h2, spi.Completed())


async def test_a_version_registered_while_the_poll_is_starting_is_served(
    store: spi.FlowStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim loop reads the served versions, then its poll begins (on PostgreSQL, after opening the
    LISTEN connection): a version registered in between must not leave the poll blocked with the older
    set, deaf to the new version's starts (the manual clock never times that poll out)."""
    v2 = seed.awaiting_order.output("note", lambda ctx: "v2", type=str)
    entered, go_on = asyncio.Event(), asyncio.Event()
    real_claim_ready = store.claim_ready
    polls: list[frozenset[tuple[str, str]]] = []

    async def claim_ready_starting_late(served: frozenset[tuple[str, str]], *args: Any) -> Any:
        polls.append(served)
        if len(polls) == 1:  # the first poll is slow to begin, as a store opening its listener is
            entered.set()
            await go_on.wait()
        return await real_claim_ready(served, *args)

    monkeypatch.setattr(store, "claim_ready", claim_ready_starting_late)
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        await asyncio.wait_for(entered.wait(), 10)
        h2 = await engine.register("fulfilment", v2)
        go_on.set()
        eid = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        state = await until(store, eid)
    assert (state.hash, state.status) == (h2, spi.Completed())
    assert ("fulfilment", h2) not in polls[0]
    assert any(("fulfilment", h2) in served for served in polls[1:])


# ----------------------------------------------------------------------------------------- signalling


async def test_signal_delivers_and_the_flow_goes_on(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        eid = await engine.workflows.start("fulfilment")
        await until(store, eid, waiting_for("order"))
        await engine.executions.signal(eid, "order", ORDER.model_dump())
        state = await until(store, eid)
    assert state.status == spi.Completed()
    assert (await store.get_field(eid, "total")).decode() == 1200
    assert "InputReceived" in await kinds(store, eid)


async def test_signal_refusals_write_nothing(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.payment]) as engine:
        eid = await engine.workflows.start("payment", inputs={"order_id": "o-1"})
        await until(store, eid, waiting_for("amount_cents"))
        history, fields = await store.get_history(eid), await store.get_all_fields(eid)

        with pytest.raises(errors.FlowExecutionNotFound, match="no execution 'nope'"):
            await engine.executions.signal("nope", "amount_cents", 1)
        with pytest.raises(errors.FlowInputError) as undeclared:
            await engine.executions.signal(eid, "amount", 1)
        assert str(undeclared.value) == (
            "input 'amount' is not declared by this flow (declared inputs: order_id, amount_cents)"
        )
        with pytest.raises(errors.FlowInputError) as bad:
            await engine.executions.signal(eid, "amount_cents", {"cents": 1})
        assert "Input should be a valid integer" in str(bad.value)
        with pytest.raises(errors.FlowAlreadyDelivered, match="'order_id'"):
            await engine.executions.signal(eid, "order_id", "o-2")

        assert await store.get_history(eid) == history
        assert await store.get_all_fields(eid) == fields

        await engine.executions.signal(eid, "amount_cents", 250)
        assert (await until(store, eid)).status == spi.Completed()
        with pytest.raises(errors.FlowExecutionTerminal, match="already ended"):
            await engine.executions.signal(eid, "amount_cents", 1)


# ---------------------------------------------------------------------------------------- describing


async def test_describe_shows_inputs_waits_and_progress(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.payment]) as engine:
        eid = await engine.workflows.start("payment", inputs={"order_id": "o-1"})
        await until(store, eid, waiting_for("amount_cents"))
        detail = await engine.executions.describe(eid)
        with pytest.raises(errors.FlowExecutionNotFound):
            await engine.executions.describe("nope")
    assert detail.inputs == (
        InputStatus("order_id", "str", True, {"type": "string"}),
        InputStatus("amount_cents", "int", False, {"type": "integer"}),
    )
    assert detail.waits == {"amount_cents": spi.WakeOnField("amount_cents")}
    assert (detail.status, detail.cancel_requested, detail.stop) == (spi.Running(), False, None)
    assert [(n.name, str(n.status)) for n in detail.progress.nodes] == [
        ("order_id", "completed"),
        ("amount_cents", "waiting"),
        ("charge_id", "pending"),
    ]


async def test_describe_of_an_unserved_version_has_no_inputs_or_progress(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    async with make_engine(store, clock, [seed.payment]) as engine:
        eid = await engine.workflows.start("payment")
        await until(store, eid, waiting_for("order_id"))
    async with make_engine(store, clock, [seed.awaiting_order]) as other:
        detail = await other.executions.describe(eid)
    assert (detail.inputs, detail.progress, detail.flow_id) == ((), None, "payment")


async def test_diagrams(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        eid = await engine.workflows.start("fulfilment")
        await until(store, eid, waiting_for("order"))
        assert (await engine.workflows.diagram("fulfilment")).startswith("graph")
        assert (await engine.executions.diagram(eid, "dot")).startswith("digraph")


# ---------------------------------------------------------------------------------- search and history


async def test_search_filters_before_paging(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order, seed.payment]) as engine:
        waiting = [await engine.workflows.start("fulfilment", execution_id=f"w{i}") for i in range(3)]
        for eid in waiting:
            await until(store, eid, waiting_for("order"))
            await clock.advance(1)
        done = await engine.workflows.start("fulfilment", execution_id="d", inputs={"order": ORDER})
        await until(store, done)
        await engine.workflows.start("payment", execution_id="p")
        await until(store, "p", waiting_for("order_id"))

        page = await engine.executions.search("fulfilment", "waiting:order", limit=2)
        assert ([s.execution_id for s in page.items], page.total) == (["w2", "w1"], 3)
        page = await engine.executions.search(status="completed")
        assert ([s.execution_id for s in page.items], page.total) == (["d"], 1)
        page = await engine.executions.search(status=spi.ExecutionFilter.WaitingForInput("order_id"))
        assert [s.execution_id for s in page.items] == ["p"]
        page = await engine.executions.search(id_prefix="w", offset=2)
        assert ([s.execution_id for s in page.items], page.total) == (["w0"], 3)
        with pytest.raises(spi.FilterParseError, match="unknown status filter 'asleep'"):
            await engine.executions.search(status="asleep")
        with pytest.raises(ValueError, match="narrows to nothing"):
            await engine.executions.search(status="failed:")
        history = await engine.executions.history(done, limit=2)
        assert ([e.kind.value for e in history.events], history.has_more) == (
            ["Created", "ExecutionClaimed"],
            True,
        )
        assert [s.execution_id for s in await engine.workflows.executions("payment")] == ["p"]


# ---------------------------------------------------------------------------------------- cancelling


async def test_cancel_outcomes(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order]) as engine:
        eid = await engine.workflows.start("fulfilment")
        await until(store, eid, waiting_for("order"))
        assert await engine.executions.cancel(eid, "changed my mind", actor="ada") == spi.Accepted()
        assert await engine.executions.cancel(eid) in (
            spi.AlreadyRequested(),
            spi.AlreadyTerminal(spi.Cancelled("changed my mind")),
        )
        # A poll that skipped the row while the second request held its lock (FOR UPDATE SKIP LOCKED) is
        # woken only at its deadline: that request wrote nothing, so it sent no wake-up.
        await advance(clock, POLL)
        state = await until(store, eid)
        assert state.status == spi.Cancelled("changed my mind")
        assert await engine.executions.cancel(eid) == spi.AlreadyTerminal(spi.Cancelled("changed my mind"))
        with pytest.raises(errors.FlowExecutionNotFound):  # the store's answer for it is the engine's 404
            await engine.executions.cancel("nope")


async def test_cancel_all_counts_accepted_requests(store: spi.FlowStore, clock: ManualClock) -> None:
    async with make_engine(store, clock, [seed.awaiting_order, seed.payment]) as engine:
        ids = [await engine.workflows.start("fulfilment") for _ in range(3)]
        pay = await engine.workflows.start("payment")
        done = await engine.workflows.start("fulfilment", inputs={"order": ORDER})
        await until(store, done)
        for eid in ids:
            await until(store, eid, waiting_for("order"))
        await until(store, pay, waiting_for("order_id"))
        assert await engine.executions.cancel(ids[0]) == spi.Accepted()
        assert await engine.executions.cancel_all("fulfilment", reason="closing") == 2
        assert await engine.executions.cancel_all(reason="closing") == 1
        for eid in [*ids, pay]:
            assert isinstance((await until(store, eid)).status, spi.Cancelled)
        assert (await store.get_execution(done)).status == spi.Completed()


# ----------------------------------------------------------------------------------------- run_local


async def test_run_local_answers_the_record() -> None:
    record = await run_local(seed.with_payment, order=ORDER)
    assert record._asdict() == {
        "order": ORDER,
        "total": 1200,
        "payment": {"order_id": "o-1017", "amount_cents": 1200, "charge_id": "ch-o-1017-1200"},
    }
    assert (record.payment.order_id, record.total) == ("o-1017", 1200)


async def test_run_local_raises_on_an_end_other_than_completed() -> None:
    seed.fail_next("ship", seed.ShipmentRefused())
    with pytest.raises(errors.FlowRunEnded) as caught:
        await run_local(seed.saga, order=ORDER)
    assert caught.value.status == spi.Failed("The carrier refused the shipment.", "ShipmentRefused")
    assert str(caught.value) == "flow 'fulfilment' did not complete: failed:The carrier refused the shipment."


async def test_run_local_names_a_missing_or_undeclared_input() -> None:
    with pytest.raises(errors.FlowInputError, match="the flow waits for input\\(s\\) 'order': pass them"):
        await run_local(seed.fulfilment)
    with pytest.raises(errors.FlowInputError, match="input 'orders' is not declared"):
        await run_local(seed.fulfilment, orders=ORDER)


async def test_the_runner_wraps_every_attempt(store: spi.FlowStore, clock: ManualClock) -> None:
    region: contextvars.ContextVar[str] = contextvars.ContextVar("region", default="nowhere")

    async def in_eu_west(walk: Callable[[], Awaitable[Any]]) -> Any:
        token = region.set("eu-west")
        try:
            return await walk()
        finally:
            region.reset(token)

    flow = Flow.init("warehouse").output("warehouse", lambda ctx: f"warehouse-{region.get()}", type=str)
    async with make_engine(store, clock, [flow], runner=in_eu_west) as engine:
        eid = await engine.workflows.start("warehouse")
        assert (await until(store, eid)).status == spi.Completed()
    assert (await store.get_field(eid, "warehouse")).decode() == "warehouse-eu-west"
