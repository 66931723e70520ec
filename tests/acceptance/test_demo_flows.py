"""`manage.py demo` serves every discovered flow, not only the examples: an execution of a workflow from
FLOWDECK_FLOW_MODULES (`counter`, of `tests.console.settings`) started while the demo runs is run by the
demo's workers to its end."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.acceptance.support import Background, environment, free_port, manage, ok, sqlite_url

pytestmark = pytest.mark.slow

SETTINGS = {"DJANGO_SETTINGS_MODULE": "tests.console.settings"}


def test_the_demo_runs_a_flow_of_flowdeck_flow_modules_to_its_end(tmp_path: Path) -> None:
    port = free_port()
    database = tmp_path / "demo.sqlite3"
    url = sqlite_url(database)
    demo = Background.manage(
        "demo", url, tmp_path, "demo", "--database", str(database), "--port", str(port), **SETTINGS
    )
    try:
        demo.wait_for_output(f"Flowdeck demo running at http://127.0.0.1:{port}/", timeout=180)
        count = json.dumps({"n": 21})
        started = ok(
            manage(
                url,
                "flowdeck",
                "start",
                "counter",
                "--id",
                "extra",
                "--input",
                f"count={count}",
                env=environment(url, **SETTINGS),
            )
        )
        assert started.stdout.strip().endswith("extra"), started.explain()
        demo.wait_for(
            lambda: _status_kind(database, "extra") == "completed", "counter's execution to complete", 60
        )
        demo.signal(signal.SIGINT)
        assert demo.finish(timeout=60) == 0, demo.explain()
    finally:
        demo.close()
    shown = ok(manage(url, "flowdeck", "show", "extra", "--json", env=environment(url, **SETTINGS))).json()
    assert (shown["status"], shown["values"]["double"]) == ({"type": "completed"}, 42)


def _status_kind(database: Path, execution_id: str) -> str | None:
    """The execution's status kind, read straight from the demo's SQLite file."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        row = connection.execute(
            "SELECT status_kind FROM flowstore_execution WHERE id = ?", (execution_id,)
        ).fetchone()
    return None if row is None else str(row[0])
