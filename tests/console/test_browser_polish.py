"""What an operator notices, in headless Chromium (issue 14 point 6): no serious or critical axe-core
violation on any page, dark mode following the system setting, `/` focusing the search box, every page usable
800 px wide (no sideways scroll, the nav on one line; light and dark), a favicon, and the styled 404.
Screenshots (light, dark, 800 wide) go to test-artifacts/."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api import conftest as api_support
from tests.console.conftest import DB_PREFIX, ROOT, Console, shot
from tests.console.test_browser import _login, _order, _start, _until_waiting
from tests.store.django_support import POSTGRES_SERVER

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.slow]

AXE = ROOT / "node_tools" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")
STOPPING_ORDER = {"id": "o-s", "customer": "ada", "items": [{"sku": "w", "qty": 1, "price": 100}]}
STOPPING_ORDER["country"] = "Atlantis"  # no shipping there: the execution stops for a person


def _axe_problems(page: Any) -> list[str]:
    """The serious and critical violations axe-core finds on the page as it is now, one line each."""
    if not AXE.exists():
        pytest.fail(f"axe-core is missing at {AXE}: run `bash .ci/node-tools.sh`")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE))  # allowed: the context bypasses the CSP, which would refuse it
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['impact']} {v['id']}: {v['help']} — {[n['target'] for n in v['nodes']][:4]}"
        for v in results["violations"]
        if v["impact"] in SERIOUS
    ]


@pytest.fixture
def dark_page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(
        viewport={"width": 1400, "height": 900}, color_scheme="dark", bypass_csp=True
    )
    context.set_default_timeout(60_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="module")
def executions(console_live: Console) -> dict[str, str]:
    """A running (waiting) execution, a stopped one and a completed one; and a parked one, so that the
    parked page shows what it can (its versions side by side, the execution's progress)."""
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{DB_PREFIX}{os.getpid()}_console",
        "DJANGO_SETTINGS_MODULE": "tests.console.settings",
        "PYTHONPATH": str(ROOT),
    }
    api_support._run(env, "-m", "tests.console.seed_parked", f"axe-parked-{uuid.uuid4().hex[:8]}")
    waiting = _start(console_live, "fulfilment", {"order": _order()}, "axe-run")
    stopped = _start(console_live, "fulfilment", {"order": STOPPING_ORDER}, "axe-stop")
    completed = f"axe-done-{uuid.uuid4().hex[:8]}"
    reply = console_live.operator.post(
        "/workflows/counter/executions", {"executionId": completed, "inputs": {}}
    )
    assert reply.status == 200, reply.text
    _until_waiting(console_live, waiting)
    _until_waiting(console_live, completed)
    signalled = console_live.operator.post(f"/executions/{completed}/signal/count", {"n": 2})
    assert signalled.status == 200, signalled.text
    console_live.operator.until_status(stopped, "stopped")
    console_live.operator.until_status(completed, "completed")
    return {"running": waiting, "stopped": stopped, "completed": completed}


def _pages(console: Console, executions: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, address, a selector that is there once the page has drawn)."""
    base = console.base
    return [
        ("overview", f"{base}/", "svg.activity-chart"),
        ("executions", f"{base}/executions/", "#table tbody tr"),
        *((f"execution-{k}", f"{base}/executions/{eid}", "#diagram svg") for k, eid in executions.items()),
        ("workflows", f"{base}/workflows/", "main h1"),
        ("workflow", f"{base}/workflows/fulfilment/", "#workflow-diagram svg"),
        ("parked", f"{base}/parked/", "section.parked-group .version-diagram svg"),
        ("health", f"{base}/health/", "main h1"),
        ("account", f"{base}/account/", "main h1"),
        ("activity", f"{base}/activity/", "main h1"),
        ("api-docs", f"{base}/api/docs", ".opblock-summary-path"),
        ("not-found", f"{base}/executions/no-such-execution-{uuid.uuid4().hex[:6]}", "main h1"),
        ("no-page", f"{base}/no/such/page/", "main h1"),
    ]


def test_no_serious_or_critical_axe_violation_on_any_page(
    console_live: Console, page: Any, executions: dict[str, str]
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{console_live.base}/login/")
    page.locator("input[name=username]").wait_for()
    found = {"login": _axe_problems(page)}
    _login(page, console_live)
    for name, address, ready in _pages(console_live, executions):
        page.goto(address)
        page.locator(ready).first.wait_for()
        found[name] = _axe_problems(page)
    # The live light before its socket opens (armed, not yet on): on a busy machine axe can meet it so on
    # any page, so it is checked in that state on purpose rather than by chance
    page.goto(f"{console_live.base}/executions/")
    page.locator("#live-state.on").wait_for()
    page.evaluate("document.getElementById('live-state').classList.remove('on')")
    found["live light, connecting"] = _axe_problems(page)
    lines = [f"{name}: {problem}" for name, problems in found.items() for problem in problems]
    assert lines == [], "\n".join(lines)


def test_dark_mode_follows_the_system_setting(
    console_live: Console, dark_page: Any, executions: dict[str, str]
) -> None:
    dark_page.goto(f"{console_live.base}/login/")
    shot(dark_page, "dark-login")
    _login(dark_page, console_live)
    background = dark_page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert _luminance(background) < 0.2, background
    for name, address, ready in _pages(console_live, executions):
        dark_page.goto(address)
        dark_page.locator(ready).first.wait_for()
        shot(dark_page, f"dark-{name}")
        assert _axe_problems(dark_page) == [], name  # the dark colours keep their contrast too
    # the drawing stays on a light card: its state colours are meant for light node fills
    dark_page.goto(f"{console_live.base}/executions/{executions['running']}")
    dark_page.locator("#diagram svg").wait_for()
    card = dark_page.evaluate("getComputedStyle(document.querySelector('#diagram')).backgroundColor")
    assert _luminance(card) > 0.8, card


def test_light_screenshots_and_the_favicon(
    console_live: Console, page: Any, executions: dict[str, str]
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{console_live.base}/login/")
    shot(page, "light-login")
    _login(page, console_live)
    icon = page.get_attribute("link[rel=icon]", "href")
    assert icon is not None
    assert icon.endswith(".svg")
    reply = page.request.get(f"{console_live.base}{icon}")
    assert reply.status == 200
    assert "<svg" in reply.text()
    for name, address, ready in _pages(console_live, executions):
        page.goto(address)
        page.locator(ready).first.wait_for()
        shot(page, f"light-{name}")


def test_slash_focuses_the_search_but_not_while_typing(console_live: Console, page: Any) -> None:
    _login(page, console_live)
    assert page.get_attribute("#id-search", "aria-keyshortcuts") == "/"
    page.locator("main h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "id-search"
    assert page.input_value("#id-search") == ""  # the key only moved the focus
    page.keyboard.type("ab/c")
    assert page.input_value("#id-search") == "ab/c"  # while typing, `/` is a character
    page.focus(".bulk input")
    page.keyboard.type("a/b")  # in another field too: the focus stays where the operator types
    assert page.input_value(".bulk input") == "a/b"
    assert page.input_value("#id-search") == "ab/c"


def _narrow_pages(console: Console, executions: dict[str, str]) -> list[tuple[str, str, str]]:
    """Every page an operator opens at 800 px: (name, address, a selector there once it has drawn). The
    bulk pages act on this module's own stopped execution only (a dry run, which changes nothing)."""
    stopped = executions["stopped"]
    reply = console.operator.post(
        "/executions/bulk", {"action": "resume", "status": "stopped", "idPrefix": stopped}
    )
    assert reply.status in (200, 202), reply.text
    base = console.base
    return [
        ("overview", f"{base}/", "svg.activity-chart"),
        ("executions", f"{base}/executions/?sort=updated&status=running", "#table tbody tr"),
        ("executions-window", f"{base}/executions/?created_after=1h&updated_before=0s", "#table tbody tr"),
        ("activity", f"{base}/activity/", "table.activity tbody tr"),
        *((f"execution-{k}", f"{base}/executions/{eid}", "#diagram svg") for k, eid in executions.items()),
        ("parked", f"{base}/parked/", "section.parked-group .version-diagram svg"),
        ("bulk-confirm", f"{base}/executions/bulk/?status=stopped&q={stopped}&action=resume", "main h1"),
        ("bulk-operation", f"{base}/executions/bulk/{reply.body['id']}/", "main h1"),
        ("workflows", f"{base}/workflows/", "main h1"),
        ("workflow", f"{base}/workflows/fulfilment/", "#workflow-diagram svg"),
        ("health", f"{base}/health/", "main h1"),
        ("not-found", f"{base}/executions/no-such-execution-{uuid.uuid4().hex[:6]}", "main h1"),
    ]


# the nav on one line: every link's top within a few pixels of the first's, and the header one row high
# what could scroll sideways: the page, the nav (it scrolls itself rather than wrap), the tables' scrollers;
# and whether the nav is one line: its links' tops apart, the tallest link
_LAYOUT = """(() => {
  const over = el => el ? el.scrollWidth - el.clientWidth : 0;
  const links = [...document.querySelectorAll('header.top nav a')].map(a => a.getBoundingClientRect());
  const tops = links.map(r => r.top);
  const scrollers = [...document.querySelectorAll('#table, .activity-scroll, .list-scroll')];
  return {
    page: over(document.documentElement),
    nav: over(document.querySelector('header.top nav')),
    tables: Math.max(0, ...scrollers.map(over)),
    spread: Math.max(...tops) - Math.min(...tops),
    tallest: Math.max(...links.map(r => r.height)),
  };
})()"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_scrolls_sideways_800_wide(
    console_live: Console, chromium: Any, executions: dict[str, str], scheme: str
) -> None:
    context = chromium.new_context(
        viewport={"width": 800, "height": 900}, color_scheme=scheme, bypass_csp=True
    )
    context.set_default_timeout(60_000)
    page = context.new_page()
    try:
        _login(page, console_live)
        wide = {}
        for name, address, ready in _narrow_pages(console_live, executions):
            page.goto(address)
            page.locator(ready).first.wait_for()
            shot(page, f"narrow-{scheme}-{name}")
            found = page.evaluate(_LAYOUT)
            scrolled = {k: found[k] for k in ("page", "nav", "tables") if found[k] > 0}
            if scrolled:
                wide[name] = f"scrolls sideways by (px): {scrolled}"  # every column in view, too
            elif found["spread"] > 2 or found["tallest"] > 40:
                wide[name] = f"the nav wraps: {found}"
        assert wide == {}
    finally:
        context.close()


def _luminance(css: str) -> float:
    """The relative luminance (0 black – 1 white) of a computed `rgb(…)`/`rgba(…)` colour."""
    parts = [float(p) for p in css[css.index("(") + 1 : css.index(")")].replace("/", ",").split(",")[:3]]
    linear = [(c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_styled_403_a_viewer_meets(console_live: Console, page: Any) -> None:
    """A viewer opening the bulk confirmation (an operator's page) gets the console's 403, not Django's."""
    page.set_viewport_size({"width": 1400, "height": 900})
    _login(page, console_live, "victor")
    reply = page.goto(f"{console_live.base}/executions/bulk/?status=stopped&action=cancel")
    assert reply is not None
    assert reply.status == 403
    assert page.locator("header.top nav").count() == 1  # the console's frame, with its navigation
    shot(page, "light-forbidden")
    assert _axe_problems(page) == []
