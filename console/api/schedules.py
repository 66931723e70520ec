"""Routes about schedules: list, show, create, pause, resume, trigger now, delete, backfill (dry run first).

Reading needs a caller; every change needs `flowdeck_console.operate_executions` (403), as the other
operator verbs, and is recorded in the activity log with who made it. A refused definition (a cron
expression, a zone, a workflow, inputs the workflow refuses) is a 400 `invalid_schedule` whose `detail.field`
names the part; an unknown schedule a 404; a taken name a 409.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Body, Router

from flowdeck.console import auth, schedule_schemas, schemas
from flowdeck.console import schedules as console_schedules
from flowdeck.console.api.responses import errors

__all__ = ["router"]

router = Router(tags=["schedules"])
Dto = schedule_schemas.ScheduleDto


@router.get("/schedules", response={200: list[Dto], **errors()}, by_alias=True)
async def list_schedules(request: HttpRequest) -> list[Dto]:
    """Every schedule by name, with its next runs and its last three runs."""
    return [schedule_schemas.schedule_of(shown) for shown in await console_schedules.shown_all()]


@router.get("/schedules/{name}", response={200: Dto, **errors(404)}, by_alias=True)
async def show_schedule(request: HttpRequest, name: schemas.NameParam) -> Dto:
    """One schedule: its definition, paused or not, its next five runs and its last ten."""
    return schedule_schemas.schedule_of(await console_schedules.show(name))


@router.post("/schedules", response={200: Dto, **errors(409)}, by_alias=True)
async def create_schedule(request: HttpRequest, payload: schedule_schemas.ScheduleRequest) -> Dto:
    """Create a schedule (active at once: its first tick is the first one after now)."""
    await auth.require_operator(request)
    made = await console_schedules.create(payload.spec(), auth.actor_of(request), "api")
    return schedule_schemas.schedule_of(await console_schedules.show(made.name))


@router.post("/schedules/{name}/pause", response={200: Dto, **errors(404)}, by_alias=True)
async def pause_schedule(request: HttpRequest, name: schemas.NameParam) -> Dto:
    await auth.require_operator(request)
    await console_schedules.pause(name, True, auth.actor_of(request), "api")
    return schedule_schemas.schedule_of(await console_schedules.show(name))


@router.post("/schedules/{name}/resume", response={200: Dto, **errors(404)}, by_alias=True)
async def resume_schedule(request: HttpRequest, name: schemas.NameParam) -> Dto:
    """Resume: the next tick after now is the next run (what fell due while paused is not caught up)."""
    await auth.require_operator(request)
    await console_schedules.pause(name, False, auth.actor_of(request), "api")
    return schedule_schemas.schedule_of(await console_schedules.show(name))


@router.post(
    "/schedules/{name}/trigger",
    response={200: schedule_schemas.TriggerResponse, **errors(404)},
    by_alias=True,
)
async def trigger_schedule(request: HttpRequest, name: schemas.NameParam) -> schedule_schemas.TriggerResponse:
    """Start the schedule's workflow now, whatever its overlap policy."""
    await auth.require_operator(request)
    eid = await console_schedules.trigger(name, auth.actor_of(request), "api")
    return schedule_schemas.TriggerResponse(execution_id=eid)


@router.delete("/schedules/{name}", response={200: schemas.OkResponse, **errors(404)}, by_alias=True)
async def delete_schedule(request: HttpRequest, name: schemas.NameParam) -> schemas.OkResponse:
    """Delete the schedule and its tick records; the executions it started stay."""
    await auth.require_operator(request)
    await console_schedules.delete(name, auth.actor_of(request), "api")
    return schemas.OkResponse()


@router.post(
    "/schedules/{name}/backfill",
    response={200: schedule_schemas.BackfillResponse, **errors(404)},
    by_alias=True,
)
async def backfill_schedule(
    request: HttpRequest, name: schemas.NameParam, payload: schedule_schemas.BackfillRequest = Body(...)
) -> schedule_schemas.BackfillResponse:
    """The ticks in [start, end]: listed (`dryRun`, the default), or started (`dryRun: false`; each tick's
    execution id is the one its regular run has, so a tick already run is not run again)."""
    if not payload.dry_run:
        await auth.require_operator(request)
    done = await console_schedules.backfill(
        name, payload.start, payload.end, dry_run=payload.dry_run, actor=auth.actor_of(request), source="api"
    )
    return schedule_schemas.BackfillResponse(
        schedule=name,
        dry_run=payload.dry_run,
        ticks=list(done.ticks),
        execution_ids=list(done.execution_ids),
        started=list(done.started),
    )
