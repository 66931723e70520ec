"""The waterfall computed from a history (console.timeline): each composition's bars, as the engine writes
its events (the sequences are the ones the demo's executions record), with time moved by the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flowdeck.console import durations, timeline
from flowdeck.console.timeline import Bar
from flowdeck.console.views.timeline import lanes_page
from flowdeck.store.clock import ManualClock
from flowdeck.store.events import Event, EventKind

T0 = datetime(2030, 1, 1, tzinfo=UTC)
K = EventKind


class History:
    """Events of one execution, stamped by a manual clock that the test moves."""

    def __init__(self) -> None:
        self.clock = ManualClock(T0)
        self.events: list[Event] = []

    def at(self, ms: float) -> History:
        self.clock.step_wall(T0 + timedelta(milliseconds=ms) - self.clock.now())
        return self

    def add(self, kind: EventKind, **data: Any) -> History:
        seq = len(self.events) + 1
        self.events.append(Event(kind, "f", "e-1", self.clock.now(), data, seq))
        return self

    def build(self, waiting: set[str] | None = None) -> timeline.Timeline:
        return timeline.build(self.events, self.clock.now(), waiting)


def ms(n: float) -> datetime:
    return T0 + timedelta(milliseconds=n)


def shape(tl: timeline.Timeline, lane: str) -> list[tuple[str, int, str, datetime, datetime | None]]:
    found = tl.lane(lane)
    assert found is not None, f"no lane {lane}: {tl.node_names()}"
    return [(b.kind, b.attempt, b.outcome, b.start, b.end) for b in found.bars]


def test_a_sequence_is_one_attempt_per_node_and_a_claim() -> None:
    h = History().add(K.CREATED).at(5).add(K.EXECUTION_CLAIMED, executor_id="w1")
    h.at(6).add(K.STEP_STARTED, step_name="a").at(10).add(K.STEP_COMPLETED, step_name="a")
    h.add(K.STEP_STARTED, step_name="b").at(30).add(K.STEP_COMPLETED, step_name="b")
    h.add(K.EXECUTION_RELEASED, executor_id="w1").add(K.COMPLETED)
    tl = h.build()
    assert tl.node_names() == ["execution", "a", "b"]
    assert shape(tl, "a") == [("attempt", 1, "completed", ms(6), ms(10))]
    assert shape(tl, "b") == [("attempt", 1, "completed", ms(10), ms(30))]
    assert shape(tl, "execution") == [("claim", 0, "released", ms(5), ms(30))]
    assert [m.kind for m in tl.lane("execution").markers] == ["Created", "Completed"]  # type: ignore[union-attr]
    assert (tl.start, tl.end, tl.live) == (ms(0), ms(30), False)
    assert tl.lane("b").busy(h.clock.now()) == timedelta(milliseconds=20)  # type: ignore[union-attr]


def test_each_retry_is_a_bar_with_its_back_off() -> None:
    """An in-process retry (short delay) writes no start of its own: it begins when its back-off is due; a
    long one parks in a durable row and starts again at the next claim."""
    h = History().add(K.STEP_STARTED, step_name="charge")
    h.at(100).add(K.STEP_RETRIED, step_name="charge", attempt=1, error="503", delay=0.2)
    h.at(400).add(K.STEP_RETRIED, step_name="charge", attempt=2, error="503", delay=60)
    h.at(90_000).add(K.STEP_STARTED, step_name="charge").at(90_050).add(K.STEP_COMPLETED, step_name="charge")
    assert shape(h.build(), "charge") == [
        ("attempt", 1, "retried", ms(0), ms(100)),
        ("backoff", 1, "backed-off", ms(100), ms(300)),
        ("attempt", 2, "retried", ms(300), ms(400)),
        ("backoff", 2, "backed-off", ms(400), ms(90_000)),
        ("attempt", 3, "completed", ms(90_000), ms(90_050)),
    ]
    charge = h.build().lane("charge")
    assert charge is not None
    assert charge.attempts() == 3
    assert charge.outcome() == "completed"
    assert charge.bars[0].detail == "503"


def test_a_timeout_ends_its_attempt_and_a_spent_schedule_fails_it() -> None:
    h = History().add(K.STEP_STARTED, step_name="slow")
    h.at(30_000).add(K.STEP_TIMED_OUT, step_name="slow", timeout=30.0)
    h.add(K.STEP_FAILED, step_name="slow", error="timed out").add(K.STOPPED, code="F0003", node="slow")
    tl = h.build()
    assert shape(tl, "slow") == [("attempt", 1, "failed", ms(0), ms(30_000))]
    assert tl.lane("slow").bars[0].kinds == {"StepStarted", "StepTimedOut", "StepFailed"}  # type: ignore[union-attr]


def test_a_sleep_is_a_bar_open_while_it_sleeps_and_closed_when_it_wakes() -> None:
    until = ms(48 * 3600 * 1000).isoformat()
    h = History().add(K.EXECUTION_CLAIMED).add(K.SLEEP_STARTED, step_name="window", until=until)
    h.at(10).add(K.EXECUTION_RELEASED).at(60_000)
    tl = h.build(waiting={"window"})
    assert shape(tl, "window") == [("sleep", 0, "sleeping", ms(0), None)]
    bar = tl.lane("window").bars[0]  # type: ignore[union-attr]
    assert bar.due == ms(48 * 3600 * 1000)
    assert bar.detail == "for 2 d 0 h"
    assert tl.live
    assert tl.end == ms(60_000)
    h.add(K.SLEEP_COMPLETED, step_name="window")
    assert shape(h.build(), "window") == [("sleep", 0, "completed", ms(0), ms(60_000))]


def test_a_wait_ends_when_its_input_arrives() -> None:
    h = History().add(K.INPUT_WAITING, input_name="approval").at(5_000)
    h.add(K.INPUT_RECEIVED, input_name="approval").at(5_010).add(K.INPUT_DISCHARGED, input_name="approval")
    assert shape(h.build(), "approval") == [("wait", 0, "received", ms(0), ms(5_000))]


def test_the_unwind_is_a_span_and_each_handler_a_compensation_bar() -> None:
    h = History().add(K.STEP_STARTED, step_name="r~0").at(10).add(K.STEP_COMPLETED, step_name="r~0")
    h.add(K.STEP_STARTED, step_name="ship").at(50).add(K.STEP_FAILED, step_name="ship", error="refused")
    h.add(K.COMPENSATION_STARTED, cause={"type": "failure", "error": "refused"})
    h.at(60).add(K.STEP_RETRIED, step_name="r~0", attempt=1, error="busy", delay=0.01)
    h.at(80).add(K.NODE_COMPENSATED, node_name="r~0")
    h.at(81).add(K.COMPENSATION_COMPLETED).add(K.FAILED, error="refused")
    tl = h.build()
    assert tl.unwinds == (timeline.Span(ms(50), ms(81), "refused"),)
    assert shape(tl, "r~0") == [
        ("attempt", 1, "completed", ms(0), ms(10)),
        ("compensation", 0, "retried", ms(50), ms(60)),
        ("backoff", 1, "backed-off", ms(60), ms(70)),
        ("compensation", 0, "compensated", ms(70), ms(80)),
    ]
    assert tl.lane("r~0").outcome() == "compensated"  # type: ignore[union-attr]
    assert shape(tl, "ship") == [("attempt", 1, "failed", ms(10), ms(50))]


def test_a_failed_compensation_and_a_stop_close_the_unwind() -> None:
    h = History().add(K.COMPENSATION_STARTED, cause={"type": "cancellation", "reason": "changed mind"})
    h.at(20).add(K.COMPENSATION_FAILED, node_name="hold", error="down")
    h.add(K.STOPPED, code="F0002", node="hold", reason="kept failing")
    tl = h.build()
    assert shape(tl, "hold") == [("compensation", 0, "compensation-failed", ms(0), ms(20))]
    assert tl.unwinds == (timeline.Span(ms(0), ms(20), "changed mind"),)


def test_a_race_arm_that_lost_ends_with_the_claim_that_ran_the_race() -> None:
    """The approval race: `decision` answers, the manual wait and the grace sleep lose (rows gone)."""
    h = History().add(K.EXECUTION_CLAIMED).add(K.STEP_STARTED, step_name="decision")
    h.add(K.INPUT_WAITING, input_name="approval").add(K.SLEEP_STARTED, step_name="grace")
    h.at(8).add(K.STEP_COMPLETED, step_name="decision").add(K.STEP_STARTED, step_name="next")
    h.at(20).add(K.EXECUTION_RELEASED).at(500)
    tl = h.build(waiting=set())
    assert shape(tl, "decision") == [("attempt", 1, "completed", ms(0), ms(8))]
    assert shape(tl, "approval") == [("wait", 0, "abandoned", ms(0), ms(20))]
    assert shape(tl, "grace") == [("sleep", 0, "abandoned", ms(0), ms(20))]
    assert shape(tl, "next") == [("attempt", 1, "running", ms(8), None)]  # still running: the walk went on


def test_race_arms_sharing_a_name_close_first_come_first_served() -> None:
    h = History().add(K.STEP_STARTED, step_name="decision").at(1).add(K.STEP_STARTED, step_name="decision")
    h.at(5).add(K.STEP_FAILED, step_name="decision", error="too large")
    h.at(9).add(K.STEP_COMPLETED, step_name="decision").add(K.COMPLETED)
    assert shape(h.build(), "decision") == [
        ("attempt", 1, "failed", ms(0), ms(5)),
        ("attempt", 1, "completed", ms(1), ms(9)),
    ]


def test_a_foreach_spans_its_items_and_a_subflow_gets_its_inputs() -> None:
    h = History().add(K.STEP_STARTED, step_name="res~0").add(K.STEP_STARTED, step_name="res~1")
    h.at(17).add(K.STEP_COMPLETED, step_name="res~1").at(20).add(K.STEP_COMPLETED, step_name="res~0")
    h.at(26).add(K.STEP_COMPLETED, step_name="res")
    h.add(K.INPUT_SUPPLIED, input_name="payment~card").add(K.STEP_STARTED, step_name="payment~charge")
    tl = h.build()
    assert shape(tl, "res") == [("group", 0, "completed", ms(0), ms(26))]
    assert tl.lane("res").bars[0].detail == "2 parts"  # type: ignore[union-attr]
    assert [(m.kind, m.detail) for m in tl.lane("payment").markers] == [("InputSupplied", "payment~card")]  # type: ignore[union-attr]
    assert tl.node_names() == ["res~0", "res~1", "res", "payment", "payment~charge"]  # no claim, no lane


def test_whatever_is_open_when_the_history_ends_is_abandoned_there() -> None:
    h = History().add(K.EXECUTION_CLAIMED).add(K.INPUT_WAITING, input_name="go")
    h.at(40).add(K.CANCELLED, reason="no").at(1000)
    tl = h.build()
    assert shape(tl, "go") == [("wait", 0, "abandoned", ms(0), ms(40))]
    assert shape(tl, "execution") == [("claim", 0, "released", ms(0), ms(40))]
    assert (tl.live, tl.end) == (False, ms(40))


def test_filters_select_lanes_by_node_and_bars_by_event_kind() -> None:
    h = History().add(K.EXECUTION_CLAIMED).add(K.STEP_STARTED, step_name="a").at(3)
    h.add(K.STEP_RETRIED, step_name="a", attempt=1, error="x", delay=0.001).at(9)
    h.add(K.STEP_COMPLETED, step_name="a").add(K.SLEEP_STARTED, step_name="nap")
    tl = h.build()
    assert tl.filtered(node="a").node_names() == ["a"]
    retried = tl.filtered(kind="StepRetried")
    assert retried.node_names() == ["a"]
    assert [b.kind for b in retried.lanes[0].bars] == ["attempt", "backoff", "attempt"]
    assert tl.filtered(kind="SleepStarted").node_names() == ["nap"]
    assert tl.filtered(kind="SleepStarted", node="a").lanes == ()
    assert "StepRetried" in tl.event_kinds()
    assert "Completed" not in tl.event_kinds()


def test_an_empty_history_is_an_empty_timeline() -> None:
    clock = ManualClock(T0)
    tl = timeline.build([], clock.now())
    assert (tl.lanes, tl.start, tl.end, tl.events) == ((), T0, T0, 0)


def test_durations_and_offsets_read_as_an_operator_says_them() -> None:
    words = [
        durations.duration_text(timedelta(seconds=s)) for s in (0.00085, 0.012, 1.25, 42.0, 185, 7800, 273600)
    ]
    assert words == ["850 µs", "12 ms", "1.25 s", "42.0 s", "3 min 05 s", "2 h 10 min", "3 d 4 h"]
    assert durations.offset_text(ms(1250), ms(0)) == "+1.25 s"


def test_lanes_page_clamps() -> None:
    lanes = [timeline.Lane(str(i), (Bar(str(i), "attempt", T0, T0, "completed"),), ()) for i in range(5)]
    assert (
        [lane.name for lane in lanes_page(lanes, 1, 2)[0]],
        lanes_page(lanes, 1, 2)[1],
    ) == (["2", "3"], 3)
    assert [lane.name for lane in lanes_page(lanes, 9, 2)[0]] == ["4"]


def _race() -> History:
    """A race of three arms sharing the path `decision`: the first refused, the second won after a wait,
    the third's sleep left open."""
    h = History().add(K.CREATED).add(K.EXECUTION_CLAIMED, executor_id="w")
    h.at(1).add(K.STEP_STARTED, step_name="decision").add(K.INPUT_WAITING, input_name="approval")
    h.add(K.SLEEP_STARTED, step_name="grace", until=ms(86_400_000).isoformat())
    h.at(2).add(K.STEP_FAILED, step_name="decision", error="over the limit")
    h.at(5).add(K.INPUT_RECEIVED, input_name="approval").add(K.STEP_STARTED, step_name="decision")
    return h.at(6).add(K.STEP_COMPLETED, step_name="decision")


def test_a_lost_race_arm_is_lost_and_the_winner_won_as_the_progress_says() -> None:
    from flowdeck.console.timeline_races import settle_races

    tl = _race().build(waiting=set())
    raced = settle_races(tl, {"decision": {"lost", "won"}, "grace": {"lost"}, "approval": {"won"}})
    assert [b.outcome for b in raced.lane("decision").bars] == ["lost", "won"]  # type: ignore[union-attr]
    assert [b.outcome for b in raced.lane("grace").bars] == ["lost"]  # type: ignore[union-attr]
    assert raced.lane("grace").outcome() == "lost"  # type: ignore[union-attr]
    assert [b.outcome for b in raced.lane("approval").bars] == ["received"]  # type: ignore[union-attr]
    # a race whose arms all failed failed: its failures stay failures
    failed = settle_races(tl, {"decision": {"failed"}})
    assert [b.outcome for b in failed.lane("decision").bars] == ["failed", "completed"]  # type: ignore[union-attr]


def test_a_lost_arm_left_open_until_a_later_stop_is_lost_not_interrupted() -> None:
    from flowdeck.console.timeline_races import settle_races

    h = _race().at(7).add(K.STEP_STARTED, step_name="ship").add(K.STEP_FAILED, step_name="ship", error="x")
    tl = h.at(8).add(K.STOPPED, code="F0001", node="ship").build(waiting=set())
    assert [b.outcome for b in tl.lane("grace").bars] == ["interrupted"]  # type: ignore[union-attr]
    raced = settle_races(tl, {"decision": {"lost", "won"}, "grace": {"lost"}, "ship": {"stopped"}})
    assert [b.outcome for b in raced.lane("grace").bars] == ["lost"]  # type: ignore[union-attr]
    assert [b.outcome for b in raced.lane("ship").bars] == [  # type: ignore[union-attr]
        b.outcome
        for b in tl.lane("ship").bars  # type: ignore[union-attr]
    ]


def test_a_fold_extended_by_later_events_is_the_timeline_of_the_whole_history() -> None:
    h = _race()
    fold = timeline.Fold().extend(h.events[:5])
    middle = fold.timeline(ms(1), None)
    assert middle.seq == 5
    assert [b.outcome for b in middle.lane("decision").bars] == ["running"]  # type: ignore[union-attr]
    fold.extend(h.events[3:])  # read again from an earlier offset: the events it has are not folded twice
    whole = fold.timeline(h.clock.now(), set())
    assert whole == h.build(waiting=set())
    assert (whole.seq, whole.events) == (len(h.events), len(h.events))


def test_each_event_is_on_the_lane_the_waterfall_draws_it_on() -> None:
    h = History().add(K.CREATED).add(K.EXECUTION_CLAIMED, executor_id="w")
    h.add(K.STEP_STARTED, step_name="pay~charge").add(K.INPUT_SUPPLIED, input_name="pay~amount")
    h.add(K.COMPLETED)
    assert [timeline.lane_of(e) for e in h.events] == [
        "execution",
        "execution",
        "pay~charge",
        "pay",
        "execution",
    ]
    started = h.events[2]
    assert timeline.matches(started, kind="StepStarted", node="pay~charge")
    assert not timeline.matches(started, kind="StepCompleted")
    assert not timeline.matches(started, node="pay")
    assert timeline.matches(started)


def test_the_kind_filter_offers_every_kind_of_the_history_and_each_selects_something() -> None:
    """The claim's ExecutionResumed and the unwind's start and end are drawn nowhere as bars: the filter
    still offers them (the event table beside it has them), and each selects the execution lane."""
    h = History().add(K.CREATED).add(K.EXECUTION_CLAIMED, executor_id="w").add(K.EXECUTION_RESUMED)
    h.add(K.STEP_STARTED, step_name="r").at(10).add(K.STEP_COMPLETED, step_name="r")
    h.add(K.STEP_STARTED, step_name="ship").add(K.STEP_FAILED, step_name="ship", error="refused")
    h.add(K.COMPENSATION_STARTED, cause={"type": "failure", "error": "refused"})
    h.at(20).add(K.NODE_COMPENSATED, node_name="r").add(K.COMPENSATION_COMPLETED)
    h.add(K.FAILED, error="refused").add(K.EXECUTION_RELEASED)
    tl = h.build()
    assert tl.event_kinds() == [k.value for k in K if k in {e.kind for e in h.events}]
    for kind in ("ExecutionResumed", "CompensationStarted", "CompensationCompleted"):
        assert tl.filtered(kind=kind).node_names() == ["execution"], kind
    claim = tl.lane("execution").bars[0]  # type: ignore[union-attr]
    claimed = {"ExecutionClaimed", "ExecutionResumed", "ExecutionReleased"}
    assert (claim.kinds, claim.seqs, claim.outcome) == (claimed, (2, 3, 12), "released")
    marks = [(m.kind, m.detail) for m in tl.lane("execution").markers]  # type: ignore[union-attr]
    assert marks == [
        ("Created", ""),
        ("CompensationStarted", "refused"),
        ("CompensationCompleted", ""),
        ("Failed", "refused"),
    ]
    assert timeline.Fold().extend(h.events[:3]).timeline(ms(0)).event_kinds() == [
        "Created",
        "ExecutionResumed",
        "ExecutionClaimed",
    ]
