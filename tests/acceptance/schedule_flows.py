"""The SIGKILL loop's schedule (tests/acceptance/test_schedule_sigkill.py): a trivial flow started every
second, overlap allowed, every missed tick of the last hour caught up."""

from __future__ import annotations

from datetime import timedelta

from flowdeck import Flow, scheduled

every_second = Flow.init("every-second").step("noop", lambda ctx: None)

FLOWS = {"every-second": every_second}

SCHEDULES = [
    scheduled(
        "every-second",
        "every-second",
        every=timedelta(seconds=1),
        overlap="allow",
        catchup="all",
        catchup_window=timedelta(hours=1),
    )
]
