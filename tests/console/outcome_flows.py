"""A workflow the verbs' message tests run: it stops for a person at its first step (a mistake in the
program, F0001) every time it runs, before it asks for its one input, which is never delivered."""

from __future__ import annotations

from engine import Flow


def check(ctx: object) -> None:
    raise ValueError("the rate table is empty")


stalls = Flow.init("stalls").step("check", check).input("later", str)

FLOWS = {"stalls": stalls}
