"""`flow purge --older-than AGE [--status S] [--workflow WF] [--dry-run]`: retention from the command line.

Deletes the ended executions (completed, failed, cancelled; `--status` narrows, repeatable or comma-
separated) that ended more than AGE ago (`90m`, `12h`, `30d`), of one workflow with `--workflow`, with
their whole record, `--batch` at a time: each batch is one short transaction (`FlowStore.purge_ended`),
with a `--pause` between batches so that workers keep their turn. `--dry-run` counts them, per workflow
and status, and deletes nothing. An unended execution is never touched. Both are recorded in the
activity record (`purge`, `purge:dry-run`), with who ran them. Bad input exits 2.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError, CommandParser

from flowdeck.console import activity, durations
from flowdeck.console.management.commands._output import table
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import counts, retention

__all__ = ["add_arguments", "run"]

MAX_BATCH = 10_000
# a progress line at most this often (seconds of real time), and always after the last batch
_PROGRESS_EVERY = 1.0


def add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "--older-than", required=True, metavar="AGE", help="ended more than AGE ago: 90m, 12h, 30d"
    )
    parser.add_argument(
        "--status",
        "-s",
        action="append",
        default=[],
        metavar="STATUS",
        help=f"only these: {', '.join(retention.ENDED)} (repeat or comma-separate; default all)",
    )
    parser.add_argument(
        "--workflow", "-w", default=None, metavar="WF", help="only this workflow's executions"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="count what would go, per status; delete nothing"
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=500,
        help=f"executions per transaction (default 500, at most {MAX_BATCH})",
    )
    parser.add_argument(
        "--pause", type=float, default=0.05, help="seconds between two batches (default 0.05)"
    )


def _usage(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def _asked(o: Mapping[str, Any], now: Any) -> retention.Purge:
    try:
        age = durations.parse_age(o["older_than"])
        statuses = [s for given in o["status"] for s in given.split(",") if s.strip()]
        return retention.Purge(now - age, tuple(statuses), o["workflow"] or None)
    except ValueError as error:
        raise _usage(f"flowdeck purge: {error}") from None


def _check_pace(o: Mapping[str, Any]) -> None:
    if not 1 <= o["batch"] <= MAX_BATCH:
        raise _usage(f"flowdeck purge: --batch must be from 1 to {MAX_BATCH} (got {o['batch']})")
    if not 0 <= o["pause"] <= 60:
        raise _usage(f"flowdeck purge: --pause must be from 0 to 60 seconds (got {o['pause']:g})")


def _counted(found: Sequence[counts.StatusCount]) -> list[dict[str, Any]]:
    return [{"workflow_id": c.workflow_id, "status": c.status, "executions": c.executions} for c in found]


async def run(
    engine: FlowEngine,
    o: Mapping[str, Any],
    actor: str,
    emit: Callable[[Any, str], None],
    say: Callable[[str], None],
) -> None:
    """The verb: `emit(json, text)` answers once; `say(line)` prints progress (nothing in --json mode)."""
    action = "purge:dry-run" if o["dry_run"] else "purge"
    given = {"older_than": o["older_than"], "statuses": o["status"]}
    async with activity.recording(actor, "cli", action, workflow_id=o["workflow"] or "", **given) as act:
        what = _asked(o, engine.store.now())
        _check_pace(o)
        act.detail.update(ended_before=what.ended_before.isoformat(), statuses=list(what.statuses))
        found = await engine.store.count_purgeable(
            ended_before=what.ended_before, statuses=what.statuses, workflow_id=what.workflow_id
        )
        matching = sum(c.executions for c in found)
        answer: dict[str, Any] = {
            "dry_run": o["dry_run"],
            "ended_before": what.ended_before.isoformat(),
            "statuses": list(what.statuses),
            "workflow_id": what.workflow_id,
            "counts": _counted(found),
            "matching": matching,
        }
        scope = _scope(what)
        if o["dry_run"]:
            act.detail["matching"] = matching
            text = table(
                ("workflow", "status", "executions"), [(c.workflow_id, c.status, c.executions) for c in found]
            )
            emit(
                answer,
                f"{text}\ndry run: {matching} {scope} would be purged; nothing changed (drop --dry-run)",
            )
            return
        say(f"purging {matching} {scope}, {o['batch']} per batch")
        purged = await _purge(engine, what, o, matching, say)
        act.detail["purged"] = purged
        emit(answer | {"purged": purged}, f"purged {purged} {scope}")


def _scope(what: retention.Purge) -> str:
    of = f" of {what.workflow_id}" if what.workflow_id else ""
    before = f"{what.ended_before:%Y-%m-%d %H:%M:%S %Z}"
    return f"execution(s) ({', '.join(what.statuses)}){of} that ended before {before}"


async def _purge(
    engine: FlowEngine, what: retention.Purge, o: Mapping[str, Any], matching: int, say: Callable[[str], None]
) -> int:
    last = -_PROGRESS_EVERY

    def progress(deleted: int, total: int) -> None:
        nonlocal last
        if time.monotonic() - last >= _PROGRESS_EVERY or deleted < o["batch"]:
            last = time.monotonic()
            say(f"  purged {total} of {max(matching, total)}")

    pause = timedelta(seconds=o["pause"])
    return await retention.purge(
        engine.store, what, batch=o["batch"], pause=pause, clock=engine.clock, progress=progress
    )
