"""The REST API's wire shapes (kyo-flow-store-spec §1), camelCase on the wire, and their builders.

Each DTO names the engine value it is made from; `*_of` functions are the one place an engine value becomes
a wire value. Fields the reference does not have (Flowdeck's stop, reason, sequence numbers, JSON schemas)
are additions; none of the reference's fields changes meaning.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from flowdeck.console import limits, states, waits
from flowdeck.engine import dry_run, ids
from flowdeck.engine.engine import ExecutionDetail, InputStatus
from flowdeck.engine.errors import FlowInvalidId
from flowdeck.engine.progress import NodeProgress, NodeStatus
from flowdeck.store import claim_order, concurrency, field_terms, filter_limits, spi

__all__ = [
    "AnswerRequest",
    "CancelAllRequest",
    "CancelAllResponse",
    "CancelRequest",
    "CancelResponse",
    "EndRequest",
    "ErrorResponse",
    "EventDto",
    "ExecutionIdParam",
    "ExecutionDetailDto",
    "ExecutionInfoDto",
    "HistoryResponse",
    "InputInfoDto",
    "NameParam",
    "NodeProgressDto",
    "OkResponse",
    "ResumeReportDto",
    "ResumeRequest",
    "SearchRequest",
    "SearchResponse",
    "StartRequest",
    "StartResponse",
    "WaitDto",
    "WorkflowIdParam",
    "WorkflowInfoDto",
]


# Bounds of paging numbers, so a huge one is the caller's 400 rather than the database's overflow.
INT_MAX = 2**31 - 1
MAX_PAGE_SIZE = 1000  # the most executions one answer lists (`GET /executions`, `POST /executions/search`)
PAGE_SIZE_WORDS = f"page size, 1 to {MAX_PAGE_SIZE}; page on with offset"

# ------------------------------------------------------------------------------ what text may be

# No text on the wire may hold a NUL (console.api.guard refuses it before routing); the document says so.
NO_NUL = r"^[^\u0000]*$"
# engine/ids.py's rule for a new id, as a pattern: no control character (C0, DEL, C1), line or paragraph
# separator, or '/'; not '.' or '..' (the length is the schema's `maxLength`).
_ID_CHAR = r"[^\u0000-\u001f\u007f-\u009f\u2028\u2029/]"
_ID_CHAR_NOT_DOT = r"[^\u0000-\u001f\u007f-\u009f\u2028\u2029/.]"
ID_PATTERN = rf"^(?:{_ID_CHAR_NOT_DOT}{_ID_CHAR}*|\.{_ID_CHAR_NOT_DOT}{_ID_CHAR}*|\.\.{_ID_CHAR}+)$"
# An id that is looked up (in a path, a filter) is refused only when no row can have it: empty, or longer
# than the store's id columns (255). Rows made before the id rule, with a newline or 201 characters, stay
# readable; a new id keeps the whole rule (`NewId`, and the engine's own check at start).
STORED_ID_LENGTH = 255


def _lookup(what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not value:
            raise FlowInvalidId(what, value, "must not be empty")
        if len(value) > STORED_ID_LENGTH:
            problem = f"must be at most {STORED_ID_LENGTH} characters (got {len(value)})"
            raise FlowInvalidId(what, value, problem)
        return value

    return AfterValidator(check)


_LOOKUP_SCHEMA = {"type": "string", "minLength": 1, "maxLength": STORED_ID_LENGTH, "pattern": NO_NUL}
# FlowInvalidId is not a ValueError: pydantic lets it through, and the error table answers `invalid_id`.
ExecutionIdParam = Annotated[str, _lookup("execution id"), WithJsonSchema(_LOOKUP_SCHEMA)]
WorkflowIdParam = Annotated[str, _lookup("workflow id"), WithJsonSchema(_LOOKUP_SCHEMA)]
NewId = Annotated[
    str,
    AfterValidator(lambda value: ids.check_id(value)),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": ids.MAX_ID_LENGTH, "pattern": ID_PATTERN}),
]
Text = Annotated[str, WithJsonSchema({"type": "string", "pattern": NO_NUL})]

# A filter by workflow id (the executions list's `workflow`): blank, or text keeping the id rule's
# characters and length, checked by pydantic with the same pattern (the list reads it stripped).
ID_FILTER_PATTERN = rf"^{_ID_CHAR}*$"
IdFilter = Annotated[
    str,
    Field(max_length=ids.MAX_ID_LENGTH, pattern=ID_FILTER_PATTERN),
    WithJsonSchema({"type": "string", "maxLength": ids.MAX_ID_LENGTH, "pattern": ID_FILTER_PATTERN}),
]

# An instant as `console.activity.parse_time` reads it, narrowed to what always parses, so the document and
# the server agree both ways: blank; an age (`durations.parse_age`: days to 5 digits, as 6 would reach
# before year 1); or a calendar date (29 February in leap years only) of the years 1000-2999 (an offset
# never moves it out of datetime's range), with a time, seconds, a fraction and an offset if wanted.
_AGE = r"[0-9]{1,6}[smh]|[0-9]{1,5}d"
_MONTH_DAY = (
    r"(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    r"|02-(?:0[1-9]|1[0-9]|2[0-8])"
)
_LEAP_DAY = r"[12][0-9](?:0[48]|[2468][048]|[13579][26])-02-29|(?:1[26]|2[048])00-02-29"
_CLOCK = r"[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?"
_OFFSET = r"Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"
INSTANT_PATTERN = rf"^(?:|{_AGE}|(?:[12][0-9]{{3}}-(?:{_MONTH_DAY})|{_LEAP_DAY})(?:{_CLOCK}(?:{_OFFSET})?)?)$"
# Checked by pydantic with the same pattern: a value outside it is the 400 `invalid_request` naming it.
Instant = Annotated[
    str, Field(pattern=INSTANT_PATTERN), WithJsonSchema({"type": "string", "pattern": INSTANT_PATTERN})
]
NameParam = Annotated[str, WithJsonSchema({"type": "string", "minLength": 1, "pattern": NO_NUL})]


def _integral(value: Any) -> Any:
    """JSON Schema's `integer` holds `2.0`: take an integral float as the integer it is (strictness still
    refuses `"2"` and `true`)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Integer = Annotated[int, BeforeValidator(_integral)]


class Wire(Schema):
    """camelCase on the wire, snake_case in Python; unknown request fields are refused (400)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# ------------------------------------------------------------------------------------------- errors


class ErrorResponse(Wire):
    """Every 4xx/5xx body: a sentence for people, a stable snake_case code for programs, and details."""

    error: str
    code: str
    detail: Any = None


class OkResponse(Wire):
    ok: bool = True


# ---------------------------------------------------------------------------------------- workflows


class MetaDto(Wire):
    description: str = ""
    tags: list[str] = []
    timeout: float | None = None
    retry: str | None = None
    version: str = ""
    concurrency: str | None = None  # a workflow's concurrency limits in words: `50 running; 1 per key`


class NodeInfoDto(Wire):
    name: str
    node_type: str
    tag: str
    location: str = ""
    meta: MetaDto


class WorkflowInputDto(Wire):
    name: str
    tag: str
    input_schema: dict[str, Any] = Field(default_factory=dict, alias="jsonSchema")


class WorkflowInfoDto(Wire):
    """A registered workflow version (spec §3.8)."""

    id: str
    meta: MetaDto
    nodes: list[NodeInfoDto]
    inputs: list[WorkflowInputDto]
    outputs: list[str]
    structural_hash: str


def workflow_info_of(info: spi.WorkflowInfo) -> WorkflowInfoDto:
    # The graph document stays off the wire: `/workflows/{id}/versions/{hash}/diagram` draws it.
    data = info.model_dump(exclude={"graph"})
    data["inputs"] = [
        {"name": i["name"], "tag": i["tag"], "jsonSchema": i.get("json_schema", {})} for i in data["inputs"]
    ]
    return WorkflowInfoDto.model_validate(data)


# --------------------------------------------------------------------------------------- executions


class WaitDto(Wire):
    """One wait row: `sleeping` (detail = the deadline), `rate-limited` (detail = the deadline its rate
    limit's token is due at; `limit` names the limit) or `waiting` (detail = the input name)."""

    path: str
    kind: Literal["sleeping", "waiting", "rate-limited"]
    limit: str | None = None
    detail: str | None = None


class StopDto(Wire):
    """Why a stopped execution waits for a person: the stop code (F0001 …), where, and why; `answered`
    once a person answered the node it stopped at (it awaits a resume only)."""

    code: str
    node: str
    reason: str
    detail: str
    answered: bool = False


class ExecutionInfoDto(Wire):
    """`status` is the recorded status (`running`, `failed:<message>` …); `state` the state an operator
    sees (`flowdeck.console.states`: `running`, `waiting`, `sleeping`, `retrying`, `queued`, `cancelling`,
    `parked`,
    `stopped`, `compensating`, `completed`, `failed`, `cancelled`): a Running row nobody will run is
    `parked`. `stateText` is that state's line with its qualifier and code, as the console and the CLI
    show it (`running·waiting`, `parked·stopped:F0001`, `stopped·answered:F0001`: answered, awaiting
    resume)."""

    execution_id: str
    flow_id: str
    status: str
    state: str
    state_text: str
    waits: list[WaitDto]
    cancel_requested: bool
    created: datetime
    updated: datetime
    priority: int
    concurrency: ConcurrencyDto | None = None
    queue: QueueDto | None = None  # set when `state` is `queued`: its limit's line and its place in it


class ConcurrencyDto(Wire):
    """The concurrency limits an execution runs under (`store.concurrency`): `limit` running of its
    workflow (0: none), `perKey` running of its `key` (0: none)."""

    limit: int
    key: str | None
    per_key: int


class QueueDto(Wire):
    """Where a queued execution stands: the limit it waits on (`workflowId`, and `key` for a key's), its
    `position` in that line (1: next), the limit's `capacity` and how many hold a slot now (`running`)."""

    workflow_id: str
    key: str | None
    position: int
    capacity: int
    running: int
    text: str


class InputInfoDto(Wire):
    name: str
    tag: str
    delivered: bool
    input_schema: dict[str, Any] = Field(default_factory=dict, alias="jsonSchema")


class NodeProgressDto(Wire):
    """`nodeType` is the reference's case name; `status` its `show` (`sleeping:<instant>`, `failed:<msg>`,
    and `won` / `lost` for a race's arms); `place` the drawn node's id (every diagram format's element id
    and the JSON diagram's `id`), which tells apart the arms of a race sharing one durable `name`."""

    name: str
    node_type: str
    status: str
    location: str
    detail: str = ""
    done: int | None = None
    total: int | None = None
    place: str = ""
    items_running: int | None = None
    items_failed: int | None = None
    iterations: int | None = None


class ExecutionDetailDto(ExecutionInfoDto):
    hash: str
    cancel_reason: str
    stop: StopDto | None
    inputs: list[InputInfoDto]
    progress: list[NodeProgressDto]


def waits_of(state: spi.ExecutionState) -> list[WaitDto]:
    return [WaitDto(path=w.path, kind=w.kind, detail=w.detail, limit=w.limit) for w in waits.waits_of(state)]


def execution_info_of(
    state: spi.ExecutionState, served: frozenset[str], queued: concurrency.Queued | None = None
) -> ExecutionInfoDto:
    """The execution's row on the wire; `served` (the version hashes some process serves) decides parked;
    `queued`: where it stands when it is queued (`limits.queues_for`)."""
    return ExecutionInfoDto(**_info_fields(state, served), queue=queue_of(queued))


def _info_fields(state: spi.ExecutionState, served: frozenset[str]) -> dict[str, Any]:
    return {
        "execution_id": state.execution_id,
        "flow_id": state.flow_id,
        "status": state.status.show(),
        "state": states.standing_of(state, served).state.value,
        "state_text": states.standing_of(state, served).line,
        "waits": waits_of(state),
        "cancel_requested": state.cancel_requested,
        "created": state.created,
        "updated": state.updated,
        "priority": state.priority,
        "concurrency": ConcurrencyDto(
            limit=state.concurrency.limit, key=state.concurrency.key, per_key=state.concurrency.per_key
        )
        if state.concurrency is not None
        else None,
    }


def input_info_of(status: InputStatus) -> InputInfoDto:
    return InputInfoDto(
        name=status.name, tag=status.tag, delivered=status.delivered, input_schema=dict(status.json_schema)
    )


_NODE_TYPES = {
    "input": "Input",
    "output": "Output",
    "step": "Step",
    "sleep": "Sleep",
    "dispatch": "Dispatch",
    "loop": "Loop",
    "loop_on": "Loop",
    "foreach": "ForEach",
    "subflow": "Subflow",
    "parallel": "Race",
}


def node_progress_of(node: NodeProgress) -> NodeProgressDto:
    status = str(node.status)
    if node.status is NodeStatus.SLEEPING and node.until is not None:
        status = f"sleeping:{node.until.isoformat()}"
    elif node.status is NodeStatus.FAILED:
        status = f"failed:{node.detail}"
    return NodeProgressDto(
        name=node.name,
        node_type=_NODE_TYPES.get(node.node_type, node.node_type),
        status=status,
        location=node.location,
        detail=node.detail,
        done=node.done,
        total=node.total,
        place=node.place,
        items_running=node.items_running,
        items_failed=node.items_failed,
        iterations=node.iterations,
    )


def queue_of(queued: concurrency.Queued | None) -> QueueDto | None:
    if queued is None:
        return None
    group = queued.group
    return QueueDto(
        workflow_id=group.flow_id,
        key=group.key,
        position=queued.position,
        capacity=queued.capacity,
        running=queued.running,
        text=limits.queue_line(queued),
    )


def execution_detail_of(
    detail: ExecutionDetail, served: frozenset[str], queued: concurrency.Queued | None = None
) -> ExecutionDetailDto:
    state = detail.state
    stop = detail.stop
    return ExecutionDetailDto(
        **_info_fields(state, served),
        queue=queue_of(queued),
        hash=state.hash,
        cancel_reason=state.cancel_reason,
        stop=StopDto(
            code=stop.code, node=stop.node, reason=stop.reason, detail=stop.detail, answered=stop.answered
        )
        if stop
        else None,
        inputs=[input_info_of(i) for i in detail.inputs],
        progress=[node_progress_of(n) for n in (detail.progress.nodes if detail.progress else ())],
    )


class EventDto(Wire):
    """`kind` is the event kind's name, `detail` its one-line detail (spec §3.1), `data` its payload."""

    seq: int | None
    kind: str
    detail: str
    timestamp: datetime
    data: dict[str, Any]


class HistoryResponse(Wire):
    events: list[EventDto]
    has_more: bool


def history_of(page: spi.HistoryPage) -> HistoryResponse:
    return HistoryResponse(
        events=[
            EventDto(seq=e.seq, kind=e.kind.value, detail=e.detail, timestamp=e.timestamp, data=dict(e.data))
            for e in page.events
        ],
        has_more=page.has_more,
    )


# ------------------------------------------------------------------------------------------ requests


class WireRequest(Wire):
    """A request body: JSON types are taken as they are (no `false` for 0, no `"7"` for 7)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


class StartRequest(WireRequest):
    """Start an execution: a chosen id (random when absent), inputs seeded as delivered, and a priority
    (higher claimed first; the workflow's default when absent: `flowdeck.store.claim_order`)."""

    execution_id: NewId | None = None
    inputs: dict[str, Any] | None = None
    # The bounds before the validator that takes `2.0` as 2: after it (or on the optional field) pydantic
    # writes them as `ge`/`le`, words JSON Schema does not know, so the document would promise any integer.
    priority: (
        Annotated[
            int,
            Field(ge=claim_order.LOWEST, le=claim_order.HIGHEST),
            BeforeValidator(_integral),
        ]
        | None
    ) = None


class StartResponse(Wire):
    execution_id: str


class CancelRequest(WireRequest):
    reason: Text = ""


class CancelResponse(Wire):
    """`accepted` (202), `already-requested` or `already-terminal` with the ended status (200)."""

    outcome: Literal["accepted", "already-requested", "already-terminal"]
    status: str | None = None


class CancelAllRequest(WireRequest):
    workflow_id: Text | None = None
    reason: Text = ""


class CancelAllResponse(Wire):
    """How many cancel requests were accepted (one already asked for is not counted again)."""

    requested: int


# The wire filter vocabulary (store.spi.ExecutionFilter.parse): a word, or a word narrowed after a colon.
STATUS_PATTERN = (
    r"^(?:running|completed|cancelled|cancelling|compensating|failed|sleeping|waiting|stopped|retrying|queued"
    r"|rate-limited|(?:failed|waiting|stopped|rate-limited):[^\u0000]+)$"
)


# A search term, `field:<name>.<json.path><op><value>` or `text:<words>`: the grammar store.field_terms
# parses, exactly (its length is bounded apart: flowdeck.store.filter_limits).
SEARCH_TERMS_WORDS = (
    "field:order.customer=ada (a recorded value at a JSON path; text ignores case), field:order.customer^=ad"
    " (starts with), field:order.customer~=love (contains), field:order.total>=100 (also >, <, <=: numbers),"
    " text:declined (a failure's error or a stop's reason contains it); with a workflow, a path none of its"
    " versions can record is refused"
)
WHERE_PATTERN = field_terms.TERM_PATTERN
WHERE_TERM = Annotated[
    str, WithJsonSchema({"type": "string", "pattern": WHERE_PATTERN, "maxLength": filter_limits.MAX_TERM})
]


class SearchRequest(WireRequest):
    """`status` is the wire filter vocabulary (`running`, `failed:<kind>`, `waiting:<name>`, `stopped` …)."""

    workflow_id: Text | None = None
    status: Annotated[str, WithJsonSchema({"type": "string", "pattern": STATUS_PATTERN})] | None = None
    limit: Integer = Field(25, ge=1, le=MAX_PAGE_SIZE, description=PAGE_SIZE_WORDS)
    offset: Integer = Field(0, ge=0, le=INT_MAX, description="matches to skip")
    id_prefix: Text | None = None
    where: list[WHERE_TERM] = Field(
        default_factory=list,
        max_length=filter_limits.MAX_TERMS,
        description="terms every match keeps: " + SEARCH_TERMS_WORDS,
    )


class SearchResponse(Wire):
    items: list[ExecutionInfoDto]
    total: int


class ResumeRequest(WireRequest):
    """Without `go` (or with false): the dry run's report only. With `go`: resume for real."""

    go: bool = False


class ConflictDto(Wire):
    code: str
    path: str
    detail: str


class ResumeReportDto(Wire):
    """What resuming on the newest version keeps, runs next, and conflicts with (F0101/F0102); `warning`
    says when it would resume on the very version it stopped under with its stop unanswered, so the same
    mistake stops it again ("" otherwise)."""

    kept: list[str]
    next_node: str | None
    conflicts: list[ConflictDto]
    resumed: bool
    warning: str = ""


def resume_report_of(report: dry_run.ResumeReport, *, resumed: bool) -> ResumeReportDto:
    return ResumeReportDto(
        kept=list(report.kept),
        next_node=report.next_node,
        conflicts=[ConflictDto(code=c.code, path=c.path, detail=c.detail) for c in report.conflicts],
        resumed=resumed,
        warning=report.warning,
    )


class AnswerRequest(WireRequest):
    """The value the node produced (omit it for a step or a sleep, which record none)."""

    value: Any = None


class EndRequest(WireRequest):
    reason: Annotated[
        str, Field(min_length=1), WithJsonSchema({"type": "string", "minLength": 1, "pattern": NO_NUL})
    ]
