"""A migration as the README describes it, with real processes: `versioned` ran as v1; the deploy declares
`FLOWS = {"versioned": [V1, V2]}`; the CLI and `runworkers` serve both, so the execution started under v1
is not parked and runs to its end on v1 while new starts use v2."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from flowdeck.engine import schema
from tests.acceptance.support import MANAGE, PYTHON, Background, environment, manage, ok, sqlite_url
from tests.console.versioned_flows import V1, V2

pytestmark = pytest.mark.slow

SETTINGS = "tests.acceptance.versions_settings"


def test_runworkers_runs_a_v1_execution_to_its_end_after_v2_is_declared_newest(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "versions.sqlite3")
    before = environment(
        url, DJANGO_SETTINGS_MODULE=SETTINGS, FLOWDECK_TEST_FLOWS="tests.acceptance.versioned_v1"
    )
    during = environment(
        url, DJANGO_SETTINGS_MODULE=SETTINGS, FLOWDECK_TEST_FLOWS="tests.console.versioned_flows"
    )
    ok(manage(url, "migrate", "--verbosity", "0", env=before))
    ok(manage(url, "flowdeck", "start", "versioned", "--id", "old", env=before))
    ok(manage(url, "flowdeck", "start", "versioned", "--id", "new", env=during))
    assert ok(manage(url, "flowdeck", "parked", "versioned", "--json", env=during)).json() == {
        "items": [],
        "total": 0,
    }
    for eid in ("old", "new"):
        ok(manage(url, "flowdeck", "signal", eid, "go", "true", env=during))
    workers = Background(
        "flowdeck_workers", [PYTHON, MANAGE, "flowdeck_workers", "--workers", "1"], during, tmp_path
    )
    try:
        workers.wait_for_output(
            "serving fulfilment, payment, follow_up, versioned (2 versions), typed (2 versions)"
        )
        for eid in ("old", "new"):
            ended = f"attempt on {eid} ended: AttemptReport(execution_id='{eid}', outcome='completed'"
            workers.wait_for(lambda ended=ended: ended in workers.stderr, f"{eid} completed")
    finally:
        workers.close()
    with ThreadPoolExecutor(max_workers=2) as pool:
        shown = dict(
            zip(("old", "new"), pool.map(lambda eid: _show(url, eid, during), ("old", "new")), strict=True)
        )
    assert {eid: (s["status"], s["hash"]) for eid, s in shown.items()} == {
        "old": ({"type": "completed"}, schema.structural_hash(V1)),
        "new": ({"type": "completed"}, schema.structural_hash(V2)),
    }
    log = workers.stderr
    for digest in (schema.structural_hash(V1), schema.structural_hash(V2)):
        assert f"registered versioned@{digest}" in log, workers.explain()


def _show(url: str, eid: str, env: dict[str, str]) -> dict[str, object]:
    return dict(json.loads(ok(manage(url, "flowdeck", "show", eid, "--json", env=env)).stdout))
