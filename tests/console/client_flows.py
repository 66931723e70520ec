"""The workflows the application-client tests start (`console.client`): `greet` completes from its input,
`approval` takes a model then waits for a decision, `refuse` says no (Failed), `broken` is a mistake
(Stopped F0001)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from flowdeck.engine import Flow, FlowDomainError


class Order(BaseModel):
    id: str
    cents: int = Field(ge=1)


class OutOfStock(FlowDomainError):
    """Nothing left to ship."""


def _refuse(ctx: object) -> str:
    raise OutOfStock("nothing left of it")


def _break(ctx: object) -> str:
    raise ValueError("the rate table is empty")


greet = Flow.init("greet").input("name", str).output("greeting", lambda ctx: f"hello {ctx.name}", type=str)

approval = (
    Flow.init("approval")
    .input("order", Order)
    .input("approved", bool)
    .output("verdict", lambda ctx: f"{ctx.order.id}: {'yes' if ctx.approved else 'no'}", type=str)
)

refuse = Flow.init("refuse").input("name", str).output("shipped", _refuse, type=str)

broken = Flow.init("broken").input("name", str).output("rate", _break, type=str)

FLOWS = {"greet": greet, "approval": approval, "refuse": refuse, "broken": broken}
