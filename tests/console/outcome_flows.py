"""A workflow the verbs' message tests run: it stops for a person at its first step (a mistake in the
program, F0001) every time it runs, before it asks for its one input, which is never delivered; and one that
stops at a node whose value is text, for the answer form (its carrier table has no entry)."""

from __future__ import annotations

from flowdeck.engine import Flow


def check(ctx: object) -> None:
    raise ValueError("the rate table is empty")


def carrier(ctx: object) -> str:
    raise KeyError("no carrier for NL")


stalls = Flow.init("stalls").step("check", check).input("later", str)
ships = Flow.init("ships").output("carrier", carrier, type=str).output("parcels", lambda ctx: 1, type=int)

FLOWS = {"stalls": stalls, "ships": ships}
