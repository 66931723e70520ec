"""Registration checks, durable names, the structural hash and WorkflowInfo."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

from examples import seed
from examples.seed import Approval, Order
from flowdeck.engine import (
    Flow,
    FlowDuplicateName,
    FlowListenMismatch,
    FlowReservedName,
    FlowUnnamed,
    Meta,
    Schedule,
    arguments,
    graph_document,
    schema,
    values,
)

FILE = arguments.display_site(__file__, 0).rsplit(":", 1)[0]


def here() -> str:
    return f"{FILE}:{sys._getframe(1).f_lineno}"


def one(ctx):
    return 1


def listen(ctx, reason):
    return "cancelled"


# ---------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("name", list(seed.ALL_FLOWS))
def test_every_readme_flow_registers(name):
    flow = seed.ALL_FLOWS[name]
    assert schema.validate(flow) is flow


@pytest.mark.parametrize("name", ["", "   "])
def test_an_unnamed_flow_is_refused(name):
    with pytest.raises(FlowUnnamed) as raised:
        schema.validate(Flow.init(name).output("x", one))
    assert str(raised.value) == 'A flow must have a name: use Flow.init("name").'


@pytest.mark.parametrize(
    "build",
    [
        lambda: Flow.init("f").output("a~b", one),
        lambda: Flow.init("f").step("a#b", one),
        lambda: Flow.init("f").dispatch("route").when(one, one, name="big#1").otherwise(one),
        lambda: Flow.init("f").dispatch("route").otherwise(one, name="~default"),
        lambda: Flow.init("f").subflow("payment", Flow.init("p").output("x#y", one), one),
        lambda: Flow.init("f").output("a", one).zip(Flow.init("g").sleep("s~1", timedelta(1))),
    ],
)
def test_a_reserved_character_anywhere_is_refused(build):
    with pytest.raises(FlowReservedName, match=r"uses a reserved character \('~' or '#'\) \(at tests"):
        schema.validate(build())


def test_the_reserved_name_error_names_the_node_and_its_call_site():
    flow, at = Flow.init("f").output("total~v2", one), here()
    with pytest.raises(FlowReservedName) as raised:
        schema.validate(flow)
    assert str(raised.value) == f"node name 'total~v2' uses a reserved character ('~' or '#') (at {at})"
    assert (raised.value.name, raised.value.location) == ("total~v2", at)


def test_two_nodes_claiming_one_name_are_refused_with_every_call_site():
    first = Flow.init("f").input("order", Order)
    flow, second_at = first.output("order", one), here()
    with pytest.raises(FlowDuplicateName) as raised:
        schema.validate(flow)
    sites = (first.nodes[0].location, second_at)
    assert (
        str(raised.value) == f"2 nodes claim the durable name 'order': {'; '.join(sites)}; rename one of them"
    )
    assert (raised.value.name, raised.value.locations) == ("order", sites)


@pytest.mark.parametrize(
    "build",
    [
        # a step's completion mark and an output's field are one name
        lambda: Flow.init("f").output("ship", one).step("ship", one),
        # a subflow's record is read under its name
        lambda: Flow.init("f").output("payment", one).subflow("payment", seed.payment, one),
        # zip branches merge their records: two values for one field
        lambda: seed.price_check.zip(seed.priced),
        # race branches may share a result, but not a fan-out's per-item keys
        lambda: Flow.race(Flow.init("a").foreach("r", one, one), Flow.init("b").foreach("r", one, one)),
        # an input shared by branches must be read as one type
        lambda: Flow.init("a").input("order", Order).zip(Flow.init("b").input("order", dict)),
        # sequential, not parallel: the blessing is for branches only
        lambda: Flow.init("f").input("order", Order).and_then(seed.checks),
        lambda: seed.checks.and_then(seed.stock_check.zip(seed.invoicing)),
        # a duplicate inside a subflow's child, under the child's path
        lambda: Flow.init("f").subflow("p", Flow.init("c").output("x", one).output("x", one), one),
    ],
)
def test_collisions_are_refused(build):
    with pytest.raises(FlowDuplicateName):
        schema.validate(build())


def test_a_collision_in_a_child_is_named_by_its_path():
    with pytest.raises(FlowDuplicateName, match="2 nodes claim the durable name 'p~x'"):
        schema.validate(Flow.init("f").subflow("p", Flow.init("c").output("x", one).output("x", one), one))


def test_dispatch_arms_sharing_a_name_are_refused():
    flow = Flow.init("f").dispatch("route").when(one, one, name="a").when(one, one, name="a").otherwise(one)
    with pytest.raises(FlowDuplicateName, match="2 nodes claim the durable name 'route#chosen=a'"):
        schema.validate(flow)


def test_the_two_blessed_cases_are_accepted():
    # an input that parallel branches wait on: one wait, one field
    assert schema.validate(seed.checks) is seed.checks
    assert schema.validate(seed.everything) is seed.everything
    # race branches sharing their result name
    assert schema.validate(seed.decided) is seed.decided
    both = Flow.race(
        Flow.init("a").input("approval", Approval).output("decision", one),
        Flow.init("b").input("approval", Approval).sleep("grace", timedelta(hours=1)).output("decision", one),
    )
    assert schema.validate(both) is both
    assert schema.collisions(both) == {}


def test_checks_run_in_the_seeds_order():
    everything_wrong = Flow.init("").input("a#", int, on_cancel=listen).output("x", one).output("x", one)
    everything_wrong = everything_wrong.sleep("s", timedelta(1))
    with pytest.raises(FlowUnnamed):
        schema.validate(everything_wrong)
    with pytest.raises(FlowReservedName):
        schema.validate(Flow("f", everything_wrong.nodes))
    no_reserved = Flow.init("f").input("a", int, on_cancel=listen).output("x", one).output("x", one)
    with pytest.raises(FlowDuplicateName):
        schema.validate(no_reserved.sleep("s", timedelta(1)))
    with pytest.raises(FlowListenMismatch):
        schema.validate(Flow.init("f").input("a", int, on_cancel=listen).sleep("s", timedelta(1)))


def test_f0006_a_flow_listening_in_one_wait_must_listen_in_every_wait():
    flow = (
        Flow.init("f")
        .input("order", Order, on_cancel=listen)
        .sleep("cooling", timedelta(hours=1))
        .input("approval", Approval)
        .sleep("grace", timedelta(hours=1), on_cancel=listen)
    )
    with pytest.raises(FlowListenMismatch) as raised:
        schema.validate(flow)
    assert str(raised.value) == (
        "F0006: the flow listens for cancellation (on_cancel=) in 'order', 'grace' but not in 'cooling', "
        "'approval'; give every input and sleep an on_cancel, or none"
    )
    assert (raised.value.listening, raised.value.deaf) == (("order", "grace"), ("cooling", "approval"))


def test_f0006_counts_branch_and_child_sleeps_but_not_child_inputs():
    child = Flow.init("c").input("x", int).sleep("nap", timedelta(1), on_cancel=listen)
    listening = Flow.init("f").input("order", Order, on_cancel=listen).subflow("c", child, one)
    assert schema.validate(listening) is listening
    deaf_child = Flow.init("c").input("x", int).sleep("nap", timedelta(1))
    with pytest.raises(FlowListenMismatch, match="in 'order' but not in 'nap'"):
        schema.validate(Flow.init("f").input("order", Order, on_cancel=listen).subflow("c", deaf_child, one))
    in_branches = Flow.race(
        Flow.init("a").input("approval", Approval, on_cancel=listen),
        Flow.init("b").sleep("grace", timedelta(1)),
    )
    with pytest.raises(FlowListenMismatch, match="in 'approval' but not in 'grace'"):
        schema.validate(in_branches)


# ------------------------------------------------------------------------------- durable names


def test_durable_names_cover_children_under_their_path():
    assert list(schema.durable_names(seed.with_payment)) == [
        "order",
        "total",
        "payment",
        "payment~order_id",
        "payment~amount_cents",
        "payment~charge_id",
        "ship",
    ]
    assert list(schema.durable_names(seed.checks)) == ["order", "lines", "total"]


@pytest.mark.parametrize(
    ("key", "owner"),
    [
        ("order", "order"),
        ("route#chosen", "route"),
        ("charge#compensated", "charge"),
        ("reservations~3", "reservations"),
        ("reservations~count", "reservations"),
        ("delivery#2", "delivery"),
        ("delivery##2", "delivery"),
        ("payment~charge_id", "payment~charge_id"),
        ("payment~charge_id#compensated", "payment~charge_id"),
        ("refund", None),
        ("gone~1", None),
    ],
)
def test_owner_of_resolves_recorded_keys_to_their_node(key, owner):
    flow = (
        seed.with_payment.dispatch("route")
        .otherwise(one)
        .output("charge", one)
        .foreach("reservations", one, one)
        .loop_on("delivery", Schedule.fixed(timedelta(0)), one)
    )
    assert schema.owner_of(key, flow) == owner
    assert schema.owner_of(key, schema.durable_names(flow)) == owner


# ---------------------------------------------------------------------------------------- hash


def build(
    name: str = "total",
    declared: object = int,
    arm: str = "big",
    sleep: timedelta = timedelta(hours=48),
    concurrency: int | None = 4,
    flow_name: str = "fulfilment",
    description: str = "",
    timeout: timedelta | None = None,
    every: timedelta = timedelta(minutes=30),
) -> Flow:
    return (
        Flow.init(flow_name, meta=Meta(description=description))
        .input("order", Order, description=description)
        .output(name, lambda ctx: 1, type=declared, description=description, timeout=timeout)
        .dispatch("route", type=str, timeout=timeout)
        .when(lambda ctx: True, lambda ctx: "x", name=arm)
        .otherwise(lambda ctx: "y")
        .sleep("window", sleep, description=description)
        .foreach("reservations", lambda ctx: [], lambda item: "r", concurrency=concurrency, timeout=timeout)
        .loop_on("delivery", Schedule.fixed(every), lambda ctx: None, type=str)
        .subflow("payment", seed.payment, lambda ctx: {})
    )


def test_the_same_structure_gives_the_same_hash():
    assert schema.structural_hash(build()) == schema.structural_hash(build())
    assert len(schema.structural_hash(build())) == 16
    # Pinned: a version's identity must not drift between releases, or every running execution parks.
    assert schema.structural_hash(seed.fulfilment) == "eaf96aa9a78b05f3"
    assert schema.structure(seed.fulfilment) == (
        "SEQ(INIT,I:order:Order,O:total:int,O:charge:json,S:ship)||order:Order|total:int|charge:json"
    )


@pytest.mark.parametrize(
    "changed",
    [
        {"name": "sum"},
        {"declared": float},
        {"arm": "huge"},
        {"sleep": timedelta(hours=24)},
        {"concurrency": None},
        {"every": timedelta(minutes=5)},
    ],
)
def test_a_structural_change_changes_the_hash(changed):
    assert schema.structural_hash(build(**changed)) != schema.structural_hash(build())


@pytest.mark.parametrize(
    "changed",
    [{"flow_name": "fulfilment-eu"}, {"description": "documented"}, {"timeout": timedelta(seconds=3)}],
)
def test_names_meta_descriptions_and_timeouts_do_not_change_the_hash(changed):
    assert schema.structural_hash(build(**changed)) == schema.structural_hash(build())


def test_retries_tags_handlers_and_nesting_kinds():
    plain = Flow.init("f").output("charge", one)
    knobbed = Flow.init("g").output(
        "charge", one, retry=Schedule.fixed(timedelta(seconds=1)), tags=["x"], compensate=one
    )
    assert schema.structural_hash(plain) == schema.structural_hash(knobbed)
    a, b = seed.stock_check, seed.price_check
    hashes = {schema.structural_hash(f) for f in (a.zip(b), Flow.race(a, b), Flow.gather(a, b), b.zip(a))}
    assert len(hashes) == 4
    inline = Flow.init("f").and_then(seed.payment)
    nested = Flow.init("f").subflow("payment", seed.payment, one)
    assert schema.structural_hash(inline) != schema.structural_hash(nested)
    stateless = Flow.init("f").loop("l", one, type=int)
    stateful = Flow.init("f").loop("l", one, type=int, initial=0)
    assert schema.structural_hash(stateless) != schema.structural_hash(stateful)


# -------------------------------------------------------------------------------- WorkflowInfo


def test_workflow_info_of_a_flow_with_a_subflow():
    from flowdeck.store.spi import InputInfo, NodeInfo, WorkflowInfo, WorkflowMeta

    flow = seed.charging.with_meta(Meta(description="charge it", tags=("money",), version="3"))
    order, total, charge = flow.nodes
    assert schema.workflow_info("charging", flow) == WorkflowInfo(
        id="charging",
        meta=WorkflowMeta(description="charge it", tags=("money",), version="3"),
        nodes=(
            NodeInfo(name="order", node_type="input", tag="Order", location=order.location),
            NodeInfo(name="total", node_type="output", tag="int", location=total.location),
            NodeInfo(
                name="charge",
                node_type="output",
                tag="json",
                location=charge.location,
                meta=WorkflowMeta(
                    description="authorise the card", timeout=10.0, retry="exponential(1s, x2, max=60s)"
                ),
            ),
        ),
        inputs=(InputInfo(name="order", tag="Order", json_schema=values.json_schema(Order)),),
        outputs=("total", "charge"),
        structural_hash=schema.structural_hash(flow),
        graph=graph_document.document_of(flow),
    )


def test_workflow_info_lists_a_shared_name_once_and_every_kind():
    info = schema.workflow_info("decided", seed.decided)
    assert [(n.name, n.node_type, n.tag) for n in info.nodes] == [
        ("approval", "input", "Approval"),
        ("decision", "output", "str"),
        ("grace", "sleep", "None"),
    ]
    assert [i.name for i in info.inputs] == ["approval"]
    assert info.outputs == ("decision",)
    kinds = schema.workflow_info("x", build())
    assert [(n.name, n.node_type, n.tag) for n in kinds.nodes] == [
        ("order", "input", "Order"),
        ("total", "output", "int"),
        ("route", "dispatch", "str"),
        ("window", "sleep", "None"),
        ("reservations", "foreach", "list[json]"),
        ("delivery", "loop", "str"),
        ("payment", "subflow", "Any"),
    ]
    assert kinds.outputs == ("total", "route", "reservations", "delivery", "payment")
    # the store keeps WorkflowInfo as JSON: it must survive the trip
    assert type(kinds).model_validate_json(kinds.model_dump_json()) == kinds
