"""The executions list in headless Chromium against the live console (PostgreSQL), under the CSP as a
visitor's browser enforces it: three days of seeded `counter` executions (tests/console/seed_list.py) read
with their badges, failure lines, durations and relative times; the parked filter, the order and the
creation window change the URL, which reopens the same list; a view saved under a name comes back after
a reload and is deleted. At 1400x900 and at 800 px wide; screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.api import conftest as api_support
from tests.console.conftest import ARTIFACTS, DB_PREFIX, ROOT, Console
from tests.store.django_support import POSTGRES_SERVER

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture(scope="module")
def seeded(console_live: Console) -> Console:
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{DB_PREFIX}{os.getpid()}_console",
        "DJANGO_SETTINGS_MODULE": "tests.console.settings",
        "PYTHONPATH": str(ROOT),
    }
    api_support._run(env, "-m", "tests.console.seed_list")
    return console_live


def _page(chromium: Any, width: int, height: int) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(60_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.reports = []
    page.on("console", lambda m: page.reports.append(m.text) if "Content Security" in m.text else None)
    page.on("pageerror", lambda error: page.reports.append(f"page error: {error}"))
    return page


@pytest.fixture
def wide(chromium: Any) -> Iterator[Any]:
    page = _page(chromium, 1400, 900)
    yield page
    page.context.close()


@pytest.fixture
def narrow(chromium: Any) -> Iterator[Any]:
    page = _page(chromium, 800, 1000)
    yield page
    page.context.close()


def _login(page: Any, console: Console, path: str = "/executions/") -> None:
    page.goto(f"{console.base}{path}")
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", "x")
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.locator("#table table").wait_for()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"console-list-{name}.png"), full_page=True)


def _ids(page: Any) -> list[str]:
    return page.locator("#table tbody tr[data-execution-id]").evaluate_all(
        "rows => rows.map(r => r.dataset.executionId)"
    )


def _violations(page: Any) -> list[str]:
    return [*page.evaluate("window.__cspViolations"), *page.reports]


def test_the_list_reads_for_a_triager(seeded: Console, wide: Any) -> None:
    page = wide
    _login(page, seeded, "/executions/?q=order-")
    row = page.locator('tr[data-execution-id="order-0012"]')
    assert row.locator(".badge").inner_text() == "failed"
    assert row.locator(".status-detail").inner_text().startswith("PaymentDeclined: card declined")
    assert row.locator("[data-duration]").inner_text() == "1 min 35 s"
    created = row.locator("time").first
    assert re.fullmatch(r"\d+ (min|h) ago", created.inner_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", created.get_attribute("title"))
    assert page.locator('tr[data-execution-id="order-0006"] .badge').inner_text() == "running·waiting"
    # backing off a retry: a state of its own (issue 29), no longer told as sleeping
    assert page.locator('tr[data-execution-id="order-0007"] .badge').inner_text() == "running·retrying"
    wakes = page.locator('tr[data-execution-id="order-0007"] [data-deadline]').inner_text()
    assert re.fullmatch(r"wakes in (1 h|5\d min)", wakes), wakes  # the retry seeded an hour ahead
    assert page.locator('tr[data-execution-id="order-0010"] .badge').inner_text() == "cancelling"
    assert page.locator('tr[data-execution-id="order-0004"] .status-detail').inner_text() == "F0001 stuck"
    _shot(page, "wide")

    page.select_option("#status-filter", "parked")
    page.wait_for_url(re.compile(r"status=parked"))
    # locator waits, not wait_for_function: that evaluates a string, which this page's CSP (kept here,
    # its violations recorded) refuses
    expect(page.locator("#table tbody tr[data-execution-id]")).to_have_count(1)
    assert _ids(page) == ["order-0000-parked"]
    assert page.locator("#table .badge").inner_text() == "parked"

    page.select_option("#status-filter", "")
    page.select_option("#sort", "updated")
    page.wait_for_url(re.compile(r"sort=updated"))
    page.locator("th[aria-sort=descending]", has_text="Updated").wait_for()
    first = _ids(page)[0]
    assert first == "order-0012"  # the latest change: its failure, after order-0010's cancel request
    # the day holding "36 h ago": after the parked execution, before the newest (tests/console/seed_list.py)
    yesterday = (datetime.now(UTC) - timedelta(hours=36)).date().isoformat()
    page.fill("#created-from", yesterday)
    page.fill("#created-to", yesterday)
    page.wait_for_url(re.compile(rf"created_from={yesterday}&created_to={yesterday}"))
    expect(page.locator('#table tbody tr[data-execution-id="order-0012"]')).to_have_count(0)
    windowed = _ids(page)
    assert windowed
    assert not {"order-0012", "order-0000-parked"} & set(windowed)
    shared = page.url
    page.goto(shared)  # the URL is the whole view
    assert _ids(page) == windowed
    assert page.locator("#sort").input_value() == "updated"
    assert page.locator("#created-from").input_value() == yesterday

    page.fill("#saved-view-name", "yesterday, latest change <first>")
    with page.expect_navigation():
        page.click("#save-view-button")
    view = page.locator(".saved-view.current a")
    assert view.inner_text() == "yesterday, latest change <first>"
    page.goto(f"{seeded.base}/executions/")
    with page.expect_navigation():
        page.click('[data-saved-view="yesterday, latest change <first>"]')
    assert _ids(page) == windowed
    _shot(page, "saved-view")
    with page.expect_navigation():
        page.click(".saved-view.current button")
    assert page.locator("#no-saved-views").is_visible()
    assert _ids(page) == windowed  # deleting a view leaves the list as it was
    assert _violations(page) == []


def test_the_list_at_800_px(seeded: Console, narrow: Any) -> None:
    page = narrow
    _login(page, seeded, "/executions/?q=order-")
    assert page.evaluate("document.documentElement.scrollWidth") <= 800  # the table scrolls, not the page
    clipped = page.evaluate(
        "(() => { const s = document.querySelector('.list-scroll'); "
        "return s.scrollWidth - s.clientWidth; })()"
    )
    assert clipped <= 0  # and every column, Updated too, fits without scrolling (the version gives way)
    assert not page.locator("table.executions th:nth-child(4)").is_visible()
    assert page.locator("#status-filter").is_visible()
    assert page.locator("#save-view-button").is_visible()
    _shot(page, "800")
    assert _violations(page) == []
