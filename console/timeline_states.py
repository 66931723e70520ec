"""The state each lane of the waterfall is in, in the console's one vocabulary: a node lane's pill says the
node's state as the diagram and the node panel paint it (`engine/progress.py`, `NodeStatus`), the
execution lane's says the execution's state as its badge does (`console/states.py`, `console/badges.py`).
The bars keep the history's own words (an attempt "retried", a wait "received"): those are facts of the
bar; the pill is the node's state now. Pure, like `flowdeck.console.timeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flowdeck.console.badges import Badge
from flowdeck.console.timeline import EXECUTION_LANE, Lane, Timeline
from flowdeck.engine.node_status import NodeStatus
from flowdeck.engine.progress import NodeProgress, Progress

__all__ = ["LaneState", "execution_state", "lane_states", "node_state"]

S = NodeStatus


@dataclass(frozen=True)
class LaneState:
    """What a lane's pill reads (`text`), its state word (`word`: a `NodeStatus`, or an `ExecState` on the
    execution lane), its colour class's word (`st-<css>`, the badges' colours), what it says on hover, and
    `where`: the branches leading to the place, for a durable path several places share."""

    word: str
    text: str
    css: str
    title: str = ""
    where: str = ""


def execution_state(badge: Badge) -> LaneState:
    """The execution lane's state: its badge (`running·waiting`, `parked`, `stopped·answered`)."""
    return LaneState(badge.word, badge.text, badge.css, badge.detail or badge.title)


# A place's rank when several places that share a durable path hold its record (a race's arms that all
# produce `decision`): the lane shows the path's latest fact. A place under way is the one writing the
# path's facts now; a completion is final (nothing runs a completed path again), so it outranks the
# failures of arms that ran before it; a failure outranks a loss (a race whose arms all failed failed).
# Equal ranks: the later place in plan order, the one unblocked last, as the record hands facts out.
_RANK = {
    S.RUNNING: 5,
    S.WAITING: 5,
    S.SLEEPING: 5,
    S.STOPPED: 5,
    S.ANSWERED: 5,
    S.INTERRUPTED: 5,
    S.WON: 4,
    S.COMPLETED: 4,
    S.COMPENSATED: 4,
    S.FAILED: 3,
    S.LOST: 2,
    S.PENDING: 1,
}


def _place(rows: Sequence[NodeProgress]) -> NodeProgress:
    """The place whose record the lane shows, among the places carrying its path."""
    recorded = [r for r in rows if r.recorded] or list(rows)
    return max(enumerate(recorded), key=lambda ir: (_RANK.get(ir[1].status, 0), ir[0]))[1]


# Without a progress row (a foreach's item `items~3` has none; an execution whose version is neither
# served nor stored has no progress at all), the history's word for the lane's last bar is said in the
# node vocabulary: the nearest state, never a history word.
_FROM_HISTORY = {
    "completed": S.COMPLETED,
    "received": S.COMPLETED,
    "discharged": S.COMPLETED,
    "won": S.WON,
    "lost": S.LOST,
    "failed": S.FAILED,
    "timed-out": S.FAILED,
    "compensation-failed": S.FAILED,
    "compensated": S.COMPENSATED,
    "running": S.RUNNING,
    "retried": S.RUNNING,
    "backing-off": S.RUNNING,
    "compensating": S.RUNNING,
    "waiting": S.WAITING,
    "sleeping": S.SLEEPING,
    "interrupted": S.INTERRUPTED,
    "abandoned": S.INTERRUPTED,
    # a lane with marks only: its last mark
    "StepCompleted": S.COMPLETED,
    "SleepCompleted": S.COMPLETED,
    "InputReceived": S.COMPLETED,
    "InputDischarged": S.COMPLETED,
    "InputSupplied": S.COMPLETED,
    "BranchChosen": S.COMPLETED,
    "StepFailed": S.FAILED,
    "StepTimedOut": S.FAILED,
    "NodeCompensated": S.COMPENSATED,
    "Answered": S.ANSWERED,
}
# what nothing runs on a parked execution is not painted running (as `build_progress(runs=False)`)
_PARKED = {S.RUNNING: S.PENDING, S.WAITING: S.PENDING, S.SLEEPING: S.PENDING}


def _from_history(lane: Lane, runs: bool) -> LaneState | None:
    status = _FROM_HISTORY.get(lane.outcome())
    if status is None:
        return None  # a mark that says no state (an undo noted): no pill rather than a wrong one
    if not runs:
        status = _PARKED.get(status, status)
    return LaneState(str(status), str(status), str(status), "from the history: no progress for this node")


def node_state(
    lane: Lane, rows: Sequence[NodeProgress], words: Mapping[str, str], *, runs: bool = True
) -> LaneState | None:
    """A node lane's state: its place's status (`rows`: the progress rows carrying the lane's path), or
    the history's word said in the node vocabulary when there is none. `words`: each place's branches."""
    if not rows:
        return _from_history(lane, runs)
    row = _place(rows)
    where = words.get(row.place, "") if row.shared else ""
    title = f"{row.status}: {row.detail}" if row.detail else str(row.status)
    return LaneState(str(row.status), str(row.status), str(row.status), title, where)


def lane_states(
    tl: Timeline,
    progress: Progress | None,
    words: Mapping[str, str],
    badge: Badge,
    *,
    runs: bool = True,
) -> dict[str, LaneState]:
    """Each lane's state: the execution lane's from `badge`, a node lane's from `progress` (None when the
    version is neither served nor stored: then from the history). `runs` False: the execution is parked."""
    by_path: dict[str, list[NodeProgress]] = {}
    for row in progress.nodes if progress is not None else ():
        by_path.setdefault(row.name, []).append(row)
    found: dict[str, LaneState] = {}
    for lane in tl.lanes:
        if lane.name == EXECUTION_LANE:
            found[lane.name] = execution_state(badge)
            continue
        state = node_state(lane, by_path.get(lane.name, ()), words, runs=runs)
        if state is not None:
            found[lane.name] = state
    return found
