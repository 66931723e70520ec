"""lint: registration's refusals found early with every call site, and advice registration does not give."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

from examples import seed
from examples.seed import Approval, Order
from flowdeck.engine import Flow, Loop, arguments, lint
from flowdeck.engine.lint import LintWarning

FILE = arguments.display_site(__file__, 0).rsplit(":", 1)[0]


def here(offset: int = 0) -> str:
    return f"{FILE}:{sys._getframe(1).f_lineno + offset}"


def one(ctx):
    return 1


def listen(ctx, reason):
    return "cancelled"


@pytest.mark.parametrize("name", list(seed.ALL_FLOWS))
def test_the_readme_flows_are_clean(name):
    assert lint(seed.ALL_FLOWS[name]) == []


def test_a_duplicate_name_is_reported_with_the_count_and_every_call_site():
    flow = Flow.init("f").output("total", one)
    first = flow.nodes[0].location
    flow, second = flow.step("total", one), here()
    flow, third = flow.output("total", one), here()
    assert lint(flow) == [
        LintWarning(
            "duplicate-name",
            f"3 nodes claim the durable name 'total' ({first}; {second}; {third}): one name is one field and "
            "one completion mark, so registration refuses this; rename all but one",
            "total",
            (first, second, third),
        )
    ]


def test_the_blessed_cases_are_not_warned_about():
    assert lint(seed.checks) == []
    assert lint(seed.decided) == []
    shared = Flow.gather(
        Flow.init("a").input("order", Order).output("a", lambda ctx: ctx.order.id),
        Flow.init("b").input("order", Order).output("b", lambda ctx: ctx.order.id),
    ).output("both", lambda ctx: [ctx.a, ctx.b])
    assert lint(shared) == []


def test_a_dispatch_with_only_an_otherwise_gets_advice_but_registers():
    flow, at = Flow.init("f").dispatch("route").otherwise(lambda ctx: "auto"), here()
    assert lint(flow) == [
        LintWarning(
            "empty-dispatch",
            "dispatch 'route' has no conditional arm (.when): it always takes its otherwise; an output would "
            "say the same more simply",
            "route",
            (at,),
        )
    ]


def test_registration_refusals_appear_in_lint():
    flow = Flow.init("").input("order#1", Order, on_cancel=listen).sleep("window", timedelta(hours=1))
    assert [w.code for w in lint(flow)] == ["unnamed", "reserved-name", "listen-mismatch"]
    arms = Flow.init("f").dispatch("d").when(one, one, name="a").when(one, one, name="a").otherwise(one)
    assert [(w.code, w.name) for w in lint(arms)] == [("duplicate-branch", "d#chosen=a")]


# ------------------------------------------------------------------------------------ ctx reads


def test_a_typo_in_a_ctx_read_names_the_closest_field():
    flow = Flow.init("f").input("order", Order).output("total", lambda ctx: 1, type=int)
    flow, at = flow.output("charge", lambda ctx: seed.charge_card(ctx.order.id, ctx.totl)), here()
    assert lint(flow) == [
        LintWarning(
            "unknown-field",
            "'charge': reads ctx.totl, but no earlier node produces 'totl'; did you mean ctx.total?",
            "charge",
            (at,),
        )
    ]


def test_a_read_of_a_later_node_lists_what_is_there():
    flow, at = Flow.init("f").input("order", Order).step("ship", lambda ctx: ctx.label), here()
    flow = flow.output("label", one)
    assert [w.message for w in lint(flow)] == [
        "'ship': reads ctx.label, but no earlier node produces 'label' (available: order)"
    ]
    assert lint(flow)[0].locations == (at,)


def test_a_def_body_is_read_too_and_its_read_site_is_named():
    async def charge(ctx) -> str:
        amount = ctx.amount
        return f"{ctx.order.id}:{amount}"

    read_at = here(-3)
    flow, at = Flow.init("f").input("order", Order).output("charge", charge), here()
    assert lint(flow) == [
        LintWarning(
            "unknown-field",
            "'charge': reads ctx.amount, but no earlier node produces 'amount' (available: order)",
            "charge",
            (at, read_at),
        )
    ]


def test_only_the_lambda_that_reads_is_blamed_when_a_line_holds_two():
    flow = Flow.init("f").input("order", Order)
    flow = flow.output("charge", lambda ctx: ctx.order.id, compensate=lambda ctx: ctx.chrage)
    assert [w.message for w in lint(flow)] == [
        "'charge': reads ctx.chrage, but no earlier node produces 'chrage'; did you mean ctx.charge?"
    ]


def test_subflow_records_are_read_by_path_and_checked_one_level_down():
    good = seed.with_payment.step("receipt", lambda ctx: ctx.payment.charge_id + ctx.payment.order_id)
    assert lint(good) == []
    bad = seed.with_payment.step("receipt", lambda ctx: ctx.payment.chargeid)
    assert [w.message for w in lint(bad)] == [
        "'receipt': reads ctx.payment.chargeid, but subflow 'payment' produces no 'chargeid'; "
        "did you mean ctx.charge_id?"
    ]


def test_bodies_inside_a_child_are_checked_against_the_child():
    child = Flow.init("c").input("amount", int).output("fee", lambda ctx: ctx.amout // 10)
    flow = Flow.init("f").input("order", Order).subflow("pay", child, lambda ctx: {"amount": 1})
    assert [(w.name, w.message) for w in lint(flow)] == [
        (
            "pay~fee",
            "'pay~fee': reads ctx.amout, but no earlier node produces 'amout'; did you mean ctx.amount?",
        )
    ]


def test_no_false_positives_for_loop_state_items_handlers_and_ctx_extras():
    flow = (
        Flow.init("f")
        .input("order", Order, on_cancel=listen)
        .loop(
            "attempts",
            lambda tries, ctx: (
                Loop.done(tries.real) if tries >= len(ctx.order.items) else Loop.again(tries + 1)
            ),
            initial=0,
            compensate=lambda ctx: ctx.attempts,
        )
        .foreach(
            "reservations",
            lambda ctx: ctx.order.items,
            lambda item, ctx: f"{item.sku}:{ctx.key}:{ctx.attempt}:{ctx.execution_id}",
            compensate=lambda item, value: item.whatever,
        )
        .foreach("plain", lambda ctx: [], lambda item: item.anything)
        .input("approval", Approval, on_cancel=lambda ctx, reason: ctx.reservations)
        .step("undo", lambda ctx: ctx.undo(print, ctx.plain))
    )
    assert lint(flow) == []


def test_parallel_branches_see_their_own_fields_and_the_join_sees_all():
    left = Flow.init("a").input("order", Order).output("lines", lambda ctx: len(ctx.order.items))
    right = Flow.init("b").input("order", Order).output("total", lambda ctx: ctx.lines)
    flow = left.zip(right).output("both", lambda ctx: (ctx.lines, ctx.total))
    assert [w.message for w in lint(flow)] == [
        "'total': reads ctx.lines, but no earlier node produces 'lines' (available: order)"
    ]


def test_a_body_without_source_is_skipped_silently():
    namespace: dict[str, object] = {}
    exec("body = lambda ctx: ctx.nowhere", namespace)
    flow = Flow.init("f").output("x", namespace["body"]).step("y", print)
    assert lint(flow) == []


def test_a_nested_function_rebinding_ctx_is_not_read_as_the_bodys_ctx():
    def body(ctx):
        def helper(ctx):
            return ctx.unrelated

        return helper(ctx.order)

    assert lint(Flow.init("f").input("order", Order).output("x", body)) == []
