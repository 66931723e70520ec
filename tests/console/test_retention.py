"""`FLOWDECK_RETENTION`: the policy read from settings (bad ones refused, naming every problem), and the
chore worker processes run (`flowdeck_workers` wires it): on the injected clock it purges what ended more than
`older_than` ago in batches with a pause between them, round after round, never an unended execution."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from flowdeck.console import retention
from flowdeck.console.conf import flowdeck_settings
from flowdeck.console.management.commands.flowdeck_workers import Command as RunWorkers
from flowdeck.engine import maintenance
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import spi
from flowdeck.store.clock import ManualClock, settle
from flowdeck.store.memory import MemoryStore

DAY = timedelta(days=1)


async def _make(store: MemoryStore, eid: str, status: spi.Status) -> None:
    created = spi.Event(spi.EventKind.CREATED, "wf", eid, store.now(), {})
    assert await store.create_execution_if_absent(eid, "wf", "", status, created)


def test_the_policy_defaults_and_its_spelling() -> None:
    assert retention.policy_of(None) is None
    assert retention.policy_of({"older_than": "30d"}) == retention.RetentionPolicy(
        older_than=30 * DAY,
        statuses=("completed", "failed", "cancelled"),
        every=timedelta(hours=1),
        batch=500,
        pause=timedelta(seconds=1),
    )
    policy = retention.policy_of(
        {
            "older_than": "12h",
            "statuses": ["cancelled", "completed"],
            "every": "90m",
            "batch": 50,
            "pause": "0s",
        }
    )
    assert policy == retention.RetentionPolicy(
        timedelta(hours=12), ("completed", "cancelled"), timedelta(minutes=90), 50, timedelta(0)
    )


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ({}, "older_than: Field required"),
        ({"older_than": "30"}, "'30' is not a duration"),
        ({"older_than": "30d", "statuses": ["running"]}, "only ended executions are purged: 'running'"),
        ({"older_than": "30d", "batch": 0}, "batch: Input should be greater than or equal to 1"),
        ({"older_than": "30d", "every": "0m"}, "every: must be longer than 0s"),
        ({"older_than": "30d", "keep": "forever"}, "keep: Extra inputs are not permitted"),
    ],
)
def test_a_bad_policy_is_refused_saying_why(setting: dict[str, Any], says: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="FLOWDECK_RETENTION") as refused:
        retention.policy_of(setting)
    assert says in str(refused.value)


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        retention.policy_of({"older_than": "x", "batch": 0, "pause": "y"})
    assert str(refused.value).count("is not a duration") == 2
    assert "batch" in str(refused.value)


def test_runworkers_wires_the_chore_only_when_the_setting_is_there(settings: Any) -> None:
    engine = FlowEngine(MemoryStore())
    command = RunWorkers(stdout=io.StringIO())
    assert flowdeck_settings().retention is None
    assert [chore.name for chore in command.chores(engine)] == ["schedules"]  # the ticker, always
    settings.FLOWDECK_RETENTION = {"older_than": "30d", "statuses": ["completed"], "every": "2h"}
    [ticker, chore] = command.chores(engine)
    assert (ticker.name, ticker.every) == ("schedules", timedelta(seconds=1))
    assert (chore.name, chore.every) == ("retention", timedelta(hours=2))
    assert "retention: purging completed executions ended more than 30d ago, every 2h, 500 per batch" in (
        command.stdout._out.getvalue()  # type: ignore[attr-defined]
    )


async def test_workers_purge_in_batches_with_a_pause_round_after_round() -> None:
    clock = ManualClock()
    store = MemoryStore(clock)
    for i in range(5):
        await _make(store, f"old-{i}", spi.Completed())
    await _make(store, "old-failed", spi.Failed("boom", "KeyError"))
    await _make(store, "old-running", spi.Running())
    await _make(store, "old-stopped", spi.Stopped("F0001", "charge", "boom"))
    await clock.advance(31 * DAY)
    await _make(store, "young", spi.Completed())
    policy = retention.RetentionPolicy(30 * DAY, ("completed",), timedelta(hours=1), 2, timedelta(seconds=1))
    chore = retention.chore(store, policy, clock)

    def left() -> set[str]:
        return set(store.executions)

    unended = {"old-running", "old-stopped"}
    async with maintenance.running([chore], clock):
        await settle()
        assert left() == {
            "old-2",
            "old-3",
            "old-4",
            "old-failed",
            "young",
            *unended,
        }  # one batch, then a pause
        await clock.advance(0.5)
        assert len(left()) == 7
        await clock.advance(0.5)
        assert left() == {"old-4", "old-failed", "young", *unended}
        await clock.advance(1)
        assert left() == {"old-failed", "young", *unended}  # a short batch: the round is over
        assert chore.rounds == 1
        await clock.advance(30 * DAY)  # hourly rounds; `young` ended 31 days after the others
        assert left() == {"old-failed", *unended}
    assert chore.failures == 0
    assert chore.rounds > 700


@pytest.mark.parametrize("command", [["flowdeck_workers"], ["flowdeck", "ls"]])
def test_a_bad_policy_stops_the_commands_with_exit_2(settings: Any, command: list[str]) -> None:
    settings.FLOWDECK_RETENTION = {"older_than": "30", "statuses": ["stopped"]}
    with pytest.raises(CommandError) as refused:
        call_command(*command, stdout=io.StringIO(), stderr=io.StringIO())
    assert refused.value.returncode == 2
    older_than, statuses = str(refused.value).splitlines()  # a line per problem
    assert older_than.startswith("FLOWDECK_RETENTION: older_than: '30' is not a duration"), older_than
    assert statuses.startswith("FLOWDECK_RETENTION: statuses: only ended executions are purged: 'stopped'")
