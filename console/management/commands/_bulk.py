"""`flow cancel|resume|end --where …`: the bulk operations by query of `console.bulk` from the command line.

`--where` takes a status word (`stopped`, `failed:<kind>`, `waiting:<name>` …) or a `field:` term, and may
be repeated (one status word at most); `--workflow` and `--prefix` narrow further. The ids matching when
the command runs are acted on, each in turn, and the summary printed; `resume` without `--go` is the dry
run. Exit 0 when the operation ran (whatever each execution answered, as printed), 2 for bad input.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.core.management.base import CommandError, CommandParser

from flowdeck.console import bulk
from flowdeck.engine.engine import FlowEngine

__all__ = ["add_arguments", "requested", "run"]

_SHOWN_IDS = 20


def add_arguments(parser: CommandParser) -> None:
    """The options that make a verb act on every execution a filter matches (instead of EID)."""
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="FILTER",
        help="act on every execution matching: a status word (stopped, failed:<kind>) or a field: term; "
        "repeat to narrow",
    )
    parser.add_argument("--workflow", "-w", default="", metavar="WF", help="with --where: only this workflow")
    parser.add_argument("--prefix", default="", help="with --where: only ids starting with this")
    parser.add_argument("--reason", default=None, help="with --where: why (recorded)")


def requested(o: Mapping[str, Any]) -> bool:
    """Is this a bulk operation (a filter given) rather than a verb on one EID? Both is bad input."""
    wanted = bool(o["where"] or o["workflow"] or o["prefix"])
    if wanted and o["execution_id"]:
        raise CommandError("give an EID or a filter (--where, --workflow, --prefix), not both", returncode=2)
    if not wanted and not o["execution_id"]:
        raise CommandError(
            "give an EID, or a filter: --where STATUS, --workflow WF, --prefix P", returncode=2
        )
    return wanted


def _where(o: Mapping[str, Any]) -> bulk.Where:
    statuses = [w for w in o["where"] if not w.startswith(("field:", "text:"))]
    if len(statuses) > 1:
        raise CommandError(f"one status word at most (got {', '.join(statuses)})", returncode=2)
    terms = [w for w in o["where"] if w.startswith(("field:", "text:"))]
    where = bulk.Where(statuses[0] if statuses else "", o["workflow"], "", o["prefix"], tuple(terms))
    where.parsed()  # a filter that is not one: FilterParseError, which the command answers with exit 2
    return where


async def run(
    engine: FlowEngine, verb: str, o: Mapping[str, Any], actor: str, emit: Callable[[Any, str], None]
) -> None:
    where = _where(o)
    if where.workflow:
        await engine.workflows.describe(where.workflow)
    ids, matched = await bulk.snapshot(engine, where)
    reason = o["reason"] if o["reason"] is not None else ("ended by an operator" if verb == "end" else "")
    op_id = await bulk.create(actor, "cli", verb, ids, where=where, matched=matched, reason=reason)
    await bulk.run(engine, op_id)
    op = await bulk.load(op_id)
    assert op is not None  # just written
    emit(op.as_json(), _text(op))


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_IDS])
    return shown + (f", and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")


def _text(op: bulk.Operation) -> str:
    d = op.detail
    lines = [f"{op.action} (operation {op.id}): {d['words']}"]
    capped = f" (the newest {op.total} acted on: the cap)" if d.get("capped") else ""
    lines.append(f"matched {d['matched']}{capped}; done {op.done} of {op.total}")
    if op.verb == "resume":
        lines.append("dry run (nothing changed; add --go to resume them)")
        lines += [
            f"{key}: {len(ids)}" + (f" ({_ids(ids)})" if ids else "") for key, ids in op.summary().items()
        ]
        return "\n".join(lines)
    lines += [f"{word}: {n}" for word, n in sorted(op.counts().items())]
    codes, why = d.get("codes", {}), d.get("why", {})
    lines += [f"  {eid}: {codes[eid]} {why.get(eid, '')}".rstrip() for eid in list(codes)[:_SHOWN_IDS]]
    return "\n".join(lines)
