"""The nightly reconciliation of the fulfilment ledger: what was charged and refunded the day before,
started by a schedule every night at 03:00 Paris time (docs/schedules.md).

Served when `FLOWDECK_FLOW_MODULES` names this module (the fulfilment app's own `flows.py` keeps to the
order flows). The day it reconciles is read from the execution id the schedule gave it
(`sched:<name>:<tick in UTC>`): the day before the tick, on Paris's calendar. Started by hand (no tick in
its id), it reconciles yesterday.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from django.db.models import Sum

from examples.fulfilment import models as ledger
from flowdeck import Flow, Meta, scheduled
from flowdeck.store import schedules

__all__ = ["FLOWS", "SCHEDULES", "PARIS", "reconciliation"]

PARIS = ZoneInfo("Europe/Paris")


def day_to_reconcile(ctx: object) -> str:
    """The day before the tick that started this execution, in Paris (yesterday when no tick did)."""
    named = schedules.tick_of_execution_id(ctx.execution_id)  # type: ignore[attr-defined]
    tick = named[1] if named is not None else datetime.now(UTC)
    return (tick.astimezone(PARIS).date() - timedelta(days=1)).isoformat()


def ledger_totals(ctx: object) -> dict[str, int]:
    day = date.fromisoformat(ctx.day)  # type: ignore[attr-defined]
    charges = ledger.Charge.objects.filter(created__date=day)
    return {
        "charges": charges.count(),
        "charged_cents": charges.aggregate(total=Sum("amount_cents"))["total"] or 0,
        "refunds": ledger.Refund.objects.filter(created__date=day).count(),
    }


def report(ctx: object) -> str:
    totals: dict[str, int] = ctx.totals  # type: ignore[attr-defined]
    return (
        f"{ctx.day}: {totals['charges']} charge(s), {totals['charged_cents']} cents, "  # type: ignore[attr-defined]
        f"{totals['refunds']} refund(s); sent to {ctx.report_to}"  # type: ignore[attr-defined]
    )


reconciliation = (
    Flow.init("reconciliation", meta=Meta(description="yesterday's charges and refunds, totalled"))
    .input("report_to", str)
    .output("day", day_to_reconcile, type=str)
    .output("totals", ledger_totals, type=dict)
    .output("report", report, type=str)
)

FLOWS = {"reconciliation": reconciliation}

SCHEDULES = [
    scheduled(
        "nightly-reconciliation",
        "reconciliation",
        cron="0 3 * * *",
        timezone="Europe/Paris",
        inputs={"report_to": "finance@example.com"},
        overlap="skip",  # a reconciliation still running at the next 03:00: that night's is skipped
        catchup="latest",  # after downtime, the one missed night that matters: the latest
    )
]
