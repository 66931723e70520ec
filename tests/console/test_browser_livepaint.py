"""A live event repaints the execution's diagram in place (static/console/live-paint.js, bench W10): the
drawing stays the same element, only its node's colour and label change, in DOT and in BPMN. Headless
Chromium on a live server on PostgreSQL with its workers in another process; waits are on the page."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.engine.render.common import COLOURS
from tests.console.conftest import Console, shot
from tests.console.test_browser_diagram import _show, _waiting_order

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

# The approval is an arm of fulfilment's race (approval or a timeout): approved, it is the won arm.
WON = COLOURS["won"].lower()

# The graph id of the node named `name`, from the page's own JSON diagram (the node panel's URL).
GRAPH_ID = """async (name) => {
  const url = document.querySelector('[data-graph-url]').dataset.graphUrl;
  const graph = await (await fetch(url, { credentials: 'same-origin' })).json();
  return graph.nodes.find((n) => n.name === name).id;
}"""

# Marks the drawing now shown, so that a redraw (a new element) is told apart from a repaint.
MARK = """() => {
  const d = document.querySelector('#diagram');
  window.__drawing = d.querySelector('.drawing svg');
  window.__viewer = window.flowdeckDiagram.drawing(d);
  return Number(d.dataset.renders);
}"""


def _approve(console: Console, eid: str) -> None:
    reply = console.operator.post(f"/executions/{eid}/signal/approval", {"approved": True, "by": "ann"})
    assert reply.status == 200, reply.text


def test_a_live_event_repaints_the_dot_drawing_in_place(console_live: Console, page: Any) -> None:
    eid = _waiting_order(console_live, page)
    _show(page, "diagram-formats", "#diagram", "dot")
    gid = page.evaluate(GRAPH_ID, "approval")
    node = f"#diagram svg g#fd-{gid}"
    assert page.evaluate(f"document.querySelector('{node} polygon, {node} path').getAttribute('fill')") != (
        WON
    )
    renders = page.evaluate(MARK)
    _approve(console_live, eid)
    page.wait_for_function(
        """([sel, fill, n]) => {
             const g = document.querySelector(sel);
             const shape = g && g.querySelector('polygon, path, ellipse');
             return Number(document.querySelector('#diagram').dataset.renders) > n && shape &&
               shape.getAttribute('fill').toLowerCase() === fill &&
               [...g.querySelectorAll('text')].some((t) => t.textContent === 'won');
           }""",
        arg=[node, WON, renders],
    )
    # The same <svg> element: painted, not redrawn (a redraw builds a new one from a new Graphviz run).
    assert page.evaluate("document.querySelector('#diagram .drawing svg') === window.__drawing")
    assert page.locator("#diagram .drawing").count() == 1
    shot(page, "live-paint-dot")


def test_a_live_event_repaints_the_bpmn_drawing_in_place(console_live: Console, page: Any) -> None:
    eid = _waiting_order(console_live, page)
    _show(page, "diagram-formats", "#diagram", "bpmn")
    gid = page.evaluate(GRAPH_ID, "approval")
    element = f'#diagram .djs-element[data-element-id="{gid}"]'
    assert not page.locator(f"{element}.fd-won").count()
    renders = page.evaluate(MARK)
    _approve(console_live, eid)
    page.wait_for_function(
        """([sel, fill, n]) => {
             const el = document.querySelector(sel);
             const visual = el && el.querySelector('.djs-visual > :first-child');
             const colour = visual && getComputedStyle(visual).fill;
             const probe = document.createElement('i');
             probe.style.color = fill;
             document.body.appendChild(probe);
             const wanted = getComputedStyle(probe).color;
             probe.remove();
             return Number(document.querySelector('#diagram').dataset.renders) > n &&
               el.classList.contains('fd-won') && colour === wanted;
           }""",
        arg=[element, WON, renders],
    )
    # The same viewer and its same <svg>: the operator's view and bpmn-js's state stay.
    assert page.evaluate(
        "window.flowdeckDiagram.drawing(document.querySelector('#diagram')) === window.__viewer"
        " && document.querySelector('#diagram .drawing svg') === window.__drawing"
    )
    badge = page.locator(f'#diagram .djs-overlays[data-container-id="{gid}"] .bpmn-status')
    assert badge.all_text_contents() == ["won"]
    shot(page, "live-paint-bpmn")


def test_the_live_paint_needs_no_fetch_of_the_progress(console_live: Console, page: Any) -> None:
    """The progress comes with the websocket's message: the diagram's JSON route is refused from the
    moment the page is drawn, and the approval is painted all the same, with no request to it."""
    eid = _waiting_order(console_live, page)
    _show(page, "diagram-formats", "#diagram", "dot")
    gid = page.evaluate(GRAPH_ID, "approval")
    node = f"#diagram svg g#fd-{gid}"
    asked: list[str] = []

    def refuse(route: Any) -> None:
        asked.append(route.request.url)
        route.abort()

    waits = "() => (document.querySelector('#panel ul.waits') || {textContent: ''}).textContent"
    assert "approval" in page.evaluate(waits)
    page.wait_for_function("() => document.querySelector('#timeline .tl-grid')")
    timeline = "() => document.querySelector('#timeline').innerText"
    assert "sleeping" in page.evaluate(timeline)  # the race's other arm, the grace period
    page.route("**/diagram?format=json*", refuse)
    renders = page.evaluate(MARK)
    _approve(console_live, eid)
    page.wait_for_function(
        """([sel, fill, n]) => {
             const g = document.querySelector(sel);
             const shape = g && g.querySelector('polygon, path, ellipse');
             return Number(document.querySelector('#diagram').dataset.renders) > n && shape &&
               shape.getAttribute('fill').toLowerCase() === fill;
           }""",
        arg=[node, WON, renders],
    )
    assert page.evaluate("document.querySelector('#diagram .drawing svg') === window.__drawing")
    # The panel and the timeline follow too (refetched after the paint): nothing waits or sleeps any more.
    page.wait_for_function(f"() => !({waits})().includes('approval')")
    page.wait_for_function(f"() => !({timeline})().includes('sleeping')")
    assert asked == []
    shot(page, "live-paint-pushed")
