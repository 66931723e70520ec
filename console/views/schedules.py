"""The Schedules pages: the list (`/schedules/`: each schedule, paused or not, its next run and its last
runs linking to their executions, and a form to create one) and a schedule's page (its definition, next
runs in its zone, last runs with their outcome, its actions, a backfill with its dry run first, and its
activity: who changed it).

Every action is a POST form with its CSRF token, needs `flowdeck_console.operate_executions` (403 page
otherwise) and goes through `console.schedules` (recorded in the activity log as the user, source
`console`); a refused definition or range answers the page again with the message and status 400, having
recorded nothing in the store. After an action the browser is sent back to the page (`?done=…`), so a
reload does not repeat it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from flowdeck.console import runtime
from flowdeck.console import schedules as console_schedules
from flowdeck.console.models import Activity
from flowdeck.console.views import common
from flowdeck.console.views.signin import login_required
from flowdeck.engine import errors, schedule_ticks
from flowdeck.store import schedules

__all__ = ["action", "backfill", "create", "schedule_page", "schedules_page"]

DONE = {
    "created": "Schedule created.",
    "paused": "Schedule paused: no tick starts until it is resumed.",
    "resumed": "Schedule resumed: the next tick after now is its next run.",
    "triggered": "Started now.",
    "backfilled": "Backfill started.",
}
ACTIVITY_ROWS = 20


def _local(at: datetime, zone: str, form: str = "%Y-%m-%d %H:%M") -> str:
    """`at` on the schedule's wall clock, as text (Django's `date` filter would show the project's zone)."""
    return at.astimezone(schedule_ticks.zone(zone)).strftime(form)


async def _workflow_ids() -> list[str]:
    engine = await runtime.engine()
    return sorted(info.id for info in await engine.workflows.list())


@login_required
@require_GET
async def schedules_page(request: HttpRequest) -> HttpResponse:
    return await _list(request, {}, None)


async def _list(
    request: HttpRequest, form: dict[str, str], problem: str | None, status: int = 200
) -> HttpResponse:
    shown = await console_schedules.shown_all()
    context = {
        "nav": "schedules",
        "rows": [_row(s) for s in shown],
        "can_operate": await common.can_operate(request),
        "workflow_ids": await _workflow_ids(),
        "form": form,
        "problem": problem,
        "done": DONE.get(request.GET.get("done", "")) if problem is None else None,
        "overlaps": [o.value for o in schedules.Overlap],
        "catchups": [c.value for c in schedules.Catchup],
    }
    return await common.page(request, "flowdeck/console/schedules.html", context, status=status)


def _row(shown: console_schedules.Shown) -> dict[str, Any]:
    spec = shown.schedule.spec
    upcoming = shown.next_runs[0] if shown.next_runs else None
    return {
        "spec": spec,
        "when": _period(spec),
        "paused": shown.schedule.paused,
        "next": None if upcoming is None else _local(upcoming, spec.timezone),
        "next_utc": upcoming,
        "runs": [
            {
                "tick": run.tick,
                "state": run.state,
                "local": _local(run.tick.tick, spec.timezone, "%m-%d %H:%M"),
            }
            for run in shown.last_runs
        ],
    }


def _period(spec: schedules.ScheduleSpec) -> str:
    if spec.every is not None:
        seconds = int(spec.every.total_seconds())
        return f"every {seconds // 60} min" if seconds % 60 == 0 else f"every {seconds} s"
    return spec.cron or ""


def _spec_of(post: Any) -> schedules.ScheduleSpec:
    """The create form's definition; FlowScheduleError naming the field for what cannot be read."""
    try:
        inputs = json.loads(post.get("inputs", "").strip() or "{}")
    except json.JSONDecodeError as error:
        raise errors.FlowScheduleError(f"inputs are not valid JSON: {error.msg}", field="inputs") from None
    if not isinstance(inputs, dict):
        raise errors.FlowScheduleError("inputs must be a JSON object", field="inputs")
    every_text = post.get("every_minutes", "").strip()
    try:
        every = timedelta(minutes=int(every_text)) if every_text else None
        return schedules.ScheduleSpec(
            post.get("name", "").strip(),
            post.get("workflow_id", "").strip(),
            cron=post.get("cron", "").strip() or None,
            every=every,
            timezone=post.get("timezone", "").strip() or "UTC",
            inputs=inputs,
            overlap=schedules.Overlap(post.get("overlap", "skip")),
            catchup=schedules.Catchup(post.get("catchup", "none")),
        )
    except (ValueError, OverflowError) as error:
        raise errors.FlowScheduleError(str(error), field="every") from None


async def _actor(request: HttpRequest) -> str:
    return str((await request.auser()).get_username())


@login_required
@require_POST
async def create(request: HttpRequest) -> HttpResponse:
    if not await common.can_operate(request):
        return await common.forbidden(request)
    form = {
        key: request.POST.get(key, "")
        for key in (
            "name",
            "workflow_id",
            "cron",
            "every_minutes",
            "timezone",
            "inputs",
            "overlap",
            "catchup",
        )
    }
    try:
        made = await console_schedules.create(_spec_of(request.POST), await _actor(request), "console")
    except (errors.FlowScheduleError, errors.FlowScheduleExists) as error:
        return await _list(request, form, str(error), status=400)
    return HttpResponseRedirect(reverse("flowdeck:console-schedule", args=[made.name]) + "?done=created")


@login_required
@require_GET
async def schedule_page(request: HttpRequest, name: str) -> HttpResponse:
    return await _detail(request, name, {}, None)


async def _detail(
    request: HttpRequest, name: str, extra: dict[str, Any], problem: str | None, status: int = 200
) -> HttpResponse:
    try:
        shown = await console_schedules.show(name, last=20)
    except errors.FlowScheduleNotFound:
        raise Http404(f"no schedule named {name!r}") from None
    spec = shown.schedule.spec
    context = {
        "nav": "schedules",
        "s": shown.schedule,
        "spec": spec,
        "when": _period(spec),
        "inputs_json": json.dumps(dict(spec.inputs), sort_keys=True),
        "next_runs": [(_local(t, spec.timezone, "%a %Y-%m-%d %H:%M"), t) for t in shown.next_runs],
        "runs": [(run, _local(run.tick.tick, spec.timezone)) for run in shown.last_runs],
        "activity": await _activity(name),
        "can_operate": await common.can_operate(request),
        "problem": problem,
        "done": DONE.get(request.GET.get("done", "")) if problem is None else None,
        **extra,
    }
    return await common.page(request, "flowdeck/console/schedule.html", context, status=status)


async def _activity(name: str) -> list[Activity]:
    return await sync_to_async(lambda: list(Activity.objects.filter(detail__schedule=name)[:ACTIVITY_ROWS]))()


@login_required
@require_POST
async def action(request: HttpRequest, name: str, verb: str) -> HttpResponse:
    """Pause, resume, trigger or delete: a POST from the schedule's page."""
    if verb not in ("pause", "resume", "trigger", "delete"):
        raise Http404(f"no action {verb!r}")
    if not await common.can_operate(request):
        return await common.forbidden(request)
    actor = await _actor(request)
    try:
        if verb == "delete":
            await console_schedules.delete(name, actor, "console")
            return HttpResponseRedirect(reverse("flowdeck:console-schedules"))
        if verb == "trigger":
            await console_schedules.trigger(name, actor, "console")
        else:
            await console_schedules.pause(name, verb == "pause", actor, "console")
    except errors.FlowScheduleNotFound:
        raise Http404(f"no schedule named {name!r}") from None
    done = {"pause": "paused", "resume": "resumed", "trigger": "triggered"}[verb]
    return HttpResponseRedirect(reverse("flowdeck:console-schedule", args=[name]) + f"?done={done}")


def _instant(text: str, what: str) -> datetime:
    try:
        found = datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.FlowScheduleError(f"{what} is not a date and time: {text[:40]!r}", field=what) from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


@login_required
async def backfill(request: HttpRequest, name: str) -> HttpResponse:
    """GET: the dry run (the ticks the range holds, nothing started); POST: start them (operators)."""
    data = request.POST if request.method == "POST" else request.GET
    go = request.method == "POST"
    if go and not await common.can_operate(request):
        return await common.forbidden(request)
    form = {"start": data.get("start", ""), "end": data.get("end", "")}
    try:
        start, end = _instant(form["start"], "start"), _instant(form["end"], "end")
        done = await console_schedules.backfill(
            name, start, end, dry_run=not go, actor=await _actor(request), source="console"
        )
    except errors.FlowScheduleNotFound:
        raise Http404(f"no schedule named {name!r}") from None
    except errors.FlowScheduleError as error:
        return await _detail(request, name, {"backfill_form": form}, str(error), status=400)
    if go:
        return HttpResponseRedirect(reverse("flowdeck:console-schedule", args=[name]) + "?done=backfilled")
    preview = list(zip(done.ticks, done.execution_ids, strict=True))
    return await _detail(request, name, {"backfill_form": form, "preview": preview}, None)
