"""build_progress: the status each node's record implies, per execution state (spec §3.6), and the same
statuses painted on the diagrams (JSON form), with Mermaid and DOT colours matching their legends."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from examples import seed
from flowdeck.engine.flow import Flow
from flowdeck.engine.progress import NodeProgress, NodeStatus, Progress, build_progress
from flowdeck.engine.render import render
from flowdeck.engine.render.common import COLOURS
from flowdeck.store import spi
from tests.diagrams.sample_flows import every_kind

Row = spi.ExecutionState
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
C, R, P, W, S, F = (
    NodeStatus.COMPLETED,
    NodeStatus.RUNNING,
    NodeStatus.PENDING,
    NodeStatus.WAITING,
    NodeStatus.SLEEPING,
    NodeStatus.FAILED,
)


def state(status: spi.Status | None = None, waits: Mapping[str, spi.Wake] | None = None) -> Row:
    return spi.ExecutionState(
        "e1", "wf", status or spi.Running(), None, None, "h", T0, T0, dict(waits or {}), False, None
    )


def event(kind: spi.EventKind, **data: Any) -> spi.Event:
    return spi.Event(kind, "wf", "e1", T0, data)


def done(name: str) -> spi.Event:
    return event(spi.EventKind.STEP_COMPLETED, step_name=name)


def field(value: Any, tag: str = "int") -> spi.FieldData:
    return spi.FieldData.of(value, tag)


def statuses(progress: Progress) -> dict[str, NodeStatus]:
    return {n.name: n.status for n in progress.nodes}


def painted(flow: Flow, progress: Progress) -> dict[str, str]:
    """The status each named node carries in the JSON diagram (the first node drawn for a path)."""
    data = json.loads(render(flow, "json", progress))
    found: dict[str, str] = {}
    for node in data["nodes"]:
        if "path" in node and node["type"] != "branch":
            found.setdefault(node["path"], node["status"])
    return found


def check(flow: Flow, progress: Progress, expected: dict[str, NodeStatus]) -> None:
    assert statuses(progress) == expected
    assert painted(flow, progress) == {k: v.value for k, v in expected.items()}


# ------------------------------------------------------------------------------------- lifecycle


def test_a_fresh_execution_runs_its_first_node() -> None:
    progress = build_progress(seed.fulfilment, state(), {}, [event(spi.EventKind.CREATED)])
    check(seed.fulfilment, progress, {"order": R, "total": P, "charge": P, "ship": P})
    assert (progress.completed_count, progress.total_count) == (0, 4)


def test_waiting_for_an_input_paints_it_waiting_and_nothing_after_it_running() -> None:
    flow = seed.await_approval
    progress = build_progress(flow, state(waits={"approval": spi.WakeOnField("approval")}), {}, [])
    check(flow, progress, {"approval": W, "decision": P})


def test_a_delivered_input_and_recorded_outputs_are_completed() -> None:
    fields = {"order": field({"id": "o"}, "Order"), "total": field(1200), "charge": field("ch", "str")}
    progress = build_progress(seed.fulfilment, state(), fields, [])
    check(seed.fulfilment, progress, {"order": C, "total": C, "charge": C, "ship": R})


def test_a_sleep_shows_its_deadline() -> None:
    until = T0 + timedelta(hours=48)
    fields = {"order": field({"id": "o"}, "Order")}
    history = [done("ship"), event(spi.EventKind.SLEEP_STARTED, step_name="delivery-window")]
    progress = build_progress(
        seed.cooling, state(waits={"delivery-window": spi.WakeAt(until)}), fields, history
    )
    check(seed.cooling, progress, {"order": C, "ship": C, "delivery-window": S, "ask-for-review": P})
    assert progress.by_name("delivery-window") == NodeProgress(
        "delivery-window",
        "sleep",
        S,
        "",
        until,
        location=progress.by_name("delivery-window").location,
        place="n4",
    )


def test_a_completed_execution_has_every_node_completed() -> None:
    fields = {"order": field({}, "Order"), "total": field(1), "charge": field("c", "str")}
    progress = build_progress(seed.fulfilment, state(spi.Completed()), fields, [done("ship")])
    check(seed.fulfilment, progress, {"order": C, "total": C, "charge": C, "ship": C})
    assert progress.completed_count == progress.total_count == 4


def test_a_failure_is_painted_on_its_node_with_the_error() -> None:
    fields = {"order": field({}, "Order"), "total": field(1)}
    history = [event(spi.EventKind.STEP_FAILED, step_name="charge", error="card declined", error_kind="X")]
    progress = build_progress(seed.fulfilment, state(spi.Failed("card declined", "X")), fields, history)
    check(seed.fulfilment, progress, {"order": C, "total": C, "charge": F, "ship": P})
    assert progress.by_name("charge").detail == "card declined"


def test_a_failure_superseded_by_a_later_completion_is_completed() -> None:
    history = [event(spi.EventKind.STEP_FAILED, step_name="ship", error="down"), done("ship")]
    fields = {"order": field({}, "Order"), "total": field(1), "charge": field("c", "str")}
    progress = build_progress(seed.fulfilment, state(), fields, history)
    assert progress.by_name("ship").status is C


def test_compensated_nodes_after_an_unwind() -> None:
    fields = {"order": field({}, "Order"), "total": field(1), "charge": field("c", "str")}
    history = [
        event(spi.EventKind.STEP_FAILED, step_name="ship", error="refused"),
        event(spi.EventKind.NODE_COMPENSATED, node_name="charge"),
    ]
    progress = build_progress(seed.fulfilment, state(spi.Failed("refused")), fields, history)
    check(
        seed.fulfilment,
        progress,
        {"order": C, "total": C, "charge": NodeStatus.COMPENSATED, "ship": F},
    )


def test_a_stopped_execution_paints_the_node_it_stopped_at() -> None:
    fields = {"order": field({}, "Order"), "total": field(1)}
    status = spi.Stopped("F0001", "charge", "ZeroDivisionError: division by zero")
    history = [event(spi.EventKind.STEP_FAILED, step_name="charge", error="division by zero")]
    progress = build_progress(seed.fulfilment, state(status), fields, history)
    check(
        seed.fulfilment,
        progress,
        {"order": C, "total": C, "charge": NodeStatus.STOPPED, "ship": P},
    )
    assert progress.by_name("charge").detail == "F0001: ZeroDivisionError: division by zero"


def test_a_stop_at_a_retry_key_is_resolved_to_its_node() -> None:
    fields = {"order": field({}, "Order"), "total": field(1), "charge": field("c", "str")}
    progress = build_progress(seed.fulfilment, state(spi.Stopped("F0003", "ship#retry")), fields, [])
    assert progress.by_name("ship").status is NodeStatus.STOPPED


def test_a_retry_wait_shows_its_node_sleeping() -> None:
    fields = {"order": field({}, "Order"), "total": field(1)}
    waits = {"charge#retry": spi.WakeAt(T0 + timedelta(seconds=4))}
    progress = build_progress(seed.charging, state(waits=waits), fields, [])
    check(seed.charging, progress, {"order": C, "total": C, "charge": S})


# ------------------------------------------------------------------------------------ node kinds


def test_foreach_counts_items_recorded_of_the_collection() -> None:
    fields = {
        "order": field({}, "Order"),
        "reservations~count": field(3),
        "reservations~0": field("r0", "str"),
        "reservations~2": field("r2", "str"),
    }
    progress = build_progress(seed.reserving, state(), fields, [])
    row = progress.by_name("reservations")
    assert (row.status, row.done, row.total, row.detail) == (R, 2, 3, "2/3")
    data = json.loads(render(seed.reserving, "json", progress))
    assert [n["detail"] for n in data["nodes"] if n["name"] == "reservations"] == ["2/3"]
    assert "running 2/3" in render(seed.reserving, "dot", progress)


def test_dispatch_paints_the_chosen_arm() -> None:
    fields = {"order": field({}, "Order"), "total": field(20000), "route#chosen": field("supervisor", "str")}
    progress = build_progress(seed.routed, state(), fields, [])
    check(seed.routed, progress, {"order": C, "total": C, "route": R, "record": P})
    data = json.loads(render(seed.routed, "json", progress))
    arms = {n["name"]: n["status"] for n in data["nodes"] if n["type"] == "branch"}
    assert arms == {"manual-review": "pending", "supervisor": "running", "auto": "pending"}


def test_subflow_children_are_listed_under_the_subflow_and_drive_its_status() -> None:
    fields = {
        "order": field({}, "Order"),
        "total": field(1200),
        "payment~order_id": field("o", "str"),
        "payment~amount_cents": field(1200),
    }
    progress = build_progress(seed.with_payment, state(), fields, [])
    expected = {
        "order": C,
        "total": C,
        "payment": R,
        "payment~order_id": C,
        "payment~amount_cents": C,
        "payment~charge_id": R,
        "ship": P,
    }
    check(seed.with_payment, progress, expected)
    fields["payment~charge_id"] = field("ch", "str")
    progress = build_progress(seed.with_payment, state(), fields, [])
    assert statuses(progress) == expected | {"payment": C, "payment~charge_id": C, "ship": R}


def test_parallel_branches_each_run_their_own_next_node() -> None:
    fields = {"order": field({}, "Order")}
    progress = build_progress(seed.checks, state(), fields, [])
    # Both branches share the input (the blessed duplicate): one row, then each branch's own output.
    check(seed.checks, progress, {"order": C, "lines": R, "total": R})


def test_a_race_waits_on_both_arms() -> None:
    waits = {"approval": spi.WakeOnField("approval"), "grace": spi.WakeAt(T0 + timedelta(hours=24))}
    progress = build_progress(seed.decided, state(waits=waits), {}, [])
    check(seed.decided, progress, {"approval": W, "decision": P, "grace": S})


def test_scheduled_loop_iterations_belong_to_the_loop() -> None:
    fields = {"order": field({}, "Order"), "delivery#0": field(None, "NoneType")}
    waits = {"delivery##1": spi.WakeAt(T0 + timedelta(minutes=30))}
    progress = build_progress(seed.watching, state(waits=waits), fields, [])
    check(seed.watching, progress, {"order": C, "delivery": S})


def test_a_compensating_execution_runs_nothing_new() -> None:
    fields = {"order": field({}, "Order")}
    status = spi.Compensating(spi.Cancellation("changed my mind"))
    progress = build_progress(seed.fulfilment, state(status), fields, [])
    assert statuses(progress) == {"order": C, "total": P, "charge": P, "ship": P}


# --------------------------------------------------------------------------------------- colours

ALL_STATES = [
    pytest.param(state(), {}, [], id="fresh"),
    pytest.param(state(waits={"order": spi.WakeOnField("order")}), {}, [], id="waiting"),
    pytest.param(
        state(waits={"cool": spi.WakeAt(T0)}),
        {"order": field({}), "total": field(1)},
        [],
        id="sleeping",
    ),
    pytest.param(
        state(spi.Failed("boom")),
        {"order": field({}), "total": field(1)},
        [event(spi.EventKind.STEP_FAILED, step_name="cool", error="boom")],
        id="failed",
    ),
    pytest.param(
        state(spi.Stopped("F0001", "route")),
        {"order": field({}), "total": field(1)},
        [event(spi.EventKind.SLEEP_COMPLETED, step_name="cool")],
        id="stopped",
    ),
    pytest.param(
        state(spi.Cancelled("bye")),
        {"order": field({}), "total": field(1)},
        [event(spi.EventKind.NODE_COMPENSATED, node_name="total")],
        id="compensated",
    ),
]


def _fills(text: str, pattern: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(pattern, text)}


@pytest.mark.parametrize(("row", "fields", "history"), ALL_STATES)
def test_every_format_paints_each_node_from_the_one_palette(
    row: spi.ExecutionState, fields: dict[str, spi.FieldData], history: list[spi.Event]
) -> None:
    progress = build_progress(every_kind, row, fields, history)
    nodes = json.loads(render(every_kind, "json", progress))["nodes"]
    status_of = {n["id"]: n["status"] for n in nodes}
    mermaid = _fills(render(every_kind, "mermaid", progress), r"style (\w+) fill:(#[0-9A-Fa-f]{6})")
    dot = _fills(render(every_kind, "dot", progress), r'(\w+) \[[^\n]*fillcolor="(#[0-9A-Fa-f]{6})"')
    assert set(COLOURS) == set(NodeStatus)
    assert len(set(COLOURS.values())) == len(NodeStatus)  # every status its own colour
    for fills in (mermaid, dot):
        assert not any(k.startswith("legend") for k in fills)  # the console's legend is HTML
        assert {i: fills[i] for i in status_of} == {i: COLOURS[s] for i, s in status_of.items()}
    bpmn = _fills(
        render(every_kind, "bpmn", progress), r'bpmnElement="(\w+)"[^>]*color:background-color="(#\w+)"'
    )
    assert bpmn == {i: COLOURS[s] for i, s in status_of.items()}


def placed(progress: Progress) -> list[tuple[str, NodeStatus]]:
    """Every place's (durable path, status), in plan order: a race's arms sharing a name each appear."""
    return [(n.name, n.status) for n in progress.nodes]


def test_a_won_race_marks_its_winner_won_and_the_other_arm_lost() -> None:
    fields = {"approval": field({"approved": True}, "Approval"), "decision": field("approved", "str")}
    waits = {"grace": spi.WakeAt(T0 + timedelta(hours=24))}
    won, lost = NodeStatus.WON, NodeStatus.LOST
    progress = build_progress(seed.decided, state(spi.Completed()), fields, [])
    assert placed(progress) == [("approval", won), ("decision", won), ("grace", lost), ("decision", lost)]
    # Still running: the winner won, the loser's sleep is lost though its row stands, the next node runs.
    after = Flow.init("after").step("next", lambda ctx: None)
    flow = seed.decided.and_then(after)
    progress = build_progress(flow, state(waits=waits), fields, [])
    expected = [("approval", won), ("decision", won), ("grace", lost), ("decision", lost), ("next", R)]
    assert placed(progress) == expected
    unslept = build_progress(flow, state(), fields, [])
    assert placed(unslept) == expected


def test_a_foreach_counts_its_items_done_running_and_failed_of_n() -> None:
    flow = Flow.init("f").foreach("items", lambda ctx: [1, 2, 3, 4], lambda item, ctx: item, type=int)
    fields = {"items~count": field(4), "items~0": field(1), "items~1": field(2)}
    history = [event(spi.EventKind.STEP_STARTED, step_name=f"items~{i}") for i in range(4)] + [
        event(spi.EventKind.STEP_FAILED, step_name="items~3", error="boom")
    ]
    entry = build_progress(flow, state(), fields, history).nodes[0]
    assert (entry.done, entry.total, entry.items_running, entry.items_failed) == (2, 4, 1, 1)
    assert (entry.status, entry.detail) == (F, "2/4, 1 running, 1 failed; boom")
    node = json.loads(render(flow, "json", build_progress(flow, state(), fields, history)))["nodes"][0]
    assert (node["done"], node["total"], node["itemsRunning"], node["itemsFailed"]) == (2, 4, 1, 1)


def test_a_stop_shows_its_code_and_a_compensated_node_its_own_outline() -> None:
    flow = Flow.init("f").step("a", lambda ctx: None).step("b", lambda ctx: None)
    stopped = build_progress(flow, state(spi.Stopped("F0001", "b", "route")), {}, [done("a")])
    assert [(n.name, n.status, n.detail) for n in stopped.nodes] == [
        ("a", C, ""),
        ("b", NodeStatus.STOPPED, "F0001: route"),
    ]
    dot = render(flow, "dot", stopped)
    assert 'label="b\\nstopped\\nF0001: route"' in dot
    assert 'style="filled,bold"' in dot
    undone = build_progress(
        flow,
        state(spi.Cancelled("bye")),
        {},
        [done("a"), event(spi.EventKind.NODE_COMPENSATED, node_name="a")],
    )
    assert undone.nodes[0].status is NodeStatus.COMPENSATED
    assert 'style="filled,dotted"' in render(flow, "dot", undone)
