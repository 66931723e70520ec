"""Bulk operations by query in headless Chromium against the live console (PostgreSQL, daphne, workers in
another process): from the list filtered to the parked `bulk-` executions, "Act on all 3 matching" →
resume → the confirmation (the filter in words, the count) → the dry run's summary (2 clean, 1 F0101) →
resume the clean ones → the operation's outcomes. Screenshots (1400x900) go to test-artifacts/."""

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
def seeded(console_live: Console) -> Console:
    env = {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES_SERVER}/{DB_PREFIX}{os.getpid()}_console",
        "DJANGO_SETTINGS_MODULE": "tests.console.settings",
        "PYTHONPATH": str(ROOT),
    }
    api_support._run(env, "-m", "tests.console.seed_bulk")
    return console_live


def _login(page: Any, console: Console, then: str) -> None:
    page.goto(f"{console.base}{then}")
    page.fill("input[name=username]", "olga")
    page.fill("input[name=password]", "x")
    page.click("button[type=submit]")
    page.goto(f"{console.base}{then}")


def test_resume_all_matching_dry_run_then_go(seeded: Console, page: Any) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    _login(page, seeded, "/executions/?workflow=fulfilment&q=bulk-")
    link = page.locator("#bulk-all")
    assert link.inner_text() == "Act on all 3 matching…"
    shot(page, "bulk-list-link")
    link.click()
    page.click("#bulk-verb-resume")
    assert (
        page.locator("#bulk-filter").inner_text()
        == "any status, workflow is fulfilment, id starts with bulk-"
    )
    assert page.locator("#bulk-count b").inner_text() == "3"
    assert page.locator("#bulk-submit").inner_text() == "Dry run on 3 executions"
    shot(page, "bulk-confirm")
    page.click("#bulk-submit")
    page.locator("#bulk-summary").wait_for()
    counts = {
        row.get_attribute("class"): row.locator("td.num").inner_text()
        for row in page.locator("#bulk-summary tbody tr").all()
    }
    assert counts == {
        "sum-clean": "2",
        "sum-stops_again": "0",
        "sum-F0101": "1",
        "sum-F0102": "0",
        "sum-not_resumable": "0",
        "sum-other": "0",
    }
    assert page.locator("tr[data-execution-id='bulk-f0101'] .outcome").inner_text() == "conflict"
    assert "bulk-f0101" in page.locator("#bulk-summary tr.sum-F0101").inner_text()
    assert page.locator("#bulk-state .outcome").inner_text() == "done"
    shot(page, "bulk-dry-run")
    page.set_viewport_size({"width": 800, "height": 900})
    shot(page, "bulk-dry-run-800")
    page.set_viewport_size({"width": 1400, "height": 900})
    page.click("#bulk-go")
    page.locator("#bulk-outcomes").wait_for()
    assert "bulk:resume:go" in page.locator("h1").inner_text()
    assert re.fullmatch(r"those the dry run \d+ found clean", page.locator("#bulk-filter").inner_text())
    assert page.locator("#bulk-done").inner_text() == "2 of 2"
    assert page.locator("#bulk-counts").inner_text().strip() == "accepted: 2"
    shot(page, "bulk-operation")
    # a rerun is offered and is harmless: the same two, each accepted again onto the version it is on
    page.click("#bulk-again")
    page.locator("#bulk-outcomes").wait_for()
    assert page.locator("#bulk-done").inner_text() == "2 of 2"
