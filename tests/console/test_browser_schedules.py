"""The Schedules pages in headless Chromium against the live console (PostgreSQL, workers in another
process): a schedule made through the API is listed with its next run in its zone, its page pauses and
triggers it through its forms (the trigger's run links to its execution), and at 1440, 1280 and 390 px no
page is wider than the window. Every wait is on the page's own URL or text, every assertion on what shows."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.console.conftest import Console, shot
from tests.console.test_browser import _login

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]


def test_a_schedule_is_listed_paused_and_triggered_from_its_page(console_live: Console, page: Any) -> None:
    name = f"nightly-{uuid.uuid4().hex[:6]}"
    body = {"name": name, "workflowId": "follow_up", "cron": "0 3 * * *", "timezone": "Europe/Paris"}
    made = console_live.operator.post("/schedules", body)
    assert made.status == 200, made.text
    _login(page, console_live)
    for width in (1440, 1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{console_live.base}/schedules/")
        row = page.locator(f"tr[data-schedule='{name}']")
        assert "03:00" in row.inner_text()
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        shot(page, f"schedules-{width}")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator(f"tr[data-schedule='{name}'] a", has_text=name).click()
    page.wait_for_url(re.compile(rf".*/schedules/{name}/$"))
    page.get_by_role("button", name="Pause").click()
    page.wait_for_url(re.compile(r".*\?done=paused$"))
    assert "None while paused." in page.inner_text("main")
    page.get_by_role("button", name="Trigger now").click()
    page.wait_for_url(re.compile(r".*\?done=triggered$"))
    run = page.locator("table.runs a").first
    assert run.inner_text().startswith(f"sched:{name}:")
    for width in (1440, 1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        shot(page, f"schedule-{width}")
    run.click()
    page.wait_for_url(re.compile(r".*/executions/sched:.*"))
    assert page.dialogs == []
    assert page.errors == []
