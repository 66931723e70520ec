"""The node panel in headless Chromium against a live server on PostgreSQL with its workers in another
process: a click on a node in each diagram format opens the panel and marks the node; the URL's
`#node=` opens it; the panel follows the execution over the websocket. Waits are on page conditions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.console.conftest import Console, shot
from tests.console.test_browser import _login, _order, _start, _until_waiting

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

OPEN_KEY = "document.querySelector('#node-panel').dataset.loadedKey"


def _wait_panel(page: Any, key: str) -> None:
    page.wait_for_function(
        f"() => !document.querySelector('#node-panel').hidden && {OPEN_KEY} === {json.dumps(key)}"
    )


_FIND_LABEL = """([name, mark]) => {
  // the innermost drawn label whose first line is `name` (SVG text or tspan, Mermaid's HTML label)
  const all = [...document.querySelectorAll('#diagram text, #diagram tspan, #diagram p, #diagram span')];
  const hit = all.reverse().find((el) => {
    const first = [...el.childNodes].find((n) => n.nodeType === 3 && n.textContent.trim());
    return first && first.textContent.trim() === name;
  });
  if (hit) hit.setAttribute('data-test-label', mark);
  return Boolean(hit);
}"""


def _label(page: Any, text: str) -> Any:
    """The diagram's label whose first line is `text`, to click as a person would."""
    mark = f"l{abs(hash(text))}"
    page.wait_for_function(_FIND_LABEL, arg=[text, mark])
    return page.locator(f"[data-test-label={mark}]").first


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "elk", "bpmn"])
def test_a_click_on_a_node_opens_its_panel(console_live: Console, page: Any, fmt: str) -> None:
    eid = _start(console_live, "fulfilment", {"order": _order()}, f"panel-{fmt}")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    if fmt != "mermaid":
        page.click(f"#diagram-formats button[data-format={fmt}]")
    page.wait_for_selector(f"#diagram[data-drawn={fmt}]")
    if fmt == "bpmn":  # one badge per element: an event's or a gateway's external label has none of its own
        sleeping = page.locator("#diagram .bpmn-status", has_text="sleeping")
        assert sleeping.count() == 1
    if fmt == "elk":  # the races' forks and joins are diamonds, as the other formats draw them
        assert page.locator("#diagram g.node > polygon").count() == 4
    # The drawing opens on where the order waits (`approval`); shown whole, every node is a click away.
    page.click(".fd-tools button[data-view=fit]")
    # bpmn-js lays a hit box over each shape's label, so a person's click lands on the box: click there
    force = fmt == "bpmn"
    _label(page, "reservations").click(force=force)
    _wait_panel(page, "reservations")
    assert page.evaluate("location.hash") == "#node=reservations"
    assert page.locator("#diagram .fd-selected").count() >= 1
    items = page.locator("#node-panel .node-items tbody tr")
    assert items.count() == 1
    assert "completed" in items.first.inner_text()
    # A second click, on another node, with the panel open: the page narrowed and the drawing did not move,
    # so the node still in the frame is the one a person can reach ("approval" may lie under the panel).
    _label(page, "total").click(force=force)
    _wait_panel(page, "total")
    assert "completed" in page.locator("#node-panel .node-head").inner_text()
    page.keyboard.press("Escape")
    page.wait_for_function("document.querySelector('#node-panel').hidden")
    _label(page, "approval").click(force=force)
    _wait_panel(page, "approval")
    panel = page.locator("#node-panel")
    assert "waiting" in panel.locator(".node-head").inner_text()
    assert panel.locator("form.node-signal").count() == 1
    assert panel.locator("details[data-keep=schema]").count() == 1
    shot(page, f"panel-{fmt}")
    page.keyboard.press("Escape")
    page.wait_for_function("document.querySelector('#node-panel').hidden")
    assert page.evaluate("location.hash") == ""
    assert page.locator("#diagram .fd-selected").count() == 0


def test_a_link_with_the_node_opens_the_panel(console_live: Console, page: Any) -> None:
    eid = _start(
        console_live,
        "fulfilment",
        {"order": _order(items=[{"sku": "pen", "qty": 1, "price": 500}], country="AQ")},
        "panel-link",
    )
    _login(page, console_live)
    deadline_ok = console_live.operator.get(f"/executions/{eid}")
    assert deadline_ok.status == 200
    page.goto(f"{console_live.base}/executions/{eid}")
    # the small order goes straight through, is charged, then refused by every carrier: the charge is refunded
    page.wait_for_function(
        "document.querySelector('#panel .badge').textContent.trim() === 'failed'", timeout=30_000
    )
    page.goto(f"{console_live.base}/executions/{eid}#node=payment~charge_id")
    _wait_panel(page, "payment~charge_id")
    text = page.inner_text("#node-panel")
    assert "authorise and capture the card" in text
    assert re.search(r"#1\s+completed", text)
    assert "compensation" in text.lower()
    assert "compensated" in text
    page.wait_for_selector("#diagram .fd-selected")
    page.click("#node-panel a[data-node-link=payment]")
    _wait_panel(page, "payment")
    assert page.locator("#node-panel .node-children li").count() == 4
    page.click("#node-panel .node-panel-close")
    page.wait_for_function("document.querySelector('#node-panel').hidden")
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{console_live.base}/executions/{eid}#node=payment~charge_id")
    _wait_panel(page, "payment~charge_id")
    shot(page, "panel-narrow")
    page.goto(f"{console_live.base}/executions/{eid}#node=no-such-node")
    _wait_panel(page, "no-such-node")
    assert "no such node" in page.inner_text("#node-panel").lower()


def test_the_panel_follows_the_execution_live(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "fulfilment", {"order": _order()}, "panel-live")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}#node=approval")
    _wait_panel(page, "approval")
    page.evaluate("window.__notReloaded = true")
    page.click("#node-panel details[data-keep=schema] summary")  # the operator opened the schema
    reply = console_live.operator.post(
        f"/executions/{eid}/signal/approval", raw=json.dumps({"approved": True, "by": "olga"}).encode()
    )
    assert reply.status == 200, reply.text
    page.wait_for_function(
        "document.querySelector('#node-panel .node-panel-body').dataset.nodeStatus === 'won'",
        timeout=30_000,
    )
    assert page.evaluate("window.__notReloaded") is True
    assert page.locator("#node-panel form.node-signal").count() == 0
    assert page.locator("#node-panel details[data-keep=schema]").evaluate("d => d.open") is True
    shot(page, "panel-live")


_BOXES = """() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const parts = [...document.querySelectorAll('#diagram .fd-selected')].map(box);
  return { node: [Math.min(...parts.map(p => p[0])), Math.min(...parts.map(p => p[1])),
                  Math.max(...parts.map(p => p[2])), Math.max(...parts.map(p => p[3]))],
           panel: box(document.querySelector('#node-panel')),
           frame: box(document.querySelector('#diagram')) };
}"""


def _apart(a: list[float], b: list[float]) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def _within(inner: list[float], outer: list[float]) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "elk", "bpmn"])
def test_the_panel_sits_beside_the_drawing_and_the_node_in_view(
    console_live: Console, page: Any, fmt: str
) -> None:
    """At 1400x900 the panel is beside the drawing, not over it: the drawing's frame ends where the panel
    begins, and the selected race arm is panned into that frame, clear of the panel; closing gives the
    drawing its width and its fitted view back. A link `#node=KEY` does the same."""
    page.set_viewport_size({"width": 1400, "height": 900})
    eid = _start(console_live, "fulfilment", {"order": _order()}, f"beside-{fmt}")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    if fmt != "mermaid":
        page.click(f"#diagram-formats button[data-format={fmt}]")
    page.wait_for_selector(f"#diagram[data-drawn={fmt}]")
    page.wait_for_function(f"document.querySelector('#diagram').dataset.viewed === '{fmt}'")
    fitted = page.evaluate("flowdeckDiagram.view(document.querySelector('#diagram')).s")
    width = page.evaluate("document.querySelector('#diagram').getBoundingClientRect().width")
    # approval (the person's arm of the race) lies at the drawing's right: under the panel before
    _label(page, "approval").click(force=fmt == "bpmn")
    _wait_panel(page, "approval")
    page.wait_for_function("document.querySelector('#diagram').dataset.revealed === 'approval'")
    boxes = page.evaluate(_BOXES)
    assert boxes["frame"][2] <= boxes["panel"][0] + 1, boxes  # beside, not over
    assert _apart(boxes["node"], boxes["panel"]), boxes
    assert _within(boxes["node"], boxes["frame"]), boxes
    shot(page, f"panel-race-arm-{fmt}")
    page.keyboard.press("Escape")
    page.wait_for_function("document.querySelector('#node-panel').hidden")
    page.wait_for_function(
        f"Math.abs(document.querySelector('#diagram').getBoundingClientRect().width - {width}) < 2"
    )
    restored = page.evaluate("flowdeckDiagram.view(document.querySelector('#diagram')).s")
    assert abs(restored - fitted) < 1e-6 * max(1.0, fitted), (restored, fitted)
    page.goto(f"{console_live.base}/executions/{eid}#node=approval")
    _wait_panel(page, "approval")
    page.wait_for_function("document.querySelector('#diagram').dataset.revealed === 'approval'")
    boxes = page.evaluate(_BOXES)
    assert _apart(boxes["node"], boxes["panel"]), boxes
    assert _within(boxes["node"], boxes["frame"]), boxes
    centre = (boxes["node"][0] + boxes["node"][2]) / 2
    frame_centre = (boxes["frame"][0] + boxes["frame"][2]) / 2
    assert abs(centre - frame_centre) < 0.1 * (boxes["frame"][2] - boxes["frame"][0]), boxes  # centred


VIEW = "flowdeckDiagram.view(document.querySelector('#diagram'))"


def test_a_zoomed_drawing_keeps_its_zoom_beside_the_panel_and_gets_its_view_back(
    console_live: Console, page: Any
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    eid = _start(console_live, "fulfilment", {"order": _order()}, "beside-zoom")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    page.click("#diagram-formats button[data-format=dot]")
    page.wait_for_function("document.querySelector('#diagram').dataset.viewed === 'dot'")
    fitted = page.evaluate(VIEW)
    page.click("[data-diagram-view] button[data-view=zoom-in]")  # the zoom and its record are synchronous
    zoomed = page.evaluate(VIEW)
    assert zoomed["s"] > fitted["s"]
    page.evaluate("location.hash = '#node=approval'")  # a link followed on the page
    _wait_panel(page, "approval")
    page.wait_for_function("document.querySelector('#diagram').dataset.revealed === 'approval'")
    beside = page.evaluate(VIEW)
    assert abs(beside["s"] - zoomed["s"]) < 1e-9, (beside, zoomed)  # the operator's zoom is kept
    boxes = page.evaluate(_BOXES)
    assert _apart(boxes["node"], boxes["panel"]), boxes
    assert _within(boxes["node"], boxes["frame"]), boxes
    page.keyboard.press("Escape")
    page.wait_for_function("document.querySelector('#node-panel').hidden")
    back = page.evaluate(VIEW)
    assert [round(back[k], 3) for k in "sxy"] == [round(zoomed[k], 3) for k in "sxy"]


def test_each_place_of_a_shared_name_and_each_gateway_opens_its_own_panel(
    console_live: Console, page: Any
) -> None:
    eid = _start(console_live, "fulfilment", {"order": _order()}, "panel-places")
    _until_waiting(console_live, eid)
    drawn = console_live.operator.get(f"/executions/{eid}/diagram?format=json").body["nodes"]
    auto, person, _ = [n["id"] for n in drawn if n.get("path") == "decision"]
    outer = next(n["id"] for n in drawn if n["kind"] == "race-fork")
    _login(page, console_live)
    # A link by the shared path alone opens the place its record is, and the URL then names that place.
    page.goto(f"{console_live.base}/executions/{eid}#node=decision")
    _wait_panel(page, f"decision@{auto}")
    assert page.evaluate("decodeURIComponent(location.hash)") == f"#node=decision@{auto}"
    panel = page.locator("#node-panel")
    assert "in race 1 branch 1" in panel.locator(".node-head").inner_text()
    # Only that place is marked in the drawing, not the two other `decision`s.
    page.wait_for_selector("#diagram .fd-selected")
    marked = page.evaluate(
        "[...document.querySelectorAll('#diagram .fd-selected')].map((el) => el.textContent).join(' ')"
    )
    assert marked.count("decision") == 1
    panel.locator(f"a[data-node-link='decision@{person}']").click()
    _wait_panel(page, f"decision@{person}")
    assert "Nothing ran at this place" in panel.inner_text()
    # A gateway opens a panel of its own: the outer race, undecided while a person may still answer.
    page.goto(f"{console_live.base}/executions/{eid}#node=%40{outer}")
    _wait_panel(page, f"@{outer}")
    assert "undecided" in panel.inner_text()
    assert panel.locator(".gateway-arm").count() == 2
    shot(page, "panel-gateway")
