"""Issue 29 points 3 and 6 in headless Chromium against the live console (PostgreSQL, workers in another
process): the diagram opens on the node that matters most (a failed or stopped fulfilment's node lies in
the frame on open, beside the node panel and in full screen, in every format), and the layouts hold (a
200-character id and a 3,000-character unbroken message never widen the page at 1440, 1280 or 390 px; at
390 px every navigation item is in sight and the list's ids read as words, not one letter a line). Every
wait is on the page's own markers (`data-viewed`, `data-opens`), every assertion on geometry."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.console.conftest import Console, shot
from tests.console.test_browser import _login
from tests.console.test_browser_diagram import FORMATS, MIN_TEXT_PX, SMALLEST_TEXT, _in_view, _opened, _show

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

WIDTHS = (1440, 1280, 390)
NAV = ("Overview", "Executions", "Workflows", "Parked", "Schedules", "Health", "Activity")


def _small_order(**extra: Any) -> dict[str, Any]:
    """Under the approval threshold: no race to wait on, the order runs to payment and shipping."""
    lines = [{"sku": "widget", "qty": 1, "price": 400}]
    return {"id": f"o-{uuid.uuid4().hex[:6]}", "customer": "ada", "items": lines, **extra}


def _ended(console: Console, inputs: dict[str, Any], wanted: str, eid: str | None = None) -> str:
    eid = eid or f"layout-{uuid.uuid4().hex[:8]}"
    reply = console.operator.post(
        "/workflows/fulfilment/executions", {"executionId": eid, "inputs": {"order": inputs}}
    )
    assert reply.status == 200, reply.text
    console.operator.until_status(eid, wanted)
    return eid


def _graph_id(console: Console, eid: str, path: str) -> str:
    """The graph id of the node at durable `path` (the JSON progress names it); it is the document's
    `focus` too."""
    doc = console.operator.get(f"/executions/{eid}/diagram", query="format=json").body
    (node,) = [n for n in doc["nodes"] if n.get("path") == path]
    assert doc["focus"] == node["id"]
    return str(node["id"])


def _reopened(page: Any, before: str) -> None:
    page.wait_for_function(
        "(n) => Number(document.querySelector('#diagram').dataset.opens) > n", arg=int(before or 0)
    )


def _opens(page: Any) -> str:
    return str(page.evaluate("document.querySelector('#diagram').dataset.opens || '0'"))


@pytest.mark.parametrize(
    ("inputs", "status", "path"),
    [
        (_small_order(card="declined"), "failed", "payment~charge_id"),
        (_small_order(country="Atlantis"), "stopped", "ship"),
    ],
    ids=["declined", "stopped"],
)
def test_the_diagram_opens_on_the_node_that_matters(
    console_live: Console, page: Any, inputs: dict[str, Any], status: str, path: str
) -> None:
    eid = _ended(console_live, inputs, status)
    focus = _graph_id(console_live, eid, path)
    _login(page, console_live)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{console_live.base}/executions/{eid}")
    _opened(page, "#diagram")
    assert page.get_attribute("#diagram", "data-focus") == focus
    for fmt in FORMATS:
        if fmt != "mermaid":
            _show(page, "diagram-formats", "#diagram", fmt)
        assert page.evaluate(SMALLEST_TEXT, "#diagram") >= MIN_TEXT_PX - 0.05, fmt  # legible, not shrunk
        _in_view(page)
        shot(page, f"layout-{status}-{fmt}")
    _show(page, "diagram-formats", "#diagram", "mermaid")

    # Beside the node panel (it narrows the page at this width) and once it closes again.
    before = _opens(page)
    page.evaluate("(key) => { location.hash = '#node=' + encodeURIComponent(key); }", path)
    page.locator("#node-panel").wait_for(state="visible")
    _reopened(page, before)
    page.wait_for_function("(key) => document.querySelector('#diagram').dataset.revealed === key", arg=path)
    _in_view(page)
    shot(page, f"layout-{status}-panel")
    before = _opens(page)
    page.click(".node-panel-close")
    _reopened(page, before)
    _in_view(page)

    # Full screen (or the whole window where the Fullscreen API is refused).
    before = _opens(page)
    page.click(".fd-tools button[data-view=full]")
    _reopened(page, before)
    assert page.evaluate("document.querySelector('#diagram').clientWidth") >= 1400
    _in_view(page)
    shot(page, f"layout-{status}-fullscreen")


def test_long_ids_and_unbroken_messages_keep_the_page_within_the_screen(
    console_live: Console, page: Any
) -> None:
    eid = f"{'x' * 191}-{uuid.uuid4().hex[:8]}"
    assert len(eid) == 200
    _ended(console_live, _small_order(card="declined", id="o-" + "9" * 3000), "failed", eid)
    _login(page, console_live)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for url in (f"/executions/{eid}", f"/executions/?q={eid[:150]}"):
            page.goto(f"{console_live.base}{url}")
            if url.startswith(f"/executions/{eid}"):
                _opened(page, "#diagram")
            else:
                page.locator(f"tr[data-execution-id='{eid}']").wait_for()
            wide = page.evaluate("document.scrollingElement.scrollWidth")
            assert wide <= page.evaluate("innerWidth"), f"{url[:30]} at {width}: {wide} px wide"
        # The list's id reads as lines of text, not one letter a line, and leaves the other columns in
        # sight where the screen has room for them (a phone shows cards).
        if width > 390:
            hidden = page.evaluate(
                "(() => { const s = document.querySelector('.list-scroll');"
                " return s.scrollWidth - s.clientWidth; })()"
            )
            assert hidden <= 0, f"the list hides {hidden} px at {width}"
        link = page.locator(f"tr[data-execution-id='{eid}'] a").bounding_box()
        assert link["width"] >= 150, link  # some twenty characters a line at least
        shot(page, f"layout-long-id-list-{width}")


def test_every_navigation_item_is_in_sight_at_390_px(console_live: Console, page: Any) -> None:
    _login(page, console_live)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console_live.base}/executions/")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    for name in NAV:
        link = page.locator("header.top nav a", has_text=name)
        box = link.bounding_box()
        assert box is not None, name
        assert box["x"] >= 0, (name, box)
        assert box["x"] + box["width"] <= 390, (name, box)
        # nothing lies over it: a tap at its centre reaches it
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y)?.closest('nav a')?.getAttribute('href')",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert hit == link.get_attribute("href"), name
    shot(page, "layout-nav-390")
    page.locator("header.top nav a", has_text="Parked").click()
    page.wait_for_url("**/parked/")


def test_every_page_keeps_within_a_phone_s_screen(console_live: Console, page: Any) -> None:
    """The overview's charts and counts, the health page's worker table, the other pages' tables: each
    scrolls inside its card at 390 px, never widening the page (the overview was 552 px, health 766)."""
    _ended(console_live, _small_order(card="declined"), "failed", f"wide-{uuid.uuid4().hex[:8]}")
    _login(page, console_live)
    page.set_viewport_size({"width": 390, "height": 844})
    for url in ("/", "/health/", "/workflows/", "/parked/", "/activity/", "/account/"):
        page.goto(f"{console_live.base}{url}")
        page.wait_for_load_state("networkidle")
        wide = page.evaluate("document.scrollingElement.scrollWidth")
        assert wide <= 390, f"{url} at 390: {wide} px wide"
