"""Flows that use every node kind, for the diagram tests (the seed examples cover the common shapes)."""

from __future__ import annotations

from datetime import timedelta

from examples import seed
from flowdeck.engine import Flow, Loop, Schedule


def _none(ctx: object) -> None:
    return None


review = Flow.init("review").input("amount", int).output("ok", lambda ctx: ctx.amount < 100, type=bool)
nested = Flow.init("nested").subflow("inner", review, lambda ctx: {"amount": 1}).step("after", _none)

every_kind = (
    Flow.init("every-kind")
    .input("order", dict)
    .output("total", lambda ctx: 1, type=int)
    .sleep("cool", timedelta(hours=1, minutes=30))
    .dispatch("route", type=str)
    .when(lambda ctx: ctx.total > 10, lambda ctx: "big", name="big")
    .otherwise(lambda ctx: "small", name="small")
    .loop("spin", lambda ctx: Loop.done(1))
    .loop_on("poll", Schedule.fixed(timedelta(seconds=60)).take(3), lambda ctx: Loop.done(2))
    .foreach("items", lambda ctx: [1, 2, 3], lambda item: item, concurrency=4)
    .subflow("rev", review, lambda ctx: {"amount": ctx.total})
    .subflow("deep", nested, lambda ctx: {})
    .and_then(
        Flow.init("a")
        .step("left", _none)
        .zip(Flow.init("b").sleep("nap", timedelta(minutes=5)).output("right", lambda ctx: 1, type=int))
    )
    .and_then(
        Flow.race(
            Flow.init("r1").input("approval", bool),
            Flow.init("r2").sleep("timeout", timedelta(days=2)),
        )
    )
    .and_then(
        Flow.gather(
            Flow.init("g1").step("g1s", _none),
            Flow.init("g2"),
            Flow.init("g3").step("g3s", _none),
        )
    )
    .step("ship", _none)
)

# Names that have broken diagram formats before: markup, quotes, keywords, escapes, line breaks.
hostile = (
    Flow.init('fl"ow <b>&amp;</b>')
    .input('a "q" [x] {y} |p| <b>&amp;</b> end', int)
    .step("subgraph --> end\nline2", _none)
    .step("\\n literal, \\l and \\N", _none)
    .sleep("  #quot; é 🙂 ", timedelta(seconds=1))
    .dispatch("graph;style n1 fill:red")
    .when(lambda ctx: True, _none, name="-.->|x|")
    .otherwise(_none, name="]]> <!-- -->")
    .subflow("digraph { node }", Flow.init("%%{init}%%").step("end", _none), lambda ctx: {})
)

empty = Flow.init("empty")
empty_subflow = Flow.init("holder").subflow("nothing", empty, lambda ctx: {}).step("then", _none)

SAMPLES: dict[str, Flow] = {
    "every_kind": every_kind,
    "nested": nested,
    "hostile": hostile,
    "empty": empty,
    "empty_subflow": empty_subflow,
}

ALL: dict[str, Flow] = {**seed.ALL_FLOWS, **SAMPLES}
"""Every seed example and every sample flow, by name."""
