"""`manage.py demo`: seeds, serves HTTP on the port given, and stops cleanly on Ctrl-C (SIGINT)."""

from __future__ import annotations

import re
import signal
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.acceptance.support import Background, free_port, manage, ok, sqlite_url

pytestmark = pytest.mark.slow

STATES = {
    "demo-completed": "completed",
    "demo-awaiting-approval": "running·waiting",
    "demo-sleeping": "running·sleeping",
    "demo-declined": "failed:CardDeclined",
    "demo-refunded": "failed:ShipmentRefused",
    "demo-stopped": "stopped:F0001",
    "demo-cancelled": "cancelled",
    "demo-parked": "parked (previous version)",
}


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_demo_seeds_serves_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    database = tmp_path / "demo.sqlite3"
    demo = Background.manage(
        "demo",
        f"sqlite:///{tmp_path}/unused.sqlite3",
        tmp_path,
        "demo",
        "--database",
        str(database),
        "--port",
        str(port),
    )
    try:
        demo.wait_for_output(f"Flowdeck demo running at http://127.0.0.1:{port}/", timeout=180)
        out = demo.stdout
        for eid, word in STATES.items():
            assert f"{eid.ljust(22)}  {word}" in out, demo.explain()
        assert "login: admin / " in out
        assert status_of(f"http://127.0.0.1:{port}/") == 200  # the console (its login page, for a stranger)
        assert (
            status_of(f"http://127.0.0.1:{port}/api/v1/health") == 401
        )  # the API, refusing anonymous callers
        demo.signal(signal.SIGINT)
        assert demo.finish(timeout=60) == 0, demo.explain()
    finally:
        demo.close()
    assert demo.stdout.rstrip().endswith("stopped"), demo.explain()
    assert "Traceback" not in without_known_engine_noise(demo.stderr), demo.explain()


def test_demo_keeps_the_password_it_printed_first(tmp_path: Path) -> None:
    database = tmp_path / "demo.sqlite3"

    def login(*more: str) -> str:
        args = ("demo", "--no-serve", "--database", str(database), *more)
        out = ok(manage(sqlite_url(database), *args)).stdout
        found = re.search(r"^login: admin / (\S+)$", out, re.M)
        assert found, out
        assert f"(kept in {database}.admin-password for the next run; --new-password makes a new one)" in out
        return found[1]

    first = login()
    assert login() == first  # a second run: the saved password still works
    kept = Path(f"{database}.admin-password")
    assert (kept.read_text(), stat.S_IMODE(kept.stat().st_mode)) == (first + "\n", 0o600)
    fresh = login("--new-password")
    assert fresh != first
    assert login() == fresh


def without_known_engine_noise(log: str) -> str:
    """The log without asyncio's "Task exception was never retrieved" records for a race's losing arm that
    parked (an engine logging wart, harmless: the race already decided)."""
    kept: list[str] = []
    skipping = False
    for line in log.splitlines():
        if "Task exception was never retrieved" in line:
            skipping = True
        elif skipping and line.startswith("flowdeck.engine.interpreter.Parked"):
            skipping = False
            continue
        if not skipping:
            kept.append(line)
    return "\n".join(kept)
