"""The Content-Security-Policy in headless Chromium, enforced (these pages do not bypass it): the API docs
work offline from the vendored Swagger UI, and the console's pages, diagrams in every format included,
break no rule of the policy. A lockout after repeated failed logins is the console's styled page."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.conftest import Console, shot

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

# Every violation the page reports (the event fires for each refused script, style, frame or fetch).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def strict_page(chromium: Any) -> Iterator[Any]:
    """A page under the policy as a visitor's browser enforces it; it records violations, console
    messages about the policy, and page errors."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.reports = []
    page.on(
        "console",
        lambda message: (
            page.reports.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.on("pageerror", lambda error: page.reports.append(f"page error: {error}"))
    yield page
    context.close()


def _violations(page: Any) -> list[str]:
    return [*page.evaluate("window.__cspViolations"), *page.reports]


def _login(page: Any, console: Console, user: str = "olga", password: str = "x") -> Any:
    page.goto(f"{console.base}/login/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


def test_the_api_docs_list_the_operations_offline_under_the_policy(
    console_live: Console, strict_page: Any
) -> None:
    page = _login(strict_page, console_live)
    # nothing but this server: a request elsewhere (a CDN) is answered as if offline
    page.route(re.compile(r"^(?!" + re.escape(console_live.base) + ").*"), lambda route: route.abort())

    page.goto(f"{console_live.base}/api/docs")
    page.locator(".opblock-summary-path", has_text="/api/v1/executions/search").wait_for()

    paths = set(page.locator(".opblock-summary-path").all_inner_texts())
    assert {"/api/v1/workflows", "/api/v1/executions/search", "/api/v1/executions/{execution_id}"} <= paths
    shot(page, "api-docs")
    assert _violations(page) == []


def test_console_pages_and_every_diagram_format_break_no_rule_of_the_policy(
    console_live: Console, strict_page: Any
) -> None:
    eid = f"csp-{uuid.uuid4().hex[:8]}"
    reply = console_live.operator.post("/workflows/counter/executions", {"executionId": eid, "inputs": {}})
    assert reply.status == 200, reply.text
    page = _login(strict_page, console_live)
    page.locator(f"tr[data-execution-id='{eid}']").wait_for()

    page.goto(f"{console_live.base}/executions/{eid}")
    page.locator("#diagram svg").first.wait_for()
    formats = page.locator("#diagram-formats button").evaluate_all(
        "(buttons) => buttons.map((b) => b.dataset.format)"
    )
    assert set(formats) == {"mermaid", "dot", "elk", "bpmn"}
    for format in formats:
        page.click(f"#diagram-formats button[data-format={format}]")
        page.locator(f"#diagram[data-drawn={format}] svg").first.wait_for()
    page.goto(f"{console_live.base}/workflows/counter/")
    page.locator("#workflow-diagram svg").first.wait_for()

    assert _violations(page) == []


def test_a_locked_out_login_is_the_console_s_page(console_live: Console, strict_page: Any) -> None:
    name = f"mallory-{uuid.uuid4().hex[:6]}"  # a name of its own: the lockout outlives the test
    for _ in range(4):
        _login(strict_page, console_live, name, "guess")
        assert "did not match" in strict_page.locator(".message.error").inner_text()

    page = _login(strict_page, console_live, name, "guess")

    message = page.locator("#locked-out").inner_text()
    assert message.startswith(f"Too many failed logins for {name} from this address (5 in a row).")
    assert "refused for the next 15 minutes, even with the right password" in message
    shot(page, "login-locked-out")
    assert _violations(page) == []
