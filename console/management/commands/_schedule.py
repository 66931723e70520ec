"""`flowdeck schedule ls|show|create|pause|resume|trigger|delete|backfill`: schedules from the command line.

Every change goes through `console.schedules` (the API's and the pages' verbs), recorded in the activity
log as `--as USER` or the OS user. `backfill` lists the ticks it would start unless `--go` is given. Bad
input (a cron expression, a zone, a workflow, inputs the workflow refuses, an unknown schedule, a time that
is not ISO 8601) exits 2 with one line.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser

from flowdeck.console import durations
from flowdeck.console import schedules as console_schedules
from flowdeck.console.management.commands._output import table
from flowdeck.store import schedules

__all__ = ["add_arguments", "run"]

Emit = Callable[[Any, str], None]


def _usage(message: str) -> CommandError:
    return CommandError(f"flowdeck schedule: {message}", returncode=2)


def _action(actions: Any, name: str, help: str) -> CommandParser:
    """An action's parser; it takes `--json` and `--as` after its words too (SUPPRESS: absent, they leave
    what the verb's parser read alone)."""
    parser: CommandParser = actions.add_parser(name, help=help, description=help)
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="answer JSON")
    parser.add_argument("--as", dest="as_user", metavar="USER", default=argparse.SUPPRESS, help="act as USER")
    return parser


def add_arguments(parser: CommandParser) -> None:
    actions = parser.add_subparsers(dest="schedule_action", metavar="ACTION", required=True)
    _action(actions, "ls", "every schedule: paused or not, next run, last run")
    for name, help in [
        ("show", "one schedule: its definition, next runs, last runs"),
        ("pause", "pause a schedule"),
        ("resume", "resume a schedule (what fell due while paused is not caught up)"),
        ("trigger", "start the schedule's workflow now"),
        ("delete", "delete a schedule (its executions stay)"),
    ]:
        _action(actions, name, help).add_argument("name")
    create = _action(actions, "create", "create a schedule")
    create.add_argument("name")
    create.add_argument("--workflow", "-w", required=True, help="the workflow id to start")
    create.add_argument("--cron", help='a 5-field cron expression, e.g. "0 3 * * *"')
    create.add_argument("--every", help="a fixed interval instead of cron: 90s, 15m, 2h, 1d")
    create.add_argument("--timezone", "--tz", default="UTC", help="an IANA zone the cron is read in")
    create.add_argument("--inputs", default="{}", help="the inputs to start with, as a JSON object")
    create.add_argument("--overlap", default="skip", help="skip, buffer_one or allow (default skip)")
    create.add_argument("--catchup", default="none", help="none, latest or all (default none)")
    create.add_argument("--catchup-window", default="1d", help="how far back `all` catches up (default 1d)")
    backfill = _action(actions, "backfill", "start the ticks of a time range (a dry run unless --go)")
    backfill.add_argument("name")
    backfill.add_argument("--from", dest="start", required=True, help="ISO 8601, e.g. 2026-11-01T00:00Z")
    backfill.add_argument("--to", dest="end", required=True, help="ISO 8601 (inclusive)")
    backfill.add_argument("--go", action="store_true", help="start them (default: list them only)")


def _instant(option: str, text: str) -> datetime:
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise _usage(f"{option} is not an ISO 8601 time: {text!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _spec(o: Mapping[str, Any]) -> schedules.ScheduleSpec:
    try:
        inputs = json.loads(o["inputs"])
    except json.JSONDecodeError as error:
        raise _usage(f"--inputs is not valid JSON ({error.msg}): {o['inputs']!r}") from None
    if not isinstance(inputs, dict):
        raise _usage(f"--inputs must be a JSON object: {o['inputs']!r}")
    try:
        every = None if o["every"] is None else durations.parse_age(o["every"])
        return schedules.ScheduleSpec(
            o["name"],
            o["workflow"],
            cron=o["cron"],
            every=every,
            timezone=o["timezone"],
            inputs=inputs,
            overlap=schedules.Overlap(o["overlap"]),
            catchup=schedules.Catchup(o["catchup"]),
            catchup_window=durations.parse_age(o["catchup_window"]),
        )
    except ValueError as error:
        raise _usage(str(error)) from None


def _period(spec: schedules.ScheduleSpec) -> str:
    """`0 3 * * *`, or `every 15m`."""
    if spec.every is not None:
        return f"every {durations.show_age(spec.every)}"
    return spec.cron or ""


def _when(at: datetime | None) -> str:
    return "" if at is None else f"{at:%Y-%m-%d %H:%M}Z"


def _json(shown: console_schedules.Shown) -> dict[str, Any]:
    return {
        **shown.schedule.spec.to_json(),
        "paused": shown.schedule.paused,
        "next_runs": [t.isoformat() for t in shown.next_runs],
        "last_runs": [
            {"tick": r.tick.tick.isoformat(), "outcome": r.tick.outcome.value, "source": r.tick.source.value}
            | {"execution_id": r.tick.execution_id, "state": r.state}
            for r in shown.last_runs
        ],
    }


def _listing(found: list[console_schedules.Shown]) -> str:
    rows = []
    for s in found:
        spec = s.schedule.spec
        when = _period(spec)
        last = s.last_runs[0] if s.last_runs else None
        last_text = (
            "" if last is None else f"{_when(last.tick.tick)} {last.tick.outcome.value} {last.state or ''}"
        )
        state = "paused" if s.schedule.paused else "active"
        upcoming = _when(s.next_runs[0] if s.next_runs else None)
        rows.append((spec.name, spec.workflow_id, when, spec.timezone, state, upcoming, last_text.strip()))
    return table(("name", "workflow", "when", "zone", "state", "next run (UTC)", "last run"), rows)


def _detail(s: console_schedules.Shown) -> str:
    spec = s.schedule.spec
    lines = [
        f"schedule {spec.name}: {'paused' if s.schedule.paused else 'active'}"
        + (" (declared in a flows module)" if spec.declared else ""),
        f"  workflow {spec.workflow_id}, {_period(spec)} in {spec.timezone}; "
        f"overlap {spec.overlap.value}, catch-up {spec.catchup.value}",
        "  next runs (UTC): " + (", ".join(_when(t) for t in s.next_runs) or "none while paused"),
        "last runs:",
        table(
            ("tick (UTC)", "outcome", "source", "execution", "state"),
            [
                (
                    _when(r.tick.tick),
                    r.tick.outcome.value,
                    r.tick.source.value,
                    r.tick.execution_id,
                    r.state or "",
                )
                for r in s.last_runs
            ],
        ),
    ]
    return "\n".join(lines)


async def run(o: Mapping[str, Any], actor: str, emit: Emit) -> None:
    action, name = o["schedule_action"], o.get("name", "")
    if action == "ls":
        found = await console_schedules.shown_all()
        emit({"items": [_json(s) for s in found]}, _listing(found))
    elif action == "show":
        shown = await console_schedules.show(name)
        emit(_json(shown), _detail(shown))
    elif action == "create":
        made = await console_schedules.create(_spec(o), actor, "cli")
        emit(_json(await console_schedules.show(made.name)), f"created schedule {made.name}")
    elif action in ("pause", "resume"):
        await console_schedules.pause(name, action == "pause", actor, "cli")
        emit({"name": name, "paused": action == "pause"}, f"{action}d schedule {name}")
    elif action == "trigger":
        eid = await console_schedules.trigger(name, actor, "cli")
        emit({"execution_id": eid}, f"started {eid}")
    elif action == "delete":
        await console_schedules.delete(name, actor, "cli")
        emit({"name": name, "deleted": True}, f"deleted schedule {name} (its executions stay)")
    else:
        await _backfill(o, actor, emit)


async def _backfill(o: Mapping[str, Any], actor: str, emit: Emit) -> None:
    start, end = _instant("--from", o["start"]), _instant("--to", o["end"])
    done = await console_schedules.backfill(
        o["name"], start, end, dry_run=not o["go"], actor=actor, source="cli"
    )
    data = {
        "ticks": [t.isoformat() for t in done.ticks],
        "execution_ids": list(done.execution_ids),
        "started": list(done.started),
        "dry_run": not o["go"],
    }
    if o["go"]:
        text = f"started {len(done.started)} of {len(done.ticks)} tick(s) (the others had run already)"
    else:
        ticks = "\n".join(f"  {_when(t)}  {e}" for t, e in zip(done.ticks, done.execution_ids, strict=True))
        text = f"{len(done.ticks)} tick(s) would start (add --go to start them):\n{ticks}"
    emit(data, text)
