"""`python manage.py flowdeck VERB …`: the operator's command line (the `flowdeck` script runs the same).

Every verb is a thin call into the engine (no workers in this process: whatever it starts or unblocks,
the `flowdeck_workers` processes pick up). Output is a readable table or block by default and JSON with
`--json`. Bad input (an unknown execution, workflow, filter, input, node, malformed JSON, a verb the
execution's state refuses) exits with code 2 and one line saying what was wrong (a value failing its type:
one line per error); no tracebacks. A database never migrated is refused the same way. Everything printed
goes through `_output.SafeOutput`: terminal control characters in ids, names, reasons and values come out
escaped (`\\x1b`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.core.management.base import CommandError, CommandParser
from django.db import connections
from pydantic import ValidationError

from flowdeck.console import activity, answers, limits, refusals, runtime, states, tokens, waits
from flowdeck.console.cli import FLOW_VERBS
from flowdeck.console.management.commands import (
    _activity,
    _bulk,
    _limits,
    _output,
    _purge,
    _rate_limits,
    _schedule,
    _show,
)
from flowdeck.console.management.commands._common import checked_settings, engine_logging
from flowdeck.console.management.commands._schema import require_schema
from flowdeck.console.views import list_query
from flowdeck.engine import errors, ids, places, render
from flowdeck.engine.engine import ExecutionDetail, FlowEngine
from flowdeck.store import spi

__all__ = ["Command", "state_json"]

VERBS = FLOW_VERBS


def _priority(given: str | None) -> int | None:
    """`--priority`'s number (its range is the engine's check: `FlowInvalidPriority`, exit 2 as well)."""
    if given is None:
        return None
    try:
        return int(given)
    except ValueError:
        raise usage(f"--priority takes an integer from -100 to 100, got {given!r}") from None


def usage(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def parse_json(what: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise usage(f"{what} is not valid JSON ({error.msg} at column {error.colno}): {text!r}") from None


async def _answer_value(engine: FlowEngine, o: Mapping[str, Any]) -> Any:
    """The typed answer as `console.answers` reads it: text as typed for a text node, else JSON."""
    try:
        return await answers.value_of(engine, o["execution_id"], o["node"], o["value"])
    except ValueError as error:
        raise usage(f"the value for {o['node']}: {error}: {o['value']!r}") from None


# ------------------------------------------------------------------------------------------ shapes


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def state_json(state: spi.ExecutionState, served: frozenset[str]) -> dict[str, Any]:
    """An execution's row as JSON (the shape `ls --json` lists and `show --json` extends); `state` is the
    state an operator sees, as REST's `state` says it (`console.states`: a Running row nobody will run is
    `parked`), `state_text` that state's line as the table prints it (`running·waiting`,
    `failed:CardDeclined`, `parked·stopped:F0001`)."""
    standing = states.standing_of(state, served)
    return {
        "execution_id": state.execution_id,
        "workflow_id": state.flow_id,
        "status": spi.status_to_json(state.status),
        "status_text": state.status.show(),
        "state": standing.state.value,
        "state_text": standing.line,
        "hash": state.hash,
        "created": _time(state.created),
        "updated": _time(state.updated),
        "executor": state.executor,
        "claim_expiry": _time(state.claim_expiry),
        "waits": {name: spi.wake_to_json(wake) for name, wake in state.waits.items()},
        "cancel_requested": state.cancel_requested,
        "priority": state.priority,
        "cancel_reason": state.cancel_reason,
        "concurrency": dataclasses.asdict(state.concurrency) if state.concurrency is not None else None,
    }


def status_word(status: spi.Status) -> str:
    """A status in one short word: `failed:<kind>` rather than the whole error message."""
    if isinstance(status, spi.Failed):
        return f"failed:{status.kind or 'error'}"
    return status.show()


table = _output.table


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "kept": list(report.kept),
        "next_node": report.next_node,
        "conflicts": [{"code": c.code, "path": c.path, "detail": c.detail} for c in report.conflicts],
        "warning": report.warning,
    }


def _report_text(report: Any) -> str:
    lines = [f"kept ({len(report.kept)}): {', '.join(report.kept) or 'nothing'}"]
    lines.append(f"next node: {report.next_node or '(none: it would end)'}")
    for c in report.conflicts:
        lines.append(f"conflict {c.code} at {c.path or '(flow)'}: {c.detail}")
    if report.warning:
        lines.append(f"warning: {report.warning}")
    return "\n".join(map(_output.escape, lines))  # each on its line, whatever a detail holds


# ---------------------------------------------------------------------------------------- arguments


def _ls_arguments(ls: CommandParser) -> None:
    ls.add_argument("--workflow", "-w", help="only this workflow")
    ls.add_argument(
        "--status", "-s", help="a filter: " + ", ".join([*spi.ExecutionFilter.WIRE_WORDS, list_query.PARKED])
    )
    ls.add_argument("--limit", "-n", type=int, default=25, help="at most this many (default 25)")
    ls.add_argument("--offset", type=int, default=0, help="skip this many")
    ls.add_argument("--prefix", help="only ids starting with this")
    ls.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="TERM",
        help="only executions keeping TERM, e.g. 'field:order.customer=ada' (a recorded value at a JSON "
        "path, text ignoring case; also ^= starts with, ~= contains, > >= < <= numbers) or 'text:declined' "
        "(failure and stop messages); repeat to narrow further",
    )
    ls.add_argument("--sort", default="created", help="newest first by: " + ", ".join(list_query.SORTS))
    for name, what in _LS_INSTANTS.items():
        ls.add_argument(f"--{name.replace('_', '-')}", default="", metavar="WHEN", help=what)


_WHEN = "ISO 8601 (2026-12-01T15:30; UTC without an offset) or an age (15m, 2h, 7d)"
_LS_INSTANTS = {
    "created_after": f"only executions created at or after WHEN: {_WHEN}",
    "created_before": "only executions created before WHEN",
    "updated_after": "only executions last changed (an ended one: ended) at or after WHEN",
    "updated_before": "only executions last changed before WHEN",
}


def _show_arguments(show: CommandParser) -> None:
    show.add_argument("execution_id", metavar="EID")
    show.add_argument("--history", type=int, default=20, help="the latest events to show (default 20)")
    show.add_argument("--traceback", dest="show_traceback", action="store_true", help="a stop's traceback")


def _start_arguments(start: CommandParser) -> None:
    start.add_argument("workflow_id", metavar="WF")
    start.add_argument("--id", dest="execution_id", help="the execution id (default: a random one)")
    start.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="an input delivered at start (repeatable)",
    )
    start.add_argument(
        "--priority",
        metavar="N",
        help="-100 to 100, higher claimed first (default: the workflow's, 0 unless it sets one)",
    )


def _signal_arguments(signal: CommandParser) -> None:
    signal.add_argument("execution_id", metavar="EID")
    signal.add_argument("name", metavar="NAME")
    signal.add_argument("value", metavar="JSON")


def _cancel_arguments(cancel: CommandParser) -> None:
    cancel.add_argument("execution_id", metavar="EID", nargs="?")
    cancel.add_argument("reason", metavar="REASON", nargs="?", default="")
    _bulk.add_arguments(cancel)


def _cancel_all_arguments(cancel_all: CommandParser) -> None:
    cancel_all.add_argument("workflow_id", metavar="WF")
    cancel_all.add_argument("--reason", default="", help="why")


def _resume_arguments(resume: CommandParser) -> None:
    resume.add_argument("execution_id", metavar="EID", nargs="?")
    resume.add_argument("--go", action="store_true", help="resume it for real")
    _bulk.add_arguments(resume)


def _answer_arguments(answer: CommandParser) -> None:
    answer.add_argument("execution_id", metavar="EID")
    answer.add_argument("node", metavar="NODE")
    answer.add_argument(
        "value", metavar="VALUE", nargs="?", help="text as typed for a text node, else JSON; none for a step"
    )


def _end_arguments(end: CommandParser) -> None:
    end.add_argument("execution_id", metavar="EID", nargs="?")
    end.add_argument("reason", metavar="REASON", nargs="?", default="ended by an operator")
    _bulk.add_arguments(end)


def _diagram_arguments(diagram: CommandParser) -> None:
    diagram.add_argument("workflow_id", metavar="WF", nargs="?")
    diagram.add_argument("--format", "-f", default="mermaid", help=", ".join(render.FORMATS))
    diagram.add_argument("--execution", "-e", metavar="EID", help="paint this execution's progress")


def _parked_arguments(parked: CommandParser) -> None:
    parked.add_argument("workflow_id", metavar="WF")


# Each verb: its name, its one-line help (also its description) and its own arguments, in `--help` order.
_VERBS: tuple[tuple[str, str, Callable[[CommandParser], None]], ...] = (
    ("ls", "list executions, newest first", _ls_arguments),
    ("show", "an execution: status, waits, inputs, values, recent history", _show_arguments),
    ("start", "start an execution of a workflow", _start_arguments),
    ("signal", "deliver an input to a waiting execution", _signal_arguments),
    (
        "cancel",
        "ask an execution (or, with --where, every match) to cancel (its undos run)",
        _cancel_arguments,
    ),
    ("cancel-all", "ask every unended execution of a workflow to cancel", _cancel_all_arguments),
    (
        "resume",
        "dry-run a stopped or parked execution (or every --where match) on the newest version; --go to act",
        _resume_arguments,
    ),
    ("answer", "record what a node did, for a stopped execution", _answer_arguments),
    ("end", "end an execution (or every --where match) Failed, running no undos", _end_arguments),
    ("diagram", "draw a workflow (or, with --execution, an execution's progress)", _diagram_arguments),
    ("parked", "executions held under a version no process serves", _parked_arguments),
    (
        "purge",
        "delete ended executions older than an age, in batches (--dry-run counts them)",
        _purge.add_arguments,
    ),
    ("activity", "what operators did, newest first (every surface)", _activity.add_arguments),
    (
        "limits",
        "each concurrency limit now: running, queued, the oldest queued's wait",
        _limits.add_arguments,
    ),
    (
        "schedule",
        "schedules: ls, show, create, pause, resume, trigger, delete, backfill",
        _schedule.add_arguments,
    ),
    (
        "rate-limits",
        "rate limits: configured and observed rate, executions rate-limited now, busiest keys",
        _rate_limits.add_arguments,
    ),
    ("token", "API tokens: create, list, revoke", tokens.add_arguments),
)


# ------------------------------------------------------------------------------------------ command


class Command(_output.SafeOutputCommand):
    help = "Inspect and steer executions: ls, show, start, signal, cancel, resume, answer, end, …"
    # an operator's verb answers about executions; the project's system checks are for migrate, runworkers
    # and the web server (and their warnings would break the one-line answers scripts read)
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--as", dest="as_global", metavar="USER", help=_activity.AS_HELP)
        verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
        for name, help, arguments in _VERBS:
            sub = verbs.add_parser(name, help=help, description=help)
            sub.add_argument("--json", action="store_true", help="answer JSON, for scripts")
            sub.add_argument("--as", dest="as_user", metavar="USER", help=_activity.AS_HELP)
            arguments(sub)

    def handle(self, *args: Any, **options: Any) -> None:
        verb: str = options["verb"]
        self.as_json: bool = options.get("json", False)
        _refuse_undecodable(options)
        given = options.get("as_user")
        self.actor = _activity.actor_of(options.get("as_global") if given is None else given)
        for alias in dict.fromkeys((checked_settings().database_alias, "default")):
            require_schema(alias)
        if verb == "token":
            self.token(options)
            return
        if verb == "activity":
            _activity.show(options, self.emit)
            return
        action: Callable[[FlowEngine, dict[str, Any]], Coroutine[Any, Any, None]] = getattr(
            self, "do_" + verb.replace("-", "_")
        )
        try:
            # the engine's INFO lines (registrations) are for the workers' log, not an operator's screen
            with engine_logging(0 if options["verbosity"] < 2 else 2, self.stderr._out):
                asyncio.run(self._with_engine(action, options))
        except errors.FlowInputError as error:
            raise usage(_output.input_error_text(error)) from None
        except ValidationError as error:
            raise usage("\n  ".join(["invalid value:", *_output.validation_lines(error)])) from None
        except (errors.FlowError, spi.FilterParseError) as error:
            if isinstance(error, errors.FlowStoreError):
                raise CommandError(f"the database could not be used: {error}") from None
            raise usage(str(error)) from None
        except spi.FlowStoreError as error:
            raise CommandError(f"the database could not be used: {error}") from None
        finally:
            runtime.reset()

    async def _with_engine(
        self,
        action: Callable[[FlowEngine, dict[str, Any]], Coroutine[Any, Any, None]],
        options: dict[str, Any],
    ) -> None:
        try:
            await action(await runtime.engine(), options)
        finally:
            # the activity row was written on asgiref's sync thread, which outlives this loop: close its
            # database connection rather than leave it open until the process ends
            await sync_to_async(connections.close_all)()

    # ----------------------------------------------------------------------------------- output

    def emit(self, data: Any, text: str) -> None:
        if self.as_json:
            self.stdout.write(json.dumps(data, indent=2, default=str))
        else:
            self.stdout.write(text)

    def recording(self, action: str, *execution_ids: str, **detail: Any) -> Any:
        """The activity record of a verb, attributed to `--as USER` or the OS user."""
        return activity.recording(self.actor, "cli", action, execution_ids=execution_ids, **detail)

    # ------------------------------------------------------------------------------------ verbs

    async def do_ls(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        if o["limit"] < 1:
            raise usage(f"--limit must be at least 1 (got {o['limit']})")
        query = _ls_query(o)
        if o["workflow"]:
            await engine.workflows.describe(o["workflow"])
        served = await states.served_by(engine)
        page = await query.search(
            engine, served, o["limit"], o["offset"], prefix=o["prefix"], where=o["where"]
        )
        queues = await limits.queues_for(engine.store, page.items, served)
        rows = [
            (
                s.execution_id,
                s.flow_id,
                states.standing_of(s, served).line,
                f"{s.updated:%Y-%m-%d %H:%M:%S}",
                limits.queue_line(q) if (q := queues.get(s.execution_id)) else waits.line(s),
            )
            for s in page.items
        ]
        text = table(("execution", "workflow", "status", "updated", "waiting on"), rows)
        text += f"\n{len(page.items)} of {page.total}"
        queued = [limits.queue_json(queues.get(s.execution_id)) for s in page.items]
        items = [state_json(s, served) | {"queue": q} for s, q in zip(page.items, queued, strict=True)]
        self.emit({"items": items, "total": page.total}, text)

    async def do_show(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        eid = o["execution_id"]
        detail: ExecutionDetail = await engine.executions.describe(eid)
        fields = await engine.store.get_all_fields(eid)
        # the latest events tell what is going on: read them all, keep the tail
        everything = (await engine.executions.history(eid, limit=None)).events
        history = everything[len(everything) - max(o["history"], 0) :] if o["history"] > 0 else []
        values = {name: field.decode() for name, field in sorted(fields.items())}
        served = await states.served_by(engine)
        data = state_json(detail.state, served)
        data["inputs"] = [{"name": i.name, "type": i.tag, "delivered": i.delivered} for i in detail.inputs]
        data["values"] = values
        flow = engine.flow_of(detail.state)
        branches = places.branch_words(flow) if flow is not None else {}
        data["nodes"] = [
            {"name": n.name, "branch": branches.get(n.place, ""), "place": n.place}
            | {"type": n.node_type, "status": str(n.status), "detail": n.detail}
            for n in (detail.progress.nodes if detail.progress else ())
        ]
        data["history"] = [e.to_json() | {"seq": e.seq} for e in history]
        queued = await limits.queue_for(engine.store, detail.state, served)
        data["queue"] = limits.queue_json(queued)
        traced = o["show_traceback"] or o["verbosity"] >= 2
        self.emit(data, _show.text(detail, values, history, served, branches, traced, queued))

    async def do_start(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        wanted = [o["execution_id"]] if o["execution_id"] else []
        async with self.recording("start", *wanted, workflow_id=o["workflow_id"]) as act:
            if o["execution_id"] is not None:
                ids.check_id(o["execution_id"])  # the id rule, at this door first (before any input is read)
            inputs: dict[str, Any] = {}
            for given in o["input"]:
                name, sep, text = given.partition("=")
                if not sep or not name:
                    raise usage(f"--input takes NAME=JSON, got {given!r}")
                inputs[name] = parse_json(f"input {name!r}", text)
            act.detail["inputs"] = sorted(inputs)
            priority = _priority(o["priority"])
            eid = await engine.workflows.start(
                o["workflow_id"], execution_id=o["execution_id"], inputs=inputs, priority=priority
            )
            act.execution_ids = [eid]
        self.emit({"execution_id": eid, "workflow_id": o["workflow_id"]}, eid)

    async def do_signal(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        size = len(o["value"].encode())
        async with self.recording("signal", o["execution_id"], input=o["name"], size=size):
            value = parse_json("the value", o["value"])
            await engine.executions.signal(o["execution_id"], o["name"], value)
        self.emit(
            {"execution_id": o["execution_id"], "input": o["name"], "delivered": True},
            f"delivered {o['name']} to {o['execution_id']}",
        )

    async def do_cancel(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        if _bulk.requested(o):
            await _bulk.run(engine, "cancel", o, self.actor, self.emit)
            return
        eid = o["execution_id"]
        async with self.recording("cancel", eid, reason=o["reason"]) as act:
            await engine.executions.describe(eid)  # an unknown id is bad input, not "already terminal"
            outcome = await engine.executions.cancel(eid, o["reason"], actor=self.actor)
            act.cancel_outcome(outcome)
        match outcome:
            case spi.Accepted():
                word, text = "accepted", f"cancel requested for {eid}: its undos run, then it ends cancelled"
            case spi.AlreadyRequested():
                word, text = "already_requested", f"a cancel was already requested for {eid}"
            case spi.AlreadyTerminal(status):
                raise usage(f"execution {eid!r} has already ended ({status.show()})")
        self.emit({"execution_id": eid, "outcome": word}, text)

    async def do_cancel_all(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        wf = o["workflow_id"]
        async with self.recording("bulk:cancel-all", workflow_id=wf, reason=o["reason"]) as act:
            await engine.workflows.describe(wf)
            count = await engine.executions.cancel_all(wf, o["reason"], actor=self.actor)
            act.detail["requested"] = count
        self.emit(
            {"workflow_id": o["workflow_id"], "accepted": count},
            f"cancel requested for {count} execution(s) of {o['workflow_id']}",
        )

    async def do_resume(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        if _bulk.requested(o):
            await _bulk.run(engine, "resume:go" if o["go"] else "resume", o, self.actor, self.emit)
            return
        eid = o["execution_id"]
        try:
            async with self.recording("resume:go" if o["go"] else "resume:dry-run", eid) as act:
                report = await engine.resume(eid, go=o["go"], actor=self.actor if o["go"] else None)
                act.detail.update(activity.report_detail(report))
        except errors.FlowResumeConflict as conflict:
            raise usage(f"{conflict}\n{_report_text(conflict.report)}") from None
        head = (
            f"resumed {eid}; workers take it from here"
            if o["go"]
            else (f"dry run for {eid} (nothing changed; add --go to resume)")
        )
        self.emit(
            _report_json(report) | {"execution_id": eid, "resumed": o["go"]},
            head + "\n" + _report_text(report),
        )

    async def do_answer(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        size = len((o["value"] or "").encode())
        async with self.recording("answer", o["execution_id"], node=o["node"], size=size):
            value = None if o["value"] is None else await _answer_value(engine, o)
            await engine.answer(o["execution_id"], o["node"], value, actor=self.actor)
        self.emit(
            {"execution_id": o["execution_id"], "node": o["node"], "answered": True},
            f"recorded {o['node']} for {o['execution_id']}; now `flowdeck resume {o['execution_id']} --go`",
        )

    async def do_end(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        if _bulk.requested(o):
            await _bulk.run(engine, "end", o, self.actor, self.emit)
            return
        async with self.recording("end", o["execution_id"], reason=o["reason"]):
            await engine.end(o["execution_id"], o["reason"], actor=self.actor)
        self.emit(
            {"execution_id": o["execution_id"], "ended": True},
            f"ended {o['execution_id']} (failed: {_output.escape(o['reason'])}); no undos ran",
        )

    async def do_diagram(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        fmt = o["format"]
        if fmt not in render.FORMATS:
            raise usage(f"unknown diagram format {fmt!r}; expected one of: {', '.join(render.FORMATS)}")
        if o["execution"]:
            text = await engine.executions.diagram(o["execution"], fmt)
        elif o["workflow_id"]:
            text = await engine.workflows.diagram(o["workflow_id"], fmt)
        else:
            raise usage("diagram needs a workflow id (WF) or --execution EID")
        self.stdout.write(text)

    async def do_schedule(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        await _schedule.run(o, self.actor, self.emit)

    async def do_rate_limits(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        await _rate_limits.run(self.emit)

    async def do_parked(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        await engine.workflows.describe(o["workflow_id"])
        held = await engine.parked(o["workflow_id"])
        served = await states.served_by(engine)
        line = states.standing_of
        text = table(
            ("execution", "version", "status", "updated"),
            [(s.execution_id, s.hash, line(s, served).line, f"{s.updated:%Y-%m-%d %H:%M:%S}") for s in held],
        )
        text += f"\n{len(held)} parked; `flowdeck resume EID` moves one to the newest version (dry run first)"
        self.emit({"items": [state_json(s, served) for s in held], "total": len(held)}, text)

    async def do_limits(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        await _limits.run(engine, o, self.emit)

    async def do_purge(self, engine: FlowEngine, o: Mapping[str, Any]) -> None:
        await _purge.run(engine, o, self.actor, self.emit, self.say)

    def say(self, line: str) -> None:
        """A progress line (none in --json mode, whose one answer is the JSON)."""
        if not self.as_json:
            self.stdout.write(line)
            self.stdout.flush()

    # ------------------------------------------------------------------------------------ token

    def token(self, o: Mapping[str, Any]) -> None:
        tokens.run(o, self.emit)


def _ls_query(o: Mapping[str, Any]) -> list_query.Query:
    """`ls`'s options as the console list's query (one reading of its words: sort, parked, windows)."""
    words = {"status": o["status"], "workflow": o["workflow"], "sort": o["sort"]}
    words |= {name: o[name] for name in _LS_INSTANTS}
    try:
        return list_query.Query.of({k: v or "" for k, v in words.items()})
    except refusals.Refused as refused:
        raise usage(f"--{refused.what.replace('_', '-')}: {refused.problem}") from None


def _refuse_undecodable(options: Mapping[str, Any]) -> None:
    """An argument holding bytes that are not UTF-8 (Python keeps them as lone surrogates) is bad input:
    no database stores it and no terminal shows it."""
    for name, value in options.items():
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise usage(f"{name.replace('_', ' ')} is not UTF-8 text: {text!r}") from None
