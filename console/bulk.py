"""Bulk operations by query: cancel, resume (a dry run, then go) or end every execution a filter matches.

An operation is one `Activity` row (`bulk:cancel`, `bulk:resume:dry-run`, `bulk:resume:go`, `bulk:end`)
whose `detail` holds the filter, how many matched, how far it got (`done` of `total`) and what came of
each execution (`outcomes`, and `codes`/`why` for those that did not accept); its `targets` name the
executions. The population is fixed when the operation is created: the ids matching then, newest first,
at most `CAP` of them (the cap is recorded and shown); executions that start matching later are not
touched. Each id is then acted on in turn and its outcome kept. A rerun is safe because every verb is
idempotent per execution: a second cancel is `already-requested` or `already-terminal`, a second resume or
end is refused (`not_stopped`, `already-terminal`) and changes nothing.

The row is written as `running` and refreshed every `FLUSH_EVERY` executions (and at the end), with the
time of the refresh (`beat`). A process that dies mid-way leaves a `running` row whose beat stops; after
`STALE` it reads as `interrupted`, with how far it got. Small operations run in the request; larger ones
run as a task on the web process's event loop (`start`), and their page polls the row.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, transaction
from django.utils import timezone

from console import activity
from console.models import Activity, ActivityExecution
from engine import errors
from engine.engine import FlowEngine
from store import field_terms, spi

__all__ = [
    "ACTIONS",
    "CAP",
    "INLINE_MAX",
    "Operation",
    "Where",
    "create",
    "is_operation",
    "load",
    "run",
    "start",
    "wait_all",
]

logger = logging.getLogger(__name__)

# verb → the activity action its operation records
ACTIONS = {
    "cancel": "bulk:cancel",
    "resume": "bulk:resume:dry-run",
    "resume:go": "bulk:resume:go",
    "end": "bulk:end",
}
TITLES = {
    "bulk:cancel": "Cancel all matching",
    "bulk:resume:dry-run": "Resume all matching: dry run",
    "bulk:resume:go": "Resume",
    "bulk:end": "End all matching",
}
CAP = 10_000
INLINE_MAX = 200  # up to this many, the request waits for the operation; beyond, it runs as a task
FLUSH_EVERY = 50
STALE = timedelta(seconds=60)
_PAGE = 500
_WHY_CHARS = 200
_TASKS: set[asyncio.Task[None]] = set()


@dataclass(frozen=True)
class Where:
    """A filter as the executions list spells it: a status word, a workflow, and the search box (an id
    prefix and any `field:` terms); or, from the API and the CLI, the prefix and the terms given apart."""

    status: str = ""
    workflow: str = ""
    q: str = ""
    prefix: str = ""
    terms: tuple[str, ...] = ()

    def parsed(self) -> tuple[list[spi.FieldMatch], str | None]:
        """The field terms and the id prefix; `spi.FilterParseError` for a filter that is not one."""
        if self.status:
            spi.ExecutionFilter.parse(self.status)
        matches, words = field_terms.split_terms(self.q)
        matches += [spi.parse_field_term(term) for term in self.terms]
        if self.prefix:
            words = [self.prefix, *words]
        if len(words) > 1:
            raise spi.FilterParseError(
                f"search for one id prefix and any field: terms (got {len(words)} other words)"
            )
        return matches, words[0] if words else None

    def words(self) -> str:
        """The filter in words, for a confirmation and the record."""
        parts = [f"status is {self.status}" if self.status else "any status"]
        parts.append(f"workflow is {self.workflow}" if self.workflow else "any workflow")
        matches, prefix = self.parsed()
        if prefix:
            parts.append(f"id starts with {prefix}")
        parts += [m.show() for m in matches]
        return ", ".join(parts)

    def as_json(self) -> dict[str, Any]:
        given = {"prefix": self.prefix, "terms": list(self.terms)}
        return {"status": self.status, "workflow": self.workflow, "q": self.q} | {
            k: v for k, v in given.items() if v
        }


async def count(engine: FlowEngine, where: Where) -> int:
    """How many executions the filter matches now."""
    matches, prefix = where.parsed()
    page = await engine.executions.search(where.workflow or None, where.status or None, 1, 0, prefix, matches)
    return page.total


async def snapshot(engine: FlowEngine, where: Where, cap: int | None = None) -> tuple[list[str], int]:
    """The ids the filter matches now, newest first, at most `cap` (`CAP`); and how many matched in all."""
    cap = CAP if cap is None else cap
    matches, prefix = where.parsed()
    found: list[str] = []
    total = 0
    while len(found) < cap:
        page = await engine.executions.search(
            where.workflow or None,
            where.status or None,
            min(_PAGE, cap - len(found)),
            len(found),
            prefix,
            matches,
        )
        total = page.total
        found += [s.execution_id for s in page.items]
        if len(page.items) == 0 or len(found) >= total:
            break
    return list(dict.fromkeys(found)), total


@dataclass
class Operation:
    """An operation as read back: its row, and its state at `now` (`running`, `done`, `interrupted`)."""

    id: int
    action: str
    actor: str
    source: str
    at: datetime
    state: str
    detail: dict[str, Any]
    ids: list[str] = field(default_factory=list)

    @property
    def verb(self) -> str:
        return next(verb for verb, action in ACTIONS.items() if action == self.action)

    @property
    def title(self) -> str:
        return TITLES[self.action]

    @property
    def done(self) -> int:
        return int(self.detail.get("done", 0))

    @property
    def total(self) -> int:
        return int(self.detail.get("total", 0))

    @property
    def outcomes(self) -> dict[str, str]:
        return dict(self.detail.get("outcomes", {}))

    def counts(self) -> dict[str, int]:
        tally: dict[str, int] = {}
        for word in self.outcomes.values():
            tally[word] = tally.get(word, 0) + 1
        return tally

    def summary(self) -> dict[str, list[str]]:
        """A dry run's summary: the ids that would resume cleanly, those with F0101, with F0102, and those
        it cannot resume at all (ended, unknown)."""
        conflicts: Mapping[str, list[str]] = self.detail.get("conflict_codes", {})
        codes: Mapping[str, str] = self.detail.get("codes", {})
        out: dict[str, list[str]] = {"clean": [], "F0101": [], "F0102": [], "other": []}
        for eid, word in self.outcomes.items():
            if word == "accepted":
                out["clean"].append(eid)
            elif eid in conflicts:
                for code in dict.fromkeys(conflicts[eid]):
                    out.setdefault(code, []).append(eid)
            elif codes.get(eid) != "resume_conflict":
                out["other"].append(eid)
        return out

    def as_json(self) -> dict[str, Any]:
        d = self.detail
        body = {
            "id": self.id,
            "action": self.action,
            "actor": self.actor,
            "source": self.source,
            "at": self.at.isoformat(),
            "state": self.state,
            "filter": d.get("filter", {}),
            "filter_words": d.get("words", ""),
            "origin": d.get("origin"),
            "matched": d.get("matched", 0),
            "capped": d.get("capped", False),
            "total": self.total,
            "done": self.done,
            "counts": self.counts(),
            "outcomes": self.outcomes,
            "codes": d.get("codes", {}),
            "why": d.get("why", {}),
        }
        if self.action == ACTIONS["resume"]:
            body["summary"] = self.summary()
        return body


def _state(row: Activity, now: datetime) -> str:
    if row.outcome != "running":
        return "done"
    beat = row.detail.get("beat")
    if beat and now - datetime.fromisoformat(beat) > STALE:
        return "interrupted"
    return "running"


def is_operation(action: str, detail: Mapping[str, Any]) -> bool:
    """Is this activity row an operation (with a page), rather than a bulk action done in one request
    (the list's "Cancel selected", which shares `bulk:cancel` but keeps no progress)?"""
    return action in ACTIONS.values() and "total" in detail


async def load(op_id: int, now: datetime | None = None) -> Operation | None:
    """The operation `op_id` as it stands (None when no bulk operation has that id)."""

    def read() -> Operation | None:
        row = Activity.objects.filter(pk=op_id, action__in=ACTIONS.values()).first()
        if row is None or not is_operation(row.action, row.detail):
            return None
        ids = list(row.targets.order_by("id").values_list("execution_id", flat=True))
        state = _state(row, now or timezone.now())
        return Operation(row.pk, row.action, row.actor, row.source, row.at, state, dict(row.detail), ids)

    return await sync_to_async(read)()


async def create(
    actor: str,
    source: str,
    verb: str,
    ids: Sequence[str],
    *,
    where: Where | None = None,
    matched: int | None = None,
    reason: str = "",
    origin: int | None = None,
) -> int:
    """Write the operation's row, `running`, naming its executions; answers its id."""
    now = timezone.now()
    detail: dict[str, Any] = {
        "filter": where.as_json() if where else {},
        "words": where.words() if where else "",
        "matched": len(ids) if matched is None else matched,
        "capped": matched is not None and matched > len(ids),
        "total": len(ids),
        "done": 0,
        "reason": reason[:1000],
        "beat": now.isoformat(),
        "outcomes": {},
    }
    if origin is not None:
        detail["origin"] = origin

    def write() -> int:
        with transaction.atomic():
            row = Activity.objects.create(
                at=now,
                actor=actor[:150],
                source=source,
                action=ACTIONS[verb],
                outcome="running",
                detail=detail,
            )
            ActivityExecution.objects.bulk_create(
                (ActivityExecution(activity=row, execution_id=eid[:200]) for eid in ids), batch_size=1000
            )
        return int(row.pk)

    return await sync_to_async(write)()


async def _one(
    engine: FlowEngine, verb: str, eid: str, reason: str, actor: str
) -> tuple[str, str, str, list[str]]:
    """What acting on one execution came to: its outcome word, code, why, and a dry run's conflict codes."""
    try:
        match verb:
            case "cancel":
                outcome = await engine.executions.cancel(eid, reason, actor=actor)
                if isinstance(outcome, spi.AlreadyTerminal):
                    return "already-terminal", "execution_terminal", outcome.status.show(), []
                return (
                    ("already-requested" if isinstance(outcome, spi.AlreadyRequested) else "accepted"),
                    "",
                    "",
                    [],
                )
            case "resume":
                report = await engine.resume(eid, go=False)
                codes = [c.code for c in report.conflicts]
                if codes:
                    return (
                        "refused",
                        "resume_conflict",
                        "; ".join(f"{c.code} at {c.path}: {c.detail}" for c in report.conflicts),
                        codes,
                    )
            case "resume:go":
                await engine.resume(eid, go=True, actor=actor)
            case "end":
                await engine.end(eid, reason, actor=actor)
    except errors.FlowResumeConflict as conflict:
        return "refused", "resume_conflict", str(conflict), [c.code for c in conflict.report.conflicts]
    except errors.FlowExecutionTerminal as ended:
        return "already-terminal", "execution_terminal", str(ended), []
    except (errors.FlowError, spi.FlowStoreError, ValueError) as error:
        word, code = activity.outcome_of(error)
        return word, code, str(error), []
    return "accepted", "", "", []


async def run(engine: FlowEngine, op_id: int) -> None:
    """Act on each execution of operation `op_id` not yet acted on, keeping each outcome; the row is
    refreshed every `FLUSH_EVERY` executions and settled at the end."""
    op = await load(op_id)
    if op is None:
        return
    detail = op.detail
    outcomes: dict[str, str] = detail.setdefault("outcomes", {})
    codes: dict[str, str] = detail.setdefault("codes", {})
    why: dict[str, str] = detail.setdefault("why", {})
    conflicts: dict[str, list[str]] = detail.setdefault("conflict_codes", {})
    reason = str(detail.get("reason", ""))
    for eid in op.ids:
        if eid in outcomes:
            continue
        word, code, text, found = await _one(engine, op.verb, eid, reason, op.actor)
        outcomes[eid] = word
        if code:
            codes[eid], why[eid] = code, text[:_WHY_CHARS]
        if found:
            conflicts[eid] = found
        detail["done"] = len(outcomes)
        if len(outcomes) % FLUSH_EVERY == 0:
            await _save(op_id, detail, "running")
    await _save(op_id, detail, _settled(outcomes))


def _settled(outcomes: Mapping[str, str]) -> str:
    """The operation's own outcome, as `Act.bulk` words a bulk action's."""
    words = set(outcomes.values())
    if "accepted" in words or not words:
        return "accepted"
    return words.pop() if len(words) == 1 else "refused"


async def _save(op_id: int, detail: dict[str, Any], outcome: str) -> None:
    detail["beat"] = timezone.now().isoformat()
    try:
        await Activity.objects.filter(pk=op_id).aupdate(detail=detail, outcome=outcome)
    except Exception:  # the verbs have happened; a failed write leaves the row to read as interrupted
        logger.exception("could not record the progress of operation %s", op_id, extra={"action": "activity"})


async def _in_background(engine: FlowEngine, op_id: int) -> None:
    try:
        await run(engine, op_id)
    finally:
        # as a request's end does: this thread's database connection is not left open until the next use
        await sync_to_async(connections.close_all)()


def start(engine: FlowEngine, op_id: int) -> asyncio.Task[None]:
    """Run the operation as a task of this process's event loop (kept until it ends). It runs in a fresh
    context: the request's would send its database work to the request's thread, gone once it answered."""
    task = asyncio.get_running_loop().create_task(
        _in_background(engine, op_id), name=f"bulk-operation-{op_id}", context=contextvars.Context()
    )
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
    return task


async def wait_all() -> None:
    """Wait for the operations running as tasks here (tests; a graceful shutdown)."""
    while _TASKS:
        await asyncio.gather(*list(_TASKS), return_exceptions=True)


async def launch(engine: FlowEngine, op_id: int, size: int, inline_max: int | None = None) -> None:
    """Run a small operation now, a large one as a task."""
    if size <= (INLINE_MAX if inline_max is None else inline_max):
        await run(engine, op_id)
    else:
        start(engine, op_id)
