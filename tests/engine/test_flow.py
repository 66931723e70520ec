"""The flow DSL: every call returns a new flow holding exactly the node the call describes."""

from __future__ import annotations

import dataclasses
import sys
from datetime import timedelta

import pytest

from examples.seed import Order, payment
from flowdeck.engine import Flow, FlowUnclosedDispatch, Loop, Meta, Schedule, arguments, nodes
from flowdeck.engine.flow import LoopAgain, LoopDone
from flowdeck.engine.nodes import NO_STATE, Body, Knobs

FILE = arguments.display_site(__file__, 0).rsplit(":", 1)[0]


def here() -> str:
    """The caller's "file:line", as the DSL records it."""
    return f"{FILE}:{sys._getframe(1).f_lineno}"


def total(ctx) -> int:
    return sum(i.qty * i.price for i in ctx.order.items)


def noop(ctx) -> None:
    return None


def test_init_is_an_empty_named_flow():
    assert Flow.init("fulfilment") == Flow("fulfilment", (), Meta())
    assert Flow.init("fulfilment", meta=Meta(version="2")).meta == Meta(version="2")


def test_every_call_returns_a_new_flow_and_leaves_the_old_one_alone():
    empty = Flow.init("f")
    with_input = empty.input("order", Order)
    with_output = with_input.output("total", total)
    assert empty.nodes == ()
    assert [n.name for n in with_input.nodes] == ["order"]
    assert [n.name for n in with_output.nodes] == ["order", "total"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        empty.name = "other"  # type: ignore[misc]


def test_input_shorthand_names_the_workflow_after_its_input():
    flow, at = Flow.input("order", Order), here()
    assert flow == Flow("order", (nodes.Input("order", Order, location=at),), Meta())


def test_input_node_with_its_knobs():
    def on_cancel(ctx, reason):
        return None

    at = f"{FILE}:{sys._getframe().f_lineno + 1}"
    flow = Flow.init("f").input("order", Order, description="the order", tags=["a"], on_cancel=on_cancel)
    assert flow.nodes == (nodes.Input("order", Order, "the order", ("a",), Body.of(on_cancel), at),)


def test_input_needs_a_type():
    with pytest.raises(TypeError, match="an input needs a type"):
        Flow.init("f").input("order", None)


def test_output_node_with_every_knob():
    retry = Schedule.fixed(timedelta(seconds=1)).take(3)
    at = f"{FILE}:{sys._getframe().f_lineno + 1}"
    flow = Flow.init("f").output(
        "charge",
        noop,
        type=str,
        compensate=noop,
        description="authorise",
        tags=("money",),
        timeout=timedelta(seconds=10),
        retry=retry,
        retry_on=(ConnectionError,),
        at_most_once=True,
    )
    assert flow.nodes[0] == nodes.Output(
        name="charge",
        body=Body.of(noop),
        type=str,
        compensate=Body.of(noop),
        knobs=Knobs("authorise", ("money",), timedelta(seconds=10), retry, (ConnectionError,), True),
        location=at,
    )


def test_a_return_annotation_declares_the_type_and_type_wins_over_it():
    async def later(ctx) -> list[Order]:
        return []

    def unresolvable(ctx) -> NoSuchType:  # type: ignore[name-defined]  # noqa: F821
        return 1

    assert Flow.init("f").output("total", total).nodes[0].type is int
    assert Flow.init("f").output("orders", later).nodes[0].type == list[Order]
    assert Flow.init("f").output("total", total, type=float).nodes[0].type is float
    assert Flow.init("f").output("x", lambda ctx: 1).nodes[0].type is None
    assert Flow.init("f").output("x", unresolvable).nodes[0].type is None
    assert Flow.init("f").foreach("r", lambda ctx: [], total).nodes[0].type is int


def test_step_node():
    flow, at = Flow.init("f").step("ship", noop, compensate=noop, timeout=timedelta(seconds=2)), here()
    assert flow.nodes == (
        nodes.Step("ship", Body.of(noop), Body.of(noop), Knobs(timeout=timedelta(seconds=2)), at),
    )


def test_sleep_node_and_its_duration_check():
    flow, at = Flow.init("f").sleep("window", timedelta(hours=48), description="d"), here()
    assert flow.nodes == (nodes.Sleep("window", timedelta(hours=48), "d", (), None, at),)
    with pytest.raises(TypeError, match=r"sleep 'window': the duration must be a datetime.timedelta, got 48"):
        Flow.init("f").sleep("window", 48)  # type: ignore[arg-type]


def test_dispatch_node_with_its_arms_in_order():
    def big(ctx):
        return ctx.total > 100

    def review(ctx):
        return "review"

    def auto(ctx):
        return "auto"

    builder, at = Flow.init("f").dispatch("route", type=str, description="who approves"), here()
    builder, when_at = builder.when(big, review, name="manual-review"), here()
    flow, default_at = builder.otherwise(auto, name="auto", compensate=noop), here()
    assert flow.nodes == (
        nodes.Dispatch(
            name="route",
            type=str,
            branches=(nodes.Branch("manual-review", Body.of(big), Body.of(review), when_at),),
            default=nodes.Branch("auto", None, Body.of(auto), default_at),
            compensate=Body.of(noop),
            knobs=Knobs(description="who approves"),
            location=at,
        ),
    )


def test_dispatch_type_comes_from_arms_annotated_alike():
    def a(ctx) -> str:
        return "a"

    def b(ctx) -> str:
        return "b"

    def n(ctx) -> int:
        return 1

    assert Flow.init("f").dispatch("d").when(a, a, name="x").otherwise(b).nodes[0].type is str
    assert Flow.init("f").dispatch("d").when(a, a, name="x").otherwise(n).nodes[0].type is None
    assert Flow.init("f").dispatch("d").otherwise(b).nodes[0].default.name == "otherwise"


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("output", ("total", total)),
        ("step", ("ship", noop)),
        ("input", ("order", Order)),
        ("sleep", ("s", timedelta(seconds=1))),
        ("dispatch", ("other",)),
        ("loop", ("l", noop)),
        ("loop_on", ("l", Schedule.fixed(timedelta(0)), noop)),
        ("foreach", ("r", noop, noop)),
        ("subflow", ("p", payment, noop)),
        ("and_then", (Flow.init("g"),)),
        ("zip", (Flow.init("g"),)),
    ],
)
def test_an_unclosed_dispatch_cannot_be_continued(method, args):
    builder = Flow.init("f").dispatch("route").when(noop, noop, name="a")
    with pytest.raises(FlowUnclosedDispatch) as raised:
        getattr(builder, method)(*args)
    assert str(raised.value) == (
        f"dispatch 'route' is not closed: call .otherwise(...) on it before .{method}(...)"
    )
    assert (raised.value.dispatch, raised.value.attempted) == ("route", method)


def test_an_unclosed_dispatch_cannot_be_composed_either():
    builder = Flow.init("f").dispatch("route").when(noop, noop, name="a")
    for compose in (
        lambda: Flow.init("g").and_then(builder),
        lambda: Flow.init("g").zip(builder),
        lambda: Flow.race(Flow.init("g"), builder),
        lambda: Flow.gather(Flow.init("g"), builder),
        lambda: Flow.init("g").subflow("s", builder, noop),
    ):
        with pytest.raises(FlowUnclosedDispatch, match="dispatch 'route' is not closed"):
            compose()


def test_loop_answers():
    assert Loop.done(3) == LoopDone(3)
    assert Loop.done() == LoopDone(None)
    assert Loop.again(4) == LoopAgain(4)
    assert Loop.again() == LoopAgain(None)


def test_loop_nodes_stateless_and_stateful():
    def stateless(ctx):
        return Loop.done(True)

    def stateful(tries, ctx):
        return Loop.done(tries)

    flow, at = Flow.init("f").loop("accepted", stateless, type=bool), here()
    assert flow.nodes == (nodes.Loop("accepted", Body.of(stateless), NO_STATE, bool, None, Knobs(), at),)
    flow, at = Flow.init("f").loop("attempts", stateful, initial=0, compensate=noop, tags=["t"]), here()
    assert flow.nodes == (
        nodes.Loop("attempts", Body.of(stateful), 0, None, Body.of(noop), Knobs(tags=("t",)), at),
    )
    assert flow.nodes[0].body.arity == 2


def test_loop_on_node():
    schedule = Schedule.fixed(timedelta(minutes=30))
    flow, at = Flow.init("f").loop_on("delivery", schedule, noop, type=str), here()
    assert flow.nodes == (
        nodes.LoopOn("delivery", schedule, Body.of(noop), NO_STATE, str, None, Knobs(), at),
    )
    with pytest.raises(TypeError, match="loop_on 'delivery': schedule must be a Schedule"):
        Flow.init("f").loop_on("delivery", timedelta(minutes=30), noop)  # type: ignore[arg-type]


def test_foreach_node_and_concurrency_checks():
    def items(ctx):
        return ctx.order.items

    def release(item, value):
        return None

    flow, at = Flow.init("f").foreach("r", items, noop, type=str, concurrency=4, compensate=release), here()
    assert flow.nodes == (
        nodes.ForEach("r", Body.of(items), Body.of(noop), str, 4, Body.of(release), Knobs(), at),
    )
    with pytest.raises(ValueError, match="foreach 'r': concurrency must be at least 1, got 0"):
        Flow.init("f").foreach("r", items, noop, concurrency=0)
    for wrong in ("4", 2.0, True):
        with pytest.raises(TypeError, match="foreach 'r': concurrency must be an int or None"):
            Flow.init("f").foreach("r", items, noop, concurrency=wrong)


def test_subflow_node():
    def mapper(ctx):
        return {"order_id": ctx.order.id, "amount_cents": ctx.total}

    flow, at = Flow.init("f").subflow("payment", payment, mapper), here()
    assert flow.nodes == (nodes.Subflow("payment", payment, Body.of(mapper), at),)
    with pytest.raises(TypeError, match="subflow: expected a Flow"):
        Flow.init("f").subflow("payment", "payment", mapper)  # type: ignore[arg-type]


def test_and_then_appends_the_other_flows_nodes_and_keeps_the_first_name_and_meta():
    first = Flow.init("a", meta=Meta(version="1")).input("order", Order)
    second = Flow.init("b", meta=Meta(version="2")).step("ship", noop)
    assert first.and_then(second) == Flow("a", (*first.nodes, *second.nodes), Meta(version="1"))


def test_zip_gather_and_race_are_parallel_nodes():
    a, b, c = Flow.init("a").input("x", int), Flow.init("b").input("y", int), Flow.init("c").input("z", int)
    zipped, at = a.zip(b), here()
    assert zipped == Flow("a", (nodes.Parallel("zip", (a, b), at),), Meta())
    gathered, at = Flow.gather(a, b, c), here()
    assert gathered == Flow("a", (nodes.Parallel("gather", (a, b, c), at),), Meta())
    raced, at = Flow.race(b, a), here()
    assert raced == Flow("b", (nodes.Parallel("race", (b, a), at),), Meta())
    assert zipped.output("after", noop).nodes[1].name == "after"


@pytest.mark.parametrize("count", [0, 1, 6])
def test_gather_takes_two_to_five_flows(count):
    with pytest.raises(ValueError, match=f"Flow.gather takes 2 to 5 flows, got {count}"):
        Flow.gather(*[Flow.init("a")] * count)


def test_argument_checks_fail_at_the_call():
    f = Flow.init("f")
    with pytest.raises(ValueError, match="output: a node name must not be empty"):
        f.output("", noop)
    with pytest.raises(TypeError, match="step: a node name must be a str, got 3"):
        f.step(3, noop)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output 'x': the body must be a function, got 5"):
        f.output("x", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"output 'x': timeout must be a datetime.timedelta, got 5"):
        f.output("x", noop, timeout=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="output 'x': timeout must be positive"):
        f.output("x", noop, timeout=timedelta(seconds=-1))
    with pytest.raises(TypeError, match="step 'x': retry must be a Schedule"):
        f.step("x", noop, retry=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="step 'x': tags must be a list or tuple of str"):
        f.step("x", noop, tags="urgent")
    with pytest.raises(TypeError, match="output 'x': retry_on must be exception classes"):
        f.output("x", noop, retry_on=("ValueError",))  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"loop 'x': unexpected keyword argument\(s\) timout \(knobs: description"
    ):
        f.loop("x", noop, timout=timedelta(seconds=1))
    with pytest.raises(TypeError, match=r"Flow.init: the flow name must be a str"):
        Flow.init(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Meta: timeout must be a datetime.timedelta"):
        Meta(timeout=3)  # type: ignore[arg-type]


class Opaque:
    """A class pydantic cannot validate."""


def test_a_declared_type_pydantic_cannot_validate_is_refused_at_the_call():
    for declare in (
        lambda: Flow.init("f").input("x", Opaque),
        lambda: Flow.init("f").output("x", noop, type=Opaque),
        lambda: Flow.init("f").loop("x", noop, type=Opaque),
        lambda: Flow.init("f").foreach("x", noop, noop, type=Opaque),
        lambda: Flow.init("f").dispatch("x", type=Opaque),
    ):
        with pytest.raises(TypeError, match=r"values of type <class '.*Opaque'> cannot be recorded"):
            declare()

    def opaque(ctx) -> Opaque:
        return Opaque()

    # An annotation is only a hint: one pydantic cannot use leaves the value undeclared.
    assert Flow.init("f").output("x", opaque).nodes[0].type is None


def test_retry_on_accepts_a_single_exception_class():
    assert Flow.init("f").step("x", noop, retry_on=TimeoutError).nodes[0].knobs.retry_on == (TimeoutError,)


def test_an_unnamed_flow_is_allowed_until_registration():
    assert Flow.init("").name == ""


def test_locations_are_the_users_call_sites_line_by_line():
    first = sys._getframe().f_lineno + 4
    # fmt: off
    flow = (
        Flow.init("f")
        .input("order", Order)
        .output("total", total)
        .step("ship", noop)
    )
    # fmt: on
    assert [n.location for n in flow.nodes] == [
        f"{FILE}:{first}",
        f"{FILE}:{first + 1}",
        f"{FILE}:{first + 2}",
    ]


# ------------------------------------------------------------------------------ the README's flows


def test_the_seed_services_write_the_ledger_and_can_be_scripted():
    from examples import seed

    seed.reset()
    order = seed.sample_order()
    assert seed.charge_card(order.id, 1200) == "ch-o-1017-1200"
    assert seed.reserve_stock(order.items[0]) == "res-widget"
    seed.ship(order)
    seed.fail_next("ship", seed.ShipmentRefused("no carrier"))
    with pytest.raises(seed.ShipmentRefused, match="no carrier"):
        seed.ship(order)
    seed.script_carrier(order.id, "in-transit", "delivered")
    assert [seed.carrier_status(order.id) for _ in range(3)] == ["in-transit", "delivered", "delivered"]
    assert seed.carrier_status("unscripted") == "accepted"
    assert seed.LEDGER == [
        ("charge", "o-1017", "1200"),
        ("reserve", "widget", "3"),
        ("ship", "o-1017"),
        ("carrier", "o-1017"),
        ("carrier", "o-1017"),
        ("carrier", "o-1017"),
        ("carrier", "unscripted"),
    ]
    seed.reset()
    assert seed.LEDGER == []


def test_the_seed_flows_have_the_readmes_shapes():
    from examples import seed

    def shape(flow: Flow) -> list[tuple[str, str]]:
        return [(type(n).__name__, n.name) for n in flow.nodes]

    assert shape(seed.fulfilment) == [
        ("Input", "order"),
        ("Output", "total"),
        ("Output", "charge"),
        ("Step", "ship"),
    ]
    assert seed.fulfilment.nodes[2].compensate is not None
    assert shape(seed.with_payment)[2] == ("Subflow", "payment")
    assert [b.name for b in seed.routed.nodes[2].branches] == ["manual-review", "supervisor"]
    assert seed.routed.nodes[2].default.name == "auto"
    assert seed.counted.nodes[1].initial == 0
    assert seed.bounded.nodes[1].concurrency == 4
    assert seed.bounded.nodes[1].knobs.timeout == timedelta(seconds=5)
    assert seed.reserving.nodes[1].type is str  # from reserve_stock's annotation
    assert seed.cooling.nodes[2].duration == timedelta(hours=48)
    assert [p.kind for p in (seed.checks.nodes[0], seed.everything.nodes[0], seed.decided.nodes[0])] == [
        "zip",
        "gather",
        "race",
    ]
    assert seed.order_shorthand.name == "order"
