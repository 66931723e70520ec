"""The console end to end in headless Chromium: a live server on PostgreSQL with its workers in another
process; every wait is on a condition in the page, never a fixed sleep. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest

from examples.fulfilment.flows import LARGE_ORDER_CENTS
from tests.console.conftest import Console, shot
from tests.console.flows import HOSTILE_NAME

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

FULFILMENT_NODES = (
    "order",
    "total",
    "reservations",
    "decision",
    "approval",
    "grace",
    "approved",
    "payment",
    "ship",
)


def _order(**extra: Any) -> dict[str, Any]:
    lines = [{"sku": "grand-piano", "qty": 1, "price": LARGE_ORDER_CENTS * 2}]
    return {"id": f"o-{uuid.uuid4().hex[:6]}", "customer": "ada", "items": lines, **extra}


def _start(console: Console, workflow: str, inputs: dict[str, Any], prefix: str) -> str:
    eid = f"{prefix}-{uuid.uuid4().hex[:8]}"
    reply = console.operator.post(f"/workflows/{workflow}/executions", {"executionId": eid, "inputs": inputs})
    assert reply.status == 200, reply.text
    return eid


def _until_waiting(console: Console, eid: str, timeout: float = 30.0) -> None:
    """Until the workers (another process) have parked the execution on a wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if console.operator.get(f"/executions/{eid}").body.get("waits"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{eid} never waited")


def _login(page: Any, console: Console, user: str = "olga") -> None:
    page.goto(f"{console.base}/executions/")
    assert "/login/" in page.url  # every page needs a login
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", "x")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/executions/$"))


def _wait_query(page: Any, key: str, value: str | None) -> None:
    page.wait_for_function("([k, v]) => new URLSearchParams(location.search).get(k) === v", arg=[key, value])


def test_filter_the_executions_list(console_live: Console, page: Any) -> None:
    waiting = _start(console_live, "fulfilment", {"order": _order()}, "filter")
    _until_waiting(console_live, waiting)
    _login(page, console_live)
    shot(page, "executions")
    page.select_option("#status-filter", "waiting:approval")
    _wait_query(page, "status", "waiting:approval")
    page.locator(f"tr[data-execution-id='{waiting}']").wait_for()
    badges = page.locator("#table tbody .badge").all_inner_texts()
    assert badges
    assert set(badges) == {"running·waiting"}
    page.fill("#id-search", waiting[:12])
    _wait_query(page, "q", waiting[:12])
    page.wait_for_function("document.querySelectorAll('#table tbody tr[data-execution-id]').length === 1")
    assert "1–1 of 1" in page.inner_text("#total")
    shot(page, "executions-filtered")
    page.go_back()
    page.wait_for_function("!new URLSearchParams(location.search).get('q')")
    page.wait_for_function("document.querySelector('#status-filter').value === 'waiting:approval'")
    page.wait_for_function("document.querySelector('#id-search').value === ''")


# The list's row fetches counted in the page, each answered 600 ms late: a server slowed by load.
SLOW_ROW_FETCHES = """
window.__rowFetches = { started: [], inFlight: 0, most: 0 };
const plainFetch = window.fetch.bind(window);
window.fetch = async (url, options) => {
  if (!String(url).includes("partial=rows")) return plainFetch(url, options);
  const seen = window.__rowFetches;
  seen.started.push(performance.now());
  seen.most = Math.max(seen.most, ++seen.inFlight);
  try {
    const answer = await plainFetch(url, options);
    await new Promise((resolve) => setTimeout(resolve, 600));
    return answer;
  } finally {
    seen.inFlight -= 1;
  }
};
"""


def test_a_busy_engine_never_stacks_the_lists_refetches(console_live: Console, page: Any) -> None:
    page.add_init_script(SLOW_ROW_FETCHES)
    _login(page, console_live)
    page.wait_for_function("document.getElementById('live-state').classList.contains('on')")
    started = [_start(console_live, "counter", {"count": {"n": i + 1}}, "paced") for i in range(40)]
    # the list catches up with the last one, however late each fetch is answered
    page.locator(f"tr[data-execution-id='{started[-1]}']").wait_for(timeout=30_000)
    shot(page, "executions-after-a-stream")
    seen = page.evaluate("window.__rowFetches")
    assert seen["most"] == 1, seen  # never a fetch sent before the last was answered
    gaps = [later - earlier for earlier, later in zip(seen["started"], seen["started"][1:], strict=False)]
    assert gaps, seen  # the stream of changes made it fetch again
    assert min(gaps) >= 1150, gaps  # each waits as long as the last took (600 ms and more) after it


def test_search_the_executions_list_by_a_recorded_value(console_live: Console, page: Any) -> None:
    customer = f"cust {uuid.uuid4().hex[:6]}"  # a space: the term quotes it
    found = _start(console_live, "fulfilment", {"order": _order(customer=customer)}, "valued")
    other = _start(console_live, "fulfilment", {"order": _order()}, "valued")
    _until_waiting(console_live, found)
    _until_waiting(console_live, other)
    _login(page, console_live)
    term = f'field:order.customer="{customer}"'
    page.fill("#id-search", term)
    _wait_query(page, "q", term)
    page.wait_for_function("document.querySelectorAll('#table tbody tr[data-execution-id]').length === 1")
    assert page.locator(f"tr[data-execution-id='{found}']").count() == 1
    assert "1–1 of 1" in page.inner_text("#total")
    assert "field:order.customer=ada" in page.inner_text("#search-help")
    shot(page, "executions-field-search")
    page.set_viewport_size({"width": 800, "height": 900})
    shot(page, "executions-field-search-800")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.fill("#id-search", "field:order.customer")
    _wait_query(page, "q", "field:order.customer")
    page.wait_for_function("document.querySelector('#table').innerText.includes('after its path')")
    shot(page, "executions-field-search-refused")


def test_signal_from_the_form_turns_the_node_completed_live(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "fulfilment", {"order": _order()}, "approve")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    page.locator("#inputs form.signal").wait_for()
    page.click("#diagram-formats button[data-format=dot]")
    page.wait_for_selector("#diagram[data-drawn=dot] svg")
    page.evaluate("window.__notReloaded = true")
    shot(page, "execution-waiting")
    page.fill("#f-approval-by", "x" * 3)
    page.evaluate("document.querySelector('#f-approval-approved').checked = true")
    page.click("#inputs form.signal button[type=submit]")
    page.wait_for_function(
        """() => [...document.querySelectorAll('#diagram svg g.node')].some(g =>
             g.textContent.includes('approval') && /(completed|won)/.test(g.textContent))"""
    )
    assert page.evaluate("window.__notReloaded") is True
    page.wait_for_function("document.querySelector('#panel .badge').textContent.trim() === 'completed'")
    shot(page, "execution-signalled")


def test_a_boolean_input_is_one_checkbox_and_delivers(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "slow_undo", {}, "badsignal")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    page.locator("#inputs form.signal").wait_for()
    assert page.locator("#f-go-value").count() == 1  # a boolean input: one checkbox
    page.click("#inputs form.signal button[type=submit]")  # unchecked = false: valid, delivered
    page.wait_for_function("document.querySelector('#panel .badge').textContent.trim() === 'completed'")


def test_cancel_shows_compensating_then_cancelled(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "slow_undo", {}, "cancel")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    page.locator("#cancel-action summary").click()
    page.fill("#cancel-reason", "customer <b>changed</b> their mind")
    page.click("#confirm-cancel")
    page.wait_for_function("document.querySelector('#panel .badge').textContent.trim() === 'compensating'")
    shot(page, "execution-compensating")
    (console_live.server_log.parent / "releases" / eid).touch()  # the undo may end now
    page.wait_for_function("document.querySelector('#panel .badge').textContent.trim() === 'cancelled'")
    assert "customer <b>changed</b> their mind" in page.inner_text("#panel")
    page.wait_for_function("document.querySelector('#history').textContent.includes('CancelRequested')")
    assert "olga" in page.inner_text("#history")  # the user is recorded in the history
    shot(page, "execution-cancelled")


def test_resume_a_stopped_execution_through_the_preview(console_live: Console, page: Any) -> None:
    small = {
        "id": "o-s",
        "customer": "ada",
        "items": [{"sku": "w", "qty": 1, "price": 100}],
        "country": "Atlantis",
    }
    eid = _start(console_live, "fulfilment", {"order": small}, "stopped")
    console_live.operator.until_status(eid, "stopped")
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    assert page.inner_text("#panel .badge").strip() == "stopped"
    page.click("#resume-preview")
    page.locator("#action-result .report").wait_for()
    assert "Next node" in page.inner_text("#action-result")
    shot(page, "execution-resume-preview")
    page.click("#resume-go")
    page.locator("#resumed").wait_for()
    page.wait_for_function("document.querySelector('#history').textContent.includes('Resumed')")
    # the same order stops again at the same place: the resume's message follows and says so
    page.wait_for_function("document.querySelector('#resumed').textContent.includes('stopped again with F0')")
    assert "Resumed on version" in page.inner_text("#resumed")
    shot(page, "execution-resumed")


def test_bpmn_and_dot_draw_every_node(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "fulfilment", {"order": _order()}, "draw")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    for fmt in ("bpmn", "dot", "elk", "mermaid"):
        page.click(f"#diagram-formats button[data-format={fmt}]")
        page.wait_for_selector(f"#diagram[data-drawn={fmt}] svg")
        text = page.inner_text("#diagram") if fmt != "dot" else page.text_content("#diagram svg")
        drawn = page.text_content("#diagram") or ""
        missing = [n for n in FULFILMENT_NODES if n not in drawn and n not in text]
        assert missing == [], f"{fmt} misses {missing}"
        shot(page, f"diagram-{fmt}")
    page.goto(f"{console_live.base}/workflows/fulfilment/")
    page.wait_for_selector("#workflow-diagram svg .fd-count")
    shot(page, "workflow")
    page.click("#workflow-formats button[data-format=bpmn]")
    page.wait_for_selector("#workflow-diagram[data-drawn=bpmn] .bpmn-count")
    shot(page, "workflow-bpmn")


def test_other_pages_render(console_live: Console, page: Any) -> None:
    _login(page, console_live)
    for name in ("workflows", "parked", "health"):
        page.goto(f"{console_live.base}/{name}/")
        page.locator("main h1").wait_for()
        shot(page, name)


def test_a_user_without_the_permission_cannot_cancel(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "slow_undo", {}, "noperm")
    _until_waiting(console_live, eid)
    _login(page, console_live, "victor")
    page.goto(f"{console_live.base}/executions/{eid}")
    assert page.locator("#cancel-action").count() == 0  # no cancel button offered
    status = page.evaluate(
        """async (eid) => {
             const token = document.querySelector('meta[name=csrf-token]').content;
             const body = new URLSearchParams({reason: 'x', csrfmiddlewaretoken: token});
             const r = await fetch(`/executions/${eid}/cancel/`, {method: 'POST', body});
             return r.status; }""",
        eid,
    )
    assert status == 403
    assert console_live.operator.get(f"/executions/{eid}").body["cancelRequested"] is False


def test_a_read_only_user_is_offered_no_start_or_signal(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "slow_undo", {}, "readonly")
    _until_waiting(console_live, eid)
    _login(page, console_live, "victor")
    page.goto(f"{console_live.base}/executions/{eid}")
    page.locator("#inputs .signal-not-allowed").wait_for()
    assert page.locator("#inputs form.signal").count() == 0
    shot(page, "read-only-execution")
    page.goto(f"{console_live.base}/workflows/slow_undo/")
    assert page.inner_text("#start-not-allowed") == (
        "Starting an execution needs the flowdeck_console.run_executions permission."
    )
    assert page.locator("form[hx-post$='/start/']").count() == 0
    status = page.evaluate(
        """async (eid) => {
             const token = document.querySelector('meta[name=csrf-token]').content;
             const body = new URLSearchParams({input_name: 'go', go: 'on', csrfmiddlewaretoken: token});
             const r = await fetch(`/executions/${eid}/signal/`, {method: 'POST', body});
             return r.status; }""",
        eid,
    )
    assert status == 403
    inputs = console_live.operator.get(f"/executions/{eid}/inputs").body
    assert [(i["name"], i["delivered"]) for i in inputs] == [("go", False)]


def test_a_hostile_node_name_is_text_everywhere(console_live: Console, page: Any) -> None:
    eid = _start(console_live, "hostile", {}, "hostile")
    _until_waiting(console_live, eid)
    _login(page, console_live)
    page.goto(f"{console_live.base}/executions/{eid}")
    page.get_by_text(HOSTILE_NAME).first.wait_for()
    for fmt in ("mermaid", "dot", "bpmn", "elk"):
        page.click(f"#diagram-formats button[data-format={fmt}]")
        page.wait_for_selector(f"#diagram[data-drawn={fmt}] svg")
        assert page.locator("#diagram script").count() == 0
    shot(page, "hostile-execution")
    for path in ("/workflows/hostile/", "/workflows/", "/executions/?workflow=hostile"):
        page.goto(console_live.base + path)
        page.locator("main h1").wait_for()
        assert page.locator("main script:not([type='application/json'])").count() == 0
    page.goto(f"{console_live.base}/workflows/hostile/")
    page.get_by_text(HOSTILE_NAME).first.wait_for()
    # the `page` fixture fails the test if any alert() ran


def test_the_server_refuses_an_anonymous_websocket(console_live: Console, page: Any) -> None:
    page.goto(f"{console_live.base}/login/")
    outcome = page.evaluate(
        """() => new Promise((resolve) => {
             const socket = new WebSocket(`ws://${location.host}/ws/live/`);
             socket.onopen = () => resolve('open');
             socket.onclose = () => resolve('refused');
           })"""
    )
    assert outcome == "refused"
