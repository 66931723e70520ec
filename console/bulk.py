"""Bulk operations by query: cancel, resume (a dry run, then go) or end every execution a filter matches.

An operation is one `Activity` row (`bulk:cancel`, `bulk:resume:dry-run`, `bulk:resume:go`, `bulk:end`)
whose `detail` holds the filter, how many matched, how far it got (`done` of `total`) and what came of
each execution (`outcomes`, and `codes`/`why` for those that did not accept); its `targets` name the
executions. The population is fixed when the operation is created: the ids matching then, newest first,
at most `CAP` of them (the cap is recorded and shown); executions that start matching later are not
touched. Each id is then acted on in turn and its outcome kept. A rerun is safe because every verb is
idempotent per execution: a second cancel is `already-requested` or `already-terminal`, a second resume or
end is refused (`not_resumable`: neither stopped nor parked any more; `already-terminal`) and changes nothing.

The row is written as `running` and refreshed every `FLUSH_EVERY` executions (and at the end), with the
time of the refresh (`beat`). A process that dies mid-way leaves a `running` row whose beat stops; after
`STALE` it reads as `interrupted`, with how far it got. On the process's Django store, a cancel, a resume
(go) or an end commits each batch of `FLUSH_EVERY` writes in the transaction that refreshes the row
(`bulk_record`), so "how far it got" is exactly what it did. Small operations run in the request; larger ones
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

from flowdeck.console import bulk_record
from flowdeck.console.models import Activity, ActivityExecution
from flowdeck.engine import errors
from flowdeck.engine.engine import FlowEngine
from flowdeck.store import field_terms, filter_limits, spi

__all__ = [
    "ACTIONS",
    "CAP",
    "STOPS_AGAIN",
    "EverythingRefused",
    "INLINE_MAX",
    "Operation",
    "Where",
    "check_everything",
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
# A dry run's word for an execution that would resume and stop again at once (`ResumeReport.repeats`).
STOPS_AGAIN = "stops_again"
INLINE_MAX = 200  # up to this many, the request waits for the operation; beyond, it runs as a task
FLUSH_EVERY = 50
STALE = timedelta(seconds=60)
_PAGE = 500
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
        filter_limits.check_terms(len(matches))
        if self.prefix:
            words = [self.prefix, *words]
        if len(words) > 1:
            raise spi.FilterParseError(
                f"search for one id prefix and any field: terms (got {len(words)} other words)"
            )
        return matches, words[0] if words else None

    @property
    def everything(self) -> bool:
        """No filter at all: an operation on it acts on every execution, so a caller must say so (`all`)
        and give the count it saw (`check_everything`)."""
        return not (self.status or self.workflow or self.q or self.prefix or self.terms)

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


class EverythingRefused(ValueError):
    """An operation on every execution (no filter) without `all` and the count the operator saw, or `all`
    with a filter; `what` names the missing or contradicting part."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(message)
        self.what = what


def check_everything(where: Where, everything: bool, expected: int | None) -> None:
    """An action on every execution needs an explicit `all` and the count the operator saw; `all` with a
    filter is a contradiction. `EverythingRefused` otherwise, before anything is recorded."""
    if everything and not where.everything:
        raise EverythingRefused("all", "all acts on every execution: give no filter with it, or leave it out")
    if where.everything and not everything:
        raise EverythingRefused(
            "all", "no filter: to act on every execution, say all and give the count you saw (expected count)"
        )
    if where.everything and expected is None:
        raise EverythingRefused("expectedCount", "an action on every execution needs the count you saw")


def status_filter(where: Where, endable: bool = False) -> spi.ExecutionFilter.Any | None:
    """The status part of the filter; with `endable`, narrowed to the executions an end takes from the
    console (stopped ones: the End tab promises to leave the others alone)."""
    F = spi.ExecutionFilter
    given = F.parse(where.status) if where.status else None
    if not endable:
        return given
    return F.Stopped() if given is None else F.Both(given, F.Stopped())


async def count(engine: FlowEngine, where: Where, endable: bool = False) -> int:
    """How many executions the filter matches now (with `endable`, how many of them are stopped)."""
    matches, prefix = where.parsed()
    page = await engine.executions.search(
        where.workflow or None, status_filter(where, endable), 1, 0, prefix, matches
    )
    return page.total


async def snapshot(
    engine: FlowEngine, where: Where, cap: int | None = None, endable: bool = False
) -> tuple[list[str], int]:
    """The ids the filter matches now (with `endable`, its stopped ones), newest first, at most `cap`
    (`CAP`); and how many matched in all."""
    cap = CAP if cap is None else cap
    matches, prefix = where.parsed()
    found: list[str] = []
    total = 0
    while len(found) < cap:
        page = await engine.executions.search(
            where.workflow or None,
            status_filter(where, endable),
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
        """A dry run's summary: the ids that would resume cleanly, those that would resume and stop again
        at once (`STOPS_AGAIN`: on the version they stopped under, their F0001 unanswered), those with
        F0101, with F0102, those with nothing to resume (neither stopped nor parked: running, waiting,
        sleeping) and those it cannot resume at all (ended, unknown)."""
        conflicts: Mapping[str, list[str]] = self.detail.get("conflict_codes", {})
        codes: Mapping[str, str] = self.detail.get("codes", {})
        out: dict[str, list[str]] = {
            "clean": [],
            STOPS_AGAIN: [],
            "F0101": [],
            "F0102": [],
            "not_resumable": [],
            "other": [],
        }
        for eid, word in self.outcomes.items():
            if word == "accepted" and codes.get(eid) == STOPS_AGAIN:
                out[STOPS_AGAIN].append(eid)
            elif word == "accepted":
                out["clean"].append(eid)
            elif eid in conflicts:
                for code in dict.fromkeys(conflicts[eid]):
                    out.setdefault(code, []).append(eid)
            elif codes.get(eid) == "not_resumable":
                out["not_resumable"].append(eid)
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


async def _one(engine: FlowEngine, verb: str, eid: str, reason: str, actor: str) -> bulk_record.Outcome:
    """What acting on one execution came to: its outcome word, code, why, and a dry run's conflict codes."""
    try:
        match verb:
            case "cancel":
                return bulk_record.cancel_words(await engine.executions.cancel(eid, reason, actor=actor))
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
                if report.repeats is not None:  # it would resume, and stop again at once
                    again = report.repeats
                    why = f"the version it stopped under: {again.code} at {again.node} again ({again.reason})"
                    return "accepted", STOPS_AGAIN, why, []
            case "resume:go":
                await engine.resume(eid, go=True, actor=actor)
            case "end":
                await engine.end(eid, reason, actor=actor)
    except (errors.FlowError, spi.FlowStoreError, ValueError) as error:
        return bulk_record.refused(error)
    return "accepted", "", "", []


async def run(engine: FlowEngine, op_id: int) -> None:
    """Act on each execution of operation `op_id` not yet acted on, keeping each outcome; the row is
    refreshed every `FLUSH_EVERY` executions and settled at the end. A cancel, a resume (go) or an end on a
    store that joins the record's transaction commits each batch of writes with its record (`bulk_record`),
    so a process killed mid-way leaves a record naming exactly the writes it made."""
    op = await load(op_id)
    if op is None:
        return
    detail = op.detail
    detail.setdefault("outcomes", {})
    todo = [eid for eid in op.ids if eid not in detail["outcomes"]]
    reason = str(detail.get("reason", ""))
    if op.verb in bulk_record.JOINS and bulk_record.joins(engine.store):
        try:
            for at in range(0, len(todo), FLUSH_EVERY):
                batch = todo[at : at + FLUSH_EVERY]
                steps = [(e, await bulk_record.prepare(engine, op.verb, e, reason, op.actor)) for e in batch]
                await sync_to_async(bulk_record.write_batch)(op_id, steps, detail)
        except Exception:  # the batch rolled back with its record: the row reads as interrupted, exactly
            logger.exception("operation %s stopped", op_id, extra={"action": "activity"})
            return
    else:
        for eid in todo:
            bulk_record.keep(detail, eid, await _one(engine, op.verb, eid, reason, op.actor))
            if detail["done"] % FLUSH_EVERY == 0:
                await _save(op_id, detail, "running")
    await _save(op_id, detail, _settled(detail["outcomes"]))


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
