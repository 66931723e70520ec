"""`flowdeck schedule …` and the client's schedule calls: every verb end to end on the console's store,
bad input one line and exit 2 with nothing recorded, every change in the activity log as its actor."""

from __future__ import annotations

import getpass
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.core.management.base import CommandError

from flowdeck import scheduled
from flowdeck.console import client, runtime
from flowdeck.console.discovery import discover
from flowdeck.console.models import Activity
from flowdeck.engine import errors

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def served() -> Iterator[None]:
    discover(["tests.console.flows"])
    runtime.reset()
    yield
    runtime.reset()


def flow(*args: str) -> str:
    out = io.StringIO()
    try:
        call_command("flowdeck", *args, stdout=out, stderr=io.StringIO())
    finally:
        runtime.reset()
    return out.getvalue()


def _schedules() -> list[str]:
    async def names() -> list[str]:
        return [s.name for s in await runtime.store().list_schedules()]

    try:
        return async_to_sync(names)()
    finally:
        runtime.reset()


def test_every_cli_verb(served: None) -> None:
    me = f"cli:{getpass.getuser()}"
    created = flow(
        "schedule",
        "create",
        "nightly",
        "-w",
        "counter",
        "--cron",
        "0 3 * * *",
        "--tz",
        "Europe/Paris",
        "--inputs",
        '{"count": {"n": 1}}',
    )
    assert created.strip() == "created schedule nightly"
    listed = flow("schedule", "ls")
    assert "nightly" in listed
    assert "0 3 * * *" in listed
    assert "Europe/Paris" in listed
    assert "active" in listed
    assert flow("schedule", "pause", "nightly", "--as", "ada").strip() == "paused schedule nightly"
    assert json.loads(flow("schedule", "show", "nightly", "--json"))["paused"] is True
    flow("schedule", "resume", "nightly")
    started = flow("schedule", "trigger", "nightly").strip()
    assert started.startswith("started sched:nightly:")
    dry = flow("schedule", "backfill", "nightly", "--from", "2026-11-01T00:00Z", "--to", "2026-11-02T12:00Z")
    assert dry.splitlines()[0] == "2 tick(s) would start (add --go to start them):"
    assert "sched:nightly:2026-11-01T02:00:00Z" in dry
    go = flow(
        "schedule", "backfill", "nightly", "--from", "2026-11-01T00:00Z", "--to", "2026-11-02T12:00Z", "--go"
    )
    assert go.strip() == "started 2 of 2 tick(s) (the others had run already)"
    shown = flow("schedule", "show", "nightly")
    assert "backfill" in shown
    assert "trigger" in shown
    flow("schedule", "delete", "nightly")
    assert _schedules() == []
    actions = list(
        Activity.objects.filter(source="cli", detail__schedule="nightly")
        .order_by("id")
        .values_list("actor", "action")
    )
    assert actions == [
        (me, "schedule:create"),
        ("ada", "schedule:pause"),
        (me, "schedule:resume"),
        (me, "schedule:trigger"),
        (me, "schedule:backfill:dry-run"),
        (me, "schedule:backfill"),
        (me, "schedule:delete"),
    ]


BAD = [
    (["create", "x", "-w", "counter", "--cron", "0 3 * *"], "invalid cron expression '0 3 * *'"),
    (["create", "x", "-w", "counter", "--cron", "0 3 * * *", "--tz", "Paris"], "unknown time zone 'Paris'"),
    (["create", "x", "-w", "nope", "--every", "15m"], "nope"),
    (["create", "x", "-w", "counter", "--every", "15m", "--inputs", '{"count": 3}'], "inputs refused"),
    (["create", "x", "-w", "counter", "--every", "15m", "--inputs", "{bad"], "--inputs is not valid JSON"),
    (["create", "x", "-w", "counter", "--every", "soon"], "is not a duration"),
    (
        ["create", "x", "-w", "counter", "--every", "15m", "--overlap", "maybe"],
        "'maybe' is not a valid Overlap",
    ),
    (["pause", "ghost"], "no schedule named 'ghost'"),
    (["backfill", "ghost", "--from", "yesterday", "--to", "2026-01-01"], "--from is not an ISO 8601 time"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_is_one_line_and_exit_2(served: None, args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as refused:
        flow("schedule", *args)
    assert refused.value.returncode == 2
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)
    assert _schedules() == []


def test_the_client_covers_every_verb(served: None) -> None:
    spec = scheduled(
        "hourly", "counter", every=__import__("datetime").timedelta(hours=1), inputs={"count": {"n": 1}}
    )
    assert client.create_schedule(spec, actor="app") == "hourly"
    with pytest.raises(errors.FlowScheduleExists):
        client.create_schedule(spec)
    client.pause_schedule("hourly", actor="app")
    assert [s.schedule.paused for s in client.schedules()] == [True]
    client.resume_schedule("hourly", actor="app")
    eid = client.trigger_schedule("hourly", actor="app")
    assert client.describe(eid).state.execution_id == eid
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 1, 2, tzinfo=UTC)
    assert len(client.backfill_schedule("hourly", start, end).ticks) == 3
    assert len(client.backfill_schedule("hourly", start, end, dry_run=False).started) == 3
    client.delete_schedule("hourly", actor="app")
    with pytest.raises(errors.FlowScheduleNotFound):
        client.delete_schedule("hourly")
    assert client.schedules() == []
    assert set(Activity.objects.filter(source="client").values_list("actor", flat=True)) >= {"app"}
