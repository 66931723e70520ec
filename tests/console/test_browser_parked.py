"""The parked page in headless Chromium against the live console (PostgreSQL, workers in another process):
the demo's parked execution (`demo-parked`, under the previous `fulfilment`) shows its version beside the
newest with the added node marked, its progress painted on its own version and its resume preview; the
execution page's resume report pairs the versions too. Waits are on conditions in the page; screenshots
go to test-artifacts/."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.api import conftest as api_support
from tests.console.conftest import DB_PREFIX, ROOT, Console, shot
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
    # It opens scrolled to the change (past the right edge at 1:1), both drawings together.
    page.wait_for_function(
        """(group) => {
            const note = group.querySelector("figure.version-new g.node.diff-added");
            const panel = note.closest("[data-sync-scroll]").getBoundingClientRect();
            const box = note.getBoundingClientRect();
            return box.left >= panel.left && box.right <= panel.right;
        }""",
        arg=group.element_handle(),
    )
    scrolls = group.locator("[data-sync-scroll]").evaluate_all("els => els.map(e => e.scrollLeft)")
    assert scrolls[0] > 0
    assert scrolls[0] == scrolls[1] or scrolls[0] == group.locator(
        "figure.version-old [data-sync-scroll]"
    ).evaluate("e => e.scrollWidth - e.clientWidth")

    # The first row's progress (on its own, stored, version) and its resume preview open with the page.
    inspection = group.locator(".parked-execution[data-execution='demo-parked']")
    inspection.wait_for()
    painted = inspection.locator("figure.version-progress svg")
    order = painted.locator("g.node", has_text="order").first
    assert order.locator("polygon").first.get_attribute("fill").lower() == "#90ee90"  # completed
    preview = inspection.locator(".resume-preview")
    assert preview.locator("code.kept").all_inner_texts() == ["order"]
    assert preview.locator("code.next").inner_text() == "total"
    assert preview.locator(".no-conflict").inner_text() == "none: it can move"
    shot(page, "parked-versions")

    group.locator("button.fit-toggle").click()
    page.wait_for_function(
        """(group) => [...group.querySelectorAll("figure.version-new svg")].every(
            s => s.getBoundingClientRect().width <= s.parentElement.clientWidth)""",
        arg=group.element_handle(),
    )
    assert group.locator("button.fit-toggle").get_attribute("aria-pressed") == "true"
    assert added.is_visible()
    shot(page, "parked-versions-fitted")

    page.set_viewport_size({"width": 760, "height": 900})
    page.reload()
    _group(page).locator(".parked-execution[data-execution='demo-parked'] .resume-preview").wait_for()
    shot(page, "parked-versions-narrow")


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
