"""Executions for the list's browser test (`python -m tests.console.seed_list`, on the database
`DATABASE_URL` names): three days of `counter` executions a triager meets (failures of several kinds with
long messages, stops, waits, retries, a cancel asked, a parked one), each written at its own past time by
a store on a manual clock, so the durations and the relative times are those of a real day."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta

import django

from flowdeck.store import spi
from tests.console.seed_overview import seed_execution

LONG = (
    "card declined by the issuer: insufficient funds on the account ending 4242; the customer was told "
    "and may retry with another card"
)
# The seed's claims outlive the real now: the store's clock is three days back, and a live worker would
# otherwise take an execution over between its start and its ending.
LEASE = timedelta(days=4)
# Where the seed's timeline starts, and the least step between its executions: the parked one 72 h ago,
# the planned ones at least 6 h apart after it, so the tenth and the two after it less than 12 h ago. The
# calendar day holding "36 h ago" (which ends by 12 h ago) thus always lies between the parked one and
# the newest two, whatever the time of day (tests/console/test_browser_list.py filters on it).
SPAN = timedelta(days=3)
STEP = timedelta(hours=6)
# (id, how, code, took): the newest last
PLAN = (
    ("order-0001", "completed", None, 42),
    ("order-0002", "failed", "PaymentDeclined", 3),
    ("order-0003", "completed", None, 3700),
    ("order-0004", "stopped", "F0001", 0),  # a code the overview test also seeds (one module DB)
    ("order-0005", "failed", "TimeoutError", 31),
    ("order-0006", "waiting", None, 0),
    ("order-0007", "retrying", None, 0),
    ("order-0008", "completed", None, 7),
    ("order-0009", "failed", "KeyError", 1),
    ("order-0010", "running", None, 0),
)


async def _parked(store: spi.FlowStore, eid: str) -> None:
    event = spi.Event(spi.EventKind.CREATED, "counter", eid, store.now(), {})
    assert await store.create_execution_if_absent(eid, "counter", "0ld5e7v3r510n", spi.Running(), event)


async def seed() -> None:
    from flowdeck.console.conf import flowdeck_settings
    from flowdeck.store.clock import ManualClock
    from flowdeck.store.django.store import DjangoStore

    real_now = datetime.now(UTC).replace(microsecond=0)
    clock = ManualClock(real_now - SPAN)
    store = DjangoStore(using=flowdeck_settings().database_alias, clock=clock, listen=False)
    try:
        await _parked(store, "order-0000-parked")
        for eid, how, code, took in PLAN:
            await clock.advance(STEP)
            await seed_execution(
                store, eid, how, code, took=timedelta(seconds=took), advance=clock.advance, lease=LEASE,
                retry_at=real_now + timedelta(hours=1),  # not due while the test looks
            )  # fmt: skip
        await clock.advance(600)
        await seed_execution(store, "order-0011", "waiting", lease=LEASE)
        # asked of the one the seed holds claimed: no worker can take it, so it stays cancelling
        await store.request_cancel("order-0010", "customer asked to cancel", actor="olga")
        await clock.advance(60)
        handle = await store.create_claimed_if_absent(
            "order-0012", "counter", (await store.get_workflow("counter")).structural_hash,  # type: ignore[union-attr]
            spi.Running(), spi.Event(spi.EventKind.CREATED, "counter", "order-0012", store.now(), {}),
            executor_id="seed", lease=LEASE,
        )  # fmt: skip
        assert handle is not None
        failed = spi.Failed(LONG, "PaymentDeclined")
        event = spi.Event(spi.EventKind.FAILED, "counter", "order-0012", store.now(), {"error": LONG})
        await clock.advance(95)
        assert await handle.finish(spi.Terminal(failed, event)) == spi.StatusOutcome.APPLIED
    finally:
        store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    asyncio.run(seed())
