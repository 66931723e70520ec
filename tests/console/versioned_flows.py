"""A workflow declared in two versions (`FLOWS = {"versioned": [V1, V2]}`, the last the newest), and an
earlier one, V0, that no module declares any more (its unended executions are parked).

Each version waits for `go`, then records which version ran it in `ran`; their structures differ by one
output each, so each has a hash of its own. `typed` changed the type of its input `qty` from v1 (an
integer) to v2 (a string): a value is judged by the version its execution runs.
"""

from __future__ import annotations

from flowdeck.engine import Flow


def _version(name: str, *extra: str) -> Flow:
    flow = Flow.init("versioned").input("go", bool).output("ran", lambda ctx: name, type=str)
    for output in extra:
        flow = flow.output(output, lambda ctx: True, type=bool)
    return flow


V0 = _version("v0")
V1 = _version("v1", "checked")
V2 = _version("v2", "checked", "noted")

TYPED_V1 = Flow.init("typed").input("qty", int).output("seen", lambda ctx: repr(ctx.qty), type=str)
TYPED_V2 = Flow.init("typed").input("qty", str).output("seen", lambda ctx: repr(ctx.qty), type=str)

FLOWS = {"versioned": [V1, V2], "typed": [TYPED_V1, TYPED_V2]}
