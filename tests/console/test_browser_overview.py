"""The overview (the console's home) in headless Chromium against the live console (PostgreSQL, workers in
another process), under the Content-Security-Policy as a visitor's browser enforces it: a day of seeded
`counter` executions (tests/console/seed_overview.py) shows in its numbers and charts; a number clicked
lands on the executions list filtered to exactly that many; an execution started meanwhile shows without a
reload. Waits are on conditions in the page; screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

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
    """A day of `counter` executions in the live console's database (the one `console_live` named)."""
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{DB_PREFIX}{os.getpid()}_console",
        "DJANGO_SETTINGS_MODULE": "tests.console.settings",
        "PYTHONPATH": str(ROOT),
    }
    api_support._run(env, "-m", "tests.console.seed_overview")
    return console_live


@pytest.fixture
def strict(chromium: Any) -> Iterator[Any]:
    """A page that keeps the policy (no bypass) and records its violations and the page's errors."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(60_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.reports = []
    page.on("console", lambda m: page.reports.append(m.text) if "Content Security" in m.text else None)
    page.on("pageerror", lambda error: page.reports.append(f"page error: {error}"))
    yield page
    context.close()


def _violations(page: Any) -> list[str]:
    return [*page.evaluate("window.__cspViolations"), *page.reports]


def _login_home(page: Any, console: Console) -> None:
    page.goto(f"{console.base}/")
    assert "/login/" in page.url  # the home needs a login
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", "x")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == f"{console.base}/"
    page.locator("#overview-numbers").wait_for()


def _list_total(page: Any) -> int:
    found = re.search(r"of (\d+)", page.locator("#total").inner_text())
    assert found is not None
    return int(found.group(1))


def _click_and_count(page: Any, link: Any, console: Console) -> None:
    """Click a count: the list it opens says the same total and is filtered to what the link names."""
    number = int(link.inner_text())
    href = link.get_attribute("href")
    with page.expect_navigation():
        link.click()
    assert page.url == f"{console.base}{href}"
    assert _list_total(page) == number
    page.go_back()
    page.locator("#overview-numbers").wait_for()


def test_the_overview_numbers_open_the_executions_they_count(seeded: Console, strict: Any) -> None:
    page = strict
    _login_home(page, seeded)
    assert page.locator("header nav a.active").inner_text() == "Overview"
    row = page.locator("#status-counts tr[data-workflow='counter']")
    completed = row.locator("a.count[href*='status=completed']")
    assert int(completed.inner_text()) >= 20  # the seeded day
    # the charts drew bars in the last hour and over the day
    assert page.locator("#chart-hour svg rect.bar.completed").count() > 5
    assert page.locator("#chart-day svg rect.bar.started").count() > 10
    assert page.locator("#stops a.count").count() >= 2  # the seeded stops, and any other test's
    assert "ovw-open-5" in page.locator("#retrying").inner_text()
    page.screenshot(path=str(_artifact("overview")))

    _click_and_count(page, completed, seeded)
    _click_and_count(page, page.locator("#failures a.count").first, seeded)
    _click_and_count(page, page.locator("#stops a.count[href*='F0001']").first, seeded)
    _click_a_bar(page, seeded)

    # live: an execution started now shows in the counts within the refresh, with no reload
    before = int(row.locator("td.num a.count").first.inner_text())
    eid = f"ovw-live-{uuid.uuid4().hex[:6]}"
    reply = seeded.operator.post("/workflows/counter/executions", {"executionId": eid, "inputs": {}})
    assert reply.status == 200, reply.text
    row.locator("td.num a.count").first.filter(has_text=re.compile(rf"^{before + 1}$")).wait_for()
    assert _violations(page) == []

    page.set_viewport_size({"width": 800, "height": 900})
    page.screenshot(path=str(_artifact("overview-800")), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0  # nothing sticks out sideways at 800 wide


def _click_a_bar(page: Any, console: Console) -> None:
    """Click the day chart's oldest completed bar (the seeded day's, which no other test's executions
    join): the list it opens holds as many as the bar's hover text says, each completed in that hour."""
    bar = page.locator("#chart-day a.bar-link[href*='status=completed']").first
    said = bar.get_attribute("aria-label") or ""
    found = re.match(r"(\d\d):00: (\d+) completed: list the executions that completed in this hour$", said)
    assert found is not None, said
    with page.expect_navigation():
        bar.click()
    assert "updated_after=" in page.url
    assert _list_total(page) == int(found.group(2))
    assert "last changed from" in page.locator("#instant-bounds").inner_text()
    page.screenshot(path=str(_artifact("overview-bar-opened")), full_page=True)
    page.go_back()
    page.locator("#overview-numbers").wait_for()


def _artifact(name: str) -> Any:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"console-{name}.png"
