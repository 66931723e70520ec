"""A gateway's side panel (`GET /executions/<id>/nodes/@<fork or join id>`): a parallel's arms, each with
its nodes and their states, and for a race which arm won and when (the winner's last completion), or that
it is undecided; the badge is the state the diagram paints the gateway in, so the two agree. Pure reads,
like the node panel: the engine's progress, the history, the flow's drawing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse

from flowdeck.console import runtime
from flowdeck.console.views import common
from flowdeck.engine import graph, places, progress_record
from flowdeck.engine.flow import Flow
from flowdeck.engine.progress import NodeProgress, NodeStatus, Progress

__all__ = ["panel"]

TEMPLATE = "flowdeck/console/partials/gateway_panel.html"

_DONE = frozenset({NodeStatus.COMPLETED, NodeStatus.WON, NodeStatus.COMPENSATED, NodeStatus.ANSWERED})


def _arm_state(entries: Sequence[NodeProgress]) -> NodeStatus:
    """An arm's state from its nodes': won or lost as its race settled it, completed once all are done,
    else the first unfinished node's (what the arm is doing or waits for)."""
    if any(e.status is NodeStatus.WON for e in entries):
        return NodeStatus.WON
    if entries and all(e.status is NodeStatus.LOST for e in entries):
        return NodeStatus.LOST
    unfinished = [e for e in entries if e.status not in _DONE]
    if not unfinished:
        return NodeStatus.COMPLETED
    lost = next((e for e in unfinished if e.status is NodeStatus.LOST), None)
    return lost.status if lost is not None else unfinished[0].status


def _arms(gateway: places.Gateway, found: Progress, words: dict[str, str]) -> list[dict[str, Any]]:
    arms = []
    for index, arm in enumerate(gateway.arms):
        entries = [e for e in (found.by_place(p) for p in arm) if e is not None]
        arms.append(
            {
                "number": index + 1,
                "state": _arm_state(entries).value,
                "nodes": [
                    {
                        "name": e.name,
                        "key": places.key_of(e.name, e.place) if e.shared else e.name,
                        "status": e.status.value,
                        "branch": words.get(e.place, "") if e.shared else "",
                    }
                    for e in entries
                ],
                "paths": {e.name for e in entries if e.recorded},
            }
        )
    return arms


def _within(gateway: places.Gateway, words: dict[str, str]) -> str:
    """Where the gateway itself sits: its first node's branch words but the gateway's own."""
    first = next((arm[0] for arm in gateway.arms if arm), None)
    text = words.get(first, "") if first is not None else ""
    return text.rpartition(" › ")[0]


def _winner(race: bool, arms: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((a for a in arms if a["state"] == NodeStatus.WON.value), None) if race else None


def _settled(winner: dict[str, Any] | None, race: bool, arms: list[dict[str, Any]]) -> set[str] | None:
    """The paths whose last completion settled the gateway (a race's winner; every arm of a parallel
    once all completed), or None while it is open."""
    if race:
        return winner["paths"] if winner is not None else None
    if all(a["state"] == NodeStatus.COMPLETED.value for a in arms):
        return set().union(*(a["paths"] for a in arms))
    return None


def _outcome(winner: dict[str, Any] | None, race: bool, arms: list[dict[str, Any]], ended: bool) -> str:
    """The gateway's outcome in words: who won, that it lost with the branch it sits in, that it never
    will be decided (the execution ended first), or that it is still open."""
    states = [a["state"] for a in arms]
    if winner is not None:
        return f"won by branch {winner['number']}"
    if states and all(s == NodeStatus.LOST.value for s in states):
        return "lost: it sits in a branch that lost its race"
    if not race and all(s == NodeStatus.COMPLETED.value for s in states):
        return "every branch completed"
    if ended:
        return "never decided: the execution ended first" if race else "not every branch finished"
    return "undecided: the race goes on" if race else f"{len(arms)} branches, not all done"


async def panel(request: HttpRequest, detail: Any, flow: Flow, place: str) -> HttpResponse:
    """The fragment for the gateway drawn as `place` (its fork or its join) in the execution `detail`."""
    gateway = places.gateway(flow, place)
    found = detail.progress
    key = places.key_of("", place)
    if gateway is None or found is None:
        why = "This execution's nodes are unknown here." if found is None else "No gateway is drawn here."
        return await common.fragment(request, TEMPLATE, {"missing": why, "key": key}, status=404)
    words = places.branch_words(flow)
    arms = _arms(gateway, found, words)
    race = gateway.kind == "race"
    winner = _winner(race, arms)
    settled = _settled(winner, race, arms)
    when = None
    if settled is not None:
        engine = await runtime.engine()
        history = (await engine.store.get_history(detail.execution_id)).events
        when = progress_record.completed_at(history, settled)
    drawn = {n.id: n for n in graph.build_graph(flow, found).nodes}
    context = {
        "key": key,
        "gateway": gateway,
        "race": race,
        "side": "fork" if place == gateway.fork else "join",
        "status": drawn[place].status or NodeStatus.PENDING.value,
        "arms": arms,
        "outcome": _outcome(winner, race, arms, detail.status.terminal),
        "when": when,
        "within": _within(gateway, words),
    }
    return await common.fragment(request, TEMPLATE, context)
