"""The waterfall's lane states (console.timeline_states): a node lane's pill says its node's state from the
progress (a shared path's recorded place, named by its branch words), the execution lane's the execution's
state, and without a progress row the history's word is said in the node vocabulary. The layout carries
them, the delta for every lane of the page (issue 29: one state vocabulary on every surface)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flowdeck.console import badges, timeline
from flowdeck.console.timeline_states import LaneState, lane_states, node_state
from flowdeck.console.views.timeline import layout
from flowdeck.engine.node_status import NodeStatus
from flowdeck.engine.progress import NodeProgress, Progress
from flowdeck.store import spi
from tests.console.test_timeline import History, K, ms

S = NodeStatus
WORDS = {"n8": "race 1 branch 1", "n14": "race 1 branch 2 › race 2 branch 1", "n13": "race 1 branch 2"}
RUNNING = badges.Badge("running", "running")


def row(name: str, place: str, status: NodeStatus, **more: Any) -> NodeProgress:
    return NodeProgress(name, "step", status, place=place, **more)


def state(status: str, where: str = "", title: str = "") -> LaneState:
    return LaneState(status, status, status, title or status, where)


def _execution(status: spi.Status, waits: dict[str, spi.Wake] | None = None) -> spi.ExecutionState:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    return spi.ExecutionState("e-1", "f", status, None, None, "h1", at, at, waits or {}, False, None)


def _lane(h: History, name: str) -> timeline.Lane:
    found = h.build().lane(name)
    assert found is not None
    return found


def _decision() -> History:
    """The auto arm refused the order (StepFailed), the person's arm answered later (StepCompleted)."""
    h = History().add(K.STEP_STARTED, step_name="decision").at(5)
    h.add(K.STEP_FAILED, step_name="decision", error="over 100000").at(9)
    return h.add(K.STEP_STARTED, step_name="decision").at(12).add(K.STEP_COMPLETED, step_name="decision")


def test_a_node_lane_says_its_node_state_not_the_history_word() -> None:
    """A wait received is its node's `completed`; a foreach compensated by its items' handlers reads
    compensated although its own last bar completed (the issue's `reservations`)."""
    h = (
        History()
        .add(K.INPUT_WAITING, input_name="approval")
        .at(5)
        .add(K.INPUT_RECEIVED, input_name="approval")
    )
    assert _lane(h, "approval").outcome() == "received"
    assert node_state(_lane(h, "approval"), [row("approval", "n3", S.WON)], WORDS) == state("won")
    h = History().add(K.STEP_STARTED, step_name="r~0").at(3).add(K.STEP_COMPLETED, step_name="r~0")
    h.add(K.STEP_COMPLETED, step_name="r")
    assert _lane(h, "r").outcome() == "completed"
    compensated = node_state(_lane(h, "r"), [row("r", "n4", S.COMPENSATED, detail="2 items")], WORDS)
    assert compensated == state("compensated", title="compensated: 2 items")


def test_a_shared_path_says_its_recorded_place_with_its_branch_words() -> None:
    lane = _lane(_decision(), "decision")
    won = [
        row("decision", "n8", S.WON, shared=True),
        row("decision", "n13", S.LOST, shared=True, recorded=False),
        row("decision", "n14", S.LOST, shared=True, recorded=False),
    ]
    assert node_state(lane, won, WORDS) == state("won", "race 1 branch 1")
    # two arms hold records under the path: the refused one (lost) and the one that answered (won); the
    # completion is the path's last fact, so the lane says the winner, where it sits
    both = [
        row("decision", "n8", S.LOST, shared=True),
        row("decision", "n14", S.WON, shared=True),
        row("decision", "n13", S.PENDING, shared=True, recorded=False),
    ]
    assert node_state(lane, both, WORDS) == state("won", "race 1 branch 2 › race 2 branch 1")
    # a place under way outranks a done one: it is the one writing the path's facts now
    going = [row("decision", "n8", S.RUNNING, shared=True), row("decision", "n14", S.COMPLETED, shared=True)]
    assert node_state(lane, going, WORDS) == state("running", "race 1 branch 1")
    # a place on a path of its own has no branch words, wherever it sits
    assert node_state(lane, [row("decision", "n13", S.WAITING)], WORDS) == state("waiting")


def test_without_a_progress_row_the_history_word_is_said_in_the_node_vocabulary() -> None:
    title = "from the history: no progress for this node"
    h = History().add(K.INPUT_WAITING, input_name="a").at(1).add(K.INPUT_DISCHARGED, input_name="a")
    h.add(K.STEP_STARTED, step_name="b").add(K.STEP_RETRIED, step_name="b", attempt=1, error="x", delay=1)
    h.add(K.INPUT_SUPPLIED, input_name="pay~amount").add(K.UNDO_NOTED, node="c")
    h.add(K.INPUT_WAITING, input_name="w")
    said = {n: node_state(_lane(h, n), [], {}) for n in ("a", "b", "pay", "c", "w")}
    assert said == {
        "a": state("completed", title=title),
        "b": state("running", title=title),  # backing off before its next attempt
        "pay": state("completed", title=title),  # a subflow's input supplied: a mark only
        "c": None,  # a mark that says no state: no pill rather than a wrong word
        "w": state("waiting", title=title),
    }
    # a parked execution: nothing runs it, so nothing is said running or waiting
    assert node_state(_lane(h, "w"), [], {}, runs=False) == state("pending", title=title)


def test_the_execution_lane_says_the_execution_state() -> None:
    h = History().add(K.CREATED).add(K.EXECUTION_CLAIMED, executor_id="w").at(4).add(K.EXECUTION_RELEASED)
    tl = h.build()
    assert tl.lane("execution").outcome() == "released"  # type: ignore[union-attr]

    def said(execution: spi.ExecutionState, served: frozenset[str]) -> tuple[str, str, str]:
        found = lane_states(tl, Progress(), {}, badges.badge_of(execution, served))["execution"]
        return found.word, found.text, found.css

    waiting = _execution(spi.Running(), {"approval": spi.WakeOnField("approval")})
    assert said(waiting, frozenset({"h1"})) == ("waiting", "running·waiting", "waiting")
    assert said(waiting, frozenset({"h2"})) == ("parked", "parked", "parked")
    answered = _execution(spi.Stopped("F0001", "ship", answered=True))
    assert said(answered, frozenset({"h1"})) == ("stopped", "stopped·answered", "answered")


def test_the_layout_gives_each_lane_its_state_and_the_delta_every_lane_of_the_page() -> None:
    h = (
        History()
        .add(K.CREATED)
        .add(K.STEP_STARTED, step_name="r~0")
        .at(3)
        .add(K.STEP_COMPLETED, step_name="r~0")
    )
    h.add(K.STEP_COMPLETED, step_name="r").at(5).add(K.STEP_STARTED, step_name="ship")
    tl = h.build()
    progress = Progress((row("r", "n2", S.COMPENSATED), row("ship", "n3", S.RUNNING)))
    said = lane_states(tl, progress, {}, RUNNING)
    whole = layout(tl, ms(6), said=said)
    assert [(lane["name"], lane["state"].text) for lane in whole["lanes"]] == [
        ("execution", "running"),
        ("r~0", "completed"),
        ("r", "compensated"),
        ("ship", "running"),
    ]
    assert whole["said"] == []
    # after the last seq only the open lane is drawn again, but every lane's state rides along: `r`
    # may have been compensated with no event on its own lane
    delta = layout(tl, ms(6), after=tl.seq, said=said)
    assert [lane["name"] for lane in delta["lanes"]] == ["ship"]
    assert [(s["name"], s["state"].text) for s in delta["said"]] == [
        ("execution", "running"),
        ("r~0", "completed"),
        ("r", "compensated"),
        ("ship", "running"),
    ]
