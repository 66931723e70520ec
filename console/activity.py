"""The activity record: every operator action, from the console, the API and the CLI, written here alone.

A surface wraps the verb in `recording(...)`: the row is written when the block leaves, after the verb
answered, whatever it answered. An exception leaving the block is classified (`outcome_of`) and goes on
unchanged; a refusal the surface turns into its own answer (a 409 fragment, an exit code) is noted with
`Act.refused(error)` first. Writing the row never changes what the caller sees: a failed write is logged
(`console.activity`, ERROR) and swallowed, because the verb has already happened (or been refused) and
saying otherwise would be false.

Never recorded: a signal's value, an answer's value, a start's input values (they may hold personal
data). `detail` keeps the input's name and the value's size in bytes of JSON, and free text an operator
typed as a reason (shown escaped, like every user text).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic_core
from asgiref.sync import sync_to_async
from django.core.exceptions import BadRequest
from django.core.management.base import CommandError
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from flowdeck.console import durations
from flowdeck.console.models import Activity, ActivityExecution
from flowdeck.engine import errors
from flowdeck.store import spi

__all__ = [
    "ACTIONS",
    "OUTCOMES",
    "PAGE_SIZE",
    "SOURCES",
    "Act",
    "Query",
    "as_json",
    "execution_ids",
    "parse_time",
    "read_page",
    "cli_actor",
    "outcome_of",
    "recording",
    "report_detail",
    "value_size",
]

logger = logging.getLogger(__name__)

SOURCES = ("console", "api", "cli", "client")
ACTIONS = (
    "start",
    "signal",
    "cancel",
    "resume:dry-run",
    "resume:go",
    "answer",
    "end",
    "bulk:cancel",
    "bulk:cancel-all",
    "bulk:resume:dry-run",
    "bulk:resume:go",
    "bulk:end",
    "purge:dry-run",
    "purge",
    "schedule:create",
    "schedule:pause",
    "schedule:resume",
    "schedule:trigger",
    "schedule:delete",
    "schedule:backfill:dry-run",
    "schedule:backfill",
)
# accepted: the verb did it; already-*: nothing left to do; refused: the execution's state said no (a 409);
# invalid: the request was bad input (unknown id, a value failing its schema); error: the store failed.
# running: a bulk operation under way (console.bulk), or one whose process died (it reads as interrupted).
OUTCOMES = ("running", "accepted", "already-requested", "already-terminal", "refused", "invalid", "error")

_MESSAGE_CHARS = 1000
_TEXT_CHARS = 1000

# Refusals by class (the most specific on the MRO wins): the outcome and the code the API answers.
_CODES: Mapping[type[BaseException], tuple[str, str]] = {
    errors.FlowWorkflowError: ("invalid", "workflow_not_found"),
    errors.FlowNotRegistered: ("invalid", "workflow_not_registered"),
    errors.FlowExecutionNotFound: ("invalid", "execution_not_found"),
    errors.FlowExecutionTerminal: ("refused", "execution_terminal"),
    errors.FlowDuplicateExecution: ("refused", "duplicate_execution"),
    errors.FlowSignalError: ("invalid", "signal_refused"),
    errors.FlowInputError: ("invalid", "invalid_input"),
    errors.FlowAlreadyDelivered: ("refused", "already_delivered"),
    errors.FlowOperatorError: ("refused", "operator_refused"),
    errors.FlowNotStopped: ("refused", "not_stopped"),
    errors.FlowNotResumable: ("refused", "not_resumable"),
    errors.FlowClaimHeld: ("refused", "claim_held"),
    errors.FlowAlreadyAnswered: ("refused", "already_answered"),
    errors.FlowResumeConflict: ("refused", "resume_conflict"),
    errors.FlowUnknownNode: ("invalid", "node_not_found"),
    errors.FlowInvalidId: ("invalid", "invalid_id"),
    errors.FlowScheduleError: ("invalid", "invalid_schedule"),
    errors.FlowScheduleNotFound: ("invalid", "schedule_not_found"),
    errors.FlowScheduleExists: ("refused", "schedule_exists"),
    spi.FilterParseError: ("invalid", "invalid_filter"),
    spi.FlowStoreError: ("error", "store_unavailable"),
    Http404: ("invalid", "not_found"),
    BadRequest: ("invalid", "bad_request"),  # the console's `Refused`: an id breaking the id rule
    CommandError: ("invalid", "invalid_input"),  # the CLI's usage errors (a value that is not JSON)
    ValueError: ("invalid", "invalid_input"),
    # the caller went away (a closed connection, Ctrl-C) mid-verb: whether the verb landed is unknown
    asyncio.CancelledError: ("error", "interrupted"),
    KeyboardInterrupt: ("error", "interrupted"),  # a malformed JSON text, a pydantic ValidationError
}


def outcome_of(error: BaseException) -> tuple[str, str]:
    """The outcome and code an exception stands for; a refusal that carries its own code (`ApiError`, a
    CLI usage error) keeps it."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and code:
        status = getattr(error, "status", 400)
        return ("refused" if status == 409 else "invalid" if status < 500 else "error"), code
    for cls in type(error).__mro__:
        if cls in _CODES:
            return _CODES[cls]
    return "error", "internal_error"


def value_size(value: Any) -> int:
    """The size of a value as compact JSON bytes: what the record keeps of a signal's or an answer's value."""
    try:
        return len(pydantic_core.to_json(value, fallback=str))  # a typed value (a model) as its JSON
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        return 0


def report_detail(report: Any) -> dict[str, Any]:
    """What the record keeps of a resume report: how many nodes it kept, the next node, the conflicts'
    codes (a dry run with conflicts is still an answered dry run), and whether it would stop again."""
    kept = {
        "kept": len(report.kept),
        "next_node": report.next_node or "",
        "conflicts": [c.code for c in report.conflicts],
    }
    return {**kept, "stops_again": True} if report.repeats is not None else kept


def cli_actor(given: str | None = None) -> str:
    """Who a CLI action is attributed to: `--as USER` when given, else `cli:<the OS user>`."""
    if given:
        return given
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry, no LOGNAME (a bare container)
        return "cli:unknown"


@dataclass
class Act:
    """One action under way; the surface fills in what only it knows (the outcome of a verb that answers
    rather than raises, the ids a bulk action reached, what came of each)."""

    actor: str
    source: str
    action: str
    execution_ids: list[str] = field(default_factory=list)
    workflow_id: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    outcome: str = "accepted"
    code: str = ""
    message: str = ""

    def settle(self, outcome: str, code: str = "", message: str = "") -> None:
        self.outcome, self.code, self.message = outcome, code, message

    def refused(self, error: BaseException) -> None:
        """Note a refusal the surface answers itself (it does not leave the block)."""
        outcome, code = outcome_of(error)
        self.settle(outcome, code, str(error))
        if isinstance(error, errors.FlowResumeConflict):
            self.detail.update(report_detail(error.report))

    def bulk(self, outcomes: Mapping[str, str]) -> None:
        """Note what a bulk action did to each execution; it was accepted when any execution accepted it,
        else it shares its executions' one outcome (or is `refused` when they differ)."""
        self.execution_ids = list(outcomes)
        self.detail.pop("status", None)  # one execution's, left by `cancel_outcome`
        self.detail["outcomes"] = dict(outcomes)
        words = set(outcomes.values())
        if "accepted" in words or not words:
            self.outcome = "accepted"
        else:
            self.outcome = words.pop() if len(words) == 1 else "refused"

    def cancel_outcome(self, outcome: spi.CancelOutcome) -> str:
        """Note what a cancel answered; its word (a bulk action keeps one per execution)."""
        match outcome:
            case spi.AlreadyRequested():
                word = "already-requested"
            case spi.AlreadyTerminal(status):
                word = "already-terminal"
                self.detail["status"] = status.show()
            case _:
                word = "accepted"
        self.outcome = word
        return word


@asynccontextmanager
async def recording(
    actor: str,
    source: str,
    action: str,
    *,
    execution_ids: Iterable[str] = (),
    workflow_id: str = "",
    **detail: Any,
) -> AsyncIterator[Act]:
    """Record the action done inside the block, once it is done (an exception leaving the block is
    recorded by its outcome and then goes on)."""
    act = Act(actor, source, action, list(execution_ids), workflow_id, dict(detail))
    try:
        yield act
    except BaseException as error:
        if act.outcome == "accepted":
            act.refused(error)
        await _write(act)
        raise
    await _write(act)


async def _write(act: Act) -> None:
    try:
        await sync_to_async(_write_now)(act)
    except Exception:
        logger.exception(
            "could not record %s by %s on %s",
            act.action,
            act.actor,
            act.execution_ids,
            extra={"action": "activity"},
        )


def _write_now(act: Act) -> None:
    with transaction.atomic():
        row = Activity.objects.create(
            at=timezone.now(),
            actor=act.actor[:150],
            source=act.source,
            action=act.action,
            workflow_id=act.workflow_id[:200],
            outcome=act.outcome,
            code=act.code[:40],
            message=act.message[:_MESSAGE_CHARS],
            detail=_bounded(act.detail),
        )
        ActivityExecution.objects.bulk_create(
            ActivityExecution(activity=row, execution_id=eid[:200])
            for eid in dict.fromkeys(act.execution_ids)
            if eid
        )


def _bounded(detail: Mapping[str, Any]) -> dict[str, Any]:
    """The detail with each text cut to a readable length (a reason is free text of any size)."""
    return {k: v[:_TEXT_CHARS] if isinstance(v, str) else v for k, v in detail.items()}


# ------------------------------------------------------------------------------------------ reading

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An instant as an operator types it: ISO 8601 (`2026-12-01`, `2026-12-01T15:30`, with or without an
    offset; without one it is in the console's time zone), or an age back from now (`90s`, `15m`, `2h`,
    `7d`). `ValueError` for anything else."""
    text = text.strip()
    age: timedelta | None = None
    with contextlib.suppress(ValueError):
        age = durations.parse_age(text)
    if age is not None:
        try:
            return (now or timezone.now()) - age
        except OverflowError:  # 999999d: before year 1
            raise ValueError(f"{text!r} reaches back before year 1: give a shorter age") from None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text[:40]!r} is not a time: give ISO 8601 (2026-12-01T15:30) or an age (15m, 2h, 7d)"
        ) from None
    moment = timezone.make_aware(moment) if timezone.is_naive(moment) else moment
    # In UTC before it reaches a query: ISO 8601 offsets run to ±23:59, PostgreSQL's to ±15:59.
    return moment.astimezone(UTC)


@dataclass(frozen=True)
class Query:
    """What the activity page, the API and `flowdeck activity` filter by; blank means any."""

    user: str = ""
    action: str = ""
    source: str = ""
    execution_id: str = ""
    since: datetime | None = None
    until: datetime | None = None


def _filtered(query: Query) -> QuerySet[Activity]:
    rows = Activity.objects.all()
    if query.user:
        rows = rows.filter(actor=query.user)
    if query.action:  # `bulk` takes every bulk action, `resume` both kinds
        rows = rows.filter(Q(action=query.action) | Q(action__startswith=query.action + ":"))
    if query.source:
        rows = rows.filter(source=query.source)
    if query.execution_id:
        rows = rows.filter(targets__execution_id=query.execution_id).distinct()
    if query.since is not None:
        rows = rows.filter(at__gte=query.since)
    if query.until is not None:
        rows = rows.filter(at__lt=query.until)
    return rows


def read_page(
    query: Query, limit: int = PAGE_SIZE, before: int | None = None
) -> tuple[list[Activity], int | None]:
    """Up to `limit` rows matching `query`, newest first, after the row `before` (keyset: the id of the last
    row of the previous page); and the id to pass for the next page (None on the last)."""
    rows = _filtered(query)
    if before is not None:
        last = Activity.objects.filter(pk=before).values_list("at", flat=True).first()
        if last is None:  # a cursor whose row is gone: the ids still order the rest
            rows = rows.filter(pk__lt=before)
        else:
            rows = rows.filter(Q(at__lt=last) | Q(at=last, pk__lt=before))
    found = list(rows.order_by("-at", "-pk").prefetch_related("targets")[: limit + 1])
    more = len(found) > limit
    found = found[:limit]
    return found, (found[-1].pk if more and found else None)


def execution_ids(row: Activity) -> list[str]:
    """The executions a row names, in the order the action named them."""
    return [target.execution_id for target in row.targets.all()]


def as_json(row: Activity) -> dict[str, Any]:
    return {
        "id": row.pk,
        "at": row.at.isoformat(),
        "actor": row.actor,
        "source": row.source,
        "action": row.action,
        "execution_ids": execution_ids(row),
        "workflow_id": row.workflow_id,
        "outcome": row.outcome,
        "code": row.code,
        "message": row.message,
        "detail": row.detail,
    }
