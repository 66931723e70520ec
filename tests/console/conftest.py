"""Fixtures of the console tests: a live console on PostgreSQL (daphne and workers in subprocesses, as
in production) and a headless Chromium driven by Playwright, for the tests marked `browser`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.api import conftest as api_support
from tests.api.client import ApiClient
from tests.store.django_support import require_postgres

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
DB_PREFIX = api_support.DB_PREFIX  # the API tests' prefix: their stale-database sweep covers ours too


@dataclass(frozen=True)
class Console:
    base: str
    credentials: dict[str, str]
    server_log: Path
    workers_log: Path

    @property
    def operator(self) -> ApiClient:
        return ApiClient(self.base, token=self.credentials["operator_token"])


@pytest.fixture(scope="session")
def console_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    require_postgres()
    name = f"{DB_PREFIX}{os.getpid()}_console"
    logs = tmp_path_factory.mktemp("live-console")
    # where a test releases `slow_undo`'s undo (tests/console/flows.py): `releases_of(console)`
    (logs / "releases").mkdir()
    releases = {"FLOWDECK_TEST_RELEASES": str(logs / "releases")}
    env = api_support.server_environment(name, "tests.console.settings", **releases)
    with api_support.serving(name, env, logs) as (base, credentials):
        yield Console(base, credentials, logs / "server.log", logs / "workers.log")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Module-scoped: Playwright's sync API keeps an event loop running until it stops, which the async
    tests of the next modules must not find."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM} (.ci/run installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh browser context's page; any JavaScript dialog (an alert) is recorded and fails the test.

    It bypasses the Content-Security-Policy: Playwright's `wait_for_function` evaluates its string, which
    the policy (no 'unsafe-eval') refuses. The policy itself is tested with pages of their own
    (`test_browser_csp.py`)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.dialogs = []
    page.errors = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()
    assert page.dialogs == [], f"a dialog opened: {page.dialogs}"
    assert page.errors == [], f"page errors: {page.errors}"


def shot(page: Any, name: str, part: Any = None) -> None:
    """The whole page, or only its `part` (a locator), as a PNG in test-artifacts/, to look at. A page the
    live server's other tests have filled (the parked page: a group per parked version, each with its
    drawings) is tall: a full-page capture of it took 5-12 s in a whole-suite run (a minute is allowed),
    where the part a test is about takes a fraction of a second."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = str(ARTIFACTS / f"console-{name}.png")
    if part is not None:
        part.screenshot(path=path, timeout=60_000)
    else:
        page.screenshot(path=path, full_page=True, timeout=60_000)
