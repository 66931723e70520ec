"""The Django admin in headless Chromium under the console's Content-Security-Policy, enforced: its
scripts (the theme toggle, the sidebar, the list's filters and actions, the date widgets) and styles load
and run, and no page breaks a rule of the policy."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.console.conftest import Console, shot
from tests.console.test_browser_csp import _violations, strict_page  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]


def _admin_login(page: Any, console: Console) -> Any:
    page.goto(f"{console.base}/admin/login/?next=/admin/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "x")
    with page.expect_navigation():
        page.click("input[type=submit]")
    return page


def test_the_admin_runs_its_scripts_and_styles_under_the_policy(
    console_live: Console,
    strict_page: Any,  # noqa: F811
) -> None:
    eid = f"admin-{uuid.uuid4().hex[:8]}"
    reply = console_live.operator.post("/workflows/counter/executions", {"executionId": eid, "inputs": {}})
    assert reply.status == 200, reply.text
    page = _admin_login(strict_page, console_live)
    page.locator("#site-name", has_text="Flowdeck administration").wait_for()
    # the stylesheet applied: the header is the admin's coloured bar, not unstyled text
    assert page.locator("#header").evaluate("(h) => getComputedStyle(h).display") == "flex"
    shot(page, "admin-index")

    page.goto(f"{console_live.base}/admin/flowstore/execution/?workflow=counter")
    page.locator("th.field-id a", has_text=eid).wait_for()
    # filters.js ran: it keeps each filter's open state in <details> elements it toggles
    page.locator("#changelist-filter details").first.wait_for()
    shot(page, "admin-executions")

    page.click(f"th.field-id a:text('{eid}')")
    page.locator(f"a[href='/executions/{eid}']").wait_for()
    shot(page, "admin-execution")

    page.goto(f"{console_live.base}/admin/flowdeck_console/apitoken/add/")
    # DateTimeShortcuts.js ran: it adds the "Today" and calendar links beside the expiry
    page.locator(".datetimeshortcuts a", has_text="Today").first.wait_for()
    page.select_option("select[name=user]", label="victor")
    page.fill("input[name=name]", f"browser-{eid}")
    with page.expect_navigation():
        page.click("input[name=_save]")
    assert page.locator("#token-secret").inner_text().startswith("fd_")
    shot(page, "admin-token-made")

    # the theme toggle (theme.js) answers a click
    page.click("button.theme-toggle")
    assert page.evaluate("document.documentElement.dataset.theme") in {"dark", "light", "auto"}
    assert _violations(page) == []
