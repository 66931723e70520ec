"""`flowdeck purge`: the dry run counts per status and deletes nothing, the real run deletes in batches what
ended before the cutoff (never an unended execution), bad input exits 2, and both are recorded in the
activity record with who ran them. On SQLite (the test database) and PostgreSQL (the store suite's alias).
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management.base import CommandError

from flowdeck.console import runtime
from flowdeck.console.conf import flowdeck_settings
from flowdeck.console.discovery import discover
from flowdeck.console.models import Activity, ActivityExecution
from flowdeck.store.clock import ManualClock
from tests.console.backends import _postgres_alias_first, backend_fixture, postgres_alias  # noqa: F401  (fixtures)
from tests.console.seed_overview import seed_execution
from tests.console.test_activity_surfaces import flow

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True, databases="__all__")

OLD_ENDED = {"ok-1": "completed", "ok-2": "completed", "bad-1": "failed"}
OLD_UNENDED = {"stop-1": "stopped", "wait-1": "waiting", "run-1": "running"}


@pytest.fixture
def world(backend: str) -> Iterator[None]:
    """`counter` executions: OLD_ENDED and OLD_UNENDED made 40 days ago, `ok-new` ended now."""
    discover(["tests.console.flows"])
    runtime.reset()
    async_to_sync(_seed)()
    yield
    runtime.reset()


async def _seed() -> None:
    from flowdeck.store.django.store import DjangoStore

    engine = await runtime.engine()
    clock = ManualClock(datetime.now(UTC) - timedelta(days=40))
    past = DjangoStore(using=flowdeck_settings().database_alias, clock=clock, listen=False)
    try:
        for eid, how in {**OLD_ENDED, **OLD_UNENDED}.items():
            await seed_execution(past, eid, how, "F0001" if how == "stopped" else None)
            await clock.advance(60)
    finally:
        past.close()
    await seed_execution(engine.store, "ok-new", "completed")
    runtime.reset()


def _left() -> set[str]:
    return {item["execution_id"] for item in json.loads(flow("ls", "--json", "-n", "100"))["items"]}


def _records() -> list[tuple[str, str, str, dict[str, Any]]]:
    return [(r.actor, r.action, r.outcome, r.detail) for r in Activity.objects.order_by("pk")]


def test_a_dry_run_counts_by_status_and_deletes_nothing(world: None) -> None:
    out = flow("purge", "--older-than", "30d", "--dry-run")
    assert "completed" in out
    assert "failed" in out
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith("dry run: 3 execution(s) (completed, failed, cancelled) that ended")
    )
    assert _left() == {*OLD_ENDED, *OLD_UNENDED, "ok-new"}
    answer = json.loads(flow("purge", "--older-than", "30d", "--dry-run", "--json", "--status", "failed"))
    assert answer["counts"] == [{"workflow_id": "counter", "status": "failed", "executions": 1}]
    assert answer["matching"] == 1
    assert answer["dry_run"] is True
    (actor, action, outcome, detail), _ = _records()
    assert (actor, action, outcome) == (f"cli:{getpass.getuser()}", "purge:dry-run", "accepted")
    assert detail["matching"] == 3
    assert detail["older_than"] == "30d"


def test_a_purge_deletes_the_old_ended_in_batches_and_is_recorded(world: None) -> None:
    with pytest.raises(CommandError):  # an activity row naming an execution the purge takes
        flow("cancel", "ok-1", "--as", "ada")
    out = flow("--as", "ops-bob", "purge", "--older-than", "30d", "--batch", "2", "--pause", "0")
    lines = out.strip().splitlines()
    assert lines[0].startswith("purging 3 execution(s) (completed, failed, cancelled) that ended before")
    assert "  purged 3 of 3" in lines
    assert lines[-1].startswith("purged 3 execution(s) (completed, failed, cancelled) that ended before")
    assert _left() == {*OLD_UNENDED, "ok-new"}
    with pytest.raises(CommandError) as gone:
        flow("show", "ok-1")
    assert gone.value.returncode == 2
    purge = Activity.objects.get(action="purge")
    assert (purge.actor, purge.outcome, purge.detail["purged"]) == ("ops-bob", "accepted", 3)
    # the activity record keeps what people did: its rows naming a purged execution stay
    assert ActivityExecution.objects.filter(execution_id="ok-1", activity__actor="ada").exists()
    assert "purged 0" in flow("purge", "--older-than", "30d")


def test_a_purge_keeps_to_its_status_and_workflow(world: None) -> None:
    assert json.loads(flow("purge", "--older-than", "30d", "-s", "failed", "--json"))["purged"] == 1
    assert _left() == {"ok-1", "ok-2", *OLD_UNENDED, "ok-new"}
    assert json.loads(flow("purge", "--older-than", "30d", "-w", "nothing-here", "--json"))["purged"] == 0
    assert (
        json.loads(flow("purge", "--older-than", "1m", "-s", "completed,cancelled", "--json"))["purged"] == 2
    )
    assert _left() == {*OLD_UNENDED, "ok-new"}  # ended a minute ago: ok-new stays


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--older-than", "30"], "'30' is not a duration"),
        (["--older-than", "thirty days"], "is not a duration"),
        (["--older-than", "30d", "--status", "running"], "only ended executions are purged: 'running'"),
        (["--older-than", "30d", "--status", "completed,stopped"], "'stopped' is not one of"),
        (["--older-than", "30d", "--batch", "0"], "--batch must be from 1 to 10000"),
        (["--older-than", "30d", "--pause", "-1"], "--pause must be from 0 to 60"),
    ],
)
def test_bad_input_exits_2_and_is_recorded(world: None, args: list[str], says: str) -> None:
    with pytest.raises(CommandError) as refused:
        flow("purge", *args)
    assert refused.value.returncode == 2
    assert says in str(refused.value)
    assert _left() == {*OLD_ENDED, *OLD_UNENDED, "ok-new"}
    [(_, action, outcome, _)] = _records()
    assert (action, outcome) == ("purge", "invalid")


def test_older_than_is_required(world: None) -> None:
    with pytest.raises(CommandError, match="--older-than"):
        flow("purge")
