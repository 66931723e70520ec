"""The one state model: what state an execution is in as an operator sees it, and how it is derived.

Every surface reads an execution's state from here: the list and its status filter, the overview's and
the workflow page's counts, the execution page, REST (`state`), `flowdeck ls`/`show` and the metrics gauge.

An execution's recorded status is not yet what an operator needs: a Running row may be working, waiting
for an input, sleeping, retrying, asked to cancel, or held by a version no process serves, which nothing
will ever run. The states, first match wins:

- ended: `completed`, `failed` (with its kind), `cancelled`;
- `parked`: unended, on a version no process serves (`served_hashes`): nothing runs it, whatever its row
  says; a stopped or compensating one keeps that as its qualifier (`parked·stopped F0001`), so the stop is
  not hidden, but it is counted once, as parked;
- `stopped` (with its code; `stopped·answered` once a person answered the node it stopped at: "answered,
  awaiting resume"), `compensating`, `cancelling`;
- `waiting` (an input), `rate-limited` (a node waits for its rate limit's token: "rate-limited until …"),
  `retrying` (a failed attempt's back-off), `sleeping` (a timer);
- `queued`: started under a concurrency limit and not taken by a worker yet, waiting for a slot
  (`store.concurrency`; `FlowStore.queue_of` says which limit and its position);
- `running`.

The counts, the list's filter words and the gauge keep one partition: each execution in exactly one
state, so a count links to a list of exactly what it counts (`store_filter`).

A node's states (pending, running, waiting, sleeping, completed, won, lost, failed, compensated, stopped,
answered: awaiting resume, interrupted: under way when a cancel or an end ended the execution) are
`flowdeck.engine.node_status.NodeStatus`, re-exported here as `NodeState`; they are derived in
`engine/progress.py` (the engine imports nothing from the console), told whether the execution is parked
(`runs`: nothing is painted running on a parked execution).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowdeck.console.discovery import flow_versions
from flowdeck.engine import schema
from flowdeck.engine.node_status import NodeStatus as NodeState
from flowdeck.store import counts, filters, spi
from flowdeck.store.counts import RETRY_MARK
from flowdeck.store.rate_limits import rate_row_matches

if TYPE_CHECKING:
    from flowdeck.engine.engine import FlowEngine

__all__ = [
    "ANSWERED",
    "SEP",
    "count_by_state",
    "ExecState",
    "NodeState",
    "Standing",
    "UNENDED",
    "parked_counts",
    "parked_filter",
    "partition",
    "served_by",
    "served_hashes",
    "standing_of",
    "store_filter",
    "label_of",
]

SEP = "·"  # between a state and its qualifier
ANSWERED = "answered"  # the qualifier of a stop a person answered: it waits for a resume only


class ExecState(enum.StrEnum):
    """An execution's state as an operator sees it; the value is its filter word and CSS class."""

    RUNNING = "running"
    WAITING = "waiting"
    SLEEPING = "sleeping"
    RETRYING = "retrying"
    RATE_LIMITED = "rate-limited"
    QUEUED = "queued"
    PARKED = "parked"
    STOPPED = "stopped"
    COMPENSATING = "compensating"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


# The heading a state word carries where only the word is known (the overview's columns, counts): the
# refinements of a Running row read as such.
_LABELS = {
    "waiting": f"running{SEP}waiting",
    "sleeping": f"running{SEP}sleeping",
    "retrying": f"running{SEP}retrying",
    "rate-limited": f"running{SEP}rate-limited",
}


def label_of(word: str) -> str:
    """What a badge of state word `word` reads (`waiting` → `running·waiting`)."""
    return _LABELS.get(word, word)


# The unended states whose row is a store status kind of the same name; parked takes its executions out.
UNENDED = frozenset({"running", "compensating", "stopped"})


@dataclass(frozen=True)
class Standing:
    """An execution's state (`state`), the recorded status it qualifies (`qualifier`: `stopped` for a
    parked stop, `waiting` …), and its code (a stop code, a failure kind, else "")."""

    state: ExecState
    qualifier: str = ""
    code: str = ""

    @property
    def word(self) -> str:
        """One short word: `failed:<kind>`, `stopped:<code>`, `parked`, `running` …"""
        if self.state in (ExecState.FAILED, ExecState.STOPPED) and self.code:
            return f"{self.state}:{self.code}"
        return str(self.state)

    @property
    def text(self) -> str:
        """What a badge reads: the state, then its qualifier (`parked·stopped`, `running·waiting`)."""
        return f"{self.state}{SEP}{self.qualifier}" if self.qualifier else label_of(self.state.value)

    @property
    def line(self) -> str:
        """The state in one line with its code: `failed:ChargeDeclined`, `parked·stopped:F0001`,
        `stopped·answered:F0001`."""
        return f"{self.text}:{self.code}" if self.code else self.text

    @property
    def answered(self) -> bool:
        """A stop a person answered: the execution waits for a resume, and nothing else."""
        return self.qualifier == ANSWERED

    @property
    def note(self) -> str:
        """What an operator is waited for, said in words where there is more to say than the state."""
        return "answered, awaiting resume" if self.answered else ""


def _ended(status: spi.Status) -> Standing | None:
    match status:
        case spi.Completed():
            return Standing(ExecState.COMPLETED)
        case spi.Failed(_, kind):
            return Standing(ExecState.FAILED, code=kind or "")
        case spi.Cancelled():
            return Standing(ExecState.CANCELLED)
    return None


def _alive(state: spi.ExecutionState) -> ExecState:
    """A Running row that a process serves: what it is doing."""
    if state.cancel_requested:
        return ExecState.CANCELLING
    if any(isinstance(w, spi.WakeOnField) for w in state.waits.values()):
        return ExecState.WAITING
    if any(rate_row_matches(path) for path in state.waits):
        return ExecState.RATE_LIMITED
    if any(RETRY_MARK in path for path in state.waits):
        return ExecState.RETRYING
    if state.waits:
        return ExecState.SLEEPING
    return ExecState.QUEUED if filters.is_queued(state) else ExecState.RUNNING


def standing_of(state: spi.ExecutionState, served: Collection[str] | None = None) -> Standing:
    """The state of `state`. With `served` (the version hashes some process serves), an unended execution
    of another version is parked; without it nothing is called parked."""
    status = state.status
    ended = _ended(status)
    if ended is not None:
        return ended
    own: Standing
    if isinstance(status, spi.Stopped):
        own = Standing(ExecState.STOPPED, ANSWERED if status.answered else "", status.code)
    elif isinstance(status, spi.Compensating):
        own = Standing(ExecState.COMPENSATING)
    else:
        own = Standing(_alive(state))
    if served is not None and state.hash not in served:
        kept = own.state if own.state in (ExecState.STOPPED, ExecState.COMPENSATING) else ""
        return Standing(ExecState.PARKED, str(kept), own.code)
    return own


# ------------------------------------------------------------------------------------------ served


def _declared(workflow_id: str) -> frozenset[str]:
    return frozenset(schema.structural_hash(f) for f in flow_versions().get(workflow_id, ()))


def served_hashes(workflows: Iterable[spi.WorkflowInfo]) -> frozenset[str]:
    """The version hashes some process serves, over `workflows` (the store's newest of each): the versions
    this process declares, or the newest when it declares none of that workflow (another process serves
    it). An unended execution of any other hash is parked."""
    found: set[str] = set()
    for info in workflows:
        found |= _declared(info.id) or {info.structural_hash}
    return frozenset(found)


async def served_by(engine: FlowEngine) -> frozenset[str]:
    """`served_hashes` over the workflows `engine`'s store knows."""
    return served_hashes(await engine.workflows.list())


# -------------------------------------------------------------------------------------- populations


def store_filter(word: str, served: frozenset[str]) -> spi.ExecutionFilter.Any | None:
    """The store filter of a state word, for exactly the executions `standing_of` puts in it: `parked` is
    an unended execution of a version nobody serves (the store's `Orphaned`), and the words of unended
    states leave those out (`Served`); ended words are the wire words. A word that is none raises
    `spi.FilterParseError`."""
    if not word:
        return None
    F = spi.ExecutionFilter
    if word == ExecState.PARKED:
        return F.Orphaned(served)
    parsed = F.parse(word)
    if isinstance(parsed, F.Completed | F.Failed | F.Cancelled):
        return parsed
    if isinstance(parsed, F.Running):  # the queued are a state of their own
        parsed = F.Both(parsed, F.Queued(False))
    return F.Both(parsed, F.Served(served))


def parked_filter(status_word: str, served: frozenset[str]) -> spi.ExecutionFilter.Any:
    """The parked executions whose row has status kind `status_word` (one of `UNENDED`)."""
    F = spi.ExecutionFilter
    return F.Both(F.parse(status_word), F.Orphaned(served))


def partition(by_status: Mapping[str, int], parked_by_status: Mapping[str, int]) -> dict[str, int]:
    """Counts by status kind (the store's tally) made counts by state: the parked ones of each unended
    kind moved to `parked`. Only the states with executions."""
    out = {k: n - parked_by_status.get(k, 0) for k, n in by_status.items()}
    parked = sum(parked_by_status.values())
    if parked:
        out[ExecState.PARKED.value] = parked
    return {k: n for k, n in out.items() if n > 0}


async def parked_counts(
    store: spi.FlowStore, workflow_ids: Iterable[str], served: frozenset[str]
) -> dict[str, dict[str, int]]:
    """Per workflow, its parked executions by status kind (only workflows with some). A workflow with no
    unended execution on a version nobody serves costs one read (`count_by_version`)."""
    found: dict[str, dict[str, int]] = {}
    for workflow_id in workflow_ids:
        versions = await store.count_by_version(workflow_id)
        if not any(v.unended and v.hash not in served for v in versions):
            continue
        kinds: dict[str, int] = {}
        for kind in sorted(UNENDED):
            page = await store.list_executions(workflow_id, parked_filter(kind, served), limit=0)
            if page.total:
                kinds[kind] = page.total
        found[workflow_id] = kinds
    return found


async def count_by_state(
    store: spi.FlowStore, served: frozenset[str], workflow_id: str | None = None
) -> list[counts.StatusCount]:
    """The store's counts by status kind (`count_by_status`) made counts by state: each workflow's parked
    executions taken out of their status kind and counted as `parked`. By workflow, then state."""
    found = list(await store.count_by_status(workflow_id))
    by: dict[str, dict[str, int]] = {}
    for c in found:
        by.setdefault(c.workflow_id, {})[c.status] = c.executions
    may_park = [w for w, tally in by.items() if any(tally.get(k) for k in UNENDED)]
    parked = await parked_counts(store, may_park, served)
    queued = await queued_counts(store, [w for w, tally in by.items() if tally.get("running")], served)
    return [
        counts.StatusCount(w, state, n)
        for w in sorted(by)
        for state, n in sorted(_queued_apart(partition(by[w], parked.get(w, {})), queued.get(w, 0)).items())
    ]


async def queued_counts(
    store: spi.FlowStore, workflow_ids: Iterable[str], served: frozenset[str]
) -> dict[str, int]:
    """Per workflow that declares concurrency limits, its queued executions (served ones: a parked one is
    counted as parked). Workflows without limits cost nothing but the one list of workflows."""
    wanted = set(workflow_ids)
    if not wanted:
        return {}
    limited = [w.id for w in await store.list_workflows() if w.id in wanted and w.meta.concurrency]
    F = spi.ExecutionFilter
    found = {}
    for workflow_id in limited:
        page = await store.list_executions(workflow_id, F.Both(F.Queued(), F.Served(served)), limit=0)
        if page.total:
            found[workflow_id] = page.total
    return found


def _queued_apart(by_state: dict[str, int], queued: int) -> dict[str, int]:
    """The queued taken out of `running` (their status kind) into a state of their own."""
    if not queued:
        return by_state
    out = {**by_state, "running": by_state.get("running", 0) - queued, ExecState.QUEUED.value: queued}
    return {k: n for k, n in out.items() if n > 0}
