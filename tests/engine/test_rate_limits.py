"""Rate limits (issue 31 point 3, engine/rate_limits.py): a node takes a token of its limit before its body;
one that finds the limit spent waits durably (no claim held, a `#rate` row due at its reserved slot) and runs
on that token once woken; per-key limits are independent; a recorded node is never asked for a token again;
a flow using an undeclared limit (or a per-key one without a key) is refused at registration."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from flowdeck.engine import errors
from flowdeck.engine.flow import Flow
from flowdeck.engine.rate_limits import RateLimit
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock
from tests.engine.engine_support import LEASE, advance, kinds, make_engine, until, waiting_for

CARRIER = {"carrier-api": RateLimit(2, per="minute")}  # one token every 30 s
PER_CARRIER = {"carrier-quota": RateLimit(1, per="minute", per_key=True)}


def shipping(calls: list[str]) -> Flow:
    return (
        Flow.init("shipping")
        .input("carrier", str)
        .step("prepare", lambda ctx: None)
        .step("ship", lambda ctx: calls.append(ctx.execution_id), rate_limit="carrier-api")
        .step("after", lambda ctx: None)
    )


async def test_a_node_past_its_limit_waits_durably_for_its_slot(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    calls: list[str] = []
    async with make_engine(store, clock, [shipping(calls)], rate_limits=CARRIER) as engine:
        first = await engine.workflows.start("shipping", inputs={"carrier": "dhl"})
        assert (await until(store, first)).status == spi.Completed()
        slot2 = clock.now() + timedelta(seconds=30)
        second = await engine.workflows.start("shipping", inputs={"carrier": "dhl"})
        state = await until(
            store, second, waiting_for("ship#rate:carrier-api")
        )  # unclaimed: no thread, no claim
        assert state.waits == {"ship#rate:carrier-api": spi.WakeAt(slot2)}
        third = await engine.workflows.start("shipping", inputs={"carrier": "dhl"})
        state = await until(store, third, waiting_for("ship#rate:carrier-api"))
        assert state.waits == {
            "ship#rate:carrier-api": spi.WakeAt(slot2 + timedelta(seconds=30))
        }  # the next slot
        assert calls == [first]
        [limited] = [
            e for e in (await store.get_history(second)).events if e.kind is spi.EventKind.RATE_LIMITED
        ]
        assert dict(limited.data) == {
            "step_name": "ship",
            "limit": "carrier-api",
            "key": "",
            "until": slot2.isoformat(),
        }
        await advance(clock, 30)
        assert (await until(store, second)).status == spi.Completed()
        assert calls == [first, second]  # the third's slot is 30 s later still
        await advance(clock, 30)
        assert (await until(store, third)).status == spi.Completed()
    assert calls == [first, second, third]
    # the woken node ran on the token it reserved: no second RateLimited, no second take
    assert (await kinds(store, second)).count("RateLimited") == 1
    [bucket] = await store.list_rate_buckets("carrier-api")
    assert (bucket.taken, bucket.reserved) == (1, 2)
    assert (await store.get_execution(second)).waits == {}


async def test_per_key_limits_are_independent(store: spi.FlowStore, clock: ManualClock) -> None:
    calls: list[str] = []
    flow = (
        Flow.init("tracking")
        .input("carrier", str)
        .step(
            "track",
            lambda ctx: calls.append(ctx.carrier),
            rate_limit=("carrier-quota", lambda ctx: ctx.carrier),
        )
    )
    async with make_engine(store, clock, [flow], rate_limits=PER_CARRIER) as engine:
        ids = [await engine.workflows.start("tracking", inputs={"carrier": c}) for c in ("dhl", "ups")]
        for eid in ids:  # one key's limit spent does not hold the other's
            assert (await until(store, eid)).status == spi.Completed()
        ids.append(await engine.workflows.start("tracking", inputs={"carrier": "dhl"}))
        await until(store, ids[2], waiting_for("track#rate:carrier-quota"))
        assert sorted(calls) == ["dhl", "ups"]
        await advance(clock, 60)
        assert (await until(store, ids[2])).status == spi.Completed()
    assert [(b.key, b.taken, b.reserved) for b in await store.list_rate_buckets()] == [
        ("dhl", 1, 1),
        ("ups", 1, 0),
    ]


async def test_a_replay_asks_no_token_for_a_recorded_node(store: spi.FlowStore, clock: ManualClock) -> None:
    calls: list[str] = []
    flow = (
        Flow.init("replayed")
        .step("ship", lambda ctx: calls.append("ship"), rate_limit="carrier-api")
        .sleep("pause", timedelta(minutes=5))
        .step("done", lambda ctx: calls.append("done"))
    )
    async with make_engine(store, clock, [flow], rate_limits=CARRIER) as engine:
        eid = await engine.workflows.start("replayed")
        await until(store, eid, waiting_for("pause"))
        await advance(clock, 300)  # the second attempt replays `ship` from its record
        assert (await until(store, eid)).status == spi.Completed()
    assert calls == ["ship", "done"]
    [bucket] = await store.list_rate_buckets()
    assert (bucket.taken, bucket.reserved) == (1, 0)


async def test_a_run_killed_on_its_reserved_token_takes_a_token_of_its_own(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    """A woken node runs on the token it reserved; killed mid-body (its start recorded), its re-run must
    not run on that token again: it reserves the next one and waits for it, so no token pays for two
    calls. Each start names its token."""
    calls: list[str] = []
    hang = asyncio.Event()

    async def ship(ctx: Any) -> None:
        calls.append(ctx.execution_id)
        if calls.count(ctx.execution_id) == 1 and len(calls) == 2:
            await hang.wait()  # the second execution's first run: the process dies here

    flow = Flow.init("shipping").step("ship", ship, rate_limit="carrier-api")
    hourly = {"carrier-api": RateLimit(1, per="hour")}  # slots 1 h apart: a lapsed lease is far shorter
    slot1 = clock.now()
    async with make_engine(store, clock, [flow], rate_limits=hourly) as doomed:
        first = await doomed.workflows.start("shipping")
        assert (await until(store, first)).status == spi.Completed()
        second = await doomed.workflows.start("shipping")
        await until(store, second, waiting_for("ship#rate:carrier-api"))
        await advance(clock, 3600)
        await until(store, second, lambda s: len(calls) == 2)
    async with make_engine(store, clock, [flow], rate_limits=hourly) as survivor:
        await advance(clock, LEASE)  # the dead worker's claim lapses; the re-run reserves the next slot
        state = await until(store, second, waiting_for("ship#rate:carrier-api"))
        slot3 = slot1 + timedelta(hours=2)
        assert state.waits == {"ship#rate:carrier-api": spi.WakeAt(slot3)}
        assert calls == [first, second]
        await advance(clock, slot3 - clock.now())
        assert (await until(store, second)).status == spi.Completed()
    assert survivor.executor_id
    assert calls == [first, second, second]
    events = (await store.get_history(second)).events
    tokens = [e.data["token"] for e in events if e.kind is spi.EventKind.STEP_STARTED]
    assert tokens == [(slot1 + timedelta(hours=1)).isoformat(), slot3.isoformat()]
    [bucket] = await store.list_rate_buckets("carrier-api")
    assert (bucket.taken, bucket.reserved) == (1, 2)


async def test_a_key_function_that_fails_stops_the_execution(
    store: spi.FlowStore, clock: ManualClock
) -> None:
    flow = Flow.init("keyless").step(
        "track", lambda ctx: None, rate_limit=("carrier-quota", lambda ctx: 1 / 0)
    )
    async with make_engine(store, clock, [flow], rate_limits=PER_CARRIER) as engine:
        eid = await engine.workflows.start("keyless")
        state = await until(store, eid, lambda s: isinstance(s.status, spi.Stopped))
    assert isinstance(state.status, spi.Stopped)
    assert (state.status.code, state.status.node) == ("F0001", "track")
    assert await store.list_rate_buckets() == []


@pytest.mark.parametrize(
    ("knob", "limits", "reason"),
    [
        ("mailer", CARRIER, "is not declared"),
        ("carrier-quota", PER_CARRIER, "is per key"),
        (("carrier-api", lambda ctx: "k"), CARRIER, "is not per key"),
    ],
)
def test_registration_refuses_a_limit_used_wrongly(
    memory_store: spi.FlowStore, clock: ManualClock, knob: object, limits: dict[str, RateLimit], reason: str
) -> None:
    flow = Flow.init("refused").step("call", lambda ctx: None, rate_limit=knob)
    engine = make_engine(memory_store, clock, rate_limits=limits)
    with pytest.raises(errors.FlowRateLimitUnknown, match=reason):
        engine.serve("refused", flow)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"count": 0}, "count must be a positive int"),
        ({"count": 5, "per": "fortnight"}, "per must be one of"),
        ({"count": 5, "per": timedelta(0)}, "per must be a positive duration"),
        ({"count": 5, "burst": 0}, "burst must be a positive int"),
    ],
)
def test_a_limit_that_makes_no_sense_is_refused(args: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimit(**args)  # type: ignore[arg-type]


def test_the_knob_is_a_name_or_a_name_and_a_key_function() -> None:
    with pytest.raises(TypeError, match="rate_limit must be a limit's name or"):
        Flow.init("bad").step("call", lambda ctx: None, rate_limit=("carrier-api", "not callable"))
    assert RateLimit(50, per="minute").describe() == "50 per minute"
    assert RateLimit(100).rate.interval == timedelta(milliseconds=10)


def test_the_docs_example_limits_the_fulfilment_flows_carrier_calls() -> None:
    """docs/rate-limits.md's worked example, examples/fulfilment/carrier.py: the fulfilment flow whose `ship`
    (one call to the carrier's API) uses `carrier-api`, 50 a minute, which the module declares; registration
    accepts it, and it is the fulfilment flow's structure (the plain one uses no limit)."""
    from examples.fulfilment import carrier, flows
    from flowdeck.engine import rate_limits, schema
    from flowdeck.engine.nodes import RateUse

    limited = carrier.fulfilment_by_carrier_api
    assert list(rate_limits.uses(limited)) == [("ship", RateUse("carrier-api"))]
    rate_limits.check(limited, carrier.RATE_LIMITS)
    assert carrier.RATE_LIMITS["carrier-api"].rate.interval == timedelta(seconds=1.2)
    assert list(rate_limits.uses(flows.fulfilment)) == []
    assert schema.structural_hash(limited) == schema.structural_hash(flows.fulfilment)
