"""Executions for the overview, written through the store as workers leave them: `seed_execution` (the
in-process tests use it), and `python -m tests.console.seed_overview`, which fills the database
`DATABASE_URL` names with a day of `counter` activity for the browser test: a store on a manual clock that
starts a day ago writes each execution at its own past minute (created, then ended), so the charts have
history a live server could not make in a test's time.
"""

from __future__ import annotations

import asyncio
import os
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import django

from flowdeck.store import spi

K = spi.EventKind
FAILURE_KINDS = ("PaymentDeclined", "TimeoutError", "KeyError")
HOW = ("completed", "failed", "stopped", "waiting", "retrying", "running")


async def seed_execution(
    store: spi.FlowStore,
    eid: str,
    how: str,
    code: str | None = None,
    *,
    took: timedelta = timedelta(0),
    advance: Any = None,
    retry_at: datetime | None = None,
    lease: timedelta = timedelta(minutes=5),
) -> None:
    """A `counter` execution left as a worker leaves it: `how` is completed, failed (of kind `code`),
    stopped (with stop code `code`), waiting (on its input), retrying (a retry back-off row due at
    `retry_at`, default in three minutes) or running (claimed). `advance(took)`, when given, moves the
    store's clock between the start and the ending. `lease` is the seed's claim: a store on a clock in the
    past needs one that outlives the real now, or a live worker takes the execution over meanwhile."""
    assert how in HOW, how
    info = await store.get_workflow("counter")
    assert info is not None

    def event(kind: spi.EventKind, **data: Any) -> spi.Event:
        return spi.Event(kind, "counter", eid, store.now(), data)

    handle = await store.create_claimed_if_absent(
        eid, "counter", info.structural_hash, spi.Running(), event(K.CREATED),
        executor_id="seed", lease=lease,
    )  # fmt: skip
    assert handle is not None
    if how == "running":
        return
    if advance is not None:
        await advance(took)
    ending: spi.ClaimOutcome
    if how == "completed":
        ending = spi.Terminal(spi.Completed(), event(K.COMPLETED))
    elif how == "failed":
        ending = spi.Terminal(spi.Failed("boom", code), event(K.FAILED, error="boom"))
    elif how == "stopped":
        assert code is not None
        stopped = spi.Stopped(code, "double", "stuck")
        ending = spi.Stop(stopped, event(K.STOPPED, code=code, node="double", reason="stuck"))
    elif how == "waiting":
        await handle.record_wait(
            "count", spi.WakeOnField("count"), event(K.INPUT_WAITING, input_name="count")
        )
        ending = spi.Suspended(frozenset({"count"}))
    else:
        at = retry_at or store.now() + timedelta(minutes=3)
        row = "double#retry1"
        await handle.record_wait(row, spi.WakeAt(at), event(K.SLEEP_STARTED, path=row, at=at.isoformat()))
        ending = spi.Suspended(frozenset({row}))
    assert await handle.finish(ending) == spi.StatusOutcome.APPLIED


DAY = timedelta(days=2)  # the seed's claims, on a clock a day behind, outlive the real now


async def seed_day() -> None:
    """A day of executions of `counter`, heavier in the last hour, every kind of ending among them."""
    from flowdeck.console.conf import flowdeck_settings
    from flowdeck.store.clock import ManualClock
    from flowdeck.store.django.store import DjangoStore

    real_now = datetime.now(UTC).replace(microsecond=0)
    clock = ManualClock(real_now - timedelta(hours=23, minutes=50))
    store = DjangoStore(using=flowdeck_settings().database_alias, clock=clock, listen=False)
    shuffle = random.Random(14)
    kinds = ("completed",) * 12 + ("failed",) * 2
    n = 0
    try:
        while clock.now() < real_now - timedelta(minutes=2):
            recent = real_now - clock.now() < timedelta(hours=1)
            how = shuffle.choice(kinds)
            code = (
                shuffle.choice(("PaymentDeclined", "TimeoutError", "KeyError")) if how == "failed" else None
            )
            await seed_execution(
                store, f"ovw-{n:04d}", how, code, took=timedelta(seconds=40), advance=clock.advance, lease=DAY
            )
            n += 1
            gap = shuffle.randint(20, 90) if recent else shuffle.randint(300, 1500)
            await clock.advance(gap)
        for i, (how, code) in enumerate(
            (("stopped", "F0001"), ("stopped", "F0001"), ("stopped", "F0003"), ("waiting", None),
             ("waiting", None), ("retrying", None))
        ):  # fmt: skip
            await clock.advance(5)
            await seed_execution(
                store, f"ovw-open-{i}", how, code, retry_at=real_now + timedelta(hours=1), lease=DAY
            )
    finally:
        store.close()


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.console.settings")
    django.setup()
    asyncio.run(seed_day())
