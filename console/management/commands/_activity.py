"""`flowdeck activity` and `--as USER`: who the CLI's actions are attributed to, and what operators did.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.core.management.base import CommandError, CommandParser

from flowdeck.console import activity, refusals
from flowdeck.console.management.commands._output import table

__all__ = ["AS_HELP", "actor_of", "add_arguments", "show"]

AS_HELP = "whom to record this action as (default cli:<your OS user>)"
_MAX_ACTOR = 150


def actor_of(given: str | None) -> str:
    """The name the record carries: `--as USER` (a readable name) or `cli:<the OS user>`."""
    if given is not None:
        name = given.strip()
        if not name or len(name) > _MAX_ACTOR or not name.isprintable():
            raise CommandError(
                f"--as takes a user name of 1 to {_MAX_ACTOR} printable characters, got {given!r}",
                returncode=2,
            )
        return name
    return activity.cli_actor()


def add_arguments(parser: CommandParser) -> None:
    parser.add_argument("--user", "-u", default="", help="only this actor (a username, cli:<os user>)")
    parser.add_argument("--action", "-a", default="", help="only this action: " + ", ".join(activity.ACTIONS))
    parser.add_argument("--source", default="", help="only from console, api or cli")
    parser.add_argument("--execution", "-e", default="", metavar="EID", help="only actions on this execution")
    parser.add_argument("--since", default="", help="from this time: ISO 8601 or an age (15m, 2h, 7d)")
    parser.add_argument("--until", default="", help="before this time (as --since)")
    parser.add_argument("--limit", "-n", type=int, default=25, help="at most this many (default 25)")
    parser.add_argument("--before", type=int, help="the page after this activity id (the last one shown)")


def _query(o: Mapping[str, Any]) -> activity.Query:
    if o["source"] and o["source"] not in activity.SOURCES:
        raise CommandError(
            f"--source is one of {', '.join(activity.SOURCES)}, got {o['source']!r}", returncode=2
        )
    for name in ("user", "action", "execution"):
        problem = refusals.text_problem(o[name])
        if problem is not None:
            raise CommandError(f"--{name} {problem}", returncode=2)
    try:
        since = activity.parse_time(o["since"]) if o["since"] else None
        until = activity.parse_time(o["until"]) if o["until"] else None
    except ValueError as error:
        raise CommandError(str(error), returncode=2) from None
    return activity.Query(o["user"], o["action"], o["source"], o["execution"], since, until)


def _line(row: Any) -> tuple[str, ...]:
    ids = activity.execution_ids(row)
    target = ids[0] if len(ids) == 1 else f"{len(ids)} executions" if ids else row.workflow_id
    outcome = f"{row.outcome} ({row.code})" if row.code else row.outcome
    return (str(row.pk), f"{row.at:%Y-%m-%d %H:%M:%S}", row.actor, row.source, row.action, target, outcome)


def show(o: Mapping[str, Any], emit: Callable[[Any, str], None]) -> None:
    """The matching actions, newest first; the next page's `--before` when there is one."""
    if not 1 <= o["limit"] <= activity.MAX_PAGE_SIZE:
        raise CommandError(
            f"--limit must be from 1 to {activity.MAX_PAGE_SIZE} (got {o['limit']})", returncode=2
        )
    rows, after = activity.read_page(_query(o), o["limit"], o["before"])
    text = table(("id", "at", "user", "source", "action", "execution", "outcome"), [_line(r) for r in rows])
    if after is not None:
        text += f"\nmore: --before {after}"
    emit({"items": [activity.as_json(r) for r in rows], "next_before": after}, text)
