"""The diagram viewer in headless Chromium (static/console/diagram-view.js): it opens fitted to its card
with no label under 11 px, the wheel, the buttons and a drag steer it, a click on a node still arrives, a
live repaint keeps the operator's view, every format draws on the execution and the workflow page, and a
sixty-node flow stays usable. A live server on PostgreSQL with its workers in another process; every wait
is on a condition in the page. Screenshots go to test-artifacts/ (1400×900 and 800 px wide)."""

from __future__ import annotations

from typing import Any

import pytest

from flowdeck.engine.render.common import COLOURS
from tests.console.conftest import Console, shot
from tests.console.test_browser import _login, _order, _start, _until_waiting

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

FORMATS = ("mermaid", "dot", "bpmn", "elk")
MIN_TEXT_PX = 11

# The smallest label on screen in CSS px, measured as the browser draws it: the computed font size of
# each text-bearing element times the scale of its screen transform (a foreignObject's for HTML labels).
SMALLEST_TEXT = """(sel) => {
  let least = Infinity;
  document.querySelectorAll(sel + " text, " + sel + " tspan, " + sel + " foreignObject *").forEach((el) => {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) return;
    const host = el.closest("foreignObject") || el;
    const m = host.getScreenCTM();
    least = Math.min(least, parseFloat(getComputedStyle(el).fontSize) * Math.hypot(m.a, m.b));
  });
  return least;
}"""

# The drawing's extent on screen against its frame's.
EXTENT = """(sel) => {
  const frame = document.querySelector(sel).getBoundingClientRect();
  const drawn = document.querySelector(sel + " .drawing svg > g");
  const r = drawn.getBoundingClientRect();
  return {frame: [frame.left, frame.top, frame.right, frame.bottom],
          drawn: [r.left, r.top, r.right, r.bottom]};
}"""

# The frame of `sel` and the box of the node its `data-focus` names, drawn in any format (DOT's group,
# ELK's data-id, Mermaid's flowchart id, BPMN's element), on screen.
FOCUS = """(sel) => {
  const target = document.querySelector(sel);
  const id = target.dataset.focus;
  const tail = new RegExp("(?:^|-)flowchart-" + id + "-\\\\d+$");
  const parts = [
    ...target.querySelectorAll(`g#fd-${id}, g.node[data-id="${id}"], g.djs-element[data-element-id="${id}"]`),
    ...[...target.querySelectorAll("g.node[id]")].filter((g) => tail.test(g.id)),
  ].map((el) => el.getBoundingClientRect()).filter((r) => r.width && r.height);
  if (!parts.length) return null;
  const f = target.getBoundingClientRect();
  return {frame: [f.left, f.top, f.right, f.bottom],
          node: [Math.min(...parts.map((r) => r.left)), Math.min(...parts.map((r) => r.top)),
                 Math.max(...parts.map((r) => r.right)), Math.max(...parts.map((r) => r.bottom))]};
}"""


VIEW = "(sel) => window.flowdeckDiagram.view(document.querySelector(sel))"


def _show(page: Any, tabs: str, sel: str, fmt: str) -> None:
    renders = page.evaluate(f"Number(document.querySelector('{sel}').dataset.renders || 0)")
    page.click(f"#{tabs} button[data-format={fmt}]")
    page.wait_for_function(
        "([sel, fmt, n]) => { const d = document.querySelector(sel);"
        " return d.dataset.viewed === fmt && Number(d.dataset.renders) > n; }",
        arg=[sel, fmt, renders],
    )


def _opened(page: Any, sel: str) -> None:
    """Until the page's first drawing (Mermaid, drawn in the browser: slow on a loaded machine) is shown."""
    page.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.viewed === 'mermaid'", arg=sel, timeout=45_000
    )


def _view(page: Any, sel: str = "#diagram") -> dict[str, float]:
    view: dict[str, float] = page.evaluate(VIEW, sel)
    return view


def _inside(extent: dict[str, list[float]], slack: float = 1.0) -> bool:
    f, d = extent["frame"], extent["drawn"]
    return d[0] >= f[0] - slack and d[1] >= f[1] - slack and d[2] <= f[2] + slack and d[3] <= f[3] + slack


def _in_view(page: Any, sel: str = "#diagram") -> None:
    """The node that matters most (the frame's `data-focus`: engine/focus.py) lies inside the frame."""
    box = page.evaluate(FOCUS, sel)
    assert box is not None, "the node that matters is not drawn"
    f, n = box["frame"], box["node"]
    assert n[0] >= f[0] - 1, box
    assert n[1] >= f[1] - 1, box
    assert n[2] <= f[2] + 1, box
    assert n[3] <= f[3] + 1, box


def _waiting_order(console: Console, page: Any) -> str:
    eid = _start(console, "fulfilment", {"order": _order()}, "view")
    _until_waiting(console, eid)
    _login(page, console)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{console.base}/executions/{eid}")
    _opened(page, "#diagram")
    return eid


def test_every_format_opens_fitted_with_legible_text_and_one_html_legend(
    console_live: Console, page: Any
) -> None:
    _waiting_order(console_live, page)
    legend = page.locator("#diagram-legend li").evaluate_all("(items) => items.map((i) => i.dataset.status)")
    assert legend == [str(status) for status in COLOURS]  # the palette, whatever it holds, in its order
    for fmt in FORMATS:
        if fmt != "mermaid":
            _show(page, "diagram-formats", "#diagram", fmt)
        smallest = page.evaluate(SMALLEST_TEXT, "#diagram")
        assert MIN_TEXT_PX - 0.05 <= smallest <= 16, f"{fmt}: smallest label {smallest:.1f}px"
        extent = page.evaluate(EXTENT, "#diagram")
        # it fits the card, or it is as small as legible text allows, centred on where the order waits
        assert _inside(extent) or abs(smallest - MIN_TEXT_PX) < 0.1, f"{fmt}: {extent}"
        if not _inside(extent):
            _in_view(page)
        drawn_text = page.text_content("#diagram") or ""
        assert "Legend" not in drawn_text, f"{fmt} draws a legend of its own"
        assert "order" in drawn_text
        assert "payment" in drawn_text
        shot(page, f"viewer-execution-{fmt}")


def test_wheel_buttons_and_drag_steer_it_in_svg_and_in_bpmn(console_live: Console, page: Any) -> None:
    _waiting_order(console_live, page)
    for fmt in ("dot", "bpmn"):
        _show(page, "diagram-formats", "#diagram", fmt)
        box = page.locator("#diagram").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

        opened = _view(page)
        page.mouse.move(cx, cy)
        page.mouse.wheel(0, -300)
        page.wait_for_function(f"({VIEW})('#diagram').s > {opened['s'] * 1.05}")

        for button, check in (
            ("zoom-in", lambda before, after: after["s"] > before["s"] * 1.2),
            ("zoom-out", lambda before, after: after["s"] < before["s"] / 1.2),
            ("actual", lambda before, after: abs(after["s"] - 1) < 0.01),
        ):
            before = _view(page)
            page.click(f".fd-tools button[data-view={button}]")
            page.wait_for_function(f"({VIEW})('#diagram').s !== {before['s']}")
            assert check(before, _view(page)), f"{fmt} {button}: {before} → {_view(page)}"
        page.click(".fd-tools button[data-view=fit]")
        page.wait_for_function(f"(() => {{ const e = ({EXTENT})('#diagram'); return {_INSIDE_JS}; }})()")
        assert page.inner_text(".fd-tools [data-view-zoom]").endswith("%")

        before = _view(page)
        page.mouse.move(cx, cy)
        page.mouse.down()
        page.mouse.move(cx - 60, cy - 25, steps=6)
        page.mouse.move(cx - 120, cy - 50, steps=6)
        page.mouse.up()
        after = _view(page)
        assert after["s"] == pytest.approx(before["s"])
        assert after["x"] - before["x"] == pytest.approx(-120, abs=3), f"{fmt}: {before} → {after}"
        assert after["y"] - before["y"] == pytest.approx(-50, abs=3), f"{fmt}: {before} → {after}"

        page.click(".fd-tools button[data-view=full]")
        page.wait_for_function(
            "document.fullscreenElement?.matches('[data-diagram-view]') ||"
            " !!document.querySelector('[data-diagram-view].fd-full')"
        )
        page.wait_for_function("document.querySelector('#diagram').clientHeight > 700")
        shot(page, f"viewer-fullscreen-{fmt}")
        page.click(".fd-tools button[data-view=full]")
        page.wait_for_function(
            "!document.fullscreenElement && !document.querySelector('[data-diagram-view].fd-full')"
        )


_INSIDE_JS = (
    "e.drawn[0] >= e.frame[0] - 1 && e.drawn[1] >= e.frame[1] - 1"
    " && e.drawn[2] <= e.frame[2] + 1 && e.drawn[3] <= e.frame[3] + 1"
)

RECORD_CLICKS = """() => {
  window.__clicks = [];
  document.querySelector('#diagram').addEventListener('click', (e) => {
    const node = e.target.closest('g.node, .djs-element');
    window.__clicks.push(node ? (node.dataset.elementId || node.id || 'node') : 'frame');
  });
  window.__renders = [];
  window.flowdeckDiagram.onRender((container, format, drawing) =>
    window.__renders.push([container.id, format, Boolean(drawing)]));
}"""


def test_a_click_on_a_node_arrives_and_a_drag_is_no_click(console_live: Console, page: Any) -> None:
    _waiting_order(console_live, page)
    page.evaluate(RECORD_CLICKS)
    # the node the drawing opens on (where the order waits), in each format's own markup
    focus = page.get_attribute("#diagram", "data-focus")
    nodes = {
        "dot": f"#diagram g#fd-{focus}",
        "bpmn": f"#diagram .djs-shape[data-element-id={focus}]",
        "elk": f"#diagram g.node[data-id={focus}]",
    }
    for fmt, node in nodes.items():
        _show(page, "diagram-formats", "#diagram", fmt)
        assert page.evaluate("window.__renders.at(-1)") == ["diagram", fmt, True]  # the hook
        page.evaluate("window.__clicks = []")
        target = page.locator(node).nth(0)
        target.click()
        page.wait_for_function("window.__clicks.length === 1")
        assert page.evaluate("window.__clicks[0]") != "frame", fmt
        b = target.bounding_box()
        x, y = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 40, y + 10, steps=5)
        page.mouse.up()
        page.locator(node).nth(0).click()  # a click after the drag arrives: only the drag's own was dropped
        page.wait_for_function("window.__clicks.length === 2")


def test_a_live_repaint_keeps_the_operator_s_zoom_and_pan(console_live: Console, page: Any) -> None:
    eid = _waiting_order(console_live, page)
    _show(page, "diagram-formats", "#diagram", "dot")
    page.click(".fd-tools button[data-view=zoom-in]")
    box = page.locator("#diagram").bounding_box()
    page.mouse.move(box["x"] + 400, box["y"] + 150)
    page.mouse.down()
    page.mouse.move(box["x"] + 300, box["y"] + 120, steps=5)
    page.mouse.up()
    chosen = _view(page)
    renders = page.evaluate("Number(document.querySelector('#diagram').dataset.renders)")
    reply = console_live.operator.post(f"/executions/{eid}/signal/approval", {"approved": True, "by": "ann"})
    assert reply.status == 200, reply.text
    page.wait_for_function(
        """(n) => Number(document.querySelector('#diagram').dataset.renders) > n &&
             [...document.querySelectorAll('#diagram svg g.node')].some(g =>
               g.textContent.includes('approval') && /(completed|won)/.test(g.textContent))""",
        arg=renders,
    )
    kept = _view(page)
    assert kept == pytest.approx(chosen, abs=0.5)
    shot(page, "viewer-live-kept")


# Count badges that stick out of the diagram's frame.
CLIPPED = """(sel) => {
  const f = document.querySelector('#workflow-diagram').getBoundingClientRect();
  return [...document.querySelectorAll(sel)].map((b) => b.getBoundingClientRect())
    .filter((r) => r.top < f.top || r.left < f.left || r.right > f.right || r.bottom > f.bottom)
    .map((r) => [r.left, r.top, r.right, r.bottom]);
}"""


def test_the_workflow_page_draws_every_format_with_whole_count_badges(
    console_live: Console, page: Any
) -> None:
    _waiting_order(console_live, page)
    page.goto(f"{console_live.base}/workflows/fulfilment/")
    _opened(page, "#workflow-diagram")
    offered = page.locator("#workflow-formats button").evaluate_all("(bs) => bs.map((b) => b.dataset.format)")
    assert offered == list(FORMATS)
    for fmt in FORMATS:
        if fmt != "mermaid":
            _show(page, "workflow-formats", "#workflow-diagram", fmt)
        badge = "#workflow-diagram .bpmn-count" if fmt == "bpmn" else "#workflow-diagram .fd-count"
        page.locator(badge).first.wait_for()
        smallest = page.evaluate(SMALLEST_TEXT, "#workflow-diagram")
        assert smallest >= MIN_TEXT_PX - 0.05, f"{fmt}: {smallest}"
        shot(page, f"viewer-workflow-{fmt}")
        page.click(".fd-tools button[data-view=fit]")  # whole: a badge on a corner node is not cut off
        inside = f"(() => {{ const e = ({EXTENT})('#workflow-diagram'); return {_INSIDE_JS}; }})()"
        page.wait_for_function(inside)
        clipped = page.evaluate(CLIPPED, badge)
        assert clipped == [], f"{fmt}: badges cut by the frame: {clipped}"


def test_a_sixty_node_flow_opens_legible_and_pans(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "sixty", {}, "sixty")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{console_live.base}/executions/{eid}")
    _opened(page, "#diagram")
    for fmt in FORMATS:
        if fmt != "mermaid":
            _show(page, "diagram-formats", "#diagram", fmt)
        assert page.evaluate(SMALLEST_TEXT, "#diagram") >= MIN_TEXT_PX - 0.05, fmt
        nodes = page.evaluate("document.querySelectorAll('#diagram g.node, #diagram .djs-shape').length")
        assert nodes >= 60, f"{fmt}: {nodes} nodes drawn"
        extent = page.evaluate(EXTENT, "#diagram")
        assert extent["drawn"][0] >= extent["frame"][0] - 1  # opens at the flow's start
        shot(page, f"viewer-sixty-{fmt}")
    _show(page, "diagram-formats", "#diagram", "dot")
    before = _view(page)
    box = page.locator("#diagram").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 50, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 50, box["y"] + 100, steps=10)
    page.mouse.up()
    assert _view(page)["x"] < before["x"] - 500  # dragged along the flow
    page.click(".fd-tools button[data-view=fit]")
    page.wait_for_function(f"(() => {{ const e = ({EXTENT})('#diagram'); return {_INSIDE_JS}; }})()")
    shot(page, "viewer-sixty-fit")


def test_narrow_pages_keep_the_toolbar_and_legible_text(console_live: Console, page: Any) -> None:
    eid = _waiting_order(console_live, page)
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{console_live.base}/executions/{eid}")
    _opened(page, "#diagram")
    assert page.evaluate(SMALLEST_TEXT, "#diagram") >= MIN_TEXT_PX - 0.05
    tools = page.locator(".fd-tools").bounding_box()
    frame = page.locator("#diagram").bounding_box()
    assert tools["x"] >= frame["x"]
    assert tools["x"] + tools["width"] <= frame["x"] + frame["width"]
    shot(page, "viewer-narrow-execution")
    _show(page, "diagram-formats", "#diagram", "bpmn")
    shot(page, "viewer-narrow-execution-bpmn")
    page.goto(f"{console_live.base}/workflows/fulfilment/")
    _opened(page, "#workflow-diagram")
    shot(page, "viewer-narrow-workflow")


def test_a_live_repaint_keeps_the_view_in_bpmn_too(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "sixty", {}, "sixtylive")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{console_live.base}/executions/{eid}")
    _opened(page, "#diagram")
    _show(page, "diagram-formats", "#diagram", "bpmn")
    page.click(".fd-tools button[data-view=zoom-out]")
    box = page.locator("#diagram").bounding_box()
    page.mouse.move(box["x"] + 600, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 500, box["y"] + 90, steps=5)
    page.mouse.up()
    chosen = _view(page)
    renders = page.evaluate("Number(document.querySelector('#diagram').dataset.renders)")
    reply = console_live.operator.post(f"/executions/{eid}/signal/go", True)
    assert reply.status == 200, reply.text
    page.wait_for_function(
        """(n) => Number(document.querySelector('#diagram').dataset.renders) > n &&
             document.querySelectorAll('#diagram .djs-element.fd-completed').length >= 2""",
        arg=renders,
    )
    assert _view(page) == pytest.approx(chosen, abs=0.5)
    page.wait_for_function(  # the last repaint arrives too: every step painted completed
        "document.querySelectorAll('#diagram .djs-element.fd-completed').length >= 61"
        " && !document.querySelector('#diagram .djs-element.fd-running')"
    )
    assert _view(page) == pytest.approx(chosen, abs=0.5)
    assert page.locator("#diagram .drawing").count() == 1
    shot(page, "viewer-live-kept-bpmn")


# BPMN as it opens: each badge's box against the frame's (vertically all of them; a flow too wide for the
# card opens at its start to be panned sideways, so horizontally the topmost one), and how much of the
# frame the drawing fills.
BPMN_FIT = """([sel, badge]) => {
  const f = document.querySelector(sel).getBoundingClientRect();
  const inFrame = (r) => r.left >= f.left - 1 && r.right <= f.right + 1;
  const badges = [...document.querySelectorAll(sel + ' ' + badge)].map((b) => b.getBoundingClientRect());
  const cut = badges.filter((r) => r.top < f.top - 1 || r.bottom > f.bottom + 1)
    .map((r) => [r.left, r.top, r.right, r.bottom]);
  const top = badges.reduce((a, r) => (a && a.top <= r.top ? a : r), null);
  const d = document.querySelector(sel + ' .djs-container svg g.viewport').getBoundingClientRect();
  const w = Math.min(d.right, f.right) - Math.max(d.left, f.left);
  const h = Math.min(d.bottom, f.bottom) - Math.max(d.top, f.top);
  return {cut, topInside: Boolean(top) && top.top >= f.top && top.bottom <= f.bottom && inFrame(top),
          fillW: w / f.width, fillH: h / f.height, frame: [f.width, f.height]};
}"""


@pytest.mark.parametrize("where", ["execution", "workflow"])
def test_bpmn_opens_with_its_badges_inside_a_frame_it_fills(
    console_live: Console, page: Any, where: str
) -> None:
    _waiting_order(console_live, page)
    sel, tabs, badge = "#diagram", "diagram-formats", ".bpmn-status"
    if where == "workflow":
        page.goto(f"{console_live.base}/workflows/fulfilment/")
        sel, tabs, badge = "#workflow-diagram", "workflow-formats", ".bpmn-count"
        _opened(page, sel)
    _show(page, tabs, sel, "bpmn")
    page.locator(f"{sel} {badge}").first.wait_for()
    fit = page.evaluate(BPMN_FIT, [sel, badge])
    shot(page, f"bpmn-fit-{where}")
    assert fit["cut"] == [], f"badges cut by the frame's top or bottom: {fit}"
    assert fit["topInside"], fit
    assert max(fit["fillW"], fit["fillH"]) >= 0.5, fit
    assert min(fit["fillW"], fit["fillH"]) >= 0.5, fit  # nor a thin strip across a tall card
