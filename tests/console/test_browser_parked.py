"""The parked page in headless Chromium against the live console (PostgreSQL, workers in another process):
the demo's parked execution (`demo-parked`, under the previous `fulfilment`) shows its version beside the
newest with the added node marked (each a pan/zoom stage: the pair opens on the change and moves
together), its progress painted on its own version (opened on the node that matters most) and its resume
preview; the
execution page's resume report pairs the versions too. Waits are on conditions in the page; screenshots
go to test-artifacts/."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.api import conftest as api_support
from tests.console.conftest import DB_PREFIX, ROOT, Console, shot
from tests.console.test_browser_diagram import _in_view
from tests.store.django_support import POSTGRES_SERVER

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def parked_demo(console_live: Console) -> Console:
    """`demo-parked` seeded into the live console's database (the one `console_live` named after this
    process), as `manage.py demo` seeds it."""
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{DB_PREFIX}{os.getpid()}_console",
        "DJANGO_SETTINGS_MODULE": "tests.console.settings",
        "PYTHONPATH": str(ROOT),
    }
    api_support._run(env, "-m", "tests.console.seed_parked")
    return console_live


PREVIEW = ".parked-execution[data-execution='demo-parked'] .diagram"


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    """Two views ({s, x, y}) alike but for float noise."""
    return abs(a["s"] - b["s"]) < 1e-3 and abs(a["x"] - b["x"]) < 0.5 and abs(a["y"] - b["y"]) < 0.5


def _login(page: Any, console: Console) -> None:
    page.goto(f"{console.base}/parked/")
    assert "/login/" in page.url  # the page needs a login
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", "x")
    page.click("button[type=submit]")
    page.goto(f"{console.base}/parked/")


def _group(page: Any) -> Any:
    """The demo's parked version (other tests on the same live server park fulfilment under others)."""
    groups = page.locator("section.parked-group[data-workflow='fulfilment']")
    return groups.filter(has=page.locator("tr.parked-row[data-execution='demo-parked']"))


def _on_screen_middle(page: Any, box: dict[str, float]) -> tuple[float, float]:
    """The middle of the part of `box` that the window shows (a tall drawing may overflow it)."""
    size = page.viewport_size
    top, bottom = max(box["y"], 0), min(box["y"] + box["height"], size["height"])
    assert bottom - top > 40, f"the drawing is not on screen: {box}"
    return box["x"] + box["width"] / 2, (top + bottom) / 2


SETTLED = """() => !document.querySelector('.htmx-request')
    && [...document.querySelectorAll('.parked-group')].every(
        g => g.querySelector('.inspection')?.childElementCount > 0)
    && [...document.querySelectorAll('.diagram')].every(d => d.dataset.viewed || !d.querySelector('svg'))"""


def _settled_point_on(page: Any, stage: Any) -> tuple[float, float]:
    """A point in the middle of `stage` once the page has stopped moving: no htmx request in flight, every
    group's first inspection loaded and every drawing opened (a drawing that failed to render has no svg and
    never opens), and the stage the topmost element there."""
    page.wait_for_function(SETTLED)
    stage.evaluate("(d) => d.scrollIntoView({block: 'center'})")
    x, y = _on_screen_middle(page, stage.bounding_box())
    on_stage = stage.evaluate("(d, [x, y]) => d.contains(document.elementFromPoint(x, y))", [x, y])
    assert on_stage, f"something covers the drawing at {(x, y)}"
    return x, y


def test_the_parked_version_beside_the_newest(parked_demo: Console, page: Any) -> None:
    _login(page, parked_demo)
    group = _group(page)
    old, new = group.locator("figure.version-old svg"), group.locator("figure.version-new svg")
    old.wait_for()
    new.wait_for()
    # The newest version adds `notify`: marked there, absent from the parked version's drawing.
    added = new.locator("g.node.diff-added")
    assert added.locator("text").all_text_contents() == ["notify"]
    assert old.locator("g.node", has_text="notify").count() == 0
    assert old.locator("g.node.diff-removed, g.node.diff-changed").count() == 0
    assert group.locator(".diff-chip.diff-added").first.inner_text() == "1 added"
    assert group.locator("tr.change-added code").all_inner_texts() == ["notify"]
    # Each drawing is a pan/zoom stage: the pair opens on the change (past the right edge at a legible
    # size), both drawings showing the same part of the plan, and a drag of one moves the other.
    stages = "(group) => [...group.querySelectorAll('.version-pair .diagram')]"
    page.wait_for_function(
        f"(g) => ({stages})(g).length === 2 && ({stages})(g).every(d => d.dataset.viewed)",
        arg=group.element_handle(),
    )
    assert group.locator(".version-pair .fd-tools").count() == 2
    page.wait_for_function(
        """(group) => {
            const note = group.querySelector("figure.version-new g.node.diff-added");
            const frame = note.closest(".diagram").getBoundingClientRect();
            const box = note.getBoundingClientRect();
            return box.left >= frame.left && box.right <= frame.right;
        }""",
        arg=group.element_handle(),
    )
    views = f"(g) => ({stages})(g).map(d => window.flowdeckDiagram.view(d))"
    before = group.evaluate(views)
    assert _same(*before)
    # Other tests on this live server park fulfilment under other versions, whose groups may come first and
    # push this one below the window, and whose inspections load on their own and grow the page above it:
    # let every inspection land, bring the drawing into view, then drag from a point that is on it.
    old_stage = group.locator("figure.version-old .diagram")
    x, y = _settled_point_on(page, old_stage)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 200, y, steps=8)
    page.mouse.up()
    # The library applies a view on the next frame: wait for the drag to land (a drag that moved nothing
    # times out here), then for the other drawing to follow.
    page.wait_for_function(
        f"([g, x]) => ({views})(g)[0].x > x + 100", arg=[group.element_handle(), before[0]["x"]]
    )
    page.wait_for_function(
        f"(g) => {{ const [a, b] = ({views})(g);"
        " return Math.abs(a.x - b.x) < 0.5 && Math.abs(a.y - b.y) < 0.5; }",
        arg=group.element_handle(),
    )
    after = group.evaluate(views)
    assert after[0]["x"] > before[0]["x"] + 100  # dragged right
    assert _same(*after)  # and the newest version went with it

    # The first row's progress (on its own, stored, version) and its resume preview open with the page.
    inspection = group.locator(".parked-execution[data-execution='demo-parked']")
    inspection.wait_for()
    painted = inspection.locator("figure.version-progress svg")
    # its progress on a stage of its own, opened on the node that matters most (the last one it completed)
    page.wait_for_function("(sel) => document.querySelector(sel).dataset.viewed", arg=PREVIEW)
    assert inspection.locator(".fd-tools").count() == 1
    assert inspection.locator(".diagram").get_attribute("data-focus")
    _in_view(page, PREVIEW)
    assert inspection.locator("ul.legend li").count() > 0
    order = painted.locator("g.node", has_text="order").first
    assert order.locator("polygon").first.get_attribute("fill").lower() == "#90ee90"  # completed
    preview = inspection.locator(".resume-preview")
    assert preview.locator("code.kept").all_inner_texts() == ["order"]
    assert preview.locator("code.next").inner_text() == "total"
    assert preview.locator(".no-conflict").inner_text() == "none: it can move"
    shot(page, "parked-versions", group)

    group.locator("figure.version-new .fd-tools button[data-view=fit]").click()
    page.wait_for_function(
        """(group) => {
            const frame = group.querySelector("figure.version-new .diagram").getBoundingClientRect();
            const drawn = group.querySelector("figure.version-new .diagram svg > g").getBoundingClientRect();
            return drawn.left >= frame.left - 1 && drawn.right <= frame.right + 1;
        }""",
        arg=group.element_handle(),
    )
    assert added.is_visible()
    shot(page, "parked-versions-fitted", group)

    for width in (760, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        _group(page).locator(".parked-execution[data-execution='demo-parked'] .resume-preview").wait_for()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        shot(page, f"parked-versions-{width}", _group(page))


def test_the_resume_report_of_a_parked_execution_pairs_its_version_with_the_newest(
    parked_demo: Console, page: Any
) -> None:
    _login(page, parked_demo)
    page.goto(f"{parked_demo.base}/executions/demo-parked")
    page.click("#resume-preview")
    pair = page.locator("#action-result .version-pair")
    pair.wait_for()
    assert re.fullmatch(
        r"Its version \w+ beside the newest \w+", page.locator("#action-result h3").nth(1).inner_text(), re.I
    )
    assert pair.locator("figure.version-new g.node.diff-added text").all_text_contents() == ["notify"]
    assert "order" in page.locator("#action-result dl.facts").inner_text()
    pair.scroll_into_view_if_needed()
    shot(page, "parked-resume-report")
